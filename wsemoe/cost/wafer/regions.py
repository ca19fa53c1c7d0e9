"""Regions of PEs an SRAM-resident model occupies: the bytes of each region, what one PE can hold, the pipeline's
stages (wafers) and what fits; the candidate layouts (densities, attention shares) are cost/wafer/ladder.py.

Region kinds, per layer (docs/cost-model.md, "Serving from SRAM"):

- `attention`: a MoE layer's attention weights, its two norms, the router and the layer's KV-cache share;
- `expert`: one routed expert (SwiGLU); `shared`: the layer's shared experts together;
- `dense`: a dense layer (attention, norms, FFN and KV share on one region, WaferLLM's layout);
- `embedding` (first stage), `head` (last stage, with the final norm).

Every region of a layout holds the same bytes per PE, `u` (its PEs are its bytes / u). A PE has room for
`sram_per_pe − program_bytes_per_pe − buffers` bytes, the buffers being a token's input and output slices,
double-buffered, at the region's packed side; `room` is the least over the regions, the densest layout.
The stages are a byte-balanced contiguous split of the embedding, the layers in order and the head
(cost/wafer/stagesplit.py): a wafer may hold a MoE layer beside dense ones, and a MoE layer's routed experts may
continue on the next wafer. A stage's regions must fit the program rectangle: `u ≥ stage bytes / PEs`. A pipeline
fits when the fullest stage does at `u = room`. A MoE model's regions are whole tiles of one lattice
(cost/wafer/lattice.py: an expert region one square tile of side ⌈√(e/u)⌉, so no tile holds more than `u` a PE):
its stages are split in tiles, against the ⌊R/s⌋·⌊C/s⌋ a wafer's program rectangle holds, at the densest rung of
the fixed fine ladder the room holds for what fits (`densest`: a layout every room at least as large offers too)
and at each candidate layout for its crossings. Scalars or arrays that broadcast; numpy only.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from wsemoe.cost.node import formats, memory, mix, params, weights
from wsemoe.cost.wafer import lattice, stagesplit
from wsemoe.cost.wafer.fabric import program_rectangle

KINDS = ("attention", "expert", "shared", "dense", "embedding", "head")
MAX_WAFERS = 256   # the longest pipeline searched for (the hardware spec accepts at most as many)


def attention_width(m):
    """Widest output of the attention block's GEMVs per token (GQA: fused QKV; MLA: the query up-projection
    or the latent queries), the size of its output buffer."""
    if getattr(m, "attention", "gqa") == "mla":
        heads = m.num_attention_heads
        return heads * np.maximum(m.qk_nope_head_dim + m.qk_rope_head_dim, m.kv_lora_rank + m.qk_rope_head_dim)
    return (m.num_attention_heads + 2 * m.num_key_value_heads) * m.head_dim


def widths(m) -> dict:
    """(input, output) width per token of each region kind's widest operator (the head reduces its logits to
    the sampled token as they come, so it buffers no more than its input)."""
    h, attn = m.hidden_size, attention_width(m)
    return {"attention": (h, np.maximum(attn, m.num_experts)), "expert": (h, 2 * m.moe_intermediate_size),
            "shared": (h, 2 * m.n_shared_experts * params.shared_width(m)),
            "dense": (h, np.maximum(attn, 2 * m.intermediate_size)), "embedding": (h, h), "head": (h, h)}


def kv_bytes_per_sequence(m, wl):
    """KV-cache bytes one sequence of `seq_len` tokens keeps in one layer."""
    return wl.seq_len * memory.kv_bytes_per_token_layer(m, wl)


def region_bytes(m, wl, sequences) -> dict:
    """Bytes of each region kind of one layer (embedding and head: once), each weight in its format
    (weights.layer_weights), the KV cache of `sequences`; `moe`: a whole MoE layer."""
    w, b16 = weights.layer_weights(m, wl), formats.nbytes(formats.HIGH)
    kv = sequences * kv_bytes_per_sequence(m, wl)
    out = {"attention": w["attn"].nbytes + w["router"].nbytes + kv, "expert": w["experts"].nbytes / m.num_experts,
           "shared": w["shared"].nbytes, "dense": w["attn"].nbytes + w["dense_ffn"].nbytes + kv,
           "embedding": m.vocab_size * m.hidden_size * b16, "head": (params.head_params(m) + 0.0) * b16}
    out["moe"] = out["attention"] + m.num_experts * out["expert"] + out["shared"]
    return out


def used_kinds(m) -> list[str]:
    """The region kinds the model has."""
    kinds = ["embedding", "head"]
    if params.dense_layers(m) > 0:
        kinds.append("dense")
    if params.moe_layers(m) > 0:
        kinds += ["attention", "expert"] + (["shared"] if m.n_shared_experts else [])
    return kinds


def room(pe, m, wl):
    """(bytes a PE holds for weights and cache in the densest layout, the largest share of a PE the program and
    buffers take): the least room over the model's region kinds. A region's buffers hold its input and output
    vectors split over its side, so they are largest in the smallest region, which holds the weights alone: sized
    there, one room serves every batch, and what fits never grows with the batch (sized at each batch's own
    region, a larger cache widened the attention region, shrank its buffers and let a batch fit where a smaller
    one did not)."""
    nbytes = region_bytes(m, wl, 0.0)
    free = np.asarray(pe.sram_per_pe_bytes, dtype=float) - pe.program_bytes_per_pe
    least, reserve = np.inf, 0.0
    for kind in used_kinds(m):
        w_in, w_out = widths(m)[kind]
        side = np.sqrt(np.maximum(np.asarray(nbytes[kind], dtype=float) / np.maximum(free, 1.0), 1.0))
        buffers = 2.0 * (np.ceil(w_in / side) + np.ceil(w_out / side)) * wl.bytes_per_act
        least = np.minimum(least, free - buffers)
        reserve = np.maximum(reserve, (pe.program_bytes_per_pe + buffers) / pe.sram_per_pe_bytes)
    return least, reserve


def densest(pe, m, wl):
    """Bytes per PE of the layout what fits is counted at: a MoE model's densest fine rung the room holds
    (lattice.densest: a candidate at this room and every larger one), a dense model's room (its ladder is bytes)."""
    u = room(pe, m, wl)[0]
    return lattice.densest(u) if is_tiled(m) else u


