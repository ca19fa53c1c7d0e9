"""Benchmark: SRAM serving (weight_source: sram). Points per second of the serving model, vectorized against a
per-point Python loop over the same model in the same run; the shipped serving sweep end to end; and the build
time of a whole wafer's structure at region granularity (every layer block placed on the fabric's grid of tiles,
its dispatch routed with exact XY link loads), on the full CS-2 (757 × 996) and CS-3 (762 × 1172) fabrics.

Usage: python bench/bench_serving.py [--quick] [--readme]   (writes bench/serving.md; --readme also copies it
       into docs/benchmarks.md between the serving-bench markers)
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
from readme import publish  # bench/readme.py: the script's own folder is on sys.path

HERE = Path(__file__).resolve().parent
OUT = HERE / "serving.md"
MARK = ("<!-- bench-serving:start -->", "<!-- bench-serving:end -->")
SPACE = {"name": "bench_serving", "hardware": {"preset": "cs3", "weight_source": "sram"}, "model": "qwen3-30b-a3b",
         "workload": {"mode": "decode", "seq_len": 8192, "prompt_len": 1024},
         "axes": {"model": ["qwen3-30b-a3b", "qwen3-235b-a22b", "deepseek-v3"], "workload.B": {"range": [1, 256]},
                  "workload.seq_len": [4096, 32768, 131072], "hardware.pipeline_wafers": [16, 24, 32, 48, 64],
                  "mapping.pe_placement": ["blocked", "interleaved"]}}
FABRICS = {"cs2": "CS-2, 757 × 996 PEs", "cs3": "CS-3, 762 × 1172 PEs"}
MODELS = ("qwen3-30b-a3b", "qwen3-235b-a22b", "deepseek-v3")


def best(fn, rounds: int, cpu: bool = False):
    """(result, best wall seconds over `rounds` calls) or, with `cpu`, (result, best wall seconds, this process's CPU
    seconds in the least of the rounds: what other work on the machine moves much less)."""
    times, cpus, out = [], [], None
    for _ in range(rounds):
        t0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        times.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    return (out, min(times), min(cpus)) if cpu else (out, min(times))


def clear():
    """Forget every cached layer structure, structural result and stage split (cold builds)."""
    from wsemoe.cost.wafer import geometry, stagesplit, traffic, unique

    traffic.layer_traffic.cache_clear()
    geometry.summary.cache_clear()
    unique.clear()
    stagesplit.clear()


def sweep_rate(space: dict, rounds: int, forget=None) -> dict:
    """Points per second of the whole space through the engine, cold (`forget` clears the structures it would
    reuse; default `clear`) and warm."""
    from wsemoe.config.loader import load_config
    from wsemoe.sweep import engine

    cfg = load_config(space)

    def cold():
        (forget or clear)()
        return engine.evaluate_block(cfg)

    block, t_cold, c_cold = best(cold, rounds, cpu=True)
    _, t_warm, c_warm = best(lambda: engine.evaluate_block(cfg), rounds, cpu=True)
    return {"points": cfg.size(), "cold_s": t_cold, "warm_s": t_warm, "cold_cpu": c_cold, "warm_cpu": c_warm,
            "feasible": int(block.columns["feasible"].sum())}


def loop_rate(space: dict, sample: int) -> dict:
    """The same model called once per point with Python scalars (warm structures), on a sample of the space."""
    from wsemoe.config.loader import load_config
    from wsemoe.cost.wafer import serving
    from wsemoe.sweep import engine
    from wsemoe.sweep.outputs import config_namespaces

    cfg = load_config(space)
    grid = engine.Evaluator(cfg).grid
    picks = np.linspace(0, cfg.size() - 1, sample).astype(np.int64)
    digits = grid.digits(picks)
    rows = [{p: f.values[p][int(d[k])] for f, d in zip(grid.factors, digits) for p in f.paths} for k in range(sample)]
    points = [config_namespaces(cfg, {p: float(v) if isinstance(v, (int, np.integer)) else v for p, v in r.items()})
              for r in rows]
    t0, c0 = time.perf_counter(), time.process_time()
    for ns in points:
        serving.evaluate(ns["hardware"], ns["model"], ns["workload"], ns["mapping"], ns["balance"])
    return {"points": sample, "s": time.perf_counter() - t0, "cpu": time.process_time() - c0}


def shipped(rounds: int) -> tuple[float, int]:
    """Seconds of `wsemoe sweep sweeps/cerebras_serving.yaml` in a fresh process (best of rounds), and the points
    it wrote (read back from its table, so the count follows the shipped sweep)."""
    import pyarrow.parquet as pq

    exe = Path(sys.executable).with_name("wsemoe")
    cfg = HERE.parent / "sweeps" / "cerebras_serving.yaml"
    out = Path("/tmp") / "bench_serving_results"

    def run():
        subprocess.run([str(exe), "sweep", str(cfg), "-o", str(out), "--force", "--no-readings"], check=True,
                       capture_output=True)
    seconds = best(run, rounds)[1]
    return seconds, sum(pq.ParquetFile(part).metadata.num_rows for part in (out / "points.parquet").glob("*.parquet"))


def wafer_structure(hardware: str, model: str, rounds: int) -> dict:
    """Cold build of one wafer's layer blocks and their dispatch at region granularity (tile = an expert region
    packed at the densest layout, batch 1, context 8,192), unicast and multicast."""
    from wsemoe.config import presets
    from wsemoe.cost.wafer import placement, regions, serving, traffic

    hw = presets.load_hardware(hardware).model_dump()
    m = SimpleNamespace(**presets.load_model(model).model_dump())
    fmt = "fp8" if model == "deepseek-v3" else "bf16"
    wl = SimpleNamespace(B=1.0, seq_len=8192.0, bytes_per_act=2.0, attn_weight_format=fmt, expert_weight_format=fmt,
                         kv_format="bf16")
    pe = serving.pe_facts(SimpleNamespace(pe=hw["pe"]))
    nb = regions.region_bytes(m, wl, 1.0)
    u = float(regions.room(pe, m, wl)[0])
    side = int(np.floor(np.sqrt(nb["expert"] / u)))
    t_att = int(np.ceil(nb["attention"] / u / side ** 2))
    a_r = int(np.ceil(np.sqrt(t_att)))
    rows, cols = (int(x) // side for x in regions.program_rectangle(pe))
    layer = placement.place_layer("blocked", m.num_experts, int(np.ceil(nb["shared"] / u / side ** 2)), a_r,
                                  int(np.ceil(t_att / a_r)))
    shares = np.full(m.num_experts, 1.0 / m.num_experts)
    out = {"tiles": f"{rows} × {cols}", "side": side, "block": f"{layer.rows} × {layer.cols}"}
    for mode in traffic.MODES:
        w, t = best(lambda: traffic.wafer(layer, shares, m.num_experts_per_tok, rows, cols, m.num_hidden_layers,
                                          mode), rounds)
        out[mode] = t
        out["layers"] = len(w.offsets)
    return out


def report(quick: bool) -> str:
    rounds = 1 if quick else 3
    space = SPACE if not quick else {**SPACE, "axes": {**SPACE["axes"], "workload.B": {"range": [1, 32]}}}
    load, t0 = os.getloadavg(), time.perf_counter()
    rate = sweep_rate(space, rounds)
    loop = loop_rate(space, 40 if quick else 200)
    lines = ["| what | points | time | points/s | CPU s | points per CPU-s |", "|---|---:|---:|---:|---:|---:|"]
    for what, key in (("cold (structures built)", "cold"), ("warm (structures and structural terms cached)", "warm")):
        lines.append(f"| serving space, {what} | {rate['points']:,} | {rate[key + '_s']:.2f} s | "
                     f"{rate['points'] / rate[key + '_s']:,.0f} | {rate[key + '_cpu']:.2f} | "
                     f"{rate['points'] / rate[key + '_cpu']:,.0f} |")
    per = loop["s"] / loop["points"]
    lines.append(f"| per-point Python loop, same model (sample) | {loop['points']:,} | {loop['s']:.2f} s | "
                 f"{1 / per:,.0f} | {loop['cpu']:.2f} | {loop['points'] / loop['cpu']:,.0f} |")
    if not quick:
        seconds, points = shipped(rounds)
        lines.append(f"| `wsemoe sweep sweeps/cerebras_serving.yaml` end to end ({points:,} points, GPUs included) | "
                     f"{points:,} | {seconds:.2f} s | | | |")
    text = "\n".join(lines) + f"\n\nVectorized over the loop: {per * rate['points'] / rate['warm_s']:.0f}× (warm). " \
                              f"Space: {rate['points']:,} points, {rate['feasible']:,} feasible. Best of {rounds} " \
                              f"rounds; the sweep's part took {time.perf_counter() - t0:.0f} s on {os.cpu_count()} " \
                              f"cores (load average {load[0]:.1f} before, {os.getloadavg()[0]:.1f} after: other work " \
                              "on the machine moves wall times, CPU times much less).\n\n"
    rows = ["| fabric | model | tile grid (tile side, PEs) | layer block (tiles) | layers placed | unicast | multicast |",
            "|---|---|---|---|---:|---:|---:|"]
    for hw, name in FABRICS.items():
        for model in MODELS:
            s = wafer_structure(hw, model, rounds)
            rows.append(f"| {name} | {model} | {s['tiles']} ({s['side']}) | {s['block']} | {s['layers']} | "
                        f"{1e3 * s['unicast']:.0f} ms | {1e3 * s['multicast']:.0f} ms |")
    command = "python bench/bench_serving.py" + (" --quick" if quick else "")
    return (text + "Structure of a whole wafer at region granularity (cold build, best of runs):\n\n" + "\n".join(rows)
            + f"\n\nMeasured by `{command}`.\n")


def main(argv: list[str]) -> None:
    publish(report("--quick" in argv), OUT, MARK, argv)


if __name__ == "__main__":
    main(sys.argv[1:])
