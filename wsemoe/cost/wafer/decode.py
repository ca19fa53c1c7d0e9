"""One decode step of a dense transformer layer on a rows × cols PE region, built from the operators:
norms, QKV, attention over the KV cache held in the region's SRAM, output projection, SwiGLU FFN, and the
reductions between them. Scalars or arrays that broadcast; numpy only.

Layout (WaferLLM's decode, §4.2, and its decode kernel): the hidden vector is split along the rows and
replicated along the columns. Every GEMV contracts along the axis its input is split on, and its
all-reduce leaves the output split along the other axis and replicated along the first, so the layer
alternates axes and never transposes:

    norm        sum of squares, all-reduce of `batch` scalars along the rows, scale
    qkv         GEMV H → (n_h + 2·n_kv)·d_h, k on rows, n on cols (three local GEMVs, one fused all-reduce)
    rope        on q and k
    score       q·Kᵀ: K cache (n_kv·d_h on cols, context on rows); reduce along the columns a head spans
    softmax     max and sum over the context: two all-reduces of one scalar per head along the rows
    pv          p·V: contraction over the context, all-reduce of the head outputs along the rows
    o           GEMV n_h·d_h → H, k on cols: all-reduce along the columns
    ffn norm, up+gate (fused all-reduce along the rows), SiLU·mul, down (all-reduce along the columns),
    and the two residual adds

Every local kernel and every collective costs `op_overhead_cycles` once; the local kernels are the
functions WaferLLM's decode kernel calls per layer (Decode/WSE-2/src/decode.csl: rmsnorm, xq, xk, xv,
two ropes, score, softmax, output, o, residual, rmsnorm, up, gate, silu, mul, down, residual: 18) and
its 10 all-reduces. Element-wise work is SIMD at
`fmac_width` operations per cycle with the operation counts in OPS. A batch of `batch` sequences streams
through each operator (`operators.gemv` tokens); each has its own KV cache. `element_bytes` is one number of
bytes for every operand, or an operands.Operands (activations, each weight and the cache in its own format).
"""

from __future__ import annotations

import numpy as np

from wsemoe.cost.wafer import collectives, operands, operators
from wsemoe.cost.wafer.fabric import seconds

# Element-wise operations per element (SIMD), counted from the decode kernel: x² and accumulate, scale by
# the norm and its weight; RoPE's four products and two sums per pair; softmax's max, subtract, exp (four
# operations in the kernel's fast exp), sum and scale; SiLU (exp, add, divide) and the gate product.
OPS = {"norm": 3.0, "rope": 3.0, "softmax": 8.0, "silu_mul": 7.0, "residual": 1.0, "score_scale": 1.0}


def elementwise(elements, ops, pe, kernels=1):
    """Terms of `kernels` local kernels doing `ops` SIMD operations on each of `elements` elements."""
    return operators.terms(np.ceil(np.asarray(elements, dtype=float) / pe.fmac_width) * ops, 0.0, 0.0,
                           np.asarray(kernels, dtype=float) * pe.op_overhead_cycles)


def collective(cost: collectives.Cost, pe, calls=1):
    """Terms of a collective: its streamed volume (link), its critical path (latency), `calls` overheads."""
    return operators.terms(0.0, cost.volume, cost.latency(pe), calls * pe.op_overhead_cycles)


def add(*parts) -> dict:
    """Terms of operators run one after another (bound recomputed from the sums)."""
    keys = ("compute_cycles", "link_cycles", "latency_cycles", "overhead_cycles")
    return operators.terms(*[sum(p[k] for p in parts) for k in keys])


def norm(h, rows, cols, pe, batch=1, coll=None):
    """RMSNorm of `batch` hidden vectors split along the rows: sum of squares, all-reduce of one scalar
    per vector along the rows, scale (one local kernel and one collective)."""
    local = elementwise(np.ceil(np.asarray(h, dtype=float) / rows) * batch, OPS["norm"], pe)
    return add(local, collective(collectives.allreduce(rows, batch, **(coll or {})), pe))


def head_layout(m, cols):
    """(columns one KV head spans, query heads whose scores one column holds) of a GQA model (`spread`)."""
    return spread(m.num_attention_heads, m.num_key_value_heads, cols)


def spread(heads, kv_heads, cols):
    """(columns one KV head spans, query heads whose scores one column holds).

    The columns split the KV width kv_heads·d; each column holds the same dims of every query head of the
    KV heads it holds, so the cache is never replicated and a query head's score is a sum over the
    columns its KV head spans (WaferLLM groups GQA heads the same way; MLA's latent is one KV head).
    """
    cols = np.asarray(cols, dtype=float)
    span = np.maximum(np.ceil(cols / kv_heads), 1.0)
    per = heads / kv_heads * np.maximum(np.ceil(kv_heads / cols), 1.0)
    return span, per


