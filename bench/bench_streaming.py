"""Benchmark: weight streaming at PE level (hardware.pe_fabric). Points per second of the BTA top-k space with the
PE fabric on (multicast and unicast dispatch) against the same space with it off, measured in the same run, cold
(every candidate layout built) and warm; and the build time of one key's candidate layouts (every expert grid on the
full fabric, its region traffic and pipelines) on CS-2 (757 × 996) and CS-3 (762 × 1172).

Usage: python bench/bench_streaming.py [--quick] [--readme]   (writes bench/streaming.md; --readme also copies it
       into docs/benchmarks.md between the streaming-bench markers)
"""

from __future__ import annotations

import sys
from pathlib import Path

from bench_serving import best, sweep_rate  # bench/bench_serving.py: the script's own folder is on sys.path
from readme import publish

HERE = Path(__file__).resolve().parent
OUT = HERE / "streaming.md"
MARK = ("<!-- bench-streaming:start -->", "<!-- bench-streaming:end -->")
SPACE = {"name": "bench_streaming", "hardware": "cs2", "model": "qwen3-30b-a3b",
         "workload": {"mode": "train", "seq_len": 8192, "attn_kernel": "per_head", "recompute": "full"},
         "sparsity": {"vary": "num_experts_per_tok", "values": [8, 4, 2, 1], "hold": "active"},
         "axes": {"workload.B": {"range": [1, 128]}, "workload.G": {"range": [1, 64]}}}
MODES = {"pe_fabric off (wafer as one group)": {"hardware.pe_fabric": [False]},
         "pe_fabric on, multicast dispatch": {"hardware.pe_fabric": [True], "mapping.pe_dispatch": ["multicast"]},
         "pe_fabric on, unicast dispatch": {"hardware.pe_fabric": [True], "mapping.pe_dispatch": ["unicast"]}}


def clear():
    """Forget every cached candidate table and expert grid (cold builds)."""
    from wsemoe.cost.wafer import expertgrid, streamlayout

    streamlayout.table.cache_clear()
    expertgrid.grid.cache_clear()


def rate(axes: dict, rounds: int, quick: bool) -> dict:
    """Points per second of the space with `axes` added, cold and warm."""
    space = {**SPACE, "axes": {**SPACE["axes"], **axes}}
    if quick:
        space["axes"] = {**space["axes"], "workload.B": {"range": [1, 16]}}
    return sweep_rate(space, rounds, forget=clear)


def table_build(hardware: str, mode: str, rounds: int) -> tuple[float, int]:
    """(seconds, candidates kept) of one cold build of the candidate layouts of qwen3-30b-a3b (E = 128, k = 8)."""
    from wsemoe.config import presets
    from wsemoe.cost import structure
    from wsemoe.cost.wafer import streamlayout
    from wsemoe.cost.wafer.fabric import program_rectangle

    pe = presets.load_hardware(hardware).pe
    rows, cols = program_rectangle(pe)
    key = streamlayout.Key(128, 8, 2048, 768, 2.0, int(rows), int(cols),
                           tuple((f, float(getattr(pe, f))) for f in streamlayout.PE_FIELDS), mode, structure.UNIFORM)

    def cold():
        clear()
        return streamlayout.table(key)
    t, s = best(cold, rounds)
    return s, len(t.A)


def report(quick: bool) -> str:
    rounds = 1 if quick else 3
    lines = ["| mode | points | feasible | cold | warm | points/s (warm) |", "|---|---:|---:|---:|---:|---:|"]
    rates = {}
    for name, axes in MODES.items():
        r = rates[name] = rate(axes, rounds, quick)
        lines.append(f"| {name} | {r['points']:,} | {r['feasible']:,} | {r['cold_s']:.2f} s | {r['warm_s']:.2f} s | "
                     f"{r['points'] / r['warm_s']:,.0f} |")
    off = next(iter(rates.values()))
    ratio = ", ".join(f"{name.split(', ')[-1]} {r['warm_s'] / off['warm_s']:.1f}×" for name, r in list(rates.items())[1:])
    text = "\n".join(lines) + f"\n\nWarm time with the PE fabric over without, same space, same run: {ratio}.\n\n"
    rows = ["| fabric | dispatch | candidate layouts kept | cold build |", "|---|---|---:|---:|"]
    for hw, label in (("cs2", "CS-2, 757 × 996 PEs"), ("cs3", "CS-3, 762 × 1172 PEs")):
        for mode in ("multicast", "unicast"):
            s, n = table_build(hw, mode, rounds)
            rows.append(f"| {label} | {mode} | {n:,} | {1e3 * s:.0f} ms |")
    return text + ("Candidate layouts of one structural key (qwen3-30b-a3b, k = 8: every expert grid on the full "
                   "program rectangle, its region traffic, the SwiGLU pipelines per tile side and reduction), cold, "
                   "best of runs:\n\n") + "\n".join(rows) + "\n"


def main(argv: list[str]) -> None:
    publish(report("--quick" in argv), OUT, MARK, argv)


if __name__ == "__main__":
    main(sys.argv[1:])
