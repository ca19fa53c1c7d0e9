"""Units and one-line meanings of every output column (the manifest's column docs)."""

from __future__ import annotations

import re

from wsemoe.config.reference import input_unit
from wsemoe.config.schema import SECTIONS
from wsemoe.sweep.columns_pe import SERVING, STREAMING

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
    "executed_mfu": ("1", "MFU of the model FLOPs the kernels execute (the attention core at "
                     "attn_core_executed_share of its count), each at its format's peak: at most matmul_efficiency "
                     "(mfu counts the core in full, so under a tiled kernel it may exceed it)"),
    "attn_core_executed_share": ("1", "of the counted attention-core FLOPs the kernel executes: a tiled kernel "
                                 "(attn_kernel flash) skips the causal mask's future keys in training and prefill, "
                                 "(S+1)/(2S) for full attention; 1 otherwise"),
    "step_time_s": ("s", "time of one micro-batch step (training: forward+backward; decode: one token per sequence)"),
    "tokens_per_s": ("tokens/s", "throughput: tokens per micro-batch over step time (decode: output tokens/s of all "
                                 "sequences together; SRAM serving: B·accepted tokens per step / pipeline_period_s; "
                                 "SRAM prefill: the prompts' B·seq_len tokens / ttft_s)"),
    "ttft_s": ("s", "time to first token: the prefill of the micro-batch's prompts (decode: all G·B prompts of "
                    "each group at S = prompt_len, at the point's mapping, no queueing; prefill: the step itself; "
                    "two such steps under comm_overlap microbatch, whose micro-batches take turns; SRAM serving: the "
                    "B prompts streamed through the pipeline once)"),
    "tpot_s": ("s", "time per output token: one decode step, which gives every sequence its next token (two "
                    "under comm_overlap microbatch; SRAM serving: the period between a sequence's steps over the "
                    "tokens it accepts per step)"),
    "tokens_per_s_per_user": ("tokens/s", "decode speed one sequence (user) sees: 1 / tpot_s"),
    "g_mem_prefill": ("1", "constraint: peak memory of the prefill behind ttft_s / capacity − 1 (≤ 0 satisfied)"),
    "sequences_per_s": ("sequences/s", "sequences per micro-batch over step time"),
    "mfu": ("1", "model FLOPs utilization: model FLOPs per second over the peak of all nodes at the model's formats "
                 "(format_peak_flops), a fraction (0.37, not 37%) in every table, filter and figure"),
    "format_peak_flops": ("FLOP/s", "per node: the peak the model's FLOPs can reach, each matmul at its format's peak "
                                    "(model FLOPs / Σ FLOPs/peak; node_peak_flops when every format is bf16)"),
    "attention_peak_flops": ("FLOP/s", "per node: peak of the attention projections, shared experts and dense FFNs "
                                       "(attn_weight_format; the 16-bit peak where the hardware has none for it)"),
    "expert_peak_flops": ("FLOP/s", "per node: peak of the routed experts' matmuls (expert_weight_format; the 16-bit "
                                    "peak where the hardware has none for it)"),
    "moe_layer_time_s": ("s", "one MoE layer: attention (G tiles) + router/experts (+ communication)"),
    "dense_layer_time_s": ("s", "one dense layer: attention + dense FFN"),
    "head_time_s": ("s", "output head and embedding, once per micro-batch step"),
    "head_compute_s": ("s", "compute term of the output head and embedding, once per micro-batch step "
                            "(FLOPs / (nodes · peak at its format · efficiency))"),
    "head_weights_s": ("s", "weight-movement term of the output head and embedding, once per micro-batch step "
                            "(streamed over I/O or read from node memory)"),
    "head_hbm_s": ("s", "HBM term of the output head and embedding, once per micro-batch step (its weights read "
                        "from node memory)"),
    "head_launch_s": ("s", "kernel launches of the output head and embedding, once per micro-batch step: kernels × "
                           "kernel_launch_s (serial, added to its roofline)"),
    "head_hw_flops": ("FLOP", "FLOPs the output head and embedding execute, once per micro-batch step"),
    "head_traffic_bytes": ("bytes", "bytes on the output head's weight path, once per micro-batch step (streamed: in "
                                    "over the wafer I/O; resident: read from node memory)"),
    "head_io_out_bytes": ("bytes", "streamed weights: bytes the output head sends out over the wafer I/O, once per "
                                   "micro-batch step (training: a gradient per parameter; 0 in inference)"),
    "bound": ("", "binding term of the layer kind taking the largest share of the step (layer:term or comm:phase), or "
                  "comm:migration where the balancer's exposed migration takes more of the step than any layer kind; "
                  "SRAM serving: local MACs, link bandwidth, hop latency, op overhead, inter-wafer (the system links and "
                  "the token's return), wafer I/O (the stalls of synchronous wafer I/O), draft model (speculative "
                  "decoding's drafts); the largest of them summed over the step (one token's pass and the drafts "
                  "verified at the busiest stage's pace), over TTFT in prefill, or over the stream when it binds; "
                  "or SRAM (it does not fit)"),
    "ties": ("points", "Pareto front only: points of this row's front group with exactly its objective values; "
                       "the row (the first of them) stands for them all"),
    "feasible": ("bool", "every constraint column g_* is ≤ 0"),
    "infeasible_reason": ("", "the worst-violated constraint, in words, with its ratio to the limit "
                              "(memory: to the usable node memory); empty when feasible"),
    "per_device_tokens_per_s": ("tokens/s", "whole-step throughput per device: tokens per step time (every layer, "
                                            "head and embedding) per node; tokens_per_s over the nodes"),
    "per_device_moe_tokens_per_s": ("tokens/s", "MoE-layer throughput per device: tokens per MoE-layer time "
                                                "(attention and MoE block) per node"),
    "per_device_moe_block_tokens_per_s": ("tokens/s", "MoE-block throughput per device: tokens per MoE-stage time "
                                                      "(expert compute/HBM + dispatch + combine + output reduction) per node"),
    "moe_comm_s": ("s", "TP all-reduce + dispatch + combine + output reduction time per MoE layer"),
    "tokens_per_device": ("tokens", "tokens of one micro-batch per device (decode: one token per sequence, so its "
                                    "sequences per device)"),
    "attention_batch": ("sequences", "attention batch B in use (set from tokens_per_device when given)"),
    "dense_allreduce_bound": ("", "what limits a dense layer's all-reduce under HER (the home wafer's ring only: a "
                                  "dense layer dispatches nothing, so it gathers nothing across wafers)"),
    "dense_layer_allreduce_s": ("s", "a dense layer's attention all-reduce under HER (the home wafer's ring only), "
                                "which replaces attention_allreduce_s in dense_layer_time_s"),
    "dense_allreduce_max_link_bytes": ("bytes", "load of the busiest directed link in a dense layer's all-reduce under HER"),
    "ffn_allreduce_bound": ("", "what limits a dense layer's FFN all-reduce (its partial sums over the TP group): "
                                "link, wafer-link, scale-out, inject, eject, or latency"),
    "ffn_allreduce_max_link_bytes": ("bytes", "load of the busiest directed link in a dense layer's FFN all-reduce"),
    "reduce_bound": ("", "what limits the output reduction: link, wafer-link, scale-out, inject, eject, "
                        "or latency (hops and the call's software latency)"),
    "reduce_max_link_bytes": ("bytes", "load of the busiest directed link in one output reduction"),
    "dispatch_inter_wafer_share": ("1", "share of dispatch link load on links between wafers (NaN on one wafer)"),
    "dispatch_scale_out_share": ("1", "share of the per-copy bytes a dispatch or combine sends over a switch system's "
                                      "scale-out network (mapping.scale_out_dispatch: 1 per copy; per server, the "
                                      "chance a token reaches a server over the copies it sends there)"),
    "expert_slots_before": ("experts", "expert copies on the fullest node before balancing"),
    "expert_copies": ("experts", "routed-expert copies over all nodes (E; N when E < N; more with a balancer's "
                                 "replicas): with the tokens, how many the busiest node reads (weights.busiest_hits)"),
    "work_flops16": ("FLOP", "FLOPs all nodes execute per micro-batch step in 16-bit equivalents (F × "
                             "node_peak_flops / peak of its format): the mean node's load × nodes; energy counts it"),
    "work_read_bytes": ("bytes", "bytes on all nodes' weight paths per micro-batch step (resident: weights and KV "
                                 "read at the mean node × nodes; streamed: in over the wafer I/O); energy counts it"),
    "zipf_s_used": ("1", "Zipf exponent of expert popularity in use (solved from balance.skew_target when set)"),
    "token_flow": ("", "replicated: every TP member holds all of its group's tokens (outputs reduced again); "
                       "slice: each member sends and receives only its own 1/tp"),
    "moe_balance_saving_s": ("s", "expert compute time per MoE layer the balancer saves on the busiest node (a "
                             "difference: negative where its copies, planned on expected shares, leave a step's "
                             "busiest node busier at few tokens, their split shares adding routing noise)"),
    "moe_replica_hbm_s": ("s", "HBM time per MoE layer the fullest node spends reading the replica copies it added"),
    "allreduce_bound": ("", "what limits the all-reduce: link, wafer-link, scale-out, inject, eject port, "
                        "or latency (hops and the call's software latency)"),
    "dispatch_bound": ("", "what limits the dispatch: link, wafer-link, scale-out, inject, eject port, "
                        "or latency (hops and the call's software latency)"),
    "combine_bound": ("", "what limits the combine: link, wafer-link, scale-out, inject, eject port, "
                        "or latency (hops and the call's software latency)"),
    "gradient_bound": ("", "what limits the gradient reduction: link, wafer-link, scale-out, inject, eject port, "
                           "or latency (hops and the call's software latency)"),
    "allreduce_max_link_bytes": ("bytes", "load of the busiest directed link in one attention-tile all-reduce"),
    "dispatch_max_link_bytes": ("bytes", "load of the busiest directed link in one dispatch: a step's expected maximum "
                                         "over its routing of T tokens, what the dispatch time waits for (above the "
                                         "hottest link's expected load at few tokens; PE fabric: the busiest PE link, "
                                         "one pass)"),
    "combine_max_link_bytes": ("bytes", "load of the busiest directed link in one combine: a step's expected maximum "
                                        "over its routing of T tokens, as the dispatch's (PE fabric: the busiest PE "
                                        "link, one pass)"),
    "gradient_max_link_bytes": ("bytes", "load of the busiest directed link in one gradient reduction"),
    "router_gradient_bound": ("", "what limits the router gradient's all-reduce over the TP group (training): link, "
                                  "wafer-link, scale-out, inject, eject port, or latency"),
    "router_gradient_max_link_bytes": ("bytes", "load of the busiest directed link in one MoE layer's share of the "
                                                "TP group's all-reduce of the gates', norms' and MLA down-"
                                                "projections' gradients"),
    "moe_gradient_s": ("s", "training: a MoE layer's share of the TP group's one all-reduce a step of the gradients "
                            "every member holds whole and forms from its own tokens: gates, norms, MLA's down-"
                            "projections (0 at TP 1)"),
    "expert_load_bound": ("", "what limits the all-reduce of the experts' token counts over every node (training, a "
                              "correction bias): link, wafer-link, scale-out, inject, eject port, or latency"),
    "expert_load_max_link_bytes": ("bytes", "load of the busiest directed link in one MoE layer's share of the "
                                            "all-reduce of the experts' token counts (float32, E a MoE layer)"),
    "moe_load_s": ("s", "training with a correction bias (DeepSeek-V3's auxiliary-loss-free balancing): a MoE "
                        "layer's share of the one all-reduce a step of every rank's per-expert token counts, over the "
                        "TP group's ring and then across the groups (Megatron-Core, _update_router_expert_bias)"),
    "dispatch_mean_hops": ("hops", "traffic-weighted mean path length of the dispatch (local copies excluded)"),
    "dispatch_max_hops": ("hops", "longest path any dispatch traffic takes (PE fabric: in PE hops)"),
    "allreduce_ring_hops": ("hops", "longest hop distance between neighbours of a TP ring (her: its on-wafer rings only; "
                                    "the cross-wafer steps are priced in the all-reduce phase, not counted here)"),
    "allreduce_mean_hops": ("hops", "mean hops a byte of the TP all-reduce travels (its ring edges' hops, weighted by "
                                    "bytes; 1 on a switch)"),
    "allreduce_idle_link_share": ("1", "share of directed links the all-reduce leaves idle (cold)"),
    "dispatch_idle_link_share": ("1", "share of directed links the dispatch leaves idle (cold)"),
    "hot_link_overlap": ("1", "Jaccard overlap of all-reduce's and dispatch's hot links, those at or above the phase's "
                         "90th-percentile load of loaded links, ties included (a ring loading its links alike has "
                         "them all hot); 0: complementary"),
    "dispatch_inter_ftd_share": ("1", "share of dispatch link load on links between full token domains (ER only)"),
    "expert_imbalance": ("×", "busiest node's expert load over the mean, after balancing: the expected maximum over a "
                              "step's routing of its tokens (expert stage runs at its pace; SRAM serving and weight "
                              "streaming at PE level: the busiest expert region's, over a decode step's B·q tokens or a "
                              "micro-batch's)"),
    "imbalance_before": ("×", "busiest node's expert load over the mean without the balancer's replicas (expected "
                              "maximum over a step's routing)"),
    "expert_slots_max": ("experts", "expert copies on the fullest node (weights in memory and read per step)"),
    "expert_optimizer_shares_max": ("experts", "routed experts' optimizer state the node keeping the most holds, in "
                                               "whole experts: Σ over its copies of 1 / the expert's copies (ZeRO-1 "
                                               "shards an expert's state over its copies; training)"),
    "migration_bytes_per_step": ("bytes", "expert-copy bytes the balancer moves, amortized per step"),
    "migration_total_s": ("s", "time of one rebalance's migration run alone on the fabric"),
    "migration_exposed_s": ("s", "migration time per step left on the critical path"),
    "kept_act_io_bytes": ("bytes", "activations of one layer and micro-batch streamed out after the forward pass and back in for the backward pass (kept_activations: streamed)"),
    "migration_hidden_s": ("s", "migration time per step hidden in idle (cold) link windows"),
}

