"""Per-GPU work of one model under one parallel layout: weight bytes, FLOPs, KV bytes, message bytes.

Every function takes the model spec `m` (ModelSpec names) and returns plain numbers; the layout is
tp (attention tensor parallel), dp (attention data parallel), moe_tp × moe_ep (how experts are split),
pp (pipeline stages). Formats are byte counts per weight (wsemoe.cost.node.formats.BYTES).
"""

from __future__ import annotations

from dataclasses import dataclass

from wsemoe.cost.node import params


@dataclass(frozen=True)
class Shape:
    """What the serving model reads of a model, per layer unless said (parameter counts, not bytes)."""

    layers: int            # L
    moe_layers: int        # Lm (the rest are dense)
    hidden: int            # H
    heads: int             # query heads n_h (TP gives each rank whole heads)
    attn_w: float          # attention projection weights per layer
    attn_kv_w: float       # of them, those TP splits only kv_shards ways (K/V projections; MLA down-projections)
    dense_w: float         # dense FFN weights per dense layer
    expert_w: float        # weights of one routed expert
    shared_w: float        # shared experts per MoE layer
    router_w: float        # router (gate, E × H, and its bias) per MoE layer: 16-bit, whole on every GPU
    head_w: float          # output head (and final norm)
    experts: int           # E
    top_k: int             # k
    kv_values: float       # KV-cache values per token per layer (GQA: 2·n_kv·d_h; MLA: latent + rope)
    kv_shards: int         # how many ways TP can split a token's KV (GQA: n_kv heads; MLA: 1, replicated)
    score_flops_decode: float   # FLOPs per (query, key) pair per layer in decode (MLA absorbed)
    score_flops_prefill: float  # FLOPs per (query, key) pair per layer in prefill
    active_w: float        # parameters one token touches (published "active" count)
    total_w: float         # all parameters


def shape(m) -> Shape:
    """The serving quantities of model spec `m` (wsemoe.cost.node.params formulas)."""
    nh = m.num_attention_heads
    if getattr(m, "attention", "gqa") == "mla":
        kv_values = m.kv_lora_rank + m.qk_rope_head_dim
        kv_shards = 1  # the latent is shared by all heads: every TP rank keeps the whole of it
        decode = 2 * nh * (2 * m.kv_lora_rank + m.qk_rope_head_dim)  # absorbed: scores and values on the latent
        prefill = 2 * nh * (params.qk_head_dim(m) + params.v_head_dim(m))
    else:
        kv_values = 2 * m.num_key_value_heads * m.head_dim
        kv_shards = m.num_key_value_heads
        decode = prefill = 2 * nh * 2 * m.head_dim
    lm = int(params.moe_layers(m))
    return Shape(layers=m.num_hidden_layers, moe_layers=lm, hidden=m.hidden_size, heads=nh,
                 attn_w=float(params.attn_params(m)),
                 attn_kv_w=float(params.attn_kv_params(m)), dense_w=float(params.dense_ffn_params(m)),
                 expert_w=float(params.expert_params(m)),
                 shared_w=float(params.shared_expert_params(m)), router_w=float(params.router_params(m)),
                 head_w=float(params.head_params(m)), experts=m.num_experts, top_k=m.num_experts_per_tok,
                 kv_values=float(kv_values), kv_shards=int(kv_shards), score_flops_decode=float(decode),
                 score_flops_prefill=float(prefill), active_w=float(params.active_params(m)),
                 total_w=float(params.total_params(m)))
