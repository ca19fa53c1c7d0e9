"""Memory per node: weights, training state, kept activations, attention and MoE transients, prefetched weights,
KV cache.

Activation byte counts follow Korthikanti et al. 2022 (§4.1, activations per layer, 16-bit): per token and
layer, attention linear terms 11·H, score terms 5·n_h·S (materialized scores; 5·S one head at a time) with
attention dropout, 2·n_h·S without (the softmax output alone), norms 4·H (each of the two layer norms keeps its
2·H input); the MLP terms are written out for a routed SwiGLU (k copies of the token, gate/up/product of width F
each). All counts scale with bytes_per_act / 2.

Korthikanti's count is what the forward saves for the backward; the backward's own live gradients are outside it.
A training step's stage peak is its backward's (`delta_bytes`, `moe_delta_bytes_per_token`, `score_bytes_in_flight`):
the deltas (loss gradients of the stage's outputs) its tokens and routed copies hold, and the dP of the heads in flight.
"""

from __future__ import annotations

import numpy as np

from wsemoe.cost.node import formats, mix, params


def _scale(wl):
    return wl.bytes_per_act / 2.0


def attn_linear_bytes_per_token(m, wl):
    """Attention activations linear in tokens: QKV input, Q, K, V, output projections."""
    return 11.0 * m.hidden_size * _scale(wl)


def norm_input_bytes_per_token(m, wl):
    """One layer norm's input, the residual stream (2·H at 16 bits): a stage keeps its own norm's input for the
    norm's backward and the residual add; Korthikanti's 4·H are the two norms of a layer, 11·H holds none of it
    (its QKV input is the norm's output)."""
    return 2.0 * m.hidden_size * _scale(wl)


def score_bytes(m):
    """Bytes per attention score at 16 bits: the softmax output (2), and with attention dropout (the model's
    `attention_dropout` > 0) its mask (1) and output (2) too: Korthikanti's 5. The shipped configs set 0.0."""
    return np.where(np.asarray(getattr(m, "attention_dropout", 0.0)) > 0, 5.0, 2.0)


def score_bytes_in_flight(m, wl):
    """Bytes per score of the heads in flight at the attention stage's peak, at 16 bits: the forward's
    (`score_bytes`) and, in training, the backward's dP = dO·Vᵀ beside them (2): dS = P ⊙ (dP − rowsum(dO ⊙ O))
    reads P and dP together (Dao et al. 2022, FlashAttention, App. B.2: the standard attention backward), then
    takes dP's place; with dropout the gradient of the dropped scores is formed first and the mask applied in
    place, still one 2-byte tensor. Korthikanti's 5·S (§4.1) counts the forward's saves only."""
    return score_bytes(m) + np.where(wl.mode == "train", 2.0, 0.0)


def attn_score_bytes_per_token(m, wl, widest: bool = True):
    """Per-score tensors over the S keys each query sees: for every head (materialized), for one
    head at a time (per_head: the heads run one after another), or 0 (flash: tiled).
    A patterned model's layers see their own keys (window, chunk, top-k): the layer seeing most sets the
    stage's transient (`widest`: `score_bytes_in_flight`, the backward's dP with the scores in training), the mean
    over the layers what all of them keep for the backward (`widest=False`: `score_bytes`)."""
    if wl.attn_kernel == "flash":
        return 0.0 * m.hidden_size
    # decode's one query per sequence holds every head's n_h·S scores at once: attn_kernel's per_head reading
    # applies to training and prefill only (presets/readings.yaml, its scope), so decode ignores it
    heads = 1.0 if wl.attn_kernel == "per_head" and wl.mode != "decode" else m.num_attention_heads
    keys = mix.widest_context(m, wl.seq_len) if widest else mix.context_of(m, None, wl.seq_len)
    per_score = score_bytes_in_flight(m, wl) if widest else score_bytes(m)
    return per_score * heads * keys * _scale(wl)


def moe_bytes_per_token(m, wl):
    """Routed MLP activations: token input, k dispatched copies, gate, up and product (width F)."""
    k, H, F = m.num_experts_per_tok, m.hidden_size, m.moe_intermediate_size
    shared = 3.0 * m.n_shared_experts * params.shared_width(m)
    return (2.0 * H + 2.0 * k * H + 6.0 * k * F + 2.0 * shared) * _scale(wl)