_DOCS.update(SERVING)
_DOCS.update(STREAMING)

_MEMORY = {
    "weights": "weights kept per node (resident weights and replicas, or the current layer's attention under streaming)",
    "train_state": "training, resident weights: gradients of the parameters a node holds and its share of the "
                   "optimizer state (optimizer_bytes_per_param, optimizer_sharding; 0 in inference and when streamed)",
    "kept_act": "activations kept in node memory for the backward pass (all layers, by recompute policy; 0 when streamed out)",
    "kv": "KV cache of the micro-batch's sequences (decode, prefill)",
    "attn_transient": "attention transient of one tile of B sequences (linear terms, layer norm input, scores unless "
                      "flash, in training with the backward's dP beside them)",
    "bta_buffer": "concatenated attention outputs of the G tiles (the MoE input; in training's backward the G tiles' "
                  "deltas, the MoE stage's input gradients, in its place)",
    "moe_transient": "dispatched tokens and FFN intermediates of G·B sequences, and the stage's layer norm input",
    "moe_deltas": "training: the MoE backward's deltas (loss gradients of the outputs) of the G·B sequences' tokens "
                  "and their k routed copies, (k + 1)·2H·s a token (0 otherwise)",
    "prefetch": "the next stage's weights streamed in while attention computes, held until it runs (overlap layer, "
                "streamed weights): min(attention's longest pass × I/O in, next stage's weights) / N",
    "attn_grads": "training, streamed weights: gradients of the attention weights kept across the G tiles, summed "
                  "over the tiles and held through the attention stage's backward until they stream out (0 otherwise)",
    "attn_peak": "peak of the attention stage: weights + training state + kept + KV + attention transient + BTA buffer "
                 "+ prefetch + attention gradients",
    "moe_peak": "peak of the MoE stage: weights + training state + kept + KV + MoE transient + MoE deltas",
    "peak": "the larger of the two stage peaks",
    "prefill_peak": "peak of the prefill behind ttft_s (the decode batch's prompts at S = prompt_len)",
    "capacity": "usable node memory (capacity × memory_usable_fraction)",
}
_DOCS.update({f"mem_{k}_node_bytes": ("bytes", f"per node: {v}") for k, v in _MEMORY.items()})

