"""Parameter counts of a transformer MoE, per component; works on scalars or numpy arrays.

`m` is anything with the ModelSpec attribute names (the spec itself, or a namespace of
arrays from a design frame), so the spec and the vectorized cost model share one formula.
"""

from __future__ import annotations

import numpy as np

from wsemoe.cost.node import mix


def _mla(m) -> bool:
    return getattr(m, "attention", "gqa") == "mla"


def qk_head_dim(m):
    """Per-head width of queries and keys (MLA: nope + rope parts)."""
    return m.qk_nope_head_dim + m.qk_rope_head_dim if _mla(m) else m.head_dim


def v_head_dim(m):
    """Per-head width of values."""
    return m.v_head_dim if _mla(m) else m.head_dim


def attn_params(m):
    """Matmul weights of one attention block (projections only; no norms); a patterned model's mean over its
    layers (each attention kind its own block, so L times this is their sum)."""
    mx = mix.mix(m)
    if mx is None:
        return softmax_attn_params(m)
    return _mean(mx, lambda kind: _kind_params(m, mx.pattern, kind)[0])


def attn_extra_params(m):
    """Small attention parameters that cost no matmul FLOPs (biases, norms, sinks): a patterned model's mean."""
    mx = mix.mix(m)
    if mx is None:
        return softmax_attn_extra(m)
    return _mean(mx, lambda kind: _kind_params(m, mx.pattern, kind)[1])


def _mean(mx, per_kind):
    """Mean over a patterned model's layers of a per-attention-kind figure (one kind: the figure itself)."""
    if len(mx.attention) == 1:
        return per_kind(next(iter(mx.attention)))
    return sum(n * per_kind(kind) for kind, n in mx.attention.items()) / mx.layers


def _kind_params(m, pattern: dict, kind: str):
    """(matmul weights, other weights) of one attention block of `kind`: a softmax block (with its output gate,
    sinks and output bias where the pattern has them; a sparse one also its indexer), or a linear one."""
    if kind == "linear":
        return mix.linear_params(m, pattern)
    proj, other = softmax_attn_params(m), softmax_attn_extra(m)
    if pattern.get("output_gate"):   # the query projection also emits a per-channel gate (Qwen3-Next)
        proj = proj + m.hidden_size * m.num_attention_heads * v_head_dim(m)
    other = other + m.num_attention_heads * bool(pattern.get("sinks")) + m.hidden_size * bool(pattern.get("o_bias"))
    if kind == "sparse":
        p, o = mix.indexer_params(m, pattern)
        proj, other = proj + p, other + o
    return proj, other


def softmax_attn_params(m):
    """Matmul weights of one softmax attention block (GQA or MLA projections)."""
    H, nh = m.hidden_size, m.num_attention_heads
    if _mla(m):
        dqk = qk_head_dim(m)
        q = H * m.q_lora_rank + m.q_lora_rank * nh * dqk if m.q_lora_rank else H * nh * dqk
        kv = H * (m.kv_lora_rank + m.qk_rope_head_dim) + m.kv_lora_rank * nh * (m.qk_nope_head_dim + m.v_head_dim)
        return q + kv + nh * m.v_head_dim * H
    qkv = H * (nh + 2 * m.num_key_value_heads) * m.head_dim
    return qkv + nh * m.head_dim * H


def attn_kv_params(m):
    """The part of attn_params that tensor parallelism splits only as a token's keys and values split
    (kv_share): GQA's K and V projections (a rank keeps at least one KV head's, as vLLM, SGLang and
    TensorRT-LLM do), MLA's down-projections to the query and KV latents (every rank runs them whole:
    SGLang's fused_qkv_a_proj_with_mqa is a ReplicatedLinear, TensorRT-LLM's kv_a_proj_with_mqa a Linear without
    a TP mode). A patterned model's mean over its layers; a linear-attention layer's heads split like heads."""
    mx = mix.mix(m)
    if mx is None:
        return _kv_proj(m)
    return _mean(mx, lambda kind: 0 if kind == "linear" else _kv_proj(m))


def mla_down_params(m):
    """MLA's down-projections to the query and KV latents (H·(r_q + r_kv + d_rope)), a patterned model's mean over
    its layers; 0 without MLA (the part of `attn_kv_params` every TP rank holds whole: kv_share 1)."""
    return attn_kv_params(m) if _mla(m) else 0.0 * m.hidden_size


def _kv_proj(m):
    H = m.hidden_size
    if _mla(m):
        return H * ((m.q_lora_rank or 0) + m.kv_lora_rank + m.qk_rope_head_dim)
    return H * 2 * m.num_key_value_heads * m.head_dim


