"""Units and one-line meanings of every output column (the manifest's column docs)."""

from __future__ import annotations

import re

from wsemoe.config.reference import input_unit
from wsemoe.config.schema import SECTIONS

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
    "mfu": ("1", "model FLOPs utilization: model FLOPs per second over the peak of all nodes, a fraction "
                 "(0.37, not 37%) in every table, filter and figure"),
    "moe_layer_time_s": ("s", "one MoE layer: attention (G tiles) + router/experts (+ communication)"),
    "dense_layer_time_s": ("s", "one dense layer: attention + dense FFN"),
    "head_time_s": ("s", "output head and embedding, once per micro-batch step"),
    "head_compute_s": ("s", "compute term of the output head and embedding, once per micro-batch step "
                            "(FLOPs / (nodes · peak · efficiency))"),
    "head_weights_s": ("s", "weight-movement term of the output head and embedding, once per micro-batch step "
                            "(streamed over I/O or read from node memory)"),
    "head_hbm_s": ("s", "HBM term of the output head and embedding, once per micro-batch step (its weights read "
                        "from node memory)"),
    "bound": ("", "binding term of the layer kind taking the largest share of the step (layer:term or comm:phase)"),
    "ties": ("points", "Pareto front only: points of this row's front group with exactly its objective values; "
                       "the row (the first of them) stands for them all"),
    "feasible": ("bool", "every constraint column g_* is ≤ 0"),
    "infeasible_reason": ("", "the worst-violated constraint, in words, with its ratio to the limit "
                              "(memory: to the usable node memory); empty when feasible"),
    "per_device_moe_tokens_per_s": ("tokens/s", "MoE-layer throughput per device: tokens per MoE-layer time "
                                                "(attention and MoE block) per node"),
    "per_device_moe_block_tokens_per_s": ("tokens/s", "MoE-block throughput per device: tokens per MoE-stage time "
                                                      "(expert compute/HBM + dispatch + combine + output reduction) per node"),
    "moe_comm_s": ("s", "TP all-reduce + dispatch + combine + output reduction time per MoE layer"),
    "tokens_per_device": ("tokens", "tokens of one micro-batch per device (decode: sequences per device)"),
    "attention_batch": ("sequences", "attention batch B in use (set from tokens_per_device when given)"),
    "dense_allreduce_bound": ("", "what limits a dense layer's all-reduce under HER (the home wafer's ring only: a "
                                  "dense layer dispatches nothing, so it gathers nothing across wafers)"),
    "dense_layer_allreduce_s": ("s", "a dense layer's attention all-reduce under HER (the home wafer's ring only), "
                                "which replaces attention_allreduce_s in dense_layer_time_s"),
    "dense_allreduce_max_link_bytes": ("bytes", "load of the busiest directed link in a dense layer's all-reduce under HER"),
    "reduce_bound": ("", "what limits the output reduction: link, wafer-link, scale-out, inject, eject, or hop latency"),
    "reduce_max_link_bytes": ("bytes", "load of the busiest directed link in one output reduction"),
    "dispatch_inter_wafer_share": ("1", "share of dispatch link load on links between wafers (NaN on one wafer)"),
    "expert_slots_before": ("experts", "expert copies on the fullest node before balancing"),
    "zipf_s_used": ("1", "Zipf exponent of expert popularity in use (solved from balance.skew_target when set)"),
    "token_flow": ("", "replicated: every TP member holds all of its group's tokens (outputs reduced again); "
                       "slice: each member sends and receives only its own 1/tp"),
    "moe_balance_saving_s": ("s", "expert compute time per MoE layer the balancer saves on the busiest node"),
    "moe_replica_hbm_s": ("s", "HBM time per MoE layer the fullest node spends reading the replica copies it added"),
    "allreduce_bound": ("", "what limits the all-reduce: link, wafer-link, scale-out, inject, eject port, or hop latency"),
    "dispatch_bound": ("", "what limits the dispatch: link, wafer-link, scale-out, inject, eject port, or hop latency"),
    "combine_bound": ("", "what limits the combine: link, wafer-link, scale-out, inject, eject port, or hop latency"),
    "gradient_bound": ("", "what limits the gradient reduction: link, wafer-link, scale-out, inject, eject port, "
                           "or hop latency"),
    "allreduce_max_link_bytes": ("bytes", "load of the busiest directed link in one attention-tile all-reduce"),
    "dispatch_max_link_bytes": ("bytes", "load of the busiest directed link in one dispatch"),
    "combine_max_link_bytes": ("bytes", "load of the busiest directed link in one combine"),
    "gradient_max_link_bytes": ("bytes", "load of the busiest directed link in one gradient reduction"),
    "dispatch_mean_hops": ("hops", "traffic-weighted mean path length of the dispatch (local copies excluded)"),
    "dispatch_max_hops": ("hops", "longest path any dispatch traffic takes"),
    "allreduce_ring_hops": ("hops", "longest hop distance between neighbours of a TP ring"),
    "allreduce_idle_link_share": ("1", "share of directed links the all-reduce leaves idle (cold)"),
    "dispatch_idle_link_share": ("1", "share of directed links the dispatch leaves idle (cold)"),
    "hot_link_overlap": ("1", "Jaccard overlap of the hottest 10% links of all-reduce and dispatch (0: complementary)"),
    "dispatch_inter_ftd_share": ("1", "share of dispatch link load on links between full token domains (ER only)"),
    "expert_imbalance": ("×", "busiest node's expert load over the mean, after balancing (expert stage runs at its pace)"),
    "imbalance_before": ("×", "busiest node's expert load over the mean without the balancer's replicas"),
    "expert_slots_max": ("experts", "expert copies on the fullest node (weights in memory and read per step)"),
    "migration_bytes_per_step": ("bytes", "expert-copy bytes the balancer moves, amortized per step"),
    "migration_total_s": ("s", "time of one rebalance's migration run alone on the fabric"),
    "migration_exposed_s": ("s", "migration time per step left on the critical path"),
    "kept_act_io_bytes": ("bytes", "activations of one layer and micro-batch streamed out after the forward pass and back in for the backward pass (kept_activations: streamed)"),
    "migration_hidden_s": ("s", "migration time per step hidden in idle (cold) link windows"),
}

