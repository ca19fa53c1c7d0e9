"""Benchmark: points per second of the vectorized cost model and of whole sweeps, against a
per-point Python loop over the same model measured in the same run, with peak memory.

Each case runs in a fresh subprocess so its peak RSS is its own. Usage:
    python bench/bench_sweep.py            # BTA and mesh spaces, plus a 10^7-point memory run
    python bench/bench_sweep.py --huge     # also the 10^8-point bounded-memory run (minutes)
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import tempfile
import time
from types import SimpleNamespace

BTA = {
    "name": "bench_bta", "hardware": "cs2", "model": "qwen3-30b-a3b",
    "workload": {"mode": "train", "seq_len": 8192},
    "axes": {"workload.seq_len": [2048, 8192], "model.num_experts": [8, 16, 32, 64, 128],
             "model.num_experts_per_tok": [1, 2, 4, 8], "workload.B": {"range": [1, 256]},
             "workload.G": {"range": [1, 64]}},
    "compare": {"name": "uniform", "baseline": {"workload.G": 1}},
}
MESH = {
    "name": "bench_mesh", "hardware": "wsc-b200-8x8", "model": "deepseek-v3",
    "workload": {"mode": "decode", "seq_len": 4096},
    "axes": {"mapping.strategy": ["block", "er", "snake", "random"], "mapping.tp": [4, 8, 16],
             "workload.B": {"range": [1, 8334]}},
}


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def case_model(cfg_dict) -> dict:
    """The cost model alone: step.evaluate on whole arrays per categorical group."""
    from wsemoe.sweep import engine
    from wsemoe.sweep import space
    from wsemoe.config.loader import load_config
    from wsemoe.cost import step
    from wsemoe.cost.comm import comm_model

    cfg = load_config(cfg_dict)
    frame = space.build_frame(cfg)
    cats = engine._categorical(frame)
    groups = list(frame.groupby(cats, sort=False)) if cats else [((), frame)]
    calls = []
    for key, sub in groups:
        key = key if isinstance(key, tuple) else (key,)
        ns = engine._namespaces(cfg, dict(zip(cats, key)), {c: sub[c].to_numpy() for c in sub if c not in cats})
        calls.append(ns)
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        for ns in calls:
            step.evaluate(ns["hardware"], ns["model"], ns["workload"], ns["mapping"],
                          comm=comm_model(ns["hardware"], ns["model"], ns["workload"], ns["mapping"], ns["balance"]))
        best = min(best, time.perf_counter() - t0)
    return {"points": len(frame), "seconds": best, "rss_mb": _rss_mb()}


def case_loop(cfg_dict, sample: int = 2000) -> dict:
    """Reference: the same model called once per point with Python scalars."""
    from wsemoe.sweep import engine
    from wsemoe.sweep import space
    from wsemoe.config.loader import load_config
    from wsemoe.cost import step
    from wsemoe.cost.comm import comm_model

    cfg = load_config(cfg_dict)
    n = cfg.size()
    frame = space.build_frame(cfg).iloc[:: max(1, n // sample)].head(sample)
    cats = engine._categorical(frame)
    rows = frame.to_dict("records")
    t0 = time.perf_counter()
    for r in rows:
        ns = engine._namespaces(cfg, {c: r[c] for c in cats}, {c: r[c] for c in r if c not in cats})
        step.evaluate(ns["hardware"], ns["model"], ns["workload"], ns["mapping"],
                      comm=comm_model(ns["hardware"], ns["model"], ns["workload"], ns["mapping"], ns["balance"]))
    return {"points": len(rows), "seconds": time.perf_counter() - t0, "rss_mb": _rss_mb()}


def case_sweep(cfg_dict, workers: int = 1) -> dict:
    """End to end: validation, baselines, evaluation, parquet parts, reductions, manifest."""
    from wsemoe.cost import structure
    from wsemoe.sweep.run import run_sweep

    structure.clear_cache()
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        res = run_sweep(cfg_dict, out_root=tmp, workers=workers, force=True)
        dt = time.perf_counter() - t0
    info = structure.cache_info()
    return {"points": res.manifest["points"], "seconds": dt, "rss_mb": _rss_mb(), "structures_built": info.misses}


def case_memory(points_exp: int) -> dict:
    """A 10^k-point sweep keeping few columns: peak memory stays bounded by the chunk size."""
    n = 10 ** points_exp
    b = max(1, n // (2 * 5 * 4 * 64))  # B values so that 2 × 5 × 4 × B × 64 ≈ 10^k
    cfg = {**BTA, "name": f"bench_1e{points_exp}", "compare": None,
           "axes": {**BTA["axes"], "workload.B": {"range": [1, b]}},
           "output": {"columns": ["mfu", "step_time_s"]}}
    cfg.pop("compare")
    return case_sweep(cfg)


def case_structures() -> dict:
    """Cold build time of every structure of the 4-wafer system (2×2 wafers of 8×8 dies): each strategy, TP and
    token flow with uniform experts, and with the NI-Balancer's replicas at one expert per die."""
    from wsemoe.cost import structure

    bal = [structure.UNIFORM] + [structure.BalanceKey("zipf", 1.0, 1, "non-invasive", 2, None, 2.0, 256, "water-fill", p)
                                 for p in ("hot", "fill")]
    times = []
    for strategy in ("block", "er", "her"):
        for tp in (1, 4, 16):
            for source in ("auto", "slice"):
                for b in bal:
                    structure.clear_cache()
                    t0 = time.perf_counter()
                    structure.build("mesh", 8, 8, tp, strategy, None, 0, None, source, 256, b, (2, 2))
                    times.append(time.perf_counter() - t0)
    return {"built": len(times), "max_s": max(times), "median_s": sorted(times)[len(times) // 2], "rss_mb": _rss_mb()}


CASES = {"model": case_model, "loop": case_loop, "sweep": case_sweep, "memory": case_memory,
         "structures": case_structures}


def run_case(name, *args) -> dict:
    """Run one case in a fresh interpreter (its own peak RSS)."""
    out = subprocess.run([sys.executable, __file__, "--case", name, json.dumps(args)],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(huge: bool) -> None:
    rows = []
    for label, cfg in (("BTA space", BTA), ("mesh space", MESH)):
        loop = run_case("loop", cfg)
        model = run_case("model", cfg)
        e2e = run_case("sweep", cfg)
        e2e2 = run_case("sweep", cfg, 2)
        ref = loop["points"] / loop["seconds"]
        for what, r in (("per-point Python loop (reference)", loop), ("cost model alone", model),
                        ("end to end, 1 process", e2e), ("end to end, 2 workers", e2e2)):
            rate = r["points"] / r["seconds"]
            rows.append(SimpleNamespace(space=label, what=what, points=r["points"], rate=rate, ratio=rate / ref,
                                        rss=r["rss_mb"], built=r.get("structures_built")))
    for k in ([7, 8] if huge else [7]):
        r = run_case("memory", k)
        rows.append(SimpleNamespace(space=f"10^{k} points, 3 output columns", what="end to end, 1 process",
                                    points=r["points"], rate=r["points"] / r["seconds"], ratio=float("nan"),
                                    rss=r["rss_mb"], built=None))
    head = f"| {'space':<32} | {'measurement':<44} | {'points':>11} | {'points/s':>11} | {'× loop':>7} | {'peak RSS':>9} |"
    print(head)
    print("|" + "|".join("-" * (len(c)) for c in head.split("|")[1:-1]) + "|")
    for r in rows:
        ratio = "–" if r.ratio != r.ratio else f"{r.ratio:,.0f}"
        note = f" ({r.built} structures built)" if r.built else ""
        print(f"| {r.space:<32} | {(r.what + note):<44} | {r.points:>11,} | {r.rate:>11,.0f} | {ratio:>7} | {r.rss:>6,.0f} MB |")
    st = run_case("structures")
    print(f"\n4-wafer system (2×2 wafers of 8×8, 256 dies): {st['built']} structures built cold, "
          f"median {st['median_s']:.3f} s, slowest {st['max_s']:.3f} s each")


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--case":
        print(json.dumps(CASES[sys.argv[2]](*json.loads(sys.argv[3]))))
    else:
        main(huge="--huge" in sys.argv)