def head_share(heads, tp):
    """Share of `heads` attention heads the busiest of `tp` tensor-parallel ranks holds: ⌈heads/tp⌉/heads. TP
    splits attention by whole heads, so a TP that does not divide them leaves some ranks a head more (vLLM, SGLang
    and TensorRT-LLM refuse it; the busiest rank sets the step) and a TP past them leaves ranks idle."""
    return np.ceil(heads / tp) / heads


def kv_share(m, tp):
    """Share of a token's keys and values (and of attn_kv_params) the busiest TP rank holds: GQA
    ⌈n_kv/tp⌉/n_kv (past n_kv, ranks share heads); MLA 1 (the latent is shared by every head)."""
    return 1.0 + 0 * tp if _mla(m) else head_share(m.num_key_value_heads, tp)


def attn_params_per_rank(m, tp):
    """Attention projection weights the busiest of `tp` tensor-parallel ranks holds and runs per layer
    (`per_rank`)."""
    return per_rank(attn_params(m), attn_kv_params(m), head_share(m.num_attention_heads, tp), kv_share(m, tp))


def attn_params_mean_rank(m, tp):
    """Attention projection weights the mean of `tp` ranks holds (all ranks', over tp): every head's projections
    once (ranks past the heads idle), the K/V ones once per KV head a rank keeps: each KV head once up to
    tp = n_kv, one a rank past it (GQA); MLA's shared latent projections on every rank."""
    kv_total = tp if _mla(m) else np.maximum(tp / m.num_key_value_heads, 1.0)
    return per_rank(attn_params(m), attn_kv_params(m), 1.0 / tp, kv_total / tp)


def per_rank(attn, kv, heads, kv_part):
    """A rank's part of `attn` projection weights: its `heads` share of the heads' projections, its `kv_part`
    share of the `kv` ones (the one formula the node-level and the measured-serving model use)."""
    return (attn - kv) * heads + kv * kv_part


def softmax_attn_extra(m):
    """Small parameters of a softmax attention block that cost no matmul FLOPs: biases and q/k/LoRA norms."""
    if _mla(m):
        return (m.q_lora_rank or 0) + m.kv_lora_rank
    extra = 0
    if getattr(m, "qkv_bias", False):
        extra = extra + (m.num_attention_heads + 2 * m.num_key_value_heads) * m.head_dim
    if getattr(m, "qk_norm", False):
        extra = extra + 2 * m.head_dim
    return extra


def expert_params(m):
    """Weights of one routed expert (SwiGLU: gate, up, down)."""
    return 3 * m.hidden_size * m.moe_intermediate_size


def shared_expert_params(m):
    """Weights of all shared experts of one MoE layer (plus a Qwen2-style shared gate)."""
    width = m.n_shared_experts * shared_width(m)
    gate = m.hidden_size * (m.n_shared_experts > 0) if getattr(m, "shared_expert_gate", False) else 0
    return 3 * m.hidden_size * width + gate


def shared_width(m):
    """FFN width of one shared expert."""
    w = getattr(m, "shared_expert_intermediate_size", None)
    return m.moe_intermediate_size if w is None else w


def router_params(m):
    """Router weights of one MoE layer (plus a per-expert bias where the model has one)."""
    bias = m.num_experts if getattr(m, "router_bias", False) else 0
    return m.hidden_size * m.num_experts + bias


def router_grad_params(m):
    """The router weights of one MoE layer that take a gradient: the gate, and its bias only where it is learned
    (gpt-oss's nn.Linear bias). A correction bias is set from the experts' loads, not by the optimizer (DeepSeek-V3,
    arXiv:2412.19437 §2.1.2, auxiliary-loss-free balancing): a buffer in HF's DeepseekV3TopkRouter and
    Megatron-Core's Router (megatron/core/transformer/moe/router.py, register_buffer('expert_bias')), so no
    gradient and no optimizer state."""
    learned = getattr(m, "router_bias", False) and getattr(m, "router_bias_learned", False)
    return m.hidden_size * m.num_experts + (m.num_experts if learned else 0)