_MEMORY = {
    "weights": "weights kept per node (resident weights and replicas, or the current layer's attention under streaming)",
    "kept_act": "activations kept in node memory for the backward pass (all layers, by recompute policy; 0 when streamed out)",
    "kv": "KV cache of the micro-batch's sequences (decode, prefill)",
    "attn_transient": "attention transient of one tile of B sequences (scores unless flash)",
    "bta_buffer": "concatenated attention outputs of the G tiles (the MoE input)",
    "moe_transient": "dispatched tokens and FFN intermediates of G·B sequences",
    "attn_peak": "peak of the attention stage: weights + kept + KV + attention transient + BTA buffer",
    "moe_peak": "peak of the MoE stage: weights + kept + KV + MoE transient",
    "peak": "the larger of the two stage peaks",
    "capacity": "usable node memory (capacity × memory_usable_fraction)",
}
_DOCS.update({f"mem_{k}_node_bytes": ("bytes", f"per node: {v}") for k, v in _MEMORY.items()})

_PATTERNS = [
    (r"^(\w+?)_time_s$", "s", "time of the {0} stage per layer (its own roofline, plus communication)"),
    (r"^(\w+?)_compute_s$", "s", "compute term of the {0} stage per layer (FLOPs / (nodes · peak · efficiency))"),
    (r"^(\w+?)_weights_s$", "s", "weight-movement term of the {0} stage per layer (streamed over I/O or read from node memory)"),
    (r"^(\w+?)_memory_s$", "s", "memory-traffic term of the {0} stage per layer (KV cache reads)"),
    (r"^(\w+?)_hbm_s$", "s", "HBM term of the {0} stage per layer: resident weights and KV cache read from node memory"),
    (r"^(\w+?)_(allreduce|dispatch|combine|gradient)_s$", "s", "{1} communication time per layer on the fabric"),
    (r"^(\w+?)_reduce_s$", "s", "output reduction per layer: partial expert outputs summed over the TP members "
                                 "that fed them (HER: and returned to the home wafer)"),
    (r"^mem_(\w+)_node_bytes$", "bytes", "memory per node: {0}"),
    (r"^g_mem_(\w+)$", "1", "constraint: {0}-stage peak memory / capacity − 1 (≤ 0 satisfied)"),
    (r"^g_([\w.]+?)_(max|min)(?:_\d+)?$", "1", "user constraint on {0} ({1}); ≤ 0 satisfied"),
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
    return (input_unit(name), desc)


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


def documented(name: str) -> bool:
    """True when a column has a written meaning (not the fallback spelled from its name)."""
    return describe(name)[1] != name.replace("_", " ")


def manifest_columns(columns) -> dict:
    """{column: {unit, doc}} for a results manifest."""
    return {c: dict(zip(("unit", "doc"), describe(c))) for c in columns}


_PATTERN_NAMES = ["<stage>_time_s", "<stage>_compute_s", "<stage>_weights_s", "<stage>_memory_s", "<stage>_hbm_s",
                  "<stage>_<allreduce|dispatch|combine|gradient>_s", "<stage>_reduce_s", "mem_<term>_node_bytes",
                  "g_mem_<stage>", "g_<column>_<max|min>", "speedup_vs_<name>"]
assert len(_PATTERN_NAMES) == len(_PATTERNS)  # one readable name per pattern, in order


def reference() -> list[tuple[str, str, str]]:
    """[(column, unit, meaning)] of every named output column, then the patterned families (for docs)."""
    named = [(c, u, d) for c, (u, d) in _DOCS.items()]
    patterned = [(n, u, t.format(*re.findall(r"<[^>]+>", n)))
                 for n, (_, u, t) in zip(_PATTERN_NAMES, _PATTERNS)]
    return named + patterned