def core(heads, kv_heads, d_qk, d_v, rows, cols, context, pe, batch=1, element_bytes=2, coll=None,
         kv_bytes=None, wide=None) -> dict:
    """Terms of the attention core over a KV cache of `context` tokens: `score`, `softmax`, `pv`, in whichever of
    two layouts of the same cache (neither replicates it) is faster at each point:

    - `width_split` (WaferLLM's): context on the rows, the KV width on the columns, so a query head's score is a
      sum over the columns its KV head spans (an all-reduce of every score along them);
    - `context_split`: each column of a KV head's span holds whole heads of its own share of the context
      (context on the rows and those columns), so a score is complete where it is computed; the query's slices
      are gathered along the span first, the softmax's reductions and p·V's partial outputs also run along it
      (a reduce-scatter that leaves each column its value slice, as `width_split` does).

    At long context the scores outnumber a head's width and `context_split` wins; at short context, or where a
    KV head spans one column, `width_split` is kept. The cached keys and values are the MACs' stored operand, of
    `kv_bytes` each (unset: `element_bytes`). `wide`: the PE facts of the collectives along a KV head's span of
    columns (layer.stretched where the placement spreads the columns apart; `pe` if None)."""
    width = width_split(heads, kv_heads, d_qk, d_v, rows, cols, context, pe, batch, element_bytes, coll, kv_bytes,
                        wide)
    ctx = context_split(heads, kv_heads, d_qk, d_v, rows, cols, context, pe, batch, element_bytes, coll, kv_bytes,
                        wide)
    faster = sum(ctx[k]["cycles"] for k in ctx) < sum(width[k]["cycles"] for k in width)
    keys = ("compute_cycles", "link_cycles", "latency_cycles", "overhead_cycles")
    return {op: operators.terms(*[np.where(faster, ctx[op][k], width[op][k]) for k in keys]) for op in width}


def width_split(heads, kv_heads, d_qk, d_v, rows, cols, context, pe, batch=1, element_bytes=2, coll=None,
                kv_bytes=None, wide=None) -> dict:
    """The core with context on the rows and the KV width on the columns (`core`): `score` (q·Kᵀ, summed over the
    columns a KV head spans), `softmax` (two all-reduces of one scalar per head along the rows), `pv` (p·V,
    all-reduced along the rows). Query heads of width `d_qk` read keys of that width; values are `d_v` wide."""
    coll = coll or {}
    span, per = spread(heads, kv_heads, cols)
    cols = np.asarray(cols, dtype=float)
    ctx = np.ceil(np.asarray(context, dtype=float) / rows)
    q_col, v_col = np.ceil(heads * d_qk / cols), np.ceil(heads * d_v / cols)
    score = add(operators.gemv(q_col, ctx, 1, 1, pe, batch, element_bytes, output="none", weight_bytes=kv_bytes),
                collective(collectives.allreduce(span, ctx * per * batch, **coll), wide or pe),
                elementwise(ctx * per * batch, OPS["score_scale"], pe, kernels=0))
    soft = add(elementwise(ctx * per * batch, OPS["softmax"], pe),
               collective(collectives.allreduce(rows, per * batch, **coll).times(2), pe, calls=2))
    pv = add(operators.gemv(ctx * per, np.ceil(v_col / per), 1, 1, pe, batch, element_bytes, output="none",
                            weight_bytes=kv_bytes),
             collective(collectives.allreduce(rows, v_col * batch, **coll), pe))
    return {"score": score, "softmax": soft, "pv": pv}


def context_split(heads, kv_heads, d_qk, d_v, rows, cols, context, pe, batch=1, element_bytes=2, coll=None,
                  kv_bytes=None, wide=None) -> dict:
    """The core with whole heads on every column of a KV head's span and the context over the rows and the span
    (`core`). Per PE: ⌈S / (rows·span)⌉ tokens of its KV heads at full width, the `per` query heads' full queries
    (gathered along the span), their scores and partial outputs (reduced along the span, then along the rows)."""
    coll, wide = coll or {}, wide or pe
    span, per = spread(heads, kv_heads, cols)
    cols = np.asarray(cols, dtype=float)
    along = (span > 1).astype(float)   # calls of the collectives along the span (none when it is one column)
    ctx = np.ceil(np.asarray(context, dtype=float) / (rows * span))
    q_full, v_col = per * d_qk, np.ceil(heads * d_v / cols)
    score = add(collective(collectives.broadcast(span, q_full * batch), wide, calls=along),
                operators.gemv(q_full, ctx, 1, 1, pe, batch, element_bytes, output="none", weight_bytes=kv_bytes),
                elementwise(ctx * per * batch, OPS["score_scale"], pe, kernels=0))
    soft = add(elementwise(ctx * per * batch, OPS["softmax"], pe),
               collective(collectives.allreduce(rows, per * batch, **coll).times(2), pe, calls=2),
               collective(collectives.allreduce(span, per * batch, **coll).times(2), wide, calls=2 * along))
    pv = add(operators.gemv(ctx * per, d_v, 1, 1, pe, batch, element_bytes, output="none", weight_bytes=kv_bytes),
             collective(collectives.reduce(span, per * d_v * batch, _reduce_pattern(coll), **_levels(coll)), wide,
                        calls=along),
             collective(collectives.allreduce(rows, v_col * batch, **coll), pe))
    return {"score": score, "softmax": soft, "pv": pv}


