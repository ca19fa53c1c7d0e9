"""Benchmark: how long the CLI takes before it answers (fresh processes, median of repeated runs).

Usage:
    python bench/bench_start.py            # 15 runs of each command
    python bench/bench_start.py --runs 40

Targets (issue 12): `wsemoe --help` under 0.2 s, `wsemoe check sweeps/quickstart.yaml` under 0.5 s.
Timings on a shared machine vary with its load: the median and the spread of the runs are printed.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CASES = [
    ("python -c pass (interpreter alone)", [sys.executable, "-c", "pass"], None),
    ("wsemoe --help", ["--help"], 0.2),
    ("wsemoe --version", ["--version"], None),
    ("wsemoe check sweeps/quickstart.yaml", ["check", "sweeps/quickstart.yaml"], 0.5),
    ("wsemoe check sweeps/moentwine_mapping.yaml", ["check", "sweeps/moentwine_mapping.yaml"], None),
    ("wsemoe check --estimate sweeps/quickstart.yaml", ["check", "--estimate", "sweeps/quickstart.yaml"], None),
]


def _cli() -> list[str]:
    exe = Path(sys.executable).with_name("wsemoe")
    return [str(exe)] if exe.exists() else [shutil.which("wsemoe") or "wsemoe"]


def _time(cmd: list[str], runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        r = subprocess.run(cmd, cwd=ROOT, capture_output=True)
        out.append(time.perf_counter() - t0)
        if r.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} failed: {r.stderr.decode()[-500:]}")
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=15)
    args = ap.parse_args()
    cli = _cli()
    print(f"{'command':<48} {'median':>8} {'min':>7} {'max':>7} {'target':>8}")
    for label, argv, target in CASES:
        cmd = argv if argv[0] == sys.executable else [*cli, *argv]
        _time(cmd, 1)  # warm the file cache
        t = _time(cmd, args.runs)
        med = statistics.median(t)
        verdict = "" if target is None else f"< {target:.1f} s " + ("ok" if med < target else "MISSED")
        print(f"{label:<48} {med:8.3f} {min(t):7.3f} {max(t):7.3f}   {verdict}")


if __name__ == "__main__":
    main()
