"""Benchmark: the daily-use speeds, each command in a fresh process as a user runs it, beside its target.

- `wsemoe plot` of a 1.2 M-point BTA results folder (target: under 5 s);
- `wsemoe plot` of results/moentwine_scale (target: under 10 s);
- `wsemoe sweep` end to end through the CLI on a 2 M-point BTA sweep with every column (target: 10^6 points/s);
- the cost of the serving metrics: a decode sweep with a prompt length (TTFT evaluates a prefill too) against
  one without, cost model alone, in this process;
- `make test` (target: under 6 minutes), with --tests.

Wall and CPU seconds (the child's own user + system time) are both printed, with the load average before and
after: the machine is shared, and wall times move with what else runs; CPU time moves much less. The table is
also written to bench/daily.md. With `--old SRC` every CLI timing is also taken with another source tree (e.g.
`git archive main | tar -x -C SRC`), the two runs interleaved so both see the same load: a before/after.

Usage:
    python bench/bench_daily.py                 # everything but make test (about two minutes)
    python bench/bench_daily.py --tests         # ... and time `make test`
    python bench/bench_daily.py --keep DIR      # build the results in DIR and keep them
    python bench/bench_daily.py --scale 0.25    # smaller BTA spaces (a quick look; targets then do not apply)
    python bench/bench_daily.py --old SRC       # each CLI timing also with the source tree SRC, interleaved
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml
from bench_results import bta  # bench/bench_results.py: the BTA space of the results benchmarks

ROOT = Path(__file__).resolve().parents[1]
OUT = Path(__file__).resolve().parent / "daily.md"
WSEMOE = [sys.executable, "-m", "wsemoe.cli"]
TARGETS = {"plot_bta": 5.0, "plot_scale": 10.0, "sweep_rate": 1e6, "make_test": 360.0}


def run(argv: list[str], cwd: Path = ROOT, src: Path | None = None) -> dict:
    """Wall and CPU seconds (user + system of the child and its children) of one command; with `src`, wsemoe is
    imported from that source tree instead: it runs there (`python -m` puts the working folder first on the
    path, before PYTHONPATH; run from this tree, it would import this tree whatever PYTHONPATH says)."""
    env = {**os.environ, "CI": "1", "COLUMNS": "120", **({"PYTHONPATH": str(src)} if src else {})}
    cwd = src or cwd
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    r = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if src and argv[:3] == WSEMOE:
        check = subprocess.run([sys.executable, "-c", "import wsemoe; print(wsemoe.__file__)"], cwd=cwd, env=env,
                               capture_output=True, text=True)
        if not check.stdout.startswith(str(src)):
            raise SystemExit(f"--old: wsemoe was imported from {check.stdout.strip()}, not from {src}")
    if r.returncode:
        raise SystemExit(f"failed: {' '.join(argv)}\n{r.stderr[-2000:]}")
    return {"wall": wall, "cpu": cpu, "out": r.stdout}


def best(argv: list[str], rounds: int, old: Path | None = None) -> tuple[dict, dict | None]:
    """Best wall (and best CPU) of `rounds` runs, of this tree and (interleaved, when given) of the tree `old`."""
    runs: dict = {None: [], old: []}
    for _ in range(rounds):
        for src in ([None, old] if old else [None]):
            runs[src].append(run(argv, src=src))
    pick = lambda rs: {"wall": min(r["wall"] for r in rs), "cpu": min(r["cpu"] for r in rs),  # noqa: E731
                       "out": rs[-1]["out"]}
    return pick(runs[None]), (pick(runs[old]) if old else None)


def before(old: dict | None, fmt) -> str:
    """The `--old` tree's wall and CPU figure in the units of the row."""
    return f"{fmt(old['wall'])} ({fmt(old['cpu'])} CPU)" if old else ""