def _reduce_pattern(coll: dict) -> str:
    """A reduce runs as the tree where the all-reduces run as a ring (a ring has no root)."""
    pattern = coll.get("pattern", "tree")
    return "tree" if pattern == "ring" else pattern


def _levels(coll: dict) -> dict:
    return {k: v for k, v in coll.items() if k != "pattern"}


def attention(m, rows, cols, context, pe, batch=1, element_bytes=2, coll=None, wide=None) -> dict:
    """Terms per op of the attention block (norm excluded) for one decode step of `batch` sequences; `wide` the PE
    facts of the collectives along a row, across the columns (`core`)."""
    coll, ob = coll or {}, operands.of(element_bytes)
    h, q_width, kv_width = m.hidden_size, m.num_attention_heads * m.head_dim, m.num_key_value_heads * m.head_dim
    qkv = operators.gemv(h, q_width + 2 * kv_width, rows, cols, pe, batch, ob.act, kernels=3, weight_bytes=ob.attn,
                         **coll)
    rope = elementwise(np.ceil((q_width + kv_width) / np.asarray(cols, dtype=float)) * batch, OPS["rope"], pe, 2)
    inner = core(m.num_attention_heads, m.num_key_value_heads, m.head_dim, m.head_dim, rows, cols, context, pe,
                 batch, ob.act, coll, ob.kv, wide)
    o = operators.gemv(q_width, h, cols, rows, wide or pe, batch, ob.act, weight_bytes=ob.attn, **coll)
    residual = elementwise(np.ceil(h / np.asarray(rows, dtype=float)) * batch, OPS["residual"], pe)
    return {"qkv": qkv, "rope": rope, **inner, "o": o, "attn_residual": residual}


def ffn(h, f, rows, cols, pe, batch=1, element_bytes=2, coll=None, input_broadcast=False, weight_bytes=None) -> dict:
    """Terms per op of a SwiGLU FFN (norm excluded): up and gate (two local GEMVs, one fused all-reduce
    along the rows), SiLU·mul, down (all-reduce along the columns), residual. An expert is one of these;
    `input_broadcast` charges spreading its input along the columns first (a token that arrives from
    another region). Its weights are `weight_bytes` each (unset: `element_bytes`, the activations')."""
    coll = coll or {}
    up_gate = operators.gemv(h, 2 * np.asarray(f, dtype=float), rows, cols, pe, batch, element_bytes,
                             kernels=2, input_broadcast=input_broadcast, weight_bytes=weight_bytes, **coll)
    act = elementwise(np.ceil(np.asarray(f, dtype=float) / cols) * batch, OPS["silu_mul"], pe, kernels=2)
    down = operators.gemv(f, h, cols, rows, pe, batch, element_bytes, weight_bytes=weight_bytes, **coll)
    return {"up_gate": up_gate, "silu_mul": act, "down": down,
            "ffn_residual": elementwise(np.ceil(np.asarray(h, dtype=float) / rows) * batch, OPS["residual"], pe)}


def dense_layer(m, rows, cols, context, pe, batch=1, element_bytes=2, coll=None) -> dict:
    """Terms per op of one dense layer's decode step, in execution order, and their sum under `layer`.

    `m` has the model's `hidden_size`, `num_attention_heads`, `num_key_value_heads`, `head_dim` and
    `intermediate_size`; `coll` the collective options (`pattern`, `levels`, `group`) of every all-reduce.
    """
    ops = {"attn_norm": norm(m.hidden_size, rows, cols, pe, batch, coll)}
    ops.update(attention(m, rows, cols, context, pe, batch, element_bytes, coll))
    ops["ffn_norm"] = norm(m.hidden_size, rows, cols, pe, batch, coll)
    ob = operands.of(element_bytes)
    ops.update(ffn(m.hidden_size, m.intermediate_size, rows, cols, pe, batch, ob.act, coll, weight_bytes=ob.attn))
    ops["layer"] = add(*ops.values())
    ops["layer"]["seconds"] = seconds(ops["layer"]["cycles"], pe)
    return ops


def sram_bytes_per_pe(m, rows, cols, context, batch=1, element_bytes=2):
    """(weights, KV cache) bytes per PE of one dense layer on the region: every weight matrix split over
    all rows × cols PEs, the cache of `batch` sequences of `context` tokens likewise."""
    h, f = m.hidden_size, m.intermediate_size
    q_width, kv_width = m.num_attention_heads * m.head_dim, m.num_key_value_heads * m.head_dim
    pes = np.asarray(rows, dtype=float) * cols
    weights = (h * (q_width + 2 * kv_width) + q_width * h + 3 * h * f + 2 * h) * element_bytes / pes
    kv = 2 * kv_width * np.asarray(context, dtype=float) * batch * element_bytes / pes
    return weights, kv


def tokens_per_s(layer_seconds, layers, head_seconds=0.0):
    """Tokens per second per sequence: one token per step of `layers` layers and the head."""
    return 1.0 / (np.asarray(layers, dtype=float) * layer_seconds + head_seconds)