def wafer_pes(pe):
    """PEs of one wafer's program rectangle."""
    rows, cols = program_rectangle(pe)
    return np.asarray(rows, dtype=float) * cols


def layer_is_moe(m, k=None) -> list:
    """Whether each layer, in order, is a MoE layer: the pattern's sequence (cost/node/mix.py), or a leading
    dense prefix of `k` layers (an array over combinations, or the model's first_k_dense_replace)."""
    mx = mix.mix(m)
    if mx is not None:
        return [f == "moe" for f, _ in mx.sequence]
    k = np.asarray(m.first_k_dense_replace if k is None else k, dtype=float)
    if k.size and np.all(k == k.flat[0]):
        k = float(k.flat[0])
    return [i >= k for i in range(int(m.num_hidden_layers))]


def _structure(m) -> tuple:
    """What fixes the layer sequence apart from the arrays a split reads (its cache key)."""
    mx = mix.mix(m)
    return ("pattern", tuple(f == "moe" for f, _ in mx.sequence)) if mx is not None else ("prefix", int(m.num_hidden_layers))


SPLIT_BYTES = ("dense", "moe", "expert", "embedding", "head")   # what a split reads of region_bytes (`_parts`)


def _parts(m, nbytes: dict) -> dict:
    """The items a split orders (cost/wafer/stagesplit.py): a dense layer, a MoE layer's attention part (all but
    its routed experts), one routed expert, the experts per layer, embedding and head; and the dense prefix."""
    E = np.asarray(m.num_experts, dtype=float)
    return {"k": np.asarray(m.first_k_dense_replace, dtype=float), "d": nbytes["dense"],
            "a": nbytes["moe"] - E * nbytes["expert"], "e": nbytes["expert"], "E": E,
            "emb": nbytes["embedding"], "head": nbytes["head"]}


def is_tiled(m) -> bool:
    """Whether the model's regions lie on a tile lattice (it has MoE layers: cost/wafer/lattice.py)."""
    return bool(np.any(np.asarray(params.moe_layers(m)) > 0))


def tile_parts(pe, m, nbytes: dict, u, share=1.0) -> tuple[dict, object]:
    """(the items a split orders, in tiles of the lattice at `u` bytes per PE with attention `share` times its
    bytes' share; the tiles a wafer holds): a MoE layer's attention part is its attention
    rectangle and shared tiles, a routed expert one tile (cost/wafer/lattice.py)."""
    t = lattice.tiles(nbytes, u, share)
    parts = {**_parts(m, nbytes), "d": t["dense"], "a": t["attention"] + t["shared"], "e": t["expert"],
             "emb": t["embedding"], "head": t["head"]}
    return parts, lattice.slots(pe, t["side"])


def stages_at(pe, m, nbytes: dict, u):
    """The fewest stages that hold the model at `u` bytes per PE: in tiles against a wafer's tiles on a lattice
    (a MoE model), else in bytes against its PEs × u."""
    if is_tiled(m):
        parts, held = tile_parts(pe, m, nbytes, u)
        return stages_needed(m, nbytes, held, parts)
    return stages_needed(m, nbytes, wafer_pes(pe) * u)


