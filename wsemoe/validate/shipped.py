"""Cerebras' shipped micro-batch sizes against the memory model (the SRAM calibration's evidence).

Each shipped training config (Cerebras Model Zoo 2.10) ran on a wafer, so its micro-batch must fit the
usable SRAM. Compared per model: the SRAM share the shipped micro-batch needs under the preset's
accounting against the preset's `memory_usable_fraction`. A last row shows why the preset streams the
kept activations out: held in SRAM, the layer-input checkpoints alone of three configs exceed the wafer.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np

from wsemoe.config import presets, yamlio
from wsemoe.cost import step
from wsemoe.specs import MappingSpec, ModelSpec, WorkloadSpec
from wsemoe.validate.common import row

DATA = Path(__file__).resolve().parent / "data" / "calibration.yaml"


def calibration_models() -> tuple[dict, list]:
    """The shipped micro-batch configs as (workload fields, [(name, seq_len, micro_batch, ModelSpec)])."""
    data = yamlio.load(DATA)
    out = []
    for entry in data["models"]:
        e = dict(entry)
        name, seq, mb = e.pop("name"), e.pop("seq_len"), e.pop("micro_batch")
        if "num_experts" not in e:  # dense: every layer dense (the HF-import convention)
            e.update(num_experts=1, num_experts_per_tok=1, moe_intermediate_size=e["intermediate_size"],
                     first_k_dense_replace=e["num_hidden_layers"])
        out.append((name, seq, mb, ModelSpec(name=name, **e)))
    return data["workload"], out


def memory_at(hw, model, workload: WorkloadSpec, B) -> dict:
    """Cost-model columns at attention batch B (G = 1) for one model (B may be an array)."""
    wl = SimpleNamespace(**{**workload.model_dump(), "B": B, "G": 1})
    return step.evaluate(hw, model, wl, MappingSpec())


def max_batch(hw, model, workload: WorkloadSpec, limit: int = 1024) -> int:
    """Largest attention batch B (G = 1) whose memory fits the node capacity; 0 if none."""
    B = np.arange(1, limit + 1)
    res = memory_at(hw, model, workload, B)
    ok = (res["g_mem_attn"] <= 0) & (res["g_mem_moe"] <= 0)
    return int(B[ok].max()) if ok.any() else 0


def shipped_needs(hw) -> list[tuple[str, int, int, float, float]]:
    """Per shipped config: (name, S, micro-batch, SRAM share it needs, share its checkpoints need if held in SRAM)."""
    wl_fields, models = calibration_models()
    out = []
    for name, seq, mb, m in models:
        wl = WorkloadSpec(seq_len=seq, **wl_fields)
        res = memory_at(hw, m, wl, mb)
        kept = mb * seq * m.num_hidden_layers * 2.0 * m.hidden_size * wl.bytes_per_act / 2 / hw.nodes
        out.append((name, seq, mb, float(res["mem_peak_node_bytes"]) / hw.node_memory_bytes,
                    kept / hw.node_memory_bytes))
    return out


def shipped_rows(hardware: str = "cs2") -> list[dict]:
    """Every shipped micro-batch fits the preset's usable SRAM; checkpoints held in SRAM would not."""
    hw = presets.load_hardware(hardware)
    wl_fields, _ = calibration_models()
    f = hw.memory_usable_fraction
    rows = []
    for (name, seq, mb, need, _), (_, _, _, m) in zip(shipped_needs(hw), calibration_models()[1]):
        b = max_batch(hw, m, WorkloadSpec(seq_len=seq, **wl_fields))
        rows.append(row(f"shipped micro-batch of {name} (S={seq}) fits {hardware}'s usable SRAM", f"{mb} runs",
                        f"needs {need:.2f} of SRAM; largest B {b}", f"{need / f:.2f}× of usable",
                        f"need ≤ {f:.2f} (memory_usable_fraction)", need <= f))
    kept = [(k, n) for n, _, _, _, k in shipped_needs(hw)]
    over = [n for k, n in kept if k > 1]
    worst = max(kept)
    rows.append(row("layer-input checkpoints of every shipped micro-batch fit the wafer's SRAM (if held there)",
                    "all 7 run", f"{len(over)} of 7 exceed it; {worst[1]} needs {worst[0]:.2f}× of SRAM", "",
                    "≤ 1× of SRAM each", not over,
                    reason="the reason cs2 and cs3 stream kept activations over the wafer I/O "
                           "(kept_activations: streamed; docs/sources.md)"))
    return rows
