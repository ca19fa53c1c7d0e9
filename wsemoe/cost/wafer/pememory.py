"""SRAM per PE of a weight-streaming wafer at PE level: what a PE holds at the attention stage's peak (where the
softmax scores live) and at the MoE stage's (its expert's weights and tokens on its region), the constraints, and the
largest attention batch B that fits per PE beside the wafer-total (node-level) cap. Scalars or arrays; numpy only.

Both stages spread what the node-level model counts over the program rectangle's P PEs instead of over nodes, and
every PE keeps `program_bytes_per_pe` for its program (docs/cost-model.md, "Weight streaming at PE level"):

    room            = sram_per_pe − program_bytes_per_pe
    attention peak  = (weights + kept + KV + BTA buffer + prefetch [+ MoE transient]) / P + tile·(a_lin + a_ln) / P
                      + scores
    scores          = b_s·s·⌈Q / R⌉·⌈S / C⌉ (the better orientation of the R × C rectangle), Q = held query rows:
                      tile sequences × q × heads held (materialized n_h, per_head 1, flash 0), each query's S keys
                      across the columns (a softmax is a reduction along one row of PEs)
    MoE peak        = (weights + kept + KV [+ attention transient + BTA buffer]) / P
                      + (3·H·F·(b_e [+ b_g]) + n·(2H + 6F)·s + (T/E)·(2H + 2H + 6·n_sh·F_sh)·s
                         [+ (n + T/E)·2H·s]) / (h·w)
                      the expert's weights land on its region (one layer at a time), in training with their
                      gradients and the deltas (output gradients) of its copies and home tokens beside them
                      through the backward pass (`region_bytes`); n busiest copies, T/E home tokens with their
                      layer norm's input

`s = bytes_per_act / 2`, `a_ln = 2·H·s` (the stage's layer norm input) and `b_s` bytes per score (5 with attention
dropout, 2 without; in training + 2 for the backward's dP beside the scores in flight) as in cost/node/memory.py,
whose `delta_bytes` (2H·s) and `score_bytes_in_flight` both levels share. The attention tile's deltas are inside the
held BTA buffer (its backward mirror: memory.moe_delta_bytes_per_token).
"""

from __future__ import annotations

import numpy as np

from wsemoe.cost.node import formats, memory, params
from wsemoe.cost.wafer.fabric import program_rectangle


def program_pes(pe):
    """PEs of the program rectangle."""
    rows, cols = program_rectangle(pe)
    return np.asarray(rows, dtype=float) * cols


def room(pe):
    """Bytes a PE holds beside its program."""
    return np.asarray(pe.sram_per_pe_bytes, dtype=float) - pe.program_bytes_per_pe


def _over(peak, free):
    """g of `peak` bytes in `free` bytes: violated (inf) when nothing is free, so a program filling the PE never
    reads as room to spare (the spec refuses it; this keeps the sign right for any caller)."""
    free = np.asarray(free, dtype=float)
    return np.where(free > 0, np.asarray(peak, dtype=float) / np.where(free > 0, free, 1.0) - 1.0, np.inf)


def held_heads(m, wl):
    """Score matrices of one sequence held at once: every head (materialized), one (per_head), none (flash)."""
    kernel = "materialized" if wl.attn_kernel == "per_head" and wl.mode == "decode" else wl.attn_kernel  # as memory.py
    return {"materialized": float(m.num_attention_heads), "per_head": 1.0, "flash": 0.0}[kernel]


def scores(pe, m, wl, queries):
    """Bytes of softmax scores per PE for `queries` held query rows of S keys, the better of the two orientations
    (in training with the backward's dP beside them, laid out as the scores: memory.score_bytes_in_flight)."""
    rows, cols = (np.asarray(x, dtype=float) for x in program_rectangle(pe))
    q, S = np.asarray(queries, dtype=float), np.asarray(wl.seq_len, dtype=float)
    blocks = np.minimum(np.ceil(q / rows) * np.ceil(S / cols), np.ceil(q / cols) * np.ceil(S / rows))
    return memory.score_bytes_in_flight(m, wl) * wl.bytes_per_act / 2.0 * blocks


def tile_queries(m, wl, groups, batch):
    """Query rows of one attention tile whose scores are held at once."""
    q = 1.0 if wl.mode == "decode" else np.asarray(wl.seq_len, dtype=float)   # a swept S is an array
    return groups * np.asarray(batch, dtype=float) * q * held_heads(m, wl)


