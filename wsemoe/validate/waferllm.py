"""WaferLLM (He et al., OSDI '25) on a CS-2, reproduced with the PE-level operators (wsemoe.cost.wafer).

Published figures: GEMV times (Table 6), LLaMA3-8B decode throughput per request as the PE grid grows
(Table 4), and MeshGEMM against Cannon at 720 × 720 PEs (§7.2, Figure 9). The configurations are the
authors' public ones (MeshInfra/WaferLLM: Decode/WSE-2/model_config/llama8B_4k_1_<P>.json; dimensions
padded to multiples of P, one attention head as wide as the model, K and V as wide as Q).

One constant is fitted: `op_overhead_cycles`, the fixed cycles of one operator invocation, to the two
GEMV times (least squares on relative error; `fit_overhead`). Everything else comes from the hardware's
published figures (docs/sources.md). The decode and GEMM rows are predictions of the fitted model.
The tolerances (validate/tolerances.py, `waferllm.*`) were fixed, in a commit of their own, before the model
first ran on these rows (docs/sources.md, "WaferLLM").
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from wsemoe.config import presets
from wsemoe.cost.wafer import decode, operators
from wsemoe.validate.common import context, row

GEMV = {  # Table 6: MeshGEMV on WSE-2; the grid is not stated: 512² is the largest square whose side
    # divides both sizes and fits the 750 × 994 program rectangle (MeshGEMV splits both dimensions by P)
    "[1,16K]×[16K,16K]": (16384, 1.2e-6),
    "[1,32K]×[32K,32K]": (32768, 2.03e-6),
}
GEMV_GRID = 512

DECODE = {  # Table 4 (LLaMA3-8B, tokens/s per request) and the authors' configs at each grid side P:
    # (dim, ffn_dim, seq_len, group_num)
    420: (2699.9, 4200, 14700, 4200, 20),
    540: (2501.5, 4320, 14580, 4320, 20),
    660: (2243.3, 4620, 14520, 4620, 22),
}
LAYERS = 32  # the authors time one layer and divide by 32 of them (Decode/WSE-2/launch_wse2.py)
OFFSET = 0.22  # the decode rows' recorded offset from Table 4 (the model faster), held by waferllm.offset bands

GEMM_SIZE, GEMM_GRID = 8192, 720  # the largest GEMM the text names ("GEMM 8K"), at 720 × 720


def cs2_pe(**changes):
    """The cs2 preset's PE facts as a namespace (with `changes`, e.g. op_overhead_cycles=0)."""
    return SimpleNamespace(**{**presets.load_hardware("cs2").pe.model_dump(), **changes})


def gemv_time(size, pe):
    """MeshGEMV [1,size]×[size,size] on GEMV_GRID² PEs: local MACs, 2-level tree all-reduce."""
    return float(operators.gemv(size, size, GEMV_GRID, GEMV_GRID, pe)["seconds"])


def fit_overhead() -> float:
    """Least-squares `op_overhead_cycles` over the GEMV rows: a GEMV is one local kernel and one
    all-reduce, so its time is base + 2·F cycles; minimise Σ((base + 2F)/published − 1)²."""
    pe = cs2_pe(op_overhead_cycles=0.0)
    base = np.array([gemv_time(size, pe) * pe.clock_hz for size, _ in GEMV.values()])
    pub = np.array([t * pe.clock_hz for _, t in GEMV.values()])
    return float(np.sum(2 * (pub - base) / pub ** 2) / np.sum(4 / pub ** 2))