def serving_cost(rounds: int = 3) -> tuple[float, float, int]:
    """(seconds without, with prompt_len, points): the cost model over a 100k-point decode mesh space."""
    from wsemoe.config.loader import load_config
    from wsemoe.sweep.engine import Evaluator

    def space(prompt: bool) -> dict:
        wl = {"mode": "decode", "seq_len": 4096, **({"prompt_len": 2048} if prompt else {})}
        return {"name": "serve", "hardware": "wsc-b200-8x8", "model": "deepseek-v3", "workload": wl,
                "axes": {"mapping.strategy": ["block", "er", "snake", "random"], "mapping.tp": [4, 8, 16],
                         "workload.B": {"range": [1, 8334]}}}
    times = {}
    for prompt in (False, True):
        cfg = load_config(space(prompt))
        ev = Evaluator(cfg)
        ev.range(0, cfg.size())   # structures built once, outside the timing
        t = []
        for _ in range(rounds):
            t0 = time.perf_counter()
            out = ev.range(0, cfg.size())
            for name in out.names:
                out.column(name)
            t.append(time.perf_counter() - t0)
        times[prompt] = min(t)
    return times[False], times[True], cfg.size()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tests", action="store_true", help="also time `make test`")
    ap.add_argument("--keep", type=Path, help="build the results here and keep them")
    ap.add_argument("--scale", type=float, default=1.0, help="fraction of the BTA spaces' sizes")
    ap.add_argument("--rounds", type=int, default=2, help="runs per timing (best is kept)")
    ap.add_argument("--old", type=Path, help="another source tree: each CLI timing taken with it too, interleaved")
    args = ap.parse_args()
    old = args.old.resolve() if args.old else None
    work = args.keep or Path(tempfile.mkdtemp(prefix="wsemoe-daily-"))
    work.mkdir(parents=True, exist_ok=True)
    load0, t_start, rows = os.getloadavg(), time.perf_counter(), []

    big = {**bta(2.0e6 * args.scale), "name": "daily_bta_2m"}
    (work / "bta_2m.yaml").write_text(yaml.safe_dump(big))
    for workers in (1, 2):
        r, o = best([*WSEMOE, "sweep", str(work / "bta_2m.yaml"), "--results", str(work), "-q", "-f", "-j", str(workers)],
                    args.rounds, old)
        points = json.loads((work / big["name"] / "manifest.json").read_text())["points"]
        rate = lambda s: f"{points / s / 1e6:.2f} M/s"  # noqa: E731
        rows.append((f"sweep, {points:,}-point BTA, every column, {workers} process{'es' if workers > 1 else ''}",
                     "≥ 1.00 M points/s" if workers == 1 else "", f"{points / r['wall'] / 1e6:.2f} M points/s",
                     f"{points / r['cpu'] / 1e6:.2f} M per CPU-s",
                     ("yes" if points / r["wall"] >= TARGETS["sweep_rate"] else "no") if workers == 1 else "",
                     before(o, rate)))

    plot_cfg = {**bta(1.2e6 * args.scale), "name": "daily_bta_1m2"}
    (work / "bta_1m2.yaml").write_text(yaml.safe_dump(plot_cfg))
    run([*WSEMOE, "sweep", str(work / "bta_1m2.yaml"), "--results", str(work), "-q", "-f"])
    points = json.loads((work / plot_cfg["name"] / "manifest.json").read_text())["points"]
    secs = lambda s: f"{s:.1f} s"  # noqa: E731
    r, o = best([*WSEMOE, "plot", str(work / plot_cfg["name"])], args.rounds, old)
    rows.append((f"plot, {points:,}-point BTA results ({len(r['out'].split())} files)", "< 5 s", f"{r['wall']:.1f} s",
                 f"{r['cpu']:.1f} CPU-s", "yes" if r["wall"] < TARGETS["plot_bta"] else "no", before(o, secs)))

    run([*WSEMOE, "sweep", str(ROOT / "sweeps" / "moentwine_scale.yaml"), "--results", str(work), "-q", "-f"])
    r, o = best([*WSEMOE, "plot", str(work / "moentwine_scale")], args.rounds, old)
    rows.append((f"plot, moentwine_scale ({len(r['out'].split())} files)", "< 10 s", f"{r['wall']:.1f} s",
                 f"{r['cpu']:.1f} CPU-s", "yes" if r["wall"] < TARGETS["plot_scale"] else "no", before(o, secs)))

    without, with_prompt, n = serving_cost()
    rows.append((f"serving metrics: decode model, {n:,} points, + prompt_len (TTFT)", "", f"{with_prompt:.3f} s",
                 f"{without:.3f} s without ({with_prompt / without:.2f}×)", "", ""))

    if args.tests:
        r = run(["make", "test"])
        rows.append(("make test", "< 6 min", f"{r['wall'] / 60:.1f} min", f"{r['cpu'] / 60:.1f} CPU-min",
                     "yes" if r["wall"] < TARGETS["make_test"] else "no", ""))

    cols = ["measurement", "target", "measured (wall)", "CPU", "met"] + ([f"with {old.name} (wall, CPU)"] if old else [])
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(row[:len(cols)]) + " |" for row in rows]
    load1 = os.getloadavg()
    lines.append(f"\nMeasured by bench/bench_daily.py in {time.perf_counter() - t_start:.0f} s on {os.cpu_count()} cores; "
                 f"load average {load0[0]:.1f} before, {load1[0]:.1f} after"
                 + (f" (scale {args.scale}: targets are for scale 1)" if args.scale != 1 else "")
                 + (f"; the last column ran the same commands with the source tree {old.name}, interleaved" if old else "")
                 + ".")
    OUT.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    print(f"results kept in {work}" if args.keep else f"(temporary folder {work})")


if __name__ == "__main__":
    main()