def attention(pe, m, wl, node: dict, nodes, groups) -> dict:
    """Per PE at the attention stage's peak: what the node model holds spread over the PEs, the tile's linear
    activations, its scores, the peak and its constraint."""
    P, q = program_pes(pe), (1.0 if wl.mode == "decode" else np.asarray(wl.seq_len, dtype=float))
    held = (node["mem_attn_peak_node_bytes"] - node["mem_attn_transient_node_bytes"]) * nodes / P
    linear = groups * wl.B * q * memory.attn_tile_bytes_per_token(m, wl) / P
    score = scores(pe, m, wl, tile_queries(m, wl, groups, wl.B))
    peak = held + linear + score
    return {"pe_mem_attn_held_bytes": held, "pe_mem_attn_linear_bytes": linear, "pe_mem_scores_bytes": score,
            "pe_mem_attn_peak_bytes": peak, "g_pe_sram_attn": _over(peak, room(pe))}


def moe_base(node: dict, nodes, pe):
    """Per PE at the MoE stage's peak, outside the expert regions' own bytes (their tokens and deltas)."""
    region = node["mem_moe_transient_node_bytes"] + node["mem_moe_deltas_node_bytes"]
    return (node["mem_moe_peak_node_bytes"] - region) * nodes / program_pes(pe)


def region_bytes(m, wl, T, busiest) -> dict:
    """Bytes one expert's region holds: its weights, its tokens (the busiest copies and its home share) and, in
    training, the weights' gradients and the tokens' deltas.

    Gradients: Cerebras' weight streaming computes the weight gradients on the wafer during the backward pass and
    then streams them out to MemoryX (Cerebras docs, "Weight Streaming Execution",
    docs.cerebras.net/en/latest/wsc/cerebras-basics/cerebras-execution-modes.html: "weight gradients are computed,
    and then they are streamed from the WSE to MemoryX"), one per parameter (the edge and I/O terms send
    n_W·b_g, no partial sums). A region's PE keeps its block of the expert's weights while the n token copies pass
    it, so its block's gradient Σ_copies x·dy is complete only after the last copy: it can stream out per block
    once complete, not earlier, so each block is held whole through the backward pass beside the weights the same
    pass reads (dx = Wᵀ·dy). This is ZeRO's count of a held parameter (its weight and its gradient, as
    weights.training_state_node counts resident ones). The backward is taken fused (dx and dW per copy in one pass):
    one that ran dx for every copy first (each dx held until its combine beside the dy the dW pass still reads) and
    freed the weights before dW would peak at max(W + n·2H·s, dW) against W + dW, less only while n < 1.5·F at 16
    bits (k = 1 here); no source says which the compiler runs (docs/cost-model.md, "Weight streaming at PE level").

    Deltas (training): the backward's inputs are the loss's derivatives with respect to the stage's outputs,
    Cerebras' "deltas" (Cerebras glossary: "derivatives of the loss on the batch with respect to the activations;
    they flow from layer to layer in the reverse direction during backpropagation"). A copy's delta dy (2H·s; the
    combine's backward is a dispatch of the output gradients, all n copies' arriving as the forward dispatch's x
    did) is read twice, by dW_down = hᵀ·dy and dh = W_downᵀ·dy, beside the copy's x, gate, up and product
    (recomputed: `tokens`); a home token holds its own delta g (2H·s), which the dispatch copies and the residual
    path adds back. dh, dgate, dup and dx can each take the place of a tensor dead by then (h, gate/up, dy), so
    the deltas are the least the backward adds: (n + T/E)·2H·s, held with the weights and their gradients."""
    s, H, F = wl.bytes_per_act / 2.0, m.hidden_size, m.moe_intermediate_size
    home = (2.0 * H + 6.0 * m.n_shared_experts * params.shared_width(m)) * s + memory.norm_input_bytes_per_token(m, wl)
    grads = params.expert_params(m) * wl.bytes_per_grad if wl.mode == "train" else 0.0
    copies = np.asarray(busiest, dtype=float)
    deltas = (copies + T / m.num_experts) * memory.delta_bytes(m, wl)   # node level: memory.moe_delta_bytes_per_token
    return {"weights": params.expert_params(m) * formats.expert_bytes(wl) + 0.0 * T, "grads": grads + 0.0 * T,
            "tokens": copies * (2.0 * H + 6.0 * F) * s + T / m.num_experts * home, "deltas": deltas + 0.0 * T}


def need_area(pe, base, region: dict):
    """PEs an expert's region needs so that its PEs fit (inf where the rest alone fills them)."""
    free = room(pe) - base
    total = region["weights"] + region["grads"] + region["tokens"] + region["deltas"]
    return np.where(free > 0, total / np.where(free > 0, free, 1.0), np.inf)