def kept_bytes_per_token_layer(m, wl):
    """Activations one token leaves per layer for the backward pass, by recompute policy."""
    if wl.mode != "train":
        return 0.0 * m.hidden_size
    if wl.recompute == "full":
        return 2.0 * m.hidden_size * _scale(wl)
    kept = attn_linear_bytes_per_token(m, wl) + moe_bytes_per_token(m, wl) + 2.0 * norm_input_bytes_per_token(m, wl)
    if wl.recompute == "none":
        kept = kept + attn_score_bytes_per_token(m, wl, widest=False)
    return kept


def attn_tile_bytes_per_token(m, wl):
    """The attention stage's transient per token of its tile outside the scores: Korthikanti's 11·H and the
    stage's own layer norm input."""
    return attn_linear_bytes_per_token(m, wl) + norm_input_bytes_per_token(m, wl)


def moe_stage_bytes_per_token(m, wl):
    """The MoE stage's transient per token: the routed MLP's activations and the stage's own layer norm input
    (the residual stream the MoE output is added to)."""
    return moe_bytes_per_token(m, wl) + norm_input_bytes_per_token(m, wl)


def delta_bytes(m, wl):
    """One token vector's delta in training (2·H at 16 bits), 0 otherwise: the loss's derivative with respect to a
    stage's output, Cerebras' "deltas" (Cerebras glossary: "derivatives of the loss on the batch with respect to
    the activations; they flow from layer to layer in the reverse direction during backpropagation"). Held through
    the stage's backward beside what the forward saved (Korthikanti's count), which holds none of them."""
    return np.where(wl.mode == "train", 2.0 * m.hidden_size * _scale(wl), 0.0 * m.hidden_size)


def moe_delta_bytes_per_token(m, wl):
    """The MoE stage backward's deltas per token: its own g (the stage's output gradient, which the residual path
    adds back and the combine's backward copies) and each of its k routed copies' dy = p·g (read by dW_down = hᵀ·dy
    and dh = W_downᵀ·dy; a model without MoE layers has no copies). dh, dgate, dup and dx each take the place of a
    tensor dead by then, so these are the least the backward adds (as an expert region's, cost/wafer/pememory.py).
    The attention stage's deltas are the BTA buffer's mirror (the MoE backward's dx of all T tokens, which the tiles
    drain while their own dx fill it), already counted there."""
    copies = np.where(params.moe_layers(m) > 0, m.num_experts_per_tok, 0)
    return (copies + 1.0) * delta_bytes(m, wl)


def kept_in_node_memory(hw) -> bool:
    """True when kept activations occupy node memory; a weight-streaming wafer may stream them out instead."""
    return hw.kept_activations == "node"


def kv_bytes_per_token_layer(m, wl):
    """KV-cache bytes per cached token per layer, in `kv_format` (MLA caches the compressed latent and rope key)."""
    if getattr(m, "attention", "gqa") == "mla":
        width = m.kv_lora_rank + m.qk_rope_head_dim
    else:
        width = 2.0 * m.num_key_value_heads * m.head_dim
    return held_per_token(m, wl, width * formats.kv_bytes(wl), 1)


def held_per_token(m, wl, softmax_bytes, tp):
    """A layer's cache per cached token of a `seq_len` context: `softmax_bytes` (a full layer's per token) for a
    uniform model; for a patterned one the mean over its layers of what each kind holds for the whole context
    (docs/layers.md) over seq_len, so × seq_len × layers is the model's cache exactly. A sparse layer adds its
    indexer's keys (one head, on every TP rank, FP8 whatever `kv_format`: mix.indexer_key_bytes), a linear layer its
    state (its value heads split over the ranks; in its own `state_format`, else 16-bit, never in `kv_format`:
    mix.linear_state_bytes)."""
    mx = mix.mix(m)
    if mx is None:
        return softmax_bytes
    S = wl.seq_len

    def per_token(kind):
        if kind == "linear":
            heads = mx.pattern["linear"]["num_value_heads"]
            return mix.linear_state_bytes(mx.pattern) * np.ceil(heads / tp) / heads / S
        held = mix.tokens_held(kind, mx.pattern, S) / S * softmax_bytes
        return held + mix.indexer_key_bytes(mx.pattern) if kind == "sparse" else held

    if len(mx.attention) == 1:
        return per_token(next(iter(mx.attention)))
    return sum(n * per_token(kind) for kind, n in mx.attention.items()) / mx.layers