def expert_load_counts(m):
    """Per-expert token counts a training step sums over every rank (TP × DP) to update a correction bias (0 without
    one, or with a learned bias): E per MoE layer. DeepSeek-V3's auxiliary-loss-free balancing moves each expert's
    bias by ±γ from its load over the batch (arXiv:2412.19437 §2.1.2); Megatron-Core counts each rank's tokens in a
    float32 buffer (megatron/core/transformer/moe/router.py, local_tokens_per_expert) and all-reduces every
    layer's, stacked, once a step over the tensor × data × context-parallel group before moving the biases
    (megatron/core/distributed/finalize_model_grads.py, _update_router_expert_bias; moe_utils.py,
    get_updated_expert_bias)."""
    corrected = getattr(m, "router_bias", False) and not getattr(m, "router_bias_learned", False)
    return moe_layers(m) * m.num_experts * (1 if corrected else 0)


def tp_summed_params(m):
    """Parameters whose gradients a training TP group sums, for the whole model: each TP rank holds them whole and
    forms their gradient from its sequence-parallel slice of the tokens, and Megatron-Core flattens every such
    gradient of the step into one all-reduce over the TP group (megatron/core/distributed/finalize_model_grads.py,
    _allreduce_non_tensor_model_parallel_grads: the parameters marked sequence_parallel, and q/k layernorms).
    Those are every layer's two RMSNorms and the final one (Transformer Engine's RMSNorm and LayerNormLinear mark
    their weights sequence_parallel), the attention's replicated small parameters and MLA's down-projections
    (`tp_attn_params`), and each MoE layer's router (`router_grad_params`; router.py marks its weight)."""
    L = m.num_hidden_layers
    return L * (norm_params_per_layer(m) + tp_attn_params(m)) + m.hidden_size + moe_layers(m) * router_grad_params(m)


def sp_gather_width(m):
    """Values per token a training TP rank gathers from its group's sequence-parallel slices before the heads'
    projections: the hidden state H (Megatron-Core's column-parallel QKV gathers its normed input), or under MLA,
    whose down-projections run on the rank's own slice (TELinear 'duplicated'), the query latent (H without one),
    the KV latent and the shared RoPE key, each gathered on its own (megatron/core/transformer/
    multi_latent_attention.py: linear_q_up_proj and linear_kv_up_proj gather their inputs; k_pos_emb by
    gather_from_sequence_parallel_region in get_query_key_value_tensors). A patterned model keeps H (a sparse
    layer's indexer reads the hidden state; not modelled further)."""
    if not _mla(m) or mix.mix(m) is not None:
        return m.hidden_size
    return (m.q_lora_rank or m.hidden_size) + m.kv_lora_rank + m.qk_rope_head_dim


def tp_grad_layers(m):
    """The layers that carry a share each of the TP group's one gradient all-reduce a step (`tp_summed_params`): the
    MoE layers, or every layer of a model without any (its norms' gradients are summed all the same; Megatron-Core's
    _allreduce_layernorm_grads runs whenever TP > 1 with sequence parallelism, MoE or not)."""
    Lm = moe_layers(m)
    return np.where(Lm > 0, Lm, m.num_hidden_layers)


def tp_attn_params(m):
    """Attention parameters of one layer (a patterned model's mean) that every TP rank holds whole in training and
    whose gradients the group sums (`tp_summed_params`). GQA: the per-head q/k norms (not the q/k/v biases, split
    with their columns). MLA: the two latent norms and the down-projections to the query and KV latents, which
    Megatron-Core builds as TELinear with parallel_mode 'duplicated' over a sequence-parallel input, marked
    sequence_parallel (megatron/core/transformer/multi_latent_attention.py, MLASelfAttention.__init__;
    megatron/core/extensions/transformer_engine.py, TELinear). A row-parallel output bias (gpt-oss's o_bias) is
    added to the sequence-parallel output on every rank, marked too. Sinks split with the heads; a linear-attention
    layer's parameters split with its heads, and the sparse indexer's are not counted (not modelled)."""
    mx = mix.mix(m)
    if mx is None:
        return _tp_softmax(m)
    o_bias = m.hidden_size * bool(mx.pattern.get("o_bias"))
    return _mean(mx, lambda kind: 0 if kind == "linear" else _tp_softmax(m) + o_bias)


def _tp_softmax(m):
    if _mla(m):
        return softmax_attn_extra(m) + _kv_proj(m)    # latent norms r_q + r_kv; H·(r_q + r_kv + d_rope)
    return 2 * m.head_dim if getattr(m, "qk_norm", False) else 0


