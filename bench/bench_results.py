"""Benchmark: time and peak memory of reading big results (show, a filtered query, plot, report), each
command in a fresh process, on a sweep built for the purpose.

Usage:
    python bench/bench_results.py                     # a 4.9M-point BTA sweep and a 720k-point mesh sweep
    python bench/bench_results.py --scale 0.1         # the same spaces, a tenth of the points (quick look)
    python bench/bench_results.py --old /path/to/src  # also run each command with another source tree
                                                      # (e.g. `git archive <commit> | tar -x -C /path/to/src`)

Peak RSS is the child's own (ru_maxrss at its exit). The machine is shared: run it when it is quiet, and
read the numbers as medians of one run each.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
CHILD = """
import json, resource, runpy, sys, time
sys.argv = ["wsemoe", *json.loads(sys.argv[1])]
t0 = time.perf_counter()
try:
    runpy.run_module("wsemoe.cli", run_name="__main__")
except SystemExit as exc:
    code = exc.code
else:
    code = 0
print(json.dumps({"seconds": time.perf_counter() - t0, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "code": code}), file=sys.stderr)
"""


def bta(points: float) -> dict:
    """A BTA space of about `points` points (G grows to reach the size)."""
    g = max(1, round(240 * points / 4.9e6))
    return {"name": "bench_show_bta", "hardware": "cs2", "model": "qwen3-30b-a3b",
            "workload": {"mode": "train", "seq_len": 8192},
            "axes": {"workload.seq_len": [1024, 2048, 4096, 8192], "model.num_experts": [8, 16, 32, 64, 128],
                     "model.num_experts_per_tok": [1, 2, 4, 8], "workload.B": {"range": [1, 256]},
                     "workload.G": {"range": [1, g]}},
            "objectives": {"mfu": "max", "mem_peak_node_bytes": "min"},
            "compare": {"name": "uniform", "baseline": {"workload.G": 1}}}


def mesh(points: float) -> dict:
    """A mesh space of about `points` points: 4 strategies × TP {4, 8, 16} × decode batches."""
    return {"name": "bench_show_mesh", "hardware": "wsc-b200-8x8", "model": "deepseek-v3",
            "workload": {"mode": "decode", "seq_len": 4096},
            "axes": {"mapping.strategy": ["block", "er", "snake", "random"], "mapping.tp": [4, 8, 16],
                     "workload.B": {"range": [1, max(1, round(points / 12))]}},
            "objectives": {"per_device_moe_tokens_per_s": "max", "moe_comm_s": "min"}}


def run(args: list[str], src: Path | None) -> dict:
    env = {**os.environ, "CI": "1", "COLUMNS": "120"}
    if src is not None:
        env["PYTHONPATH"] = str(src)  # and run there: `python -c` puts the working folder first on sys.path
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-c", CHILD, json.dumps(args)], cwd=src or ROOT, env=env, capture_output=True,
                       text=True)
    wall = time.perf_counter() - t0
    stats = json.loads(r.stderr.strip().splitlines()[-1])
    return {**stats, "wall": wall, "ok": stats["code"] in (0, None)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scale", type=float, default=1.0, help="fraction of the default sizes")
    ap.add_argument("--old", type=Path, help="another source tree to run each command with, for comparison")
    ap.add_argument("--keep", type=Path, help="build the sweeps here (and keep them) instead of a temp folder")
    args = ap.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="wsemoe-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    rows = []
    for cfg in (bta(4.9e6 * args.scale), mesh(7.2e5 * args.scale)):
        f = work / f"{cfg['name']}.yaml"
        f.write_text(yaml.safe_dump(cfg))
        built = run(["sweep", str(f), "--results", str(work), "-q"], None)
        folder = work / cfg["name"]
        man = json.loads((folder / "manifest.json").read_text())
        size = sum(p["bytes"] for p in man["parts"]) / 1e6
        rows.append((cfg["name"], f"sweep ({man['points']:,} points, {size:,.0f} MB of parts)", built, None))
        first = next(iter(cfg["objectives"]))
        cases = [("show", ["show", str(folder)]),
                 ("show --all --where --sort --limit 20",
                  ["show", str(folder), "--all", "--where", f"{first} > 0", "--sort", f"-{first}", "--limit", "20"]),
                 ("plot", ["plot", str(folder)]),
                 ("report", ["report", str(folder), "-o", str(work / f"{cfg['name']}.html")])]
        for label, argv in cases:
            new = run(argv, None)
            old = run(argv, args.old) if args.old and label in ("show", "plot") else None
            rows.append((cfg["name"], label, new, old))
    print(f"{'sweep':<16} {'command':<52} {'seconds':>8} {'peak RSS':>9}   {'old: s':>7} {'old: RSS':>9}")
    for name, label, new, old in rows:
        o = f"{old['seconds']:7.1f} {old['rss_mb']:7.0f} MB" if old else ""
        flag = "" if new["ok"] else "  (failed)"
        print(f"{name:<16} {label:<52} {new['seconds']:8.1f} {new['rss_mb']:6.0f} MB   {o}{flag}")
    print(f"results kept in {work}" if args.keep else f"(temporary folder {work})")


if __name__ == "__main__":
    main()
