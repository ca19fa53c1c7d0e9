"""FLOPs per stage of one transformer layer, forward, for one micro-batch (scalars or arrays).

Conventions (docs/cost-model.md): a matmul of m×k by k×n costs 2·m·n·k FLOP; T = G·B·S tokens
(decode: G·B tokens, each attending over an S-token context); attention runs G tiles of B
sequences, router and experts run once on all T tokens.
"""

from __future__ import annotations

import numpy as np

from wsemoe.cost.node import mix, params


def tokens(wl):
    """Tokens one micro-batch of G·B sequences processes (decode: one per sequence)."""
    return wl.G * wl.B * (1 if wl.mode == "decode" else wl.seq_len)


def attn_proj_flops(m, T):
    """Q, K, V and output projections for T tokens (MLA: its low-rank projections)."""
    return 2.0 * T * params.attn_params(m)


def attn_core_flops(m, wl, causal: bool = False):
    """Score and value matmuls over the full S×S (decode: one query over S keys) for G·B sequences.

    `causal`: only the keys at or before each query (a query at position s reads keys_read(s), the mean over
    s = 1 … S): what a tiled kernel executes (`executed_core_share`); the count itself has no causal discount
    (docs/cost-model.md).
    """
    seqs = wl.G * wl.B
    queries = 1 if wl.mode == "decode" else wl.seq_len
    causal = causal and wl.mode != "decode"
    mx = mix.mix(m)
    if mx is None or set(mx.attention) == {"full"}:
        keys = (wl.seq_len + 1.0) / 2.0 if causal else wl.seq_len
        return core_flops_per_pair(m, wl.mode) * seqs * queries * keys
    per = {kind: core_flops_per_query(m, mx.pattern, kind, wl.mode, wl.seq_len, causal) for kind in mx.attention}
    if len(per) > 1:   # the mean over the model's layers
        return sum(n * per[kind] for kind, n in mx.attention.items()) / mx.layers * seqs * queries
    return next(iter(per.values())) * seqs * queries


def executed_core_share(m, wl):
    """Share of the counted attention-core FLOPs the kernel executes: a tiled kernel (attn_kernel flash) skips the
    masked future keys of causal training and prefill ((S+1)/(2S) of full attention, FlashAttention's causal
    mode); the materialized and per-head kernels compute every score and mask them; decode has one query."""
    if wl.mode == "decode" or getattr(wl, "attn_kernel", None) != "flash":
        return 1.0
    counted = attn_core_flops(m, wl)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(counted > 0, attn_core_flops(m, wl, causal=True) / counted, 1.0)


def core_flops_per_query(m, pattern: dict, kind: str, mode: str, S, causal: bool = False):
    """Attention-core FLOPs of one query at context S in a layer of `kind` (docs/layers.md): the keys it reads
    × the per-pair cost; a sparse layer adds its indexer over all S keys; a linear layer its recurrent state.
    `causal`: the mean over the queries at positions 1 … S (mix.mean_keys_read)."""
    if kind == "linear":
        return mix.linear_flops_per_token(pattern) + 0.0 * S
    keys = mix.mean_keys_read(kind, pattern, S) if causal else mix.keys_read(kind, pattern, S)
    flops = core_flops_per_pair(m, mode) * keys
    if kind == "sparse":
        flops = flops + mix.indexer_flops_per_pair(pattern) * ((S + 1.0) / 2.0 if causal else S)
    return flops


def core_flops_per_pair(m, mode: str):
    """FLOPs of one (query, key) pair over all heads: 2·n_h·(d_qk + d_v).

    MLA in decode runs absorbed (DeepSeek-V2 §2.1.2; FlashMLA, vLLM and SGLang decode kernels): W_UK folds into
    the query and W_UV into the output, so every head scores the cached latent and rope key directly,
    2·(r_kv + d_rope), and sums the latent, 2·r_kv: 2·n_h·(2·r_kv + d_rope) per pair, against the cache it reads
    (r_kv + d_rope per token). Prefill and training up-project K and V once per token and run per-head widths
    (the compute-friendly form those engines use when queries are as many as keys).
    """
    if getattr(m, "attention", "gqa") == "mla" and mode == "decode":
        return 2.0 * m.num_attention_heads * (2.0 * m.kv_lora_rank + m.qk_rope_head_dim)
    return 2.0 * m.num_attention_heads * (params.qk_head_dim(m) + params.v_head_dim(m))


def router_flops(m, T):
    """Router logits: T tokens × H × E."""
    return 2.0 * T * m.hidden_size * m.num_experts


def expert_flops(m, T):
    """Routed experts (k per token) plus shared experts, SwiGLU: 6·T·k·H·F + shared."""
    return routed_expert_flops(m, T) + shared_expert_flops(m, T)


def routed_expert_flops(m, T):
    """Routed experts, k per token: 6·T·k·H·F (these run at the busiest node's load)."""
    return 2.0 * T * m.num_experts_per_tok * params.expert_params(m)


def shared_expert_flops(m, T):
    """Shared experts: every token, on every TP group's own shard (not routed, so never imbalanced)."""
    return 2.0 * T * params.shared_expert_params(m)


def dense_ffn_flops(m, T):
    """FFN of one dense (non-MoE) layer."""
    return 2.0 * T * params.dense_ffn_params(m)


def head_flops(m, T):
    """Output head (vocabulary projection); the embedding lookup costs no matmul."""
    return 2.0 * T * m.vocab_size * m.hidden_size


def pass_factor(mode: str) -> float:
    """Forward+backward FLOPs relative to forward: backward is 2× forward when training."""
    return 3.0 if mode == "train" else 1.0


def recomputed_shares(mode: str, recompute: str) -> tuple[float, float]:
    """(share of every stage's forward FLOPs, extra share of the attention core's) rerun during backward.

    `full` (layer-input checkpointing) reruns each layer's whole forward; `selective` drops only the
    attention scores, so it reruns the score and value matmuls (the attention core); `none` reruns
    nothing. These are hardware FLOPs, not model FLOPs: MFU does not count them.
    """
    if mode != "train":
        return 0.0, 0.0
    return {"none": (0.0, 0.0), "selective": (0.0, 1.0), "full": (1.0, 0.0)}[recompute]


def tokens_per_expert(m, T):
    """Mean tokens each routed expert receives: T·k/E."""
    return T * m.num_experts_per_tok / m.num_experts


def expert_efficiency(hw, n_tokens):
    """Matmul efficiency of an expert that sees n tokens: eff · n / (n + n_half).

    Few rows per expert leave the PE pipeline mostly filling and draining; n_half is the
    preset's calibration `expert_half_tokens` (0 disables the effect).
    """
    n = np.asarray(n_tokens, dtype=float)
    return hw.matmul_efficiency * n / (n + hw.expert_half_tokens)
