"""Benchmark: points per second of the cost model and of whole sweeps against a per-point Python loop
over the same model, timed interleaved in one process, plus a search against the exact front.

Every case of a space runs once per round, rounds repeat (best of N), so the reference loop and the
vectorized paths see the same machine load; wall time and CPU time (this process and its worker
processes) are both reported, and every ratio is taken against the loop of the same run. The 10^7-
point runs use subprocesses for their own peak memory. Usage:

    python bench/bench_sweep.py            # full run (a few minutes), writes bench/speed.md
    python bench/bench_sweep.py --quick    # smaller spaces and fewer rounds (under a minute)
    python bench/bench_sweep.py --readme   # also copy bench/speed.md into docs/benchmarks.md's speed section
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from readme import update_readme  # bench/readme.py: the script's own folder is on sys.path

HERE = Path(__file__).resolve().parent
OUT = HERE / "speed.md"
MARK = ("<!-- bench:start -->", "<!-- bench:end -->")

BTA = {"name": "bench_bta", "hardware": "cs2", "model": "qwen3-30b-a3b", "workload": {"mode": "train", "seq_len": 8192},
       "axes": {"workload.seq_len": [2048, 8192], "model.num_experts": [8, 16, 32, 64, 128],
                "model.num_experts_per_tok": [1, 2, 4, 8], "workload.B": {"range": [1, 256]},
                "workload.G": {"range": [1, 64]}},
       "compare": {"name": "uniform", "baseline": {"workload.G": 1}}}
MESH = {"name": "bench_mesh", "hardware": "wsc-b200-8x8", "model": "deepseek-v3",
        "workload": {"mode": "decode", "seq_len": 4096},
        "axes": {"mapping.strategy": ["block", "er", "snake", "random"], "mapping.tp": [4, 8, 16],
                 "workload.B": {"range": [1, 8334]}}}
SEARCH = {"name": "bench_search", "hardware": "cs2", "model": "qwen3-30b-a3b", "workload": {"mode": "train", "seq_len": 8192},
          "axes": {"workload.recompute": ["none", "selective", "full"], "workload.attn_kernel": ["materialized", "flash"],
                   "workload.seq_len": [2048, 4096, 8192], "model.num_experts": [8, 16, 32, 64, 128],
                   "model.num_experts_per_tok": [2, 8], "workload.B": {"range": [1, 64]}, "workload.G": {"range": [1, 64]}},
          "objectives": {"tokens_per_s": "max", "mem_peak_node_bytes": "min"}}
NARROW = {"columns": ["mfu", "step_time_s"]}
TARGETS = {"bta_model": 10e6, "bta_all": 1.5e6, "bta_narrow": 4e6, "mesh_e2e": 0.5e6}


def quick_spaces():
    """Smaller spaces of the same shape for --quick."""
    bta = {**BTA, "axes": {**BTA["axes"], "workload.B": {"range": [1, 64]}}}
    mesh = {**MESH, "axes": {**MESH["axes"], "workload.B": {"range": [1, 2000]}}}
    search = {**SEARCH, "axes": {k: v for k, v in SEARCH["axes"].items() if k != "model.num_experts_per_tok"}}
    return bta, mesh, search


def _cpu() -> float:
    """CPU seconds of this process and of its finished children (worker processes)."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def timed(fn):
    """(result, wall seconds, CPU seconds) of one call."""
    c0, t0 = _cpu(), time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0, _cpu() - c0


def reference_loop(cfg_dict, sample: int = 2000):
    """The same model called once per point with Python scalars: the reference every ratio uses."""
    from wsemoe.config.loader import load_config
    from wsemoe.sweep import engine

    cfg = load_config(cfg_dict)
    ev = engine.Evaluator(cfg)
    picks = np.linspace(0, cfg.size() - 1, sample).astype(np.int64)
    digits = ev.grid.digits(picks)
    rows = [{p: f.values[p][int(d[k])] for f, d in zip(ev.grid.factors, digits) for p in f.paths}
            for k in range(sample)]

    def run():
        for values in rows:
            ev.call(values)
        return sample
    return run


def model_alone(cfg_dict, materialize: bool = True):
    """The engine's cost-model pass over every point: each output as the model computes it (an array
    over the axes it depends on, a broadcast view over all points), or also copied into one
    contiguous column per output (what the files need). No feasibility, no files."""
    from wsemoe.config.loader import load_config
    from wsemoe.sweep import engine
    from wsemoe.sweep.chunked import DEFAULT_CHUNK

    cfg = load_config(cfg_dict)
    ev = engine.Evaluator(cfg)

    def run():
        for start in range(0, cfg.size(), DEFAULT_CHUNK):
            out = ev.range(start, min(cfg.size(), start + DEFAULT_CHUNK))
            for name in out.names if materialize else ():
                out.column(name)
        return cfg.size()
    return run


