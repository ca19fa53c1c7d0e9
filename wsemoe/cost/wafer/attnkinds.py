"""Attention of a patterned model's layers at PE level (SRAM serving): the mean over a layer kind's layers of
each one's attention operators, weighted by how many layers have each attention kind (cost/node/mix.py), so the
pipeline's sum over layers is exact. Numpy only.

- full, sliding, chunked and sparse layers run the softmax attention (layer.attention) at the mean over them of
  the keys each reads (the context; a window; a chunk; the sparse layer's top-k);
- a sparse layer adds its indexer (DeepSeek-V3.2's lightning indexer): the query and key projections, every
  cached index key scored by every index head (n_idx·d_idx MACs per key, the index keys spread over the region's
  PEs, the query broadcast to them), and the top-k merged across the region (each line's best candidates, at most
  k and at most the keys it holds, reduced along the columns then the rows; the chosen indices broadcast back);
- a linear layer (Gated DeltaNet) has no keys: its projections (q, k, v, z and the b, a gates: a GEMV like QKV,
  the short convolution and SiLU after it), then its recurrent state S (per value head d_k × d_v, d_k on the rows
  and the value heads' d_v on the columns, as a GEMV's weights lie): the state read by the key (Sᵀk, a GEMV with
  its all-reduce along the rows), the rank-one delta update (two SIMD operations per state element: the decay
  and the update's multiply-add), the read by the query (Sᵀq, another GEMV), the gated RMSNorm, and the output
  projection (a GEMV like o). 3·n_v·d_k·d_v MACs per token, the 6·n_v·d_k·d_v FLOPs of mix.linear_flops.

The projections' MACs read their weights in the attention weights' format, the state's reads it in its own format
(mix.state_bytes: `state_format`, else 16-bit, never `kv_format`, as the regions store it, memory.held_per_token); the index scores' vector operand is the query, an activation.

A uniform model, or one whose layers differ only in their windows, keeps layer.attention at the mean context:
its numbers are those of before.
"""

from __future__ import annotations

import numpy as np

from wsemoe.cost.node import mix
from wsemoe.cost.wafer import collectives, operands, operators
from wsemoe.cost.wafer.decode import OPS, add, collective, elementwise
from wsemoe.cost.wafer.fabric import mac_cycles, wavelets

SOFTMAX = ("full", "sliding", "chunked", "sparse")
CONV_OPS = 1.0    # SiLU after the convolution, per element, on top of its taps (one multiply-add each)
GATE_OPS = 4.0    # gated RMSNorm per element: square and accumulate, scale, the gate's SiLU product
PAIR_BYTES = 4    # a top-k candidate's score (fp32) and its index (int32), each 4 bytes


def kinds_of(m, ffn: str) -> dict:
    """{attention kind: layers} among the model's layers of FFN kind `ffn` (empty for a uniform model)."""
    mx = mix.mix(m)
    if mx is None:
        return {}
    out: dict = {}
    for (f, a), n in mx.counts.items():
        if f == ffn:
            out[a] = out.get(a, 0) + n
    return out


def share(ops: dict, weight: float) -> dict:
    """Each op's terms × `weight` (a share of the layers), with the share kept for the fused-kernel overheads."""
    out = {}
    for name, t in ops.items():
        scaled = operators.terms(*(np.asarray(t[k]) * weight for k in
                                   ("compute_cycles", "link_cycles", "latency_cycles", "overhead_cycles")))
        out[name] = {**scaled, "share": np.asarray(t.get("share", 1.0)) * weight}
    return out


def mean_attention(m, ffn: str, rows, cols, S, pe, tokens, b, coll, plain, wide=None) -> dict:
    """The attention ops of the mean layer of FFN kind `ffn` at context S; `plain(keys)` is the softmax
    attention's ops at a number of keys (layer.attention on this region); `wide` the PE facts of the collectives
    across the region's columns (stretched where the placement spreads them apart; `pe` if None)."""
    wide = wide or pe
    kinds, mx = kinds_of(m, ffn), mix.mix(m)
    if not kinds or set(kinds) <= {"full", "sliding", "chunked"}:
        return plain(mix.context_of(m, ffn, S))
    n = float(sum(kinds.values()))
    soft = {a: k for a, k in kinds.items() if a in SOFTMAX}
    ops: dict = {}
    if soft:
        keys = sum(k * mix.keys_read(a, mx.pattern, S) for a, k in soft.items()) / sum(soft.values())
        ops.update(share(plain(keys), sum(soft.values()) / n))
    if "sparse" in kinds:
        ops.update(share(indexer(m, mx.pattern, rows, cols, S, pe, tokens, b, coll, wide), kinds["sparse"] / n))
    if "linear" in kinds:
        ops.update(share(linear(m, mx.pattern, rows, cols, pe, tokens, b, coll, wide), kinds["linear"] / n))
    return ops


