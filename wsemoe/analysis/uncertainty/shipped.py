"""Cerebras' shipped micro-batch sizes (Model Zoo 2.10) evaluated by the memory model under the readings.

Each shipped training config ran on a wafer, so its micro-batch fits the usable SRAM: the SRAM share it
needs is a lower bound on `memory_usable_fraction`, under the readings a training config depends on (the
attention kernel, where checkpoints live). Used by calibration (a target per reading) and validation (rows
at the default readings, and the evidence each reading's option leaves).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from wsemoe.config import readings as registry
from wsemoe.config import yamlio
from wsemoe.cost import step
from wsemoe.specs import MappingSpec, ModelSpec, WorkloadSpec

DATA = Path(__file__).resolve().parent / "data" / "shipped_microbatches.yaml"
READINGS = ("attn_kernel", "kept_activations")  # the readings a shipped training config's memory depends on


@dataclass(frozen=True)
class Need:
    """One shipped config under one reading: the SRAM share its micro-batch needs, the share its layer-input
    checkpoints alone would need if held in SRAM, and the largest attention batch that fits."""

    name: str
    seq_len: int
    micro_batch: int
    need: float
    checkpoints: float
    largest: int


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


def under(hw, choice: dict | None = None):
    """(hardware, workload fields) of the shipped configs under a reading ({reading: option}; the defaults of
    READINGS for those it leaves out)."""
    fields = registry.spec_fields({**registry.defaults(READINGS), **(choice or {})})
    wl_fields, _ = calibration_models()
    return hw.model_copy(update=fields.get("hardware", {})), {**wl_fields, **fields.get("workload", {})}


def shipped_needs(hw, choice: dict | None = None) -> list[Need]:
    """Per shipped config under a reading (the defaults unless `choice` says otherwise)."""
    hw, wl_fields = under(hw, choice)
    _, models = calibration_models()
    out = []
    for name, seq, mb, m in models:
        wl = WorkloadSpec(seq_len=seq, **wl_fields)
        res = memory_at(hw, m, wl, mb)
        kept = mb * seq * m.num_hidden_layers * 2.0 * m.hidden_size * wl.bytes_per_act / 2 / hw.nodes
        out.append(Need(name, seq, mb, float(res["mem_peak_node_bytes"]) / hw.node_memory_bytes,
                        kept / hw.node_memory_bytes, max_batch(hw, m, wl)))
    return out