def end_to_end(cfg_dict, workers: int = 1, cold: bool = False):
    """A sweep end to end: validation, baselines, evaluation, parquet parts, reductions, manifest, CSVs."""
    from wsemoe.cost import structure
    from wsemoe.sweep.run import run_sweep

    def run():
        if cold:  # structures rebuilt each time: their cost belongs to the sweep
            structure.clear_cache()
        with tempfile.TemporaryDirectory() as tmp:
            return run_sweep(cfg_dict, out_root=tmp, workers=workers, force=True).manifest["points"]
    return run


def interleaved(cases: dict, rounds: int) -> dict:
    """Best-of-`rounds` wall and CPU time of each case, every case run once per round."""
    best = {k: {"wall": np.inf, "cpu": np.inf} for k in cases}
    for _ in range(rounds):
        for name, fn in cases.items():
            points, wall, cpu = timed(fn)
            best[name] = {"points": points, "wall": min(best[name]["wall"], wall), "cpu": min(best[name]["cpu"], cpu)}
    return best


def memory_case(exp: int, workers: int) -> dict:
    """A 10^exp-point BTA sweep keeping three outputs, in this (fresh) process: time and peak memory."""
    n = 10 ** exp
    b = max(1, n // (2 * 5 * 4 * 64))  # B values so that 2 × 5 × 4 × B × 64 ≈ 10^exp
    cfg = {k: v for k, v in BTA.items() if k != "compare"}
    cfg = {**cfg, "name": f"bench_1e{exp}", "axes": {**BTA["axes"], "workload.B": {"range": [1, b]}}, "output": NARROW}
    points, wall, cpu = timed(end_to_end(cfg, workers))
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return {"points": points, "wall": wall, "cpu": cpu, "rss_mb": max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                                                                      kids) / 1024}