def decode_layer(side, pe):
    """Terms of one LLaMA3-8B layer's decode on a side² grid with the authors' configuration."""
    _, dim, ffn, seq, groups = DECODE[side]
    m = SimpleNamespace(hidden_size=dim, num_attention_heads=1, num_key_value_heads=1, head_dim=dim,
                        intermediate_size=ffn)
    coll = {"pattern": "tree", "levels": 2, "group": side // groups}
    return decode.dense_layer(m, side, side, seq, pe, coll=coll)["layer"]


def gemv_rows(pe) -> list[dict]:
    """The two fitted GEMV rows."""
    rows = []
    for name, (size, published) in GEMV.items():
        t = gemv_time(size, pe)
        err = t / published - 1
        rows.append(row(f"waferllm.gemv:{size}", f"WaferLLM MeshGEMV {name} on WSE-2 ({GEMV_GRID}² PEs; "
                        "op_overhead_cycles fitted to both GEMV rows)", f"{published * 1e6:.2f} µs (Table 6)", err,
                        lambda x: f"{100 * x:+.1f}%", kind="fitted", model=f"{t * 1e6:.2f} µs ({100 * err:+.1f}%)",
                        source="Table 6"))
    return rows


def decode_rows(pe) -> list[dict]:
    """Decode tokens/s per request at 420², 540², 660² (predictions), their growth and what binds."""
    rows, latency = [], {}
    for side, (published, *_) in DECODE.items():
        layer = decode_layer(side, pe)
        latency[side] = LAYERS * float(layer["seconds"])
        tps = 1.0 / latency[side]
        err = tps / published - 1
        rows.append(row(f"waferllm.decode:{side}", f"WaferLLM LLaMA3-8B decode on {side}² PEs of a CS-2 (tokens/s "
                        "per request)", f"{published:,.1f} (Table 4)", err, lambda x: f"{100 * x:+.1f}%",
                        model=f"{tps:,.1f} ({100 * err:+.1f}%)", source="Table 4"))
    sides = sorted(latency)
    offset = {side: DECODE[side][0] * latency[side] for side in sides}   # published latency over the model's
    for side in sides:
        rows.append(row(f"waferllm.offset:{side}", f"the decode offset on {side}² PEs less the recorded "
                        f"{100 * OFFSET:+.0f}% (the model's tokens/s over Table 4's)", f"{100 * OFFSET:+.0f}% (recorded)",
                        1.0 / offset[side] - 1.0 - OFFSET, lambda x: f"{100 * x:+.1f} pts",
                        model=f"{100 * (1.0 / offset[side] - 1.0):+.1f}%", source="Table 4"))
    growth_pts = (1.0 / offset[sides[-1]]) - (1.0 / offset[sides[0]])
    rows.append(row("waferllm.offset.growth", f"the decode offset's change from {sides[0]}² to {sides[-1]}² PEs",
                    "0 pts (latency grows as Table 4's)", growth_pts, lambda x: f"{100 * x:+.1f} pts", source="Table 4"))
    step = max(latency[a] / latency[b] for a, b in zip(sides, sides[1:]))
    growth = latency[660] / latency[420]
    published = DECODE[420][0] / DECODE[660][0]
    rows.append(row("waferllm.rising", "per-token decode latency grows with the grid side (420² → 540² → 660²)",
                    "grows (Table 4)", step, lambda x: f"{x:.3f}",
                    model=" → ".join(f"{latency[s] * 1e6:.0f} µs" for s in sides), source="Table 4"))
    rows.append(row("waferllm.growth", "decode latency growth from 420² to 660² PEs", f"{published:.3f}× (Table 4)",
                    growth, lambda x: f"{x:.3f}×", source="Table 4",
                    error=f"{100 * (growth / published - 1):+.0f}%"))
    layer = decode_layer(660, pe)
    fabric, macs = float(layer["latency_cycles"] + layer["link_cycles"]), float(layer["compute_cycles"])
    rows.append(row("waferllm.binds", "at 660² PEs reductions and hops bind decode, not FLOPs (one layer: fabric "
                    "cycles over local compute cycles)", "reductions bind (§7.3)", fabric / macs, lambda x: f"{x:.1f}×",
                    model=f"fabric {fabric:,.0f} vs compute {macs:,.0f} cycles", source="§7.3"))
    return rows


def gemm_rows(pe) -> list[dict]:
    """MeshGEMM above 70% and Cannon below 50% efficiency at 720 × 720 PEs (GEMM 8K)."""
    mesh = float(operators.cyclic_gemm(GEMM_SIZE, GEMM_SIZE, GEMM_SIZE, GEMM_GRID, pe, "meshgemm")["efficiency"])
    cannon = float(operators.cyclic_gemm(GEMM_SIZE, GEMM_SIZE, GEMM_SIZE, GEMM_GRID, pe, "cannon")["efficiency"])
    return [
        row("waferllm.meshgemm", f"WaferLLM MeshGEMM efficiency, GEMM 8K on {GEMM_GRID}² PEs", "over 70% (§7.2)", mesh,
            lambda x: f"{100 * x:.0f}%", source="§7.2, Figure 9"),
        row("waferllm.cannon", f"Cannon efficiency, GEMM 8K on {GEMM_GRID}² PEs", "below 50% (§7.2)", cannon,
            lambda x: f"{100 * x:.0f}%", source="§7.2"),
    ]


def waferllm_rows() -> list[dict]:
    """Every WaferLLM row on the cs2 preset's PE facts, and the fitted constant as context."""
    pe = cs2_pe()
    fitted = fit_overhead()
    info = context("waferllm.overhead", "op_overhead_cycles fitted to the two GEMV rows (cs2 preset)", "—",
                   f"fit {fitted:.0f} cycles; preset {pe.op_overhead_cycles:g}", "the one fitted PE constant")
    return gemv_rows(pe) + decode_rows(pe) + gemm_rows(pe) + [info]