def kv_bytes_per_rank(m, wl, tp, mla_cache: str = "replicated"):
    """KV-cache bytes one TP rank holds per cached token and layer of its group's sequences.

    TP splits attention heads. GQA: a rank holds its ⌈n_kv/tp⌉ key/value heads (every rank keeps at least
    one, so beyond tp = n_kv heads are replicated). MLA: every head reads the whole compressed latent, so
    every rank holds all of it (`replicated`, the default) unless the cache is sharded over the ranks by
    sequence (`sharded`: 1/tp each). This is how TP trades KV memory and reads for all-reduce traffic.
    """
    if getattr(m, "attention", "gqa") == "mla":
        latent = (m.kv_lora_rank + m.qk_rope_head_dim) * formats.kv_bytes(wl)
        return held_per_token(m, wl, latent / tp if mla_cache == "sharded" else latent + 0.0 * tp, tp)
    return held_per_token(m, wl, 2.0 * np.ceil(m.num_key_value_heads / tp) * m.head_dim * formats.kv_bytes(wl), tp)


def memory_terms(hw, m, wl, groups, T, seqs, weights_node, nodes, kv_node=None, second_batch=False,
                 train_state=0.0, prefetch=0.0, held_grads=0.0):
    """Peak memory per node of the attention and MoE stages, by term (bytes).

    `groups` attention groups each run their own tile of B sequences; activations spread
    evenly over the `nodes` of the wafer; `weights_node` is what stays resident per node and
    `kv_node` the KV cache a node holds (default: spread evenly), `train_state` its gradients and optimizer
    state (weights.training_state_node), `prefetch` the next stage's weights a node buffers while attention
    computes (cost.stagecost.prefetch_node), `held_grads` the gradients of the attention weights a streaming
    wafer keeps across its tiles, held through the attention stage's backward (weights.held_gradients_node). With `second_batch` (two
    micro-batches interleaved) a second KV cache is held, and while one micro-batch is in a
    stage the other one's transients of the other stage are alive too.
    """
    tile_tokens = groups * wl.B * (1 if wl.mode == "decode" else wl.seq_len)
    per_tok = attn_tile_bytes_per_token(m, wl) + attn_score_bytes_per_token(m, wl)
    attn_transient = tile_tokens * per_tok / nodes
    bta_buffer = T * m.hidden_size * wl.bytes_per_act / nodes
    moe_transient = T * moe_stage_bytes_per_token(m, wl) / nodes
    moe_deltas = T * moe_delta_bytes_per_token(m, wl) / nodes   # the MoE backward's, beside its transient
    kept = T * m.num_hidden_layers * kept_bytes_per_token_layer(m, wl) / nodes
    if not kept_in_node_memory(hw):  # streamed out over the I/O (charged as time in cost.step)
        kept = 0.0 * kept
    kv = 0.0
    if wl.mode != "train":
        kv = seqs * wl.seq_len * m.num_hidden_layers * kv_bytes_per_token_layer(m, wl) / nodes if kv_node is None \
            else kv_node
    if second_batch:
        kv = 2.0 * kv
    base = weights_node + train_state + kept + kv
    capacity = hw.node_memory_bytes * hw.memory_usable_fraction
    attn_side = attn_transient + bta_buffer + prefetch + held_grads   # what only the attention stage holds
    moe_side = moe_transient + moe_deltas
    attn_peak = base + attn_side + (moe_side if second_batch else 0.0)
    moe_peak = base + moe_side + (attn_side if second_batch else 0.0)
    return {
        "mem_weights_node_bytes": weights_node,
        "mem_train_state_node_bytes": train_state + 0.0 * weights_node,
        "mem_kept_act_node_bytes": kept,
        "mem_kv_node_bytes": kv,
        "mem_attn_transient_node_bytes": attn_transient,
        "mem_bta_buffer_node_bytes": bta_buffer,
        "mem_moe_transient_node_bytes": moe_transient,
        "mem_moe_deltas_node_bytes": moe_deltas,
        "mem_prefetch_node_bytes": prefetch + 0.0 * weights_node,
        "mem_attn_grads_node_bytes": held_grads + 0.0 * weights_node,
        "mem_attn_peak_node_bytes": attn_peak,
        "mem_moe_peak_node_bytes": moe_peak,
        "mem_peak_node_bytes": np.maximum(attn_peak, moe_peak),
        "mem_capacity_node_bytes": capacity,
        "g_mem_attn": attn_peak / capacity - 1.0,
        "g_mem_moe": moe_peak / capacity - 1.0,
    }
