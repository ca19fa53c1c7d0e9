"""Benchmark: huge meshes. Structures on the compact traffic patterns against the general N×N path in the
same run, a 128×128 all-to-all phase without any N×N array, and a 64×64 sweep's peak memory.

- structures: cold build time (best of N) and tracemalloc peak of 64×64 structures, compact path vs the
  general path (every step evaluated on its N×N matrix, `structure.DENSE_MAX_NODES` raised), and the largest
  relative difference of any structural number between them;
- all-to-all: a uniform all-to-all phase (the slice dispatch) on 128×128 = 16,384 dies in closed form,
  against the same phase on 64×64 on the general path (128×128 would need 2.1 GB per N×N matrix);
- sweep: peak RSS of whole sweeps (fresh processes) on 64×64 with 12, 48 and 96 structures (more than the
  structure caches keep), against the same 12-structure sweep on 8×8 (the process's own footprint) and on
  the general path.

Usage: python bench/bench_mesh.py [--quick] [--readme]   (writes bench/mesh.md; --readme also copies it into
       docs/benchmarks.md between the mesh markers)
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np
from readme import update_readme  # bench/readme.py: the script's own folder is on sys.path

HERE = Path(__file__).resolve().parent
OUT = HERE / "mesh.md"
GENERAL = 10**9   # DENSE_MAX_NODES that sends every step down the general N×N path
CASES = {   # (strategy, tp, token source, balancer): a 64×64 structure each, DeepSeek-V3's 256 experts
    "block, tp 4": ("block", 4, "auto", "none"),
    "ER, tp 4": ("er", 4, "auto", "none"),
    "random, tp 1": ("random", 1, "auto", "none"),
    "ER, tp 4, slice (all-to-all)": ("er", 4, "slice", "none"),
    "ER, tp 4, balanced (Zipf 1)": ("er", 4, "auto", "non-invasive"),
    "random, tp 1, balanced": ("random", 1, "auto", "non-invasive"),
    "block, tp 2, balanced (groups × N transfers)": ("block", 2, "auto", "non-invasive"),
}
SWEEP = {"name": "bench_mesh64", "hardware": {"preset": "wsc-b200-8x8", "rows": 64, "cols": 64},
         "model": "deepseek-v3", "workload": {"mode": "decode", "seq_len": 4096},
         "axes": {"mapping.strategy": ["block", "er", "snake", "random"], "mapping.tp": [4, 8, 16],
                  "workload.B": {"range": [1, 8334]}}}


def build(case, rows: int = 64, dense_max=None):
    """A cold build of one structure (caches cleared), on the general path when `dense_max` is given."""
    from wsemoe.cost import structure

    strategy, tp, source, balancer = case
    structure.clear_cache()
    old = structure.DENSE_MAX_NODES
    structure.DENSE_MAX_NODES = old if dense_max is None else dense_max
    try:
        bal = structure.BalanceKey("zipf", 1.0, 1, balancer, 2)
        return structure.build("mesh", rows, rows, tp, strategy, None, 0, None, source, 256, bal)
    finally:
        structure.DENSE_MAX_NODES = old
        structure.clear_cache()


def measure(fn, rounds: int) -> dict:
    """Best-of-`rounds` wall seconds of fn(), then its tracemalloc peak (MB) in one more, traced call."""
    best = np.inf
    for _ in range(rounds):
        gc.collect()
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    gc.collect()
    tracemalloc.start()
    fn()
    peak = tracemalloc.get_traced_memory()[1] / 1e6
    tracemalloc.stop()
    return {"s": best, "mb": peak, "out": out}


def numbers(s) -> np.ndarray:
    """Every structural number a sweep reads, flattened (to compare the two paths)."""
    vals = [s.ring_step_hops, s.hot_overlap, s.inter_ftd_share, s.inter_wafer_share, s.expert_imbalance]
    for ph in s.phases.values():
        vals += [ph.max_link, ph.max_hops, ph.mean_hops, ph.idle_share]
        vals += [x for st in ph.steps for x in (st.max_link, st.max_cross, st.max_inject, st.max_eject)]
        if ph.loads is not None:
            vals += list(ph.loads.all_links())
    return np.asarray(vals + list(s.node_load), dtype=float)


def structures(rounds: int) -> list[dict]:
    rows = []
    for name, case in CASES.items():
        fast = measure(lambda: build(case), rounds)
        ref = measure(lambda: build(case, dense_max=GENERAL), 1)
        a, b = numbers(fast["out"]), numbers(ref["out"])
        both = np.isfinite(a) & np.isfinite(b)
        assert np.array_equal(np.isfinite(a), np.isfinite(b)) and np.array_equal(a[~both], b[~both], equal_nan=True)
        diff = float(np.max(np.abs(a - b)[both] / np.maximum(np.abs(b[both]), 1e-300), initial=0.0))
        rows.append({"case": name, "s": fast["s"], "mb": fast["mb"], "ref_s": ref["s"], "ref_mb": ref["mb"],
                     "rel_diff": diff})
    return rows


def all_to_all(rounds: int) -> list[dict]:
    """A uniform all-to-all phase: closed form at 128×128 and 64×64, general path at 64×64."""
    from wsemoe.cost.fabric import collectives, topology, patterns
    from wsemoe.cost import structure

    def phase(rows, dense):
        layout = topology.Layout("mesh", rows, rows)
        ones = np.ones(rows * rows)
        p = patterns.Outer((rows, rows), ones, ones)
        return structure.phase_peaks(layout, [collectives.StepTraffic(patterns.Dense(p.dense()) if dense else p, 1, False)])

    out = []
    for rows, dense in ((128, False), (64, False), (64, True)):
        m = measure(lambda: phase(rows, dense), rounds if not dense else 1)
        out.append({"mesh": f"{rows}×{rows}", "path": "general N×N" if dense else "closed form", "s": m["s"],
                    "mb": m["mb"], "max_link": m["out"].max_link, "nxn_mb": (rows * rows) ** 2 * 8 / 1e6})
    whole = measure(lambda: build(CASES["ER, tp 4, slice (all-to-all)"], rows=128), 1)   # every phase of it
    out.append({"mesh": "128×128", "path": "whole structure (ER, tp 4, slice)", "s": whole["s"], "mb": whole["mb"],
                "max_link": whole["out"].phases["dispatch"].max_link, "nxn_mb": 128**4 * 8 / 1e6})
    return out


SWEEP_SCRIPT = """
import json, sys, tempfile
from wsemoe.cost import structure
from wsemoe.sweep.run import run_sweep
cfg, dense_max = json.loads(sys.argv[1]), json.loads(sys.argv[2])
if dense_max is not None:
    structure.DENSE_MAX_NODES = dense_max
