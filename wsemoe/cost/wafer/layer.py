"""One layer of SRAM serving at PE level, per micro-batch of T tokens: a MoE layer's operators across its regions
(norms, attention, router, dispatch, experts, combine, the hop to the next layer) and a dense layer on one region,
plus the embedding and the head. Every operator is a terms dict of operators.terms (cycles). Numpy only.

The geometry (`Geometry`, arrays per point) comes from the regions and the layer's placed traffic (serving.py).
Attention's collectives whose line runs along a row, across its columns, are costed with the hop cycles stretched
by the placement (`stretch`: interleaved attention columns lie apart): the attention kernels take them as `wide`
PE facts, collective by collective (an op such as the context split's softmax reduces along both axes); those along
a column run on the plain fabric. `b` is the bytes of the operands (operands.Operands: activations, and each weight
and the cache in its format; a number: every operand).
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import NamedTuple

import numpy as np

from wsemoe.cost.wafer import attnkinds, collectives, decode, mla, operands, operators
from wsemoe.cost.wafer.decode import OPS, add, collective, elementwise
from wsemoe.cost.wafer.fabric import path_cycles, wavelets

TOPK_OPS = 8.0                    # router: softmax or sigmoid over the logits (as decode's softmax), per logit

# Invocation overheads per op when kernels are fused (`pe_kernels: fused`): one per operator chain (a GEMV or a
# norm's reduction, its collective and its element-wise tail run as one task). Tails of the chain before them
# pay none: RoPE (of QKV), the residuals (of o, down and the combine), SiLU·mul (of up/gate), the MoE sum, the
# argmax (the logits' reduction carries the running maximum). The routed experts are two chains (up/gate with
# SiLU·mul, down); MLA's ops each remain one chain. An op not listed pays one.
CHAIN_CALLS = {"rope": 0.0, "attn_residual": 0.0, "ffn_residual": 0.0, "silu_mul": 0.0, "moe_sum": 0.0,
               "argmax": 0.0, "experts": 2.0, "lin_conv": 0.0, "lin_residual": 0.0, "lin_state": 2.0}


def fused(ops: dict, pe) -> dict:
    """The ops with one invocation overhead per operator chain (CHAIN_CALLS) when `pe.kernels` is `fused`; as
    given (one per primitive kernel and collective, WaferLLM's research kernels) otherwise."""
    if getattr(pe, "kernels", "per_primitive") != "fused":
        return ops
    return {op: with_calls(t, CHAIN_CALLS.get(op, 1.0), pe) for op, t in ops.items()}


def with_calls(t: dict, calls, pe) -> dict:
    """An operator's terms with `calls` invocation overheads in place of its own (its `bound` dropped: layers
    re-derive theirs from the summed terms, and restacking every op's four terms per candidate is costly)."""
    calls = np.asarray(calls, dtype=float) * t.get("share", 1.0)   # a share of the layers pays its share
    overhead = calls * pe.op_overhead_cycles + 0.0 * np.asarray(t["overhead_cycles"])
    out = {k: v for k, v in t.items() if k != "bound"}
    out.update(overhead_cycles=overhead, cycles=np.asarray(t["cycles"]) - t["overhead_cycles"] + overhead)
    return out


class Geometry(NamedTuple):
    """Region shapes (PEs) and the layer's traffic per token, per point (arrays that broadcast)."""

    attn_rows: object
    attn_cols: object
    side: object          # expert region (one tile) side
    shared_rows: object
    shared_cols: object
    dense_side: object
    head_side: object
    embed_side: object
    block_width: object   # PEs between one layer's attention and the next's
    stretch: object       # interleaved attention: tile columns spanned per logical column
    dispatch_max: object  # busiest tile link, tokens per token of the batch
    combine_max: object
    hops_turning: object  # tile hops of the longest path that turns (0 if none)
    hops_straight: object
    relays: object        # combine's relay stages
    busiest_share: object  # the busiest expert's share of token copies (p_max)


def stretched(pe, stretch):
    """The PE facts with hop cycles × stretch (collectives whose line spans spread-out tiles)."""
    fields = dict(vars(pe)) if not isinstance(pe, dict) else dict(pe)
    return SimpleNamespace(**{**fields, "hop_cycles": np.asarray(pe.hop_cycles, dtype=float) * stretch})


def attention(m, rows, cols, context, pe, tokens, b, coll, stretch=1.0) -> dict:
    """Attention's ops (GQA: decode.attention; MLA: mla.attention), their collectives across the columns
    stretched."""
    fn = mla.attention if getattr(m, "attention", "gqa") == "mla" else decode.attention
    return fn(m, rows, cols, context, pe, tokens, b, coll, wide=stretched(pe, stretch))


def router(m, rows, cols, pe, tokens, b, coll, stretch=1.0) -> dict:
    """Router logits (GEMV H → E on the attention region), their softmax and the top-k choice as one merged
    collective: each PE's k best (value, index) pairs reduced across the columns by a top-k merge, k values
    per token streamed once along one critical path (not k all-reduces of one value one after another)."""
    ob = operands.of(b)
    logits = operators.gemv(m.hidden_size, m.num_experts, rows, cols, pe, tokens, ob.act, weight_bytes=ob.high, **coll)
    pick = collectives.allreduce(cols, np.asarray(tokens, dtype=float) * m.num_experts_per_tok, **coll)
    local = elementwise(np.ceil(m.num_experts / np.asarray(cols, dtype=float)) * tokens,
                        TOPK_OPS + m.num_experts_per_tok, pe)
    return add(logits, local, collective(pick, stretched(pe, stretch)))


def path(pe, g: Geometry):
    """Cycles of the longest router-to-expert path: tile hops × side PE hops, a turn if it turns."""
    turning = path_cycles(g.hops_turning * g.side, 1.0, 0.0, pe) * (g.hops_turning > 0)
    return np.maximum(turning, path_cycles(g.hops_straight * g.side, 0.0, 0.0, pe))


def move(pe, g: Geometry, tokens, h_wavelets, peak, relays=0.0) -> dict:
    """A dispatch or combine: the busiest PE link's wavelets (tile link / side), the longest path, one call."""
    volume = np.asarray(tokens, dtype=float) * h_wavelets * peak / g.side
    return operators.terms(0.0, volume, path(pe, g) + path_cycles(0.0, 0.0, relays, pe), pe.op_overhead_cycles)


def larger(a: dict, b: dict) -> dict:
    """The terms of whichever of two concurrent operators takes longer (per point)."""
    pick = np.asarray(a["cycles"]) >= np.asarray(b["cycles"])
    keys = ("compute_cycles", "link_cycles", "latency_cycles", "overhead_cycles")
    return operators.terms(*[np.where(pick, a[k], b[k]) for k in keys])


def expert_regions(m, g: Geometry, pe, routed_tokens, shared_tokens, b, coll) -> dict:
    """The routed expert region at `routed_tokens` and (if the model has them) the shared experts' region at
    `shared_tokens`, each receiving its input from another region (SwiGLU without the residual)."""
    parts, ob = ("up_gate", "silu_mul", "down"), operands.of(b)
    routed = decode.ffn(m.hidden_size, m.moe_intermediate_size, g.side, g.side, pe, routed_tokens, ob.act, coll, True,
                        ob.expert)
    out = {"routed": add(*(routed[o] for o in parts))}
    if m.n_shared_experts:
        width = m.n_shared_experts * (getattr(m, "shared_expert_intermediate_size", None) or m.moe_intermediate_size)
        shared = decode.ffn(m.hidden_size, width, g.shared_rows, g.shared_cols, pe, shared_tokens, ob.act, coll, True,
                            ob.attn)
        out["shared"] = add(*(shared[o] for o in parts))
    return {k: fused({"experts": v}, pe)["experts"] for k, v in out.items()}


def busiest_tokens(m, g: Geometry, tokens):
    """Tokens of the busiest routed expert: the expected copies k·p_max·T, at least one, at most T."""
    t = np.asarray(tokens, dtype=float)
    return np.clip(t * m.num_experts_per_tok * g.busiest_share, np.minimum(t, 1.0), t)


def experts(m, g: Geometry, pe, tokens, b, coll) -> dict:
    """The busiest routed expert region beside the shared experts (every token): the longer of the two."""
    regions = expert_regions(m, g, pe, busiest_tokens(m, g, tokens), tokens, b, coll)
    return larger(regions["routed"], regions["shared"]) if "shared" in regions else regions["routed"]


def far_experts(m, g: Geometry, pe, ops: dict, b, coll) -> dict:
    """What a token adds on each further wafer of a split MoE layer on which one of its experts lies (it arrives
    there beside the residual, regions.split): the dispatch to that wafer's expert tiles, the routed expert's GEMVs,
    the combine and its sum into the residual, each as the layer's own (`ops`, one token; a wafer holding part of
    the experts has no longer path or busier link than the whole layer's grid). The shared experts stay with
    attention on the first wafer."""
    routed = expert_regions(m, g, pe, busiest_tokens(m, g, 1.0), 1.0, b, coll)["routed"]
    return add(ops["dispatch"], routed, ops["combine"], ops["moe_sum"])


def hop(m, pe, rows, cols, distance, tokens, b, wide=None) -> dict:
    """The layer's output to the next layer's region `distance` PEs away (rows parallel streams of H/rows),
    then broadcast along that region's columns (`wide`: their PE facts, stretched where they lie apart)."""
    slice_ = wavelets(np.ceil(m.hidden_size / np.asarray(rows, dtype=float)), operands.of(b).act, pe) * tokens
    bc = collectives.broadcast(cols, slice_)
    return operators.terms(0.0, slice_ + bc.volume, path_cycles(distance, 0.0, 1.0, pe) + bc.latency(wide or pe),
                           2.0 * pe.op_overhead_cycles)


def layer_attention(m, ffn, rows, cols, context, pe, tokens, b, coll, stretch=1.0) -> dict:
    """Attention's ops of the mean layer of FFN kind `ffn` at context S (attnkinds: a uniform model's is
    `attention` at S; a pattern's the layers' mean over their attention kinds)."""
    plain = lambda keys: attention(m, rows, cols, keys, pe, tokens, b, coll, stretch)  # noqa: E731
    return attnkinds.mean_attention(m, ffn, rows, cols, context, pe, tokens, b, coll, plain, stretched(pe, stretch))


def moe_layer(m, g: Geometry, pe, tokens, context, b, coll, h_wavelets) -> dict:
    """Ops of one MoE layer, in order (module docstring), at context S."""
    rows, cols = g.attn_rows, g.attn_cols
    ops = {"attn_norm": decode.norm(m.hidden_size, rows, cols, pe, tokens, coll)}
    ops.update(layer_attention(m, "moe", rows, cols, context, pe, tokens, b, coll, g.stretch))
    ops["ffn_norm"] = decode.norm(m.hidden_size, rows, cols, pe, tokens, coll)
    ops["router"] = router(m, rows, cols, pe, tokens, b, coll, g.stretch)
    ops["dispatch"] = move(pe, g, tokens, h_wavelets, g.dispatch_max)
    ops["experts"] = experts(m, g, pe, tokens, b, coll)
    ops["combine"] = move(pe, g, tokens, h_wavelets, g.combine_max, g.relays)
    ops["moe_sum"] = elementwise(np.ceil(m.hidden_size / np.asarray(rows, dtype=float)) * tokens,
                                 (m.num_experts_per_tok + 1) * OPS["residual"], pe)
    ops["layer_hop"] = hop(m, pe, rows, cols, g.block_width, tokens, b, stretched(pe, g.stretch))
    return ops


def dense_layer(m, g: Geometry, pe, tokens, context, b, coll) -> dict:
    """Ops of one dense layer on its square region at context S: norms, attention, SwiGLU FFN, the hop to the
    next layer."""
    side = g.dense_side
    ops = {"attn_norm": decode.norm(m.hidden_size, side, side, pe, tokens, coll)}
    ops.update(layer_attention(m, "dense", side, side, context, pe, tokens, b, coll))
    ops["ffn_norm"] = decode.norm(m.hidden_size, side, side, pe, tokens, coll)
    ob = operands.of(b)
    ops.update(decode.ffn(m.hidden_size, m.intermediate_size, side, side, pe, tokens, ob.act, coll,
                          weight_bytes=ob.attn))
    ops["layer_hop"] = hop(m, pe, side, side, side, tokens, b)
    return ops


def head(m, g: Geometry, pe, tokens, b, coll) -> dict:
    """Final norm, logits (GEMV H → V on the head region, its partial sums reduced to one root per column, not
    all-reduced: only the sampler reads them) and the argmax (a reduce of one (value, index) per token along the
    roots' line to the PE that sends the token on; nobody else needs it)."""
    side = g.head_side
    reduce_only = {k: v for k, v in coll.items() if k != "pattern"}
    pattern = coll.get("pattern", "tree")
    pattern = "tree" if pattern == "ring" else pattern   # a ring all-reduces; a reduce runs as the tree
    ob = operands.of(b)
    return {"final_norm": decode.norm(m.hidden_size, side, side, pe, tokens, coll),
            "logits": operators.gemv(m.hidden_size, m.vocab_size, side, side, pe, tokens, ob.act, output="reduce",
                                     pattern=pattern, weight_bytes=ob.high, **reduce_only),
            "argmax": collective(collectives.reduce(side, tokens, pattern, **reduce_only), pe)}


def embedding(m, g: Geometry, pe, tokens, b) -> dict:
    """The embedding lookup (one local kernel) and its rows' hop into the first layer."""
    lookup = operators.terms(0.0, 0.0, 0.0, pe.op_overhead_cycles)
    return {"lookup": lookup, "embed_hop": hop(m, pe, g.embed_side, g.embed_side, g.embed_side, tokens, b)}


def total(ops: dict) -> dict:
    """The ops one after another."""
    return add(*ops.values())


# Which region (or link stage) of its layer each op occupies: a token stream is paced by the busiest of them.
LINK_STAGES = {"dispatch": "dispatch", "combine": "combine", "layer_hop": "layer hop", "embed_hop": "layer hop"}
HOME = {"moe": "attention region", "dense": "dense region", "head": "head region", "embedding": "embedding region"}


def stage_of(kind: str, op: str) -> str:
    """The region or link stage an op of a layer kind runs on (the experts have their own, serving.py)."""
    return LINK_STAGES.get(op, HOME[kind])
