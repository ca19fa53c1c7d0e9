"""Units and one-line meanings of the PE-level output columns: SRAM serving's pipeline over wafers and a
weight-streaming wafer at PE level (the rest are in columns.py, which joins these to its own)."""

from __future__ import annotations

SERVING = {   # SRAM serving (weight_source: sram): the PE-level pipeline over wafers
    "wafers": ("wafers", "CS systems of the serving pipeline: pipeline_wafers, or the fewest that fit when unset"),
    "wafers_needed": ("wafers", "fewest wafers whose stages hold the weights and the batch's KV cache (NaN: none "
                                "up to one layer per wafer)"),
    "wafers_for_weights": ("wafers", "fewest wafers that hold the weights alone (no KV cache)"),
    "layers_per_wafer": ("layers", "layers per wafer, rounded up: ⌈L / wafers⌉ (the stages split by bytes, so a wafer may hold more or fewer)"),
    "kv_fit_sequences": ("sequences", "most sequences at this context whose KV cache fits the pipeline's wafers "
                                      "beside the weights"),
    "weight_bytes": ("bytes", "every weight of the model in its format, held in SRAM once"),
    "kv_cache_bytes": ("bytes", "KV cache of the batch's B sequences at this context, every layer"),
    "sram_bytes_per_pe": ("bytes", "the chosen layout's bytes per PE: weights and cache its regions hold (a MoE "
                                   "model's expert tiles up to the room, tile_bytes_per_pe_max)"),
    "region_fill": ("×", "PEs the layout gives each region over the fewest that hold its bytes (≥ 1 when it fits)"),
    "tile_bytes_per_pe_max": ("bytes", "most bytes a PE of a MoE layer's tiles holds (its routed expert's tile, its "
                                       "attention's): at most the PE's room, sram_bytes_per_pe × region_fill"),
    "attention_share": ("×", "PEs a MoE layer's attention region gets over its bytes' share (the layout's choice)"),
    "attn_region_pes": ("PEs", "PEs of one MoE layer's attention region (its weights, router and KV share)"),
    "expert_region_pes": ("PEs", "PEs of one routed expert's region (SRAM serving: a square tile; weight streaming "
                                 "at PE level: the h × w tile of the layout taken)"),
    "expert_region_side": ("PEs", "side of an expert region, the tile of the region grid"),
    "placement_stretch": ("×", "tile columns attention spans per logical column (interleaved > 1: its collectives "
                               "across columns run that much longer)"),
    "dispatch_path_hops": ("hops", "PE hops of the longest router-to-expert path of a MoE layer"),
    "wafer_hop_s": ("s", "one token's hop between consecutive wafers: bytes over the system link, its latency, "
                         "and the way to and from the wafers' I/O edges"),
    "wafer_hops": ("hops", "hops between wafers of one pass: wafers − 1"),
    "layer_splits": ("hops", "wafer hops inside a MoE layer (its routed experts continue on the next wafer)"),
    "crossing_s": ("s", "one token's extra time on the hops inside a MoE layer: the experts' input beside the "
                   "residual, layer_splits × activation bytes / link bandwidth"),
    "far_experts_s": ("s", "one token's time in the routed experts of split MoE layers' further wafers: the "
                      "expected wafers beyond the first on which one of its top-k experts lies (uniform routing) × "
                      "the layer's dispatch, routed expert GEMVs, combine and sum"),
    "token_return_s": ("s", "the sampled token's way back to the first wafer"),
    "embedding_time_s": ("s", "embedding lookup and the hop into the first layer, one token"),
    "pipeline_latency_s": ("s", "one token through every layer, hop and the head (t1): the sum of the pipeline_*_s "
                                "terms"),
    "pipeline_macs_s": ("s", "local MAC time in pipeline_latency_s"),
    "pipeline_link_s": ("s", "link (wavelet streaming) time in pipeline_latency_s"),
    "pipeline_hops_s": ("s", "hop, turn and relay latency on the PE fabric in pipeline_latency_s"),
    "pipeline_overhead_s": ("s", "fixed operator invocation cycles in pipeline_latency_s"),
    "pipeline_inter_wafer_s": ("s", "wafer hops and the token's return over the system links in pipeline_latency_s"),
    "busiest_stage": ("", "the region or link that spends most per token of the stream (it paces the pipeline)"),
    "busiest_stage_s": ("s", "time the busiest stage spends per token of the stream (β)"),
    **{f"busiest_{t}_s": ("s", f"SRAM serving: the {w} part of busiest_stage_s (β's five terms add up to it)")
       for t, w in (("macs", "local MACs"), ("link", "link bandwidth"), ("hops", "hop latency"),
                    ("overhead", "operator overhead"), ("inter_wafer", "inter-wafer"))},
    "prompt_latency_s": ("s", "decode with prompt_len: one token through every layer, hop and the head at context "
                              "prompt_len (t1 of ttft_s)"),
    "prompt_busiest_stage_s": ("s", "decode with prompt_len: the busiest stage's time per token of the stream at "
                                    "context prompt_len (β of ttft_s)"),
    "step_latency_s": ("s", "a sequence's step: its drafts (draft_time_s), then through the pipeline: t1 + wafers × "
                            "io_stall_s + (draft tokens)·β (SRAM prefill: the prompts' step, ttft_s)"),
    "draft_time_s": ("s", "the draft model's time in a step: draft_tokens × draft_token_s (0: not charged)"),
    "io_stall_s": ("s", "σ: one synchronous wafer I/O transfer's stall of its system (mapping.wafer_io: sync, "
                        "hardware.sync_io_stall_s), paid by every system once a step; 0 when the I/O runs "
                        "asynchronously from compute"),
    "pipeline_period_s": ("s", "time between a sequence's steps: max(step_latency_s, B·((draft + 1)·β + io_stall_s)) "
                               "(SRAM prefill: ttft_s, the prompts' whole step)"),
    "tokens_in_flight": ("tokens", "tokens in the pipeline at once: min(B·(draft + 1), (t1 + (draft tokens)·β) / β)"),
    "g_sram_wafers": ("1", "constraint: the fullest stage's bytes / what its wafer's PEs hold − 1 (≤ 0 satisfied)"),
    "g_sram_layer": ("1", "constraint: the largest layer (or embedding, head) / what one wafer holds − 1"),
    "g_sram_pe": ("1", "constraint: a PE's program and buffers / its SRAM − 1"),
    "g_sram_stages": ("1", "constraint: wafers / layers − 1 (a stage holds at least one layer)"),
}