def split(m, wafers, nbytes: dict, kv=None, parts=None) -> dict:
    """The least-peak split over `wafers` stages (arrays broadcast): `peak` the fullest stage's bytes (tiles, given
    the lattice's `parts`: tile_parts), `crossings` the stage boundaries inside a MoE layer, `visits` the expected
    extra wafers of routed experts a token passes through (stagesplit.Fill.experts); with `kv` = (bytes a wafer
    holds, one layer's cache of the split's sequences, of one sequence) also `sequences`, the most whose cache
    fits every stage."""
    unit = "bytes" if parts is None else "tiles"
    arrays = {**(_parts(m, nbytes) if parts is None else parts), "W": wafers,
              "topk": getattr(m, "num_experts_per_tok", 1.0)}
    if kv is not None:
        arrays.update(zip(("room", "held", "one"), kv))

    def plan(k, W, room=None, held=None, one=None, **parts):
        with np.errstate(divide="ignore", invalid="ignore"):
            f = stagesplit.least_peak(layer_is_moe(m, k), parts, W, None if room is None else (room, held, one))
        return {"peak": f.top, "crossings": f.cross, "visits": f.visits, "sequences": f.seqs}

    return stagesplit.once(plan, arrays, ("split", unit, _structure(m), kv is not None))


def stage_peak(m, wafers, nbytes: dict):
    """Bytes of the fullest stage when the model splits over `wafers` stages (arrays broadcast)."""
    return split(m, wafers, nbytes)["peak"]


def stages_needed(m, nbytes: dict, capacity, parts=None):
    """The fewest stages of at most `capacity` bytes each that hold the model in order (inf: an item alone
    does not fit); given `parts` (tile_parts), of at most `capacity` tiles."""
    def count(k, C, **parts):
        with np.errstate(divide="ignore", invalid="ignore"):
            return {"n": stagesplit.stages_needed(layer_is_moe(m, k), parts, C)}

    unit = "bytes" if parts is None else "tiles"
    arrays = {**(_parts(m, nbytes) if parts is None else parts), "C": capacity}
    return stagesplit.once(count, arrays, ("needed", unit, _structure(m)))["n"]


def stage_layers(m, wafers: int, nbytes: dict):
    """(dense layers, MoE layers) starting on each stage of one point's split, a MoE layer on the stage of its
    attention part (its experts may continue on the next): two arrays of `wafers` entries."""
    parts = {k: float(np.asarray(v).ravel()[0]) for k, v in _parts(m, nbytes).items()}
    moe = layer_is_moe(m, parts.pop("k"))
    with np.errstate(divide="ignore", invalid="ignore"):
        f = stagesplit.least_peak(moe, parts, float(wafers), record=True)
    stage = np.asarray([float(np.asarray(s).ravel()[0]) for s in f.start], dtype=np.int64)
    kinds = np.asarray([bool(x) for x in moe])
    count = lambda mask: np.bincount(stage[mask], minlength=int(wafers))[:int(wafers)].astype(float)  # noqa: E731
    return count(~kinds), count(kinds)


def largest_item(m, nbytes: dict, parts=None):
    """Bytes (tiles, given `parts`) of the largest item no stage boundary can cut: a dense layer, a MoE layer's
    attention part, one routed expert, the embedding or the head."""
    p = _parts(m, nbytes) if parts is None else parts
    items = [p["emb"], p["head"], np.where(params.moe_layers(m) > 0, np.maximum(p["a"], p["e"]), 0.0),
             np.where(params.dense_layers(m) > 0, p["d"], 0.0)]
    return np.max(np.broadcast_arrays(*items), axis=0)


def fits(pe, m, wl, wafers):
    """Whether a pipeline of `wafers` holds the model and the KV cache of its B sequences at capacity's layout
    (`densest`)."""
    return stages_at(pe, m, region_bytes(m, wl, wl.B), densest(pe, m, wl)) <= wafers


def fewest_wafers(pe, m, wl, shape=()):
    """The fewest wafers (≤ L, ≤ MAX_WAFERS) whose pipeline fits, NaN where none does."""
    top = float(min(m.num_hidden_layers, MAX_WAFERS))
    n = stages_at(pe, m, region_bytes(m, wl, wl.B), densest(pe, m, wl))
    n = np.broadcast_to(n, np.broadcast_shapes(shape, np.shape(n)))
    return np.where(n <= top, n, np.nan)