def run_memory(exp: int, workers: int) -> dict:
    out = subprocess.run([sys.executable, __file__, "--case", json.dumps([exp, workers])], capture_output=True,
                         text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def search_check(space: dict, shares: tuple) -> list[dict]:
    """The exact front of an enumerable space against searches given `shares` of its points.

    Hypervolume (moocore) in normalized minimization space: each objective mapped so that the exact
    front spans [0, 1] (its best value at 0), reference point 1.1 in every objective.
    """
    import moocore

    from wsemoe.sweep.run import run_sweep

    senses = list(space["objectives"].items())

    def F(front):
        return np.column_stack([-front[c] if s == "max" else front[c] for c, s in senses]).astype(float)

    out = []
    with tempfile.TemporaryDirectory() as tmp:
        grid, g_wall, g_cpu = timed(lambda: run_sweep(space, out_root=tmp, force=True))
        exact = F(grid.pareto)
        lo, hi = exact.min(axis=0), exact.max(axis=0)
        ref = np.full(len(senses), 1.1)
        hv_exact = moocore.hypervolume((exact - lo) / (hi - lo), ref=ref)
        for share in shares:
            budget = int(share * grid.manifest["points"])
            cfg = {**space, "name": "bench_searched", "search": {"algorithm": "nsga2", "evaluations": budget, "seed": 1}}
            found, s_wall, s_cpu = timed(lambda: run_sweep(cfg, out_root=tmp, force=True))
            out.append({"space": grid.manifest["points"], "evaluated": found.manifest["points"], "share": share,
                        "exact_front": len(grid.pareto), "found_front": len(found.pareto), "hv_exact": hv_exact,
                        "hv_found": moocore.hypervolume((F(found.pareto) - lo) / (hi - lo), ref=ref),
                        "grid_wall": g_wall, "grid_cpu": g_cpu, "search_wall": s_wall, "search_cpu": s_cpu,
                        "generations": found.manifest["search"]["generations"],
                        "population": found.manifest["search"]["population"]})
    return out


def breakdown(cfg_dict) -> dict:
    """Where one process's CPU goes per million points, every stage timed on its own (one thread)."""
    import hashlib

    from wsemoe.config.loader import load_config
    from wsemoe.sweep import chunked, engine, executors
    from wsemoe.store import partfile

    cfg = load_config(cfg_dict)
    base = chunked.baseline_best(cfg)
    ev = engine.Evaluator(cfg)
    t = {"model (outputs into columns)": 0.0, "feasibility, speedup, front, stats": 0.0, "parquet encoding": 0.0,
         "SHA-256": 0.0}
    with executors.kept_heap():
        for start in range(0, cfg.size(), chunked.DEFAULT_CHUNK):
            stop = min(cfg.size(), start + chunked.DEFAULT_CHUNK)
            c0 = time.thread_time()
            out = ev.range(start, stop)
            for name in out.names:
                out.column(name)
            c1 = time.thread_time()
            res = chunked.run_chunk(cfg, start, stop, base, evaluator=ev)
            c2 = time.thread_time()
            data = partfile.to_bytes(res.points)
            c3 = time.thread_time()
            hashlib.sha256(data).hexdigest()
            c4 = time.thread_time()
            for k, v in zip(t, (c1 - c0, (c2 - c1) - (c1 - c0), c3 - c2, c4 - c3)):
                t[k] += v
    return {k: v / cfg.size() * 1e6 for k, v in t.items()}


def structures_case() -> dict:
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
    return {"built": len(times), "max_s": max(times), "median_s": sorted(times)[len(times) // 2]}


def _rate(r: dict) -> float:
    return r["points"] / r["wall"]


def _row(space: str, what: str, r: dict, ref: float | None) -> str:
    ratio = f"{_rate(r) / ref:,.0f}" if ref else "–"
    rss = f"{r['rss_mb']:,.0f} MB" if "rss_mb" in r else ""
    return (f"| {space} | {what} | {r['points']:,} | {_rate(r):,.0f} | {r['points'] / r['cpu']:,.0f} | {ratio} |"
            f" {r['wall']:.3f} | {r['cpu']:.3f} | {rss} |")


def measure(quick: bool) -> dict:
    bta, mesh, search = quick_spaces() if quick else (BTA, MESH, SEARCH)
    rounds = 2 if quick else 3
    narrow = {**bta, "output": NARROW}
    cases = {"bta_loop": reference_loop(bta), "bta_model": model_alone(bta, False), "bta_columns": model_alone(bta),
             "bta_all": end_to_end(bta),
             "bta_narrow": end_to_end(narrow), "bta_2w": end_to_end(bta, 2),
             "mesh_loop": reference_loop(mesh, 500), "mesh_model": model_alone(mesh, False),
             "mesh_columns": model_alone(mesh),
             "mesh_e2e": end_to_end(mesh, cold=True), "mesh_warm": end_to_end(mesh), "mesh_2w": end_to_end(mesh, 2)}
    res = interleaved(cases, rounds)
    exp = 6 if quick else 7
    big = {"1": [], "2": []}
    for _ in range(1 if quick else 2):  # one process and two workers alternate
        for w in (1, 2):
            big[str(w)].append(run_memory(exp, w))
    res["big_1"], res["big_2"] = (min(big[w], key=lambda r: r["wall"]) for w in ("1", "2"))
    res["exp"] = exp
    res["search"] = search_check(search, (0.05, 0.01))
    res["breakdown"] = breakdown(bta)
    res["structures"] = structures_case()
    return res


def report(res: dict, quick: bool, seconds: float, load: tuple) -> str:
    """The Markdown docs/benchmarks.md shows: the table, the targets, the search check, where the time goes."""
    import pymoo
    import pyarrow

    ref_b, ref_m = _rate(res["bta_loop"]), _rate(res["mesh_loop"])
    n_b, n_m = res["bta_all"]["points"], res["mesh_e2e"]["points"]
    lines = [
        "| space | measurement | points | points/s (wall) | points per CPU-s | × loop | wall s | CPU s | peak RSS |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
        _row("BTA", "per-point Python loop (reference)", res["bta_loop"], ref_b),
        _row("BTA", "cost model alone (outputs as broadcast arrays)", res["bta_model"], ref_b),
        _row("BTA", "cost model alone, outputs copied into columns", res["bta_columns"], ref_b),
        _row("BTA", "end to end, every column, 1 process", res["bta_all"], ref_b),
        _row("BTA", "end to end, `output.columns: [mfu, step_time_s]`", res["bta_narrow"], ref_b),
        _row("BTA", "end to end, every column, 2 workers", res["bta_2w"], ref_b),
        _row("mesh", "per-point Python loop (reference)", res["mesh_loop"], ref_m),
        _row("mesh", "cost model alone (structures cached)", res["mesh_model"], ref_m),
        _row("mesh", "cost model alone, outputs copied into columns", res["mesh_columns"], ref_m),
        _row("mesh", "end to end, 1 process, 12 structures built", res["mesh_e2e"], ref_m),
        _row("mesh", "end to end, 1 process, structures cached", res["mesh_warm"], ref_m),
        _row("mesh", "end to end, 2 workers (each builds its structures)", res["mesh_2w"], ref_m),
        _row(f"10^{res['exp']} BTA", "end to end, 3 outputs kept, 1 process", res["big_1"], None),
        _row(f"10^{res['exp']} BTA", "end to end, 3 outputs kept, 2 workers", res["big_2"], None),
    ]
    t = TARGETS if not quick else {}
    lines += ["", f"Spaces: BTA {n_b:,} points (S × E × top-k × B × G on CS-2, Qwen3-30B-A3B), mesh {n_m:,} points "
              "(4 strategies × TP {4, 8, 16} × decode batches on wsc-b200-8x8, DeepSeek-V3). "
              f"Best of {2 if quick else 3} interleaved rounds; CPU time counts every thread and worker process."]
    if t:
        lines += ["", "| target | wanted | measured (wall) | measured (per CPU-second) | met |", "|---|---:|---:|---:|---|"]
        for key, what in (("bta_model", "BTA cost model alone"), ("bta_all", "BTA end to end, every column"),
                          ("bta_narrow", "BTA end to end, narrow output.columns"), ("mesh_e2e", "mesh end to end")):
            r = res[key]
            lines.append(f"| {what} | ≥ {t[key] / 1e6:g} M points/s | {_rate(r) / 1e6:.2f} M | "
                         f"{r['points'] / r['cpu'] / 1e6:.2f} M | {'yes' if _rate(r) >= t[key] else 'no'} |")
        faster = res["big_2"]["wall"] < res["big_1"]["wall"]
        lines.append(f"| 2 workers faster than 1, 10^{res['exp']} points | < {res['big_1']['wall']:.2f} s | "
                     f"{res['big_2']['wall']:.2f} s | | {'yes' if faster else 'no'} |")
    lines += ["", "Search (NSGA-II, seed 1) on a space that can also be enumerated: hypervolume of the front it found "
              "over that of the exact grid front (both normalized so the exact front spans [0, 1] per objective, "
              "reference point 1.1; `moocore.hypervolume`).", "",
              "| space | evaluated | share | generations × population | front found / exact | hypervolume | search s (CPU) | grid s (CPU) |",
              "|---:|---:|---:|---|---|---:|---:|---:|"]
    for r in res["search"]:
        lines.append(f"| {r['space']:,} | {r['evaluated']:,} | {r['evaluated'] / r['space']:.1%} | "
                     f"{r['generations']} × {r['population']} | {r['found_front']} / {r['exact_front']} | "
                     f"{r['hv_found'] / r['hv_exact']:.2%} | {r['search_wall']:.1f} ({r['search_cpu']:.1f}) | "
                     f"{r['grid_wall']:.1f} ({r['grid_cpu']:.1f}) |")
    b = res["breakdown"]
    lines += ["", "Where one process's CPU goes, per million BTA points (every column): " +
              "; ".join(f"{k} {v:.3f} s" for k, v in b.items()) + "."]
    st = res["structures"]
    lines += ["", f"Structures of the 4-wafer system (2×2 wafers of 8×8 dies; block, ER and HER × TP 1, 4, 16 × two "
              f"token flows × uniform, hot and filled replicas): {st['built']} cold builds, median "
              f"{st['median_s']:.3f} s, slowest {st['max_s']:.3f} s."]
    lines += ["", f"Measured by `bench/bench_sweep.py{' --quick' if quick else ''}` in {seconds:.0f} s on "
              f"{os.cpu_count()} cores (load average {load[0]:.1f} before, {os.getloadavg()[0]:.1f} after; other "
              f"work on the machine moves wall times, CPU times much less); pyarrow {pyarrow.__version__}, "
              f"pymoo {pymoo.__version__}."]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> None:
    quick = "--quick" in argv
    load, t0 = os.getloadavg(), time.perf_counter()
    res = measure(quick)
    text = report(res, quick, time.perf_counter() - t0, load)
    print(text)
    if not quick:
        OUT.write_text(text)
    if "--readme" in argv:
        update_readme(OUT.read_text(), MARK)


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--case":
        print(json.dumps(memory_case(*json.loads(sys.argv[2]))))
    else:
        main(sys.argv[1:])