# Energy and cost per token (cost/energy, docs/energy.md): IT energy at the devices and system, bottom-up.
_TIER = {"compute": "FLOPs × energy_flop_j (a format with its own peak at 16-bit peak / its peak)",
         "sram": "bytes read from on-chip SRAM × energy_sram_j_per_byte",
         "fabric": "byte-hops on the node fabric (mesh hops, PE hops, or switch paths) × energy_hop_j_per_byte",
         "hbm": "bytes read from node memory (HBM) × energy_memory_j_per_byte",
         "network": "bytes off the wafer or scale-up domain (inter-wafer, scale-out, wafer I/O) × energy_offchip_j_per_byte",
         "static": "static_power_w × nodes × the time a token takes (step / tokens)"}
_DOCS.update({f"energy_{t}_per_token_j": ("J/token", f"energy per token, {t} tier: {d}") for t, d in _TIER.items()})
_DOCS.update({
    "energy_per_token_j": ("J/token", "energy per token (decode: output token; prefill and training: token processed), "
                                      "bottom-up IT energy: the six energy_<tier>_per_token_j add up to it"),
    "avg_power_w": ("W", "average power of the whole system over the step, bottom-up (energy per step / step time)"),
    "topdown_energy_per_token_j": ("J/token", "top-down energy per token: rated_power_w × nodes × (idle + (1 − idle) × "
                                              "busy) × step / tokens; idle = static/rated, busy = larger of compute and "
                                              "memory busy fractions"),
    "topdown_power_w": ("W", "top-down power of the whole system: rated_power_w × nodes × the utilisation-dependent fraction"),
    "energy_view_ratio": ("×", "bottom-up over top-down energy per token (1 where the two views agree)"),
    "cost_energy_per_mtok": ("USD/Mtok", "electricity per million tokens: energy_per_token_j × pue at power_price_usd_per_kwh"),
    "cost_capital_per_mtok": ("USD/Mtok", "capital per million tokens: capital_usd × nodes over amortization_years at the "
                                          "point's aggregate tokens_per_s"),
    "cost_per_mtok": ("USD/Mtok", "cost per million tokens: electricity (cost_energy_per_mtok) + capital (cost_capital_per_mtok)"),
})

