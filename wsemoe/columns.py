"""Units and one-line meanings of every output column (the manifest's column docs)."""

from __future__ import annotations

import re

from wsemoe.config import SECTIONS

_DOCS = {
    "tokens_per_microbatch": ("tokens", "tokens in one micro-batch of G·B sequences per attention group, all groups"),
    "sequences_per_microbatch": ("sequences", "sequences per micro-batch, all attention groups"),
    "tokens_per_expert": ("tokens", "mean tokens each routed expert receives per micro-batch (T·k/E)"),
    "expert_efficiency": ("1", "achieved fraction of peak of the expert matmuls at that token count"),
    "attn_proj_flops": ("FLOP", "Q/K/V/output projections, forward, one layer, one micro-batch"),
    "attn_core_flops": ("FLOP", "score and value matmuls over the full S×S, forward, one layer, one micro-batch"),
    "router_flops": ("FLOP", "router logits, forward, one MoE layer, one micro-batch"),
    "expert_flops": ("FLOP", "routed (k per token) and shared experts, forward, one MoE layer, one micro-batch"),
    "model_flops_per_step": ("FLOP", "model FLOPs of one step (forward+backward when training; no recompute)"),
    "step_time_s": ("s", "time of one micro-batch step (training: forward+backward; decode: one token per sequence)"),
    "tokens_per_s": ("tokens/s", "throughput: tokens per micro-batch over step time"),
    "sequences_per_s": ("sequences/s", "sequences per micro-batch over step time"),
    "mfu": ("1", "model FLOPs utilization: model FLOPs per second over the peak of all nodes"),
    "moe_layer_time_s": ("s", "one MoE layer: attention (G tiles) + router/experts (+ communication)"),
    "dense_layer_time_s": ("s", "one dense layer: attention + dense FFN"),
    "head_time_s": ("s", "output head and embedding"),
    "bound": ("", "binding term of the layer kind taking the largest share of the step (layer:term or comm:phase)"),
    "feasible": ("bool", "every constraint column g_* is ≤ 0"),
    "infeasible_reason": ("", "the worst-violated constraint, in words, with its ratio to capacity"),
    "per_device_moe_tokens_per_s": ("tokens/s", "MoE-layer throughput per device: tokens per MoE-layer time per node"),
}

_PATTERNS = [
    (r"^(\w+?)_time_s$", "s", "time of the {0} stage per layer (its own roofline, plus communication)"),
    (r"^(\w+?)_compute_s$", "s", "compute term of the {0} stage per layer (FLOPs / (nodes · peak · efficiency))"),
    (r"^(\w+?)_weights_s$", "s", "weight-movement term of the {0} stage per layer (streamed over I/O or read from node memory)"),
    (r"^(\w+?)_memory_s$", "s", "memory-traffic term of the {0} stage per layer (KV cache reads)"),
    (r"^(\w+?)_(allreduce|dispatch|combine)_s$", "s", "{1} communication time per layer on the fabric"),
    (r"^mem_(\w+)_node_bytes$", "bytes", "memory per node: {0}"),
    (r"^g_mem_(\w+)$", "1", "constraint: {0}-stage peak memory / capacity − 1 (≤ 0 satisfied)"),
    (r"^g_(\w+)_(max|min)$", "1", "user constraint on {0} ({1}); ≤ 0 satisfied"),
    (r"^speedup_vs_(\w+)$", "×", "metric over the best feasible '{0}' baseline point of the same group"),
]


def _input_doc(name: str):
    section, _, field = name.partition(".")
    if section in SECTIONS and not field:
        return ("", f"{section} preset name")
    cls = SECTIONS.get(section)
    if cls is None or field not in cls.model_fields:
        return None
    desc = cls.model_fields[field].description or field
    return (_unit_of(field), desc)


def _unit_of(name: str) -> str:
    for suffix, unit in (("_bytes_per_s", "bytes/s"), ("_bytes", "bytes"), ("_flops", "FLOP/s"), ("_s", "s")):
        if name.endswith(suffix):
            return unit
    return ""


def describe(name: str) -> tuple[str, str]:
    """(unit, one-line meaning) of a column; every column the tool writes has one."""
    if name in _DOCS:
        return _DOCS[name]
    doc = _input_doc(name)
    if doc:
        return doc
    for pat, unit, text in _PATTERNS:
        mm = re.match(pat, name)
        if mm:
            return unit, text.format(*[g.replace("_", " ") for g in mm.groups()])
    return ("", name.replace("_", " "))


def manifest_columns(columns) -> dict:
    """{column: {unit, doc}} for a results manifest."""
    return {c: dict(zip(("unit", "doc"), describe(c))) for c in columns}