def linear(m, pattern: dict, rows, cols, pe, tokens, b, coll, wide=None) -> dict:
    """Ops of one Gated DeltaNet block for `tokens` tokens on a rows × cols region (module docstring); `wide` the
    PE facts of the output projection's reduction across the columns."""
    lin, H, ob = pattern["linear"], m.hidden_size, operands.of(b)
    key, value = lin["num_key_heads"] * lin["key_head_dim"], lin["num_value_heads"] * lin["value_head_dim"]
    cols_ = np.asarray(cols, dtype=float)
    b, w, state_w = ob.act, {"weight_bytes": ob.attn, **coll}, {"weight_bytes": mix.state_bytes(pattern), **coll}
    proj = operators.gemv(H, 2 * key + 2 * value + 2 * lin["num_value_heads"], rows, cols, pe, tokens, b,
                          kernels=2, **w)
    conv = elementwise(np.ceil((2 * key + value) / cols_) * tokens, lin["conv_kernel"] + CONV_OPS, pe)
    read_k = operators.gemv(lin["key_head_dim"], value, rows, cols, pe, tokens, b, **state_w)
    state = np.ceil(lin["key_head_dim"] / np.asarray(rows, dtype=float)) * np.ceil(value / cols_)
    update = elementwise(state * tokens, 2.0, pe)
    read_q = operators.gemv(lin["key_head_dim"], value, rows, cols, pe, tokens, b, **state_w)
    gate = elementwise(np.ceil(value / cols_) * tokens, GATE_OPS, pe)
    out = operators.gemv(value, H, cols, rows, wide or pe, tokens, b, **w)
    residual = elementwise(np.ceil(H / np.asarray(rows, dtype=float)) * tokens, OPS["residual"], pe)
    return {"lin_proj": proj, "lin_conv": conv, "lin_state": add(read_k, update, read_q), "lin_gate": gate,
            "lin_out": out, "lin_residual": residual}


def indexer(m, pattern: dict, rows, cols, S, pe, tokens, b, coll, wide=None) -> dict:
    """Ops of a sparse layer's indexer for `tokens` queries at context S on a rows × cols region; `wide` the PE
    facts of its collectives across the columns."""
    wide = wide or pe
    sp, H, ob = pattern["sparse"], m.hidden_size, operands.of(b)
    b, w = ob.act, {"weight_bytes": ob.attn, **coll}
    heads, dim, topk = sp["index_n_heads"], sp["index_head_dim"], sp["index_topk"]
    q_in = getattr(m, "q_lora_rank", None) or H
    proj = add(operators.gemv(q_in, heads * dim, rows, cols, pe, tokens, b, **w),
               operators.gemv(H, dim + heads, rows, cols, pe, tokens, b, **w))
    pes = np.asarray(rows, dtype=float) * cols
    query = wavelets(heads * dim, b, pe) * tokens
    spread = add(collective(collectives.broadcast(cols, query), wide), collective(collectives.broadcast(rows, query), pe))
    # each PE scores its ⌈S / PEs⌉ index keys against the n_idx query heads of d_idx
    macs = operators.terms(mac_cycles(np.ceil(np.asarray(S, dtype=float) / pes), heads * dim, pe, b) * tokens,
                           0.0, 0.0, pe.op_overhead_cycles)
    # a line's merged candidates are at most k and at most the keys the line holds: S / rows along a row's
    # columns, S along the rows (its roots' column)
    k = np.minimum(topk, S)
    line = np.minimum(k, np.ceil(np.asarray(S, dtype=float) / np.asarray(rows, dtype=float)))
    pair = lambda n: wavelets(2 * n, PAIR_BYTES, pe) * tokens  # noqa: E731  (score, index) pairs
    reduce = {key: v for key, v in coll.items() if key != "pattern"}
    pattern = "tree" if coll.get("pattern", "tree") == "ring" else coll.get("pattern", "tree")   # a reduce, not a ring
    chosen = wavelets(k, PAIR_BYTES, pe) * tokens
    pick = add(collective(collectives.reduce(cols, pair(line), pattern, **reduce), wide),
               collective(collectives.reduce(rows, pair(k), pattern, **reduce), pe),
               collective(collectives.broadcast(rows, chosen), pe), collective(collectives.broadcast(cols, chosen), wide))
    return {"idx_proj": proj, "idx_score": add(spread, macs), "idx_topk": pick}