def tp_whole_small(m):
    """Small parameters of one layer (a patterned model's mean) every TP rank holds whole, in training and in
    serving: the two RMSNorms, the GQA q/k norms, MLA's latent norms and a row-parallel output bias
    (`tp_attn_params` without MLA's down-projections, which count as projections: `attn_kv_params`). Megatron-Core
    builds them as plain (TE)RMSNorm weights over the full width and a RowParallelLinear bias added after the
    reduction, never split (megatron/core/transformer/multi_latent_attention.py, q_layernorm and kv_layernorm over
    q_lora_rank and kv_lora_rank); vLLM's RMSNorm is likewise not a parallel layer. The rest of
    `attn_extra_params` (q/k/v biases, sinks, linear-attention and indexer parameters) splits with the heads."""
    return norm_params_per_layer(m) + tp_attn_params(m) - mla_down_params(m)


def dense_ffn_params(m):
    """Weights of the SwiGLU FFN of a dense (non-MoE) layer."""
    return 3 * m.hidden_size * m.intermediate_size


def moe_layers(m):
    """Number of MoE layers."""
    mx = mix.mix(m)
    return m.num_hidden_layers - m.first_k_dense_replace if mx is None else mx.moe


def dense_layers(m):
    """Number of dense (non-MoE) layers."""
    return m.num_hidden_layers - moe_layers(m)


def expert_bias_params(m):
    """Biases of one MoE layer's routed experts (gpt-oss: gate/up 2F and down H per expert), 0 without."""
    mx = mix.mix(m)
    if mx is None or not mx.pattern.get("ffn_bias"):
        return 0
    return m.num_experts * (2 * m.moe_intermediate_size + m.hidden_size)


def norm_params_per_layer(m):
    """Two RMSNorm weight vectors per layer."""
    return 2 * m.hidden_size


def embedding_params(m):
    """Input embedding plus output head (one matrix when tied)."""
    emb = m.vocab_size * m.hidden_size
    return emb * np.where(m.tie_word_embeddings, 1, 2) + m.hidden_size  # + final norm


def head_params(m):
    """What the head's matmul reads: the output projection (the embedding matrix when tied) and the final norm."""
    return m.vocab_size * m.hidden_size + m.hidden_size


def lookup_params(m, T):
    """Embedding rows a step's lookup reads for T tokens: one row per token, at most the whole table (V rows)."""
    return np.minimum(T, m.vocab_size) * m.hidden_size


def total_params(m):
    """All parameters of the model."""
    L, Lm = m.num_hidden_layers, moe_layers(m)
    per_layer = attn_params(m) + attn_extra_params(m) + norm_params_per_layer(m)
    moe = m.num_experts * expert_params(m) + shared_expert_params(m) + router_params(m) + expert_bias_params(m)
    return L * per_layer + Lm * moe + (L - Lm) * dense_ffn_params(m) + embedding_params(m)


def active_params(m):
    """Parameters touched by one token: k routed experts instead of all E."""
    L, Lm = m.num_hidden_layers, moe_layers(m)
    per_layer = attn_params(m) + attn_extra_params(m) + norm_params_per_layer(m)
    moe = m.num_experts_per_tok * expert_params(m) + shared_expert_params(m) + router_params(m)
    if expert_bias_params(m):   # the biases of the k experts a token uses
        moe = moe + expert_bias_params(m) * m.num_experts_per_tok / m.num_experts
    return L * per_layer + Lm * moe + (L - Lm) * dense_ffn_params(m) + embedding_params(m)


def mtp_params(m, active: bool = False):
    """Weights of the multi-token-prediction layers, apart from every total above (the published totals exclude
    them; DeepSeek-V3 §2.2): per layer the projection of [embedding; hidden] back to H (2H·H), its two RMSNorms and
    the final one, and one transformer block with full attention and a MoE FFN (with `active`, top-k experts);
    the embedding and output head are the model's own (shared), so not counted again. 0 without MTP layers."""
    n = getattr(m, "num_nextn_predict_layers", 0) or 0
    H = m.hidden_size
    pattern = mix.mix(m).pattern if mix.mix(m) is not None else {}
    proj, other = _kind_params(m, pattern, "full") if pattern else (softmax_attn_params(m), softmax_attn_extra(m))
    experts = m.num_experts_per_tok if active else m.num_experts
    ffn = experts * expert_params(m) + shared_expert_params(m) + router_params(m)
    return n * (2 * H * H + 3 * H + proj + other + norm_params_per_layer(m) + ffn)


def mtp_flops_per_token(m):
    """Forward FLOPs of one drafted token through the MTP layers (a speculative-decoding draft): their active
    matmul weights and the shared output head, 2 FLOP per weight; their attention core is the model's full
    attention at the context (compute.core_flops_per_pair × keys), added by the caller that knows the context."""
    n = getattr(m, "num_nextn_predict_layers", 0) or 0
    return 2.0 * (mtp_params(m, active=True) + n * m.vocab_size * m.hidden_size)
