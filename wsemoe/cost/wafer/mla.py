"""Multi-head latent attention (DeepSeek-V2/V3) decoding on a rows × cols PE region, in the absorbed form: the
cache holds one latent `c_kv` (r_kv) and one rope key (d_rope) per token, shared by every head, and the key and
value up-projections are folded into the query and the output. Scalars or arrays that broadcast; numpy only.

Operator decomposition per token (the hidden vector split along the rows, as decode.py's layout):

    q_down     GEMV H → r_q (contraction on the rows)          q_norm   RMSNorm of r_q (across the columns)
    q_up       GEMV r_q → n_h·(d_nope + d_rope) (on the columns)
    kv_down    GEMV H → r_kv + d_rope: the token's cache entry, split along the columns as the cache is
    kv_norm    RMSNorm of the latent (across the columns)       rope     on the rope parts of q and k
    absorb_k   per head, q_nope (d_nope) → latent query (r_kv) through W_UK: the heads on bands of rows
    q_gather   every row receives every head's latent query (n_h·(r_kv + d_rope) across the columns)
    score      q·c over the context: one KV "head" of width r_kv + d_rope that all n_h heads share
    softmax    as GQA                                             pv       p·c_kv over the context (r_kv wide)
    absorb_v   per head, latent output (r_kv) → d_v through W_UV (contraction on the columns)
    o          GEMV n_h·d_v → H (contraction on the rows), then each row's slice broadcast along it: the output
               returns to the residual stream's axis (split along the rows)    attn_residual

MACs per token: H·r_q + r_q·n_h·d_qk + H·(r_kv + d_rope) + n_h·d_nope·r_kv + n_h·(2·r_kv + d_rope)·S
+ n_h·r_kv·d_v + n_h·d_v·H: the weights are counted once each, as stored (params.attn_params), each MAC reading
its weight (W_UK and W_UV too) in the attention weights' format and the latent cache in the KV cache's
(operands.Operands; a plain `element_bytes`: every operand that size).
"""

from __future__ import annotations

import numpy as np

from wsemoe.cost.wafer import collectives, operands, operators
from wsemoe.cost.wafer.decode import OPS, add, collective, core, elementwise
from wsemoe.cost.wafer.fabric import wavelets

def norm_across(width, cols, pe, batch=1, coll=None):
    """RMSNorm of a vector split along the columns: squares, an all-reduce of one scalar per token across
    the columns, scale."""
    local = elementwise(np.ceil(np.asarray(width, dtype=float) / cols) * batch, OPS["norm"], pe)
    return add(local, collective(collectives.allreduce(cols, batch, **(coll or {})), pe))


def attention(m, rows, cols, context, pe, batch=1, element_bytes=2, coll=None, wide=None) -> dict:
    """Terms per op of MLA's attention block (norm excluded), absorbed form (module docstring); `wide` the PE facts
    of every collective along a row, across the columns (q_norm, q_up, kv_norm, the core's along the latent's span,
    absorb_v, o's relayout: layer.stretched where the placement spreads the columns apart; `pe` if None)."""
    coll, wide, ob = coll or {}, wide or pe, operands.of(element_bytes)
    b, w = ob.act, {"weight_bytes": ob.attn, **coll}
    h, heads = m.hidden_size, m.num_attention_heads
    rq, rkv, dn, dr, dv = m.q_lora_rank, m.kv_lora_rank, m.qk_nope_head_dim, m.qk_rope_head_dim, m.v_head_dim
    rows_f, cols_f = np.asarray(rows, dtype=float), np.asarray(cols, dtype=float)
    ops = {}
    if rq:
        ops["q_down"] = operators.gemv(h, rq, rows, cols, pe, batch, b, **w)
        ops["q_norm"] = norm_across(rq, cols, wide, batch, coll)
        ops["q_up"] = operators.gemv(rq, heads * (dn + dr), cols, rows, wide, batch, b, **w)
    else:
        ops["q_up"] = operators.gemv(h, heads * (dn + dr), rows, cols, pe, batch, b, **w)
    ops["kv_down"] = operators.gemv(h, rkv + dr, rows, cols, pe, batch, b, **w)
    ops["kv_norm"] = norm_across(rkv, cols, wide, batch, coll)
    ops["rope"] = elementwise((np.ceil(heads * dr / rows_f) + np.ceil(dr / cols_f)) * batch, OPS["rope"], pe, 2)
    band, serial = np.maximum(np.floor(rows_f / heads), 1.0), np.maximum(np.ceil(heads / rows_f), 1.0)
    ops["absorb_k"] = operators.gemv(dn, rkv, band, cols, pe, batch * serial, b, **w)
    gather = collectives.broadcast(rows, heads * np.ceil((rkv + dr) / cols_f) * batch)
    ops["q_gather"] = collective(gather, pe)
    ops.update(core(heads, 1, rkv + dr, rkv, rows, cols, context, pe, batch, b, coll, ob.kv, wide))
    ops["absorb_v"] = operators.gemv(rkv, dv, cols, band, wide, batch * serial, b, **w)
    # o contracts on the rows (a head's values sit on its band of rows), so its all-reduce leaves the output split
    # along the columns; the residual stream is split along the rows (attn_norm, the residual, the next norm, the
    # router): each row holds the whole vector across its columns, so the PEs holding row i's slice broadcast it
    # along the row (H/rows per token; the slice's owners may sit at the row's end)
    relayout = collectives.broadcast(cols, wavelets(np.ceil(h / rows_f), b, pe) * batch, root="end")
    ops["o"] = add(operators.gemv(heads * dv, h, rows, cols, pe, batch, b, **w),
                   collective(relayout, wide))
    ops["attn_residual"] = elementwise(np.ceil(h / rows_f) * batch, OPS["residual"], pe)
    return ops