_PATTERNS = [
    (r"^(moe|dense|head|embedding)_op_(\w+)_s$", "s", "SRAM serving: op {1} of one {0} layer for one token"),
    (r"^(\w+?)_time_s$", "s", "time of the {0} stage per layer (its own roofline, plus communication)"),
    (r"^(\w+?)_launch_s$", "s", "kernel launches of the {0} stage per layer: kernels × kernel_launch_s (serial, "
                                "added to its roofline)"),
    (r"^(\w+)_fixed_s$", "s", "fixed software latency of the {0} phase per layer (collective_latency_s or "
                              "alltoall_latency_s per call that moves data; part of its communication time)"),
    (r"^(\w+?)_compute_s$", "s", "compute term of the {0} stage per layer: Σ FLOPs / (nodes · peak · efficiency) "
                                  "over its matmuls, each at its format's peak"),
    (r"^(\w+?)_weights_s$", "s", "weight-movement term of the {0} stage per layer (streamed over I/O or read from node memory)"),
    (r"^(\w+?)_memory_s$", "s", "memory-traffic term of the {0} stage per layer (KV cache reads)"),
    (r"^(\w+?)_hbm_s$", "s", "HBM term of the {0} stage per layer: resident weights and KV cache read from node memory"),
    (r"^(\w+?)_edge_s$", "s", "PE fabric: the {0} stage's stream through the fabric's edge per layer (its I/O "
                              "channels, one wavelet per cycle each, one value per wavelet)"),
    (r"^(\w+?)_regions_s$", "s", "PE fabric: the {0} stage's time on its PE regions per layer (MoE: router and "
                                 "shared experts at their compute term plus expert_pipeline_s; other stages: their "
                                 "compute term)"),
    (r"^(\w+?)_(allreduce|dispatch|combine|gradient)_s$", "s", "{1} communication time per layer on the fabric"),
    (r"^(\w+?)_reduce_s$", "s", "output reduction per layer: partial expert outputs summed over the TP members "
                                 "that fed them (HER: and returned to the home wafer)"),
    (r"^(allreduce|dense_allreduce|ffn_allreduce|dispatch|combine|reduce|gradient|router_gradient|expert_load)_hop_bytes$", "bytes·hops",
     "what the {0} phase moves per layer over the node fabric inside a wafer or scale-up domain, Σ bytes × hops (a "
     "switch path, up and down, one hop; an in-switch reduction one path per member; a link across a wafer edge "
     "is the network's, in <phase>_cross_bytes); the energy model's fabric tier prices it"),
    (r"^(allreduce|dense_allreduce|ffn_allreduce|dispatch|combine|reduce|gradient|router_gradient|expert_load)_cross_bytes$", "bytes",
     "what the {0} phase moves per layer across wafer boundaries (Σ bytes × crossings) or between a switch's "
     "scale-up domains"),
    (r"^(\w+?)_hw_flops$", "FLOP", "FLOPs the {0} stage executes per layer and micro-batch (forward × passes + "
                                   "recompute; the MoE stage's experts at the busiest node's load, attention at the busiest TP "
                                   "rank's: whole heads, and the projections TP cannot split)"),
    (r"^(\w+?)_roof_flops$", "FLOP/s", "all nodes: the {0} stage's compute roof, its executed FLOPs over the time "
                                       "they take at their formats' peaks (nodes · ΣF / Σ(F/peak); nodes · "
                                       "node_peak_flops when all are 16-bit): compute_s ≥ hw_flops / roof"),
    (r"^(\w+?)_traffic_bytes$", "bytes", "bytes on the {0} stage's weight path per layer and micro-batch (streamed: "
                                         "in over the wafer I/O; resident: weights and KV read, busiest node × nodes)"),
    (r"^(\w+?)_io_out_bytes$", "bytes", "streamed weights: bytes the {0} stage sends out over the wafer I/O per layer "
                                        "and micro-batch (training: a gradient per parameter and the kept "
                                        "activations; 0 in inference)"),
    (r"^mem_(\w+)_node_bytes$", "bytes", "memory per node: {0}"),
    (r"^g_mem_(\w+)$", "1", "constraint: {0}-stage peak memory / capacity − 1 (≤ 0 satisfied)"),
    (r"^g_([\w.]+?)_(max|min)(?:_\d+)?$", "1", "user constraint on {0} ({1}): its excess over the bound / |bound| "
     "(the excess itself for a bound of 0); ≤ 0 satisfied"),
    (r"^speedup_vs_(\w+)$", "×", "metric over the best feasible '{0}' baseline point of the same group"),
    (r"^(best|baseline)_reach_(\w+)$", "1", "readings and sensitivity quantity: of the {0} side's designs tied with "
     "its best (metric within 1e-9 relative, compare.TIE_RTOL), the one nearest the interior of the tuned axes (least "
     "largest value / largest swept): its {1} over the largest {1} the side sweeps; 1 = at the axis's end, which "
     "then caps the best (what every axis-end note reads; {0}_{1} is the tie-break's pick)"),
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


# Time columns that are differences of two times, not amounts (the invariants' non-negative law skips them)
DIFFERENCES = frozenset({"moe_balance_saving_s"})


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


# units whose columns are better smaller: a time, a memory, an energy, a power, a cost
LOWER_IS_BETTER = ("s", "bytes", "J/token", "W", "USD/Mtok")


def better(name: str) -> str | None:
    """'min' for a column that is better smaller (by its unit: `LOWER_IS_BETTER`), None where the unit does not
    say (rates, shares, counts: maximized by default)."""
    return "min" if describe(name)[0] in LOWER_IS_BETTER else None


def documented(name: str) -> bool:
    """True when a column has a written meaning (not the fallback spelled from its name)."""
    return describe(name)[1] != name.replace("_", " ")


def manifest_columns(columns) -> dict:
    """{column: {unit, doc}} for a results manifest."""
    return {c: dict(zip(("unit", "doc"), describe(c))) for c in columns}


_PATTERN_NAMES = ["<kind>_op_<op>_s", "<stage>_time_s", "<stage>_launch_s", "<phase>_fixed_s", "<stage>_compute_s",
                  "<stage>_weights_s", "<stage>_memory_s", "<stage>_hbm_s", "<stage>_edge_s", "<stage>_regions_s",
                  "<stage>_<allreduce|dispatch|combine|gradient>_s",
                  "<stage>_reduce_s", "<allreduce|dense_allreduce|ffn_allreduce|dispatch|combine|reduce|gradient|router_gradient|expert_load>_hop_bytes",
                  "<allreduce|dense_allreduce|ffn_allreduce|dispatch|combine|reduce|gradient|router_gradient|expert_load>_cross_bytes",
                  "<stage>_hw_flops", "<stage>_roof_flops", "<stage>_traffic_bytes",
                  "<stage>_io_out_bytes",
                  "mem_<term>_node_bytes",
                  "g_mem_<stage>", "g_<column>_<max|min>", "speedup_vs_<name>", "<best|baseline>_reach_<axis>"]

assert len(_PATTERN_NAMES) == len(_PATTERNS)  # one readable name per pattern, in order (tests check each)


def reference() -> list[tuple[str, str, str]]:
    """[(column, unit, meaning)] of every named output column, then the patterned families (for docs)."""
    named = [(c, u, d) for c, (u, d) in _DOCS.items()]
    patterned = [(n, u, t.format(*re.findall(r"<[^>]+>", n)))
                 for n, (_, u, t) in zip(_PATTERN_NAMES, _PATTERNS)]
    return named + patterned