def kv_fit(pe, m, wl, wafers, u, known):
    """The most sequences whose KV cache fits a pipeline of `wafers` stages at `u` bytes per PE beside the weights
    (0 where none does): the largest n whose bytes (a MoE model's tiles) the greedy split holds in `wafers` stages. The split moves with
    the batch (routed experts cross to the next wafer as the caches grow), so the room one split leaves (`known`,
    the sequences the split of the point's own batch holds: a lower bound) can be far below it: DeepSeek-V3 (FP8)
    at 8K on 19 CS-3, 26 sequences for the split of one, 48 for the split of 48. A bisection on n between `known`
    and what the wafers' bytes could hold at most (the stages needed never fall as the caches grow); `known`, a
    byte count, is checked first (whole tiles may hold fewer)."""
    capacity = wafer_pes(pe) * u
    one = np.asarray(kv_bytes_per_sequence(m, wl), dtype=float)
    W = np.asarray(wafers, dtype=float)
    weights = stagesplit.total(layer_is_moe(m), _parts(m, region_bytes(m, wl, 0.0)))
    cached = one > 0   # a model that keeps no cache fits any number of sequences: `known` (inf) stands
    top = np.where(cached, np.floor(np.maximum(W * capacity - weights, 0.0)
                                    / np.where(cached, m.num_hidden_layers * one, 1.0)) + 1.0, 1.0)

    def fits(n):
        return stages_at(pe, m, region_bytes(m, wl, n), u) <= W

    start = np.clip(np.floor(np.nan_to_num(known, posinf=0.0)), 0.0, top - 1.0)
    lo = np.where(fits(start), start, np.where(fits(0.0), 0.0, -1.0))
    lo, hi = np.broadcast_arrays(lo, top + 0.0 * lo)
    lo, hi = lo.copy(), hi.copy()
    while np.any(hi - lo > 1.0):
        mid = np.floor((lo + hi) / 2.0)
        ok = fits(mid)
        lo, hi = np.where(ok, mid, lo), np.where(ok, hi, mid)
    return np.where(cached, np.maximum(lo, 0.0), np.maximum(np.floor(known), 0.0))


def capacity(pe, m, wl, wafers=None, shape=()) -> dict:
    """What fits: wafers needed (with and without the KV cache), the pipeline used, layers per wafer, the densest
    and the sparsest layout (`u_pack`: each PE full; `u_fill`: the fullest stage spread over every PE), the layout
    what fits is counted at (`u_dense`, `densest`), the sequences whose cache fits, region bytes, and the
    constraints (g ≤ 0 fits)."""
    needed = fewest_wafers(pe, m, wl, shape)
    top = float(min(m.num_hidden_layers, MAX_WAFERS))
    auto = np.where(np.isnan(needed), top, needed)
    given = np.nan if wafers is None else np.asarray(wafers, dtype=float)   # NaN: unset (a zip's null)
    W = np.where(np.isnan(given), auto, given) + 0.0 * auto
    nbytes = region_bytes(m, wl, wl.B)
    u_pack, reserve = room(pe, m, wl)
    u_dense = densest(pe, m, wl)
    cap = wafer_pes(pe)
    one = kv_bytes_per_sequence(m, wl)
    plan = split(m, W, nbytes, (cap * u_dense, wl.B * one, one))
    u_fill = plan["peak"] / cap
    g_wafers = u_fill / np.maximum(u_pack, 1e-9) - 1.0
    g_layer = largest_item(m, nbytes) / (cap * np.maximum(u_pack, 1e-9)) - 1.0
    if is_tiled(m):   # whole tiles of the lattice at capacity's layout (`densest`, cost/wafer/lattice.py)
        parts, held = tile_parts(pe, m, nbytes, u_dense)
        g_wafers = split(m, W, nbytes, parts=parts)["peak"] / held - 1.0
        g_layer = largest_item(m, nbytes, parts) / held - 1.0
    return {"wafers": W, "wafers_needed": needed, "wafers_for_weights": fewest_wafers(pe, m, _batch(wl, 0.0), shape),
            "layers_per_wafer": np.ceil(m.num_hidden_layers / W), "u_pack": u_pack, "u_fill": u_fill,
            "u_dense": u_dense, "bytes": nbytes, "kv_fit_sequences": kv_fit(pe, m, wl, W, u_dense, plan["sequences"]),
            "g_sram_wafers": g_wafers, "g_sram_pe": reserve - 1.0, "g_sram_layer": g_layer,
            "g_sram_stages": W / m.num_hidden_layers - 1.0}


def _batch(wl, sequences):
    """The workload with `sequences` per batch (0: the weights alone)."""
    fields = wl.model_dump() if hasattr(wl, "model_dump") else dict(vars(wl))
    return SimpleNamespace(**{**fields, "B": sequences})