with tempfile.TemporaryDirectory() as tmp:
    points = run_sweep(cfg, out_root=tmp, force=True).manifest["points"]
# VmHWM, not ru_maxrss: Linux carries the parent's peak across fork + exec into ru_maxrss
hwm = [line.split()[1] for line in open("/proc/self/status") if line.startswith("VmHWM")][0]
print(json.dumps({"points": points, "rss_mb": int(hwm) / 1024}))
"""


def sweep_rss(cfg: dict, dense_max=None) -> dict:
    """Points, wall seconds and peak RSS (MB) of one sweep in a fresh process."""
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", SWEEP_SCRIPT, json.dumps(cfg), json.dumps(dense_max)],
                         capture_output=True, text=True, check=True, env={**os.environ, "PYTHONHASHSEED": "0"})
    return {**json.loads(out.stdout.strip().splitlines()[-1]), "s": time.perf_counter() - t0}


def sweeps(quick: bool) -> list[dict]:
    small = {**SWEEP, "hardware": {"preset": "wsc-b200-8x8"}}
    many = {**SWEEP, "axes": {**SWEEP["axes"], "model.num_experts": [64, 128, 256, 512],
                              "workload.B": {"range": [1, 2084]}}}
    runs = [("8×8, 12 structures (footprint)", small, None), ("64×64, 12 structures", SWEEP, None),
            ("64×64, 48 structures", many, None)]
    if not quick:   # more structures than the caches keep (CACHE_NODES: 64 at 64×64), and the general path
        more = {**SWEEP, "axes": {**SWEEP["axes"], "model.num_experts": [16, 32, 64, 96, 128, 192, 256, 512],
                                  "workload.B": {"range": [1, 1042]}}}
        runs += [("64×64, 96 structures", more, None), ("64×64, 12 structures, general N×N path", SWEEP, GENERAL)]
    return [{"sweep": name, **sweep_rss(cfg, d)} for name, cfg, d in runs]


def report(st: list[dict], a2a: list[dict], sw: list[dict], seconds: float) -> str:
    lines = ["| 64×64 structure (cold build) | compact s | compact MB | general N×N s | general MB | × faster | "
             "max rel. diff |", "|---|---|---|---|---|---|---|"]
    lines += [f"| {r['case']} | {r['s']:.2f} | {r['mb']:.0f} | {r['ref_s']:.2f} | {r['ref_mb']:.0f} | "
              f"{r['ref_s'] / r['s']:.1f} | {r['rel_diff']:.1e} |" for r in st]
    lines += ["", "| uniform all-to-all phase | path | s | peak MB | one N×N matrix would be (MB) | busiest link |",
              "|---|---|---|---|---|---|"]
    lines += [f"| {r['mesh']} | {r['path']} | {r['s']:.3f} | {r['mb']:.0f} | {r['nxn_mb']:,.0f} | {r['max_link']:,.0f} |"
              for r in a2a]
    lines += ["", "| sweep (fresh process) | points | s | peak RSS MB |", "|---|---|---|---|"]
    lines += [f"| {r['sweep']} | {r['points']:,} | {r['s']:.1f} | {r['rss_mb']:.0f} |" for r in sw]
    load = os.getloadavg()[0]
    lines += ["", f"Measured by `bench/bench_mesh.py` in {seconds:.0f} s (load average {load:.1f} at the end); "
                  "targets: a 64×64 structure under 2 s and 200 MB."]
    return "\n".join(lines) + "\n"


MARK = ("<!-- mesh:start -->", "<!-- mesh:end -->")


def main(argv: list[str]) -> None:
    quick = "--quick" in argv
    t0 = time.perf_counter()
    st = structures(1 if quick else 3)
    a2a = all_to_all(1 if quick else 3)
    sw = sweeps(quick)
    text = report(st, a2a, sw, time.perf_counter() - t0)
    print(text)
    if not quick:
        OUT.write_text(text)
    if "--readme" in argv and not quick:
        update_readme(text, MARK)


if __name__ == "__main__":
    sys.path.insert(0, str(HERE.parent))
    main(sys.argv[1:])