STREAMING = {   # a weight-streaming wafer at PE level (hardware.pe_fabric): cost/wafer/streaming.py
    "expert_pipeline_s": ("s", "PE fabric: the busiest expert region's SwiGLU per MoE layer and micro-batch, all "
                               "passes: tokens × its pacing cycles plus fill and drain (the MoE stage's regions term "
                               "adds its router and shared experts)"),
    "expert_fill_s": ("s", "PE fabric: the part of expert_pipeline_s that does not grow with tokens: the pipelines' "
                           "fill and drain, reduction and broadcast latencies, operator overheads"),
    "expert_tokens": ("tokens", "PE fabric: token copies the busiest expert region processes per pass: the "
                                "expected maximum over a step's routing of T tokens (k·p_max·T at many; at least one)"),
    "expert_pacing_cycles": ("cycles", "PE fabric: cycles each more token adds to the busiest region's SwiGLU (its "
                                       "slowest pipeline stage per matmul: local MACs or reduction wavelets)"),
    "dispatch_path_s": ("s", "PE fabric: the part of moe_dispatch_s that does not grow with tokens: the longest "
                             "path's hops and turn and one operator overhead, once a move of the tokens (1 a step "
                             "in inference, 3 in training with full recompute)"),
    "combine_path_s": ("s", "PE fabric: the part of moe_combine_s that does not grow with tokens (multicast: a relay "
                            "stage per tile hop of the reduction)"),
    "expert_grid_rows": ("tiles", "PE fabric: rows of the grid of expert regions (one expert per tile)"),
    "expert_grid_cols": ("tiles", "PE fabric: columns of the grid of expert regions"),
    "expert_region_rows": ("PEs", "PE fabric: PE rows of one expert's region (the layout the point takes)"),
    "expert_region_cols": ("PEs", "PE fabric: PE columns of one expert's region"),
    "expert_reduction": ("", "PE fabric: the all-reduce pattern of the expert regions' matmuls in the layout taken "
                             "(tree, chain or ring)"),
    "pe_mem_attn_held_bytes": ("bytes", "PE fabric, per PE at the attention stage's peak: weights, kept activations, "
                                        "KV cache and BTA buffer (and the other micro-batch's MoE transient) over the "
                                        "program rectangle's PEs"),
    "pe_mem_attn_linear_bytes": ("bytes", "PE fabric, per PE: the attention tile's activations linear in tokens"),
    "pe_mem_scores_bytes": ("bytes", "PE fabric, per PE: the attention tile's softmax scores (whole query rows of S "
                                     "keys per PE row: materialized every head, per_head one, flash none)"),
    "pe_mem_attn_peak_bytes": ("bytes", "PE fabric, per PE: the attention stage's peak (held + linear + scores)"),
    "pe_mem_moe_held_bytes": ("bytes", "PE fabric, per PE at the MoE stage's peak: weights, kept activations and KV "
                                       "cache over the program rectangle's PEs"),
    "pe_mem_expert_weights_bytes": ("bytes", "PE fabric, per PE of the busiest expert region: its expert's weights "
                                             "(the layer's weights land on their regions)"),
    "pe_mem_expert_grads_bytes": ("bytes", "PE fabric, per PE of the busiest expert region: its weights' gradients, "
                                           "held through the backward pass until they stream out (training; 0 "
                                           "otherwise)"),
    "pe_mem_expert_tokens_bytes": ("bytes", "PE fabric, per PE of the busiest expert region: its token copies, their "
                                            "FFN intermediates and its share of the layer's tokens"),
    "pe_mem_expert_deltas_bytes": ("bytes", "PE fabric, per PE of the busiest expert region: the deltas (loss "
                                            "gradients of the outputs) of its token copies and home tokens, held "
                                            "through the backward pass (training; 0 otherwise)"),
    "pe_mem_moe_peak_bytes": ("bytes", "PE fabric, per PE: the MoE stage's peak (held + expert weights + "
                                       "their gradients + tokens + deltas)"),
    "g_pe_sram_attn": ("1", "constraint: the attention stage's peak per PE / what a PE holds beside its program − 1 "
                            "(≤ 0 satisfied)"),
    "g_pe_sram_moe": ("1", "constraint: the MoE stage's peak per PE of the busiest expert region / what a PE holds "
                           "beside its program − 1 (≤ 0 satisfied)"),
    "attn_batch_cap_node": ("sequences", "PE fabric: the largest attention batch B whose attention stage fits the "
                                         "usable node memory at this G (the wafer-total view)"),
    "attn_batch_cap_pe": ("sequences", "PE fabric: the largest attention batch B whose attention stage fits every PE "
                                       "at this G (scores in whole rows per PE, the program's bytes kept)"),
}