def moe(pe, base, region: dict, area) -> dict:
    """Per PE of the busiest expert region at the MoE stage's peak, and its constraint."""
    w, dw, t, d = (region[k] / area for k in ("weights", "grads", "tokens", "deltas"))
    peak = base + w + dw + t + d
    return {"pe_mem_moe_held_bytes": base + 0.0 * peak, "pe_mem_expert_weights_bytes": w,
            "pe_mem_expert_grads_bytes": dw, "pe_mem_expert_tokens_bytes": t, "pe_mem_expert_deltas_bytes": d,
            "pe_mem_moe_peak_bytes": peak,
            "g_pe_sram_moe": _over(peak, room(pe))}


def _per_batch(node: dict, batch, prefetch, tile=True):
    """(bytes of the attention peak per sequence of B outside the weights and the prefetch, the prefetch's
    bytes per sequence while the window's stream is below the next stage's weights, those weights), per node;
    without the node-level tile transient when not `tile` (the PE view counts the tile itself).
    The prefetch is min(r·B, W_next): proportional to B (the attention window is) until it holds all of W_next."""
    B = np.asarray(batch, dtype=float)
    streamed, following = prefetch
    held = (node["mem_attn_peak_node_bytes"] - node["mem_weights_node_bytes"] - node["mem_prefetch_node_bytes"]
            - node["mem_attn_grads_node_bytes"])
    if not tile:
        held = held - node["mem_attn_transient_node_bytes"]
    return held / B, np.asarray(streamed, dtype=float) / B, following


def node_cap(node: dict, batch, prefetch):
    """The largest attention batch B whose attention stage fits the usable node memory at this point's G: the stage
    peak is its weights, terms proportional to B (tile, kept activations, KV cache, BTA buffer) and the prefetch
    min(r·B, W_next) (`prefetch`: cost.stagecost.prefetch_parts at this B). The peak ≤ room when either branch of
    the min is, so the cap is the larger of the two branches' caps."""
    weights, cap = node["mem_weights_node_bytes"] + node["mem_attn_grads_node_bytes"], node["mem_capacity_node_bytes"]
    per, rate, following = _per_batch(node, batch, prefetch)
    room = cap - weights
    with np.errstate(divide="ignore", invalid="ignore"):
        best = np.maximum(np.floor(room / (per + rate)), np.floor((room - following) / per))
    return np.maximum(best, 0.0)


def pe_cap(pe, m, wl, node: dict, nodes, groups, prefetch):
    """The largest attention batch B whose attention stage fits every PE at this point's G: the weights, terms
    proportional to B, the prefetch min(r·B, W_next) (as `node_cap`: each branch of the min solved, the larger B
    taken) and the scores of B sequences (whole rows per PE: solved for each orientation, the better taken)."""
    P = program_pes(pe)
    per, rate, following = (x * nodes / P for x in _per_batch(node, wl.B, prefetch, tile=False))
    per = per + groups * (1.0 if wl.mode == "decode" else wl.seq_len) * memory.attn_tile_bytes_per_token(m, wl) / P
    k = tile_queries(m, wl, groups, 1.0)
    rows, cols = (np.asarray(x, dtype=float) for x in program_rectangle(pe))
    weights = (node["mem_weights_node_bytes"] + node["mem_attn_grads_node_bytes"]) * nodes / P
    best = np.zeros(np.broadcast_shapes(np.shape(per), np.shape(weights), np.shape(following)))
    unit = memory.score_bytes_in_flight(m, wl) * wl.bytes_per_act / 2.0
    for fixed, slope_b in ((weights, per + rate), (weights + following, per)):   # the two branches of the prefetch
        for across, down in ((rows, cols), (cols, rows)):
            u = unit * np.ceil(wl.seq_len / down)
            slope = slope_b + k * u / across
            hi = np.floor((room(pe) - fixed) / slope)        # rows counted exactly: a bound from above
            b = np.floor((room(pe) - fixed - u) / slope)     # one more row per PE at most: fits for sure
            for step in (2.0, 1.0, 0.0):                     # whole rows add less than one row's bytes: hi − b ≤ 2
                trial = hi - step
                fits = (trial > b) & (fixed + slope_b * trial + u * np.ceil(k * trial / across) <= room(pe))
                b = np.where(fits, trial, b)
            best = np.maximum(best, b)
    return np.maximum(best, 0.0)
