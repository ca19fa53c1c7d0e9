"""Benchmark: what verified reads cost. Every reader checks every part's SHA-256 against the manifest; the
first read of a results folder hashes it, later reads only compare each file's identity (size, inode,
times) with the per-user cache (`wsemoe/store/verified.py`).

Usage:
    python bench/bench_verified.py            # the 655,360-point BTA space of bench_sweep.py
    python bench/bench_verified.py --scale 0.1

Each command runs in a fresh process (as a user runs it), first with an empty cache, then again; the
verification alone is also timed in this process. The machine is shared: read the numbers within one run.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from bench_sweep import BTA  # noqa: E402  (the same space as the speed table)


def _run(argv: list[str], env: dict) -> float:
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "wsemoe.cli", *argv], env=env, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed: {r.stderr.strip()}")
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scale", type=float, default=1.0, help="fraction of the G axis (1: 655,360 points)")
    args = ap.parse_args()
    from wsemoe.store import store
    from wsemoe.sweep.run import run_sweep

    cfg = {**BTA, "axes": {**BTA["axes"], "workload.G": {"range": [1, max(1, round(64 * args.scale))]}}}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        (tmp / "bta.yaml").write_text(yaml.safe_dump(cfg))
        cache = tmp / "cache"
        env = {**os.environ, "WSEMOE_CACHE_DIR": str(cache), "CI": "1"}
        os.environ["WSEMOE_CACHE_DIR"] = str(cache)
        res = run_sweep(tmp / "bta.yaml", out_root=tmp / "results")
        man = res.manifest
        size = sum(p["bytes"] for p in man["parts"]) + sum(f["bytes"] for f in man["files"].values())
        rows = [("points", f"{man['points']:,}"), ("parts", f"{len(man['parts'])}"),
                ("bytes checked", f"{size / 1e6:.1f} MB")]
        for label, fn in (("verify alone (this process)", lambda: store.load_manifest(res.path)),):
            cold = _timed_cold(cache, fn)
            warm = _timed(fn)
            rows += [(f"{label}: first read", f"{cold:.3f} s ({size / 1e6 / cold:.0f} MB/s)"),
                     (f"{label}: cached", f"{warm * 1e3:.1f} ms")]
        for label, argv in (("`wsemoe show`", ["show", str(res.path)]),
                            ("`wsemoe sweep` (up to date)", ["sweep", str(tmp / "bta.yaml"), "--results",
                                                             str(tmp / "results")])):
            _clear(cache)
            cold = _run(argv, env)
            warm = min(_run(argv, env) for _ in range(2))
            rows += [(f"{label}: first read", f"{cold:.2f} s"), (f"{label}: cached", f"{warm:.2f} s")]
        load = os.getloadavg()[0]
    print("| measurement | value |\n|---|---:|")
    for k, v in rows:
        print(f"| {k} | {v} |")
    print(f"\nload average {load:.1f}; each command in a fresh process (interpreter start and imports included)")


def _clear(cache: Path) -> None:
    import shutil

    shutil.rmtree(cache, ignore_errors=True)


def _timed_cold(cache: Path, fn) -> float:
    _clear(cache)
    return _timed(fn)


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


if __name__ == "__main__":
    main()
