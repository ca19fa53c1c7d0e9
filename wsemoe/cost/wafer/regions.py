"""Regions of PEs an SRAM-resident model occupies: the bytes of each region, what one PE can hold, the pipeline's
stages (wafers), what fits, and the densities (bytes per PE) a layout may spread its regions to.

Region kinds, per layer (docs/cost-model.md, "Serving from SRAM"):

- `attention`: a MoE layer's attention weights, its two norms, the router and the layer's KV-cache share;
- `expert`: one routed expert (SwiGLU); `shared`: the layer's shared experts together;
- `dense`: a dense layer (attention, norms, FFN and KV share on one region, WaferLLM's layout);
- `embedding` (first stage), `head` (last stage, with the final norm).

Every region of a layout holds the same bytes per PE, `u` (its PEs are its bytes / u). A PE has room for
`sram_per_pe − program_bytes_per_pe − buffers` bytes, the buffers being a token's input and output slices,
double-buffered, at the region's packed side; `room` is the least over the regions, the densest layout.
Stage `w` of `W` holds layers ⌊w·L/W⌋ … ⌊(w+1)·L/W⌋ − 1 (the first also the embedding, the last the head);
a stage's regions must fit the program rectangle: `u ≥ stage bytes / PEs`. A pipeline fits when the fullest
stage does at `u = room`. Scalars or arrays that broadcast; numpy only.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from wsemoe.cost.node import formats, memory, mix, params, weights
from wsemoe.cost.wafer.fabric import program_rectangle

KINDS = ("attention", "expert", "shared", "dense", "embedding", "head")
MAX_WAFERS = 256   # the longest pipeline searched for (the hardware spec accepts at most as many)
SCAN = 8           # wafer counts tried one by one above the total-bytes bound before checking one layer per wafer


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


def room(pe, m, wl, nbytes: dict):
    """(bytes a PE holds for weights and cache in the densest layout, the largest share of a PE the program and
    buffers take): the least room over the model's region kinds."""
    free = np.asarray(pe.sram_per_pe_bytes, dtype=float) - pe.program_bytes_per_pe
    least, reserve = np.inf, 0.0
    for kind in used_kinds(m):
        w_in, w_out = widths(m)[kind]
        side = np.sqrt(np.maximum(np.asarray(nbytes[kind], dtype=float) / np.maximum(free, 1.0), 1.0))
        buffers = 2.0 * (np.ceil(w_in / side) + np.ceil(w_out / side)) * wl.bytes_per_act
        least = np.minimum(least, free - buffers)
        reserve = np.maximum(reserve, (pe.program_bytes_per_pe + buffers) / pe.sram_per_pe_bytes)
    return least, reserve


def wafer_pes(pe):
    """PEs of one wafer's program rectangle."""
    rows, cols = program_rectangle(pe)
    return np.asarray(rows, dtype=float) * cols


def stage_layers(m, wafers, stage):
    """(dense layers, MoE layers) of `stage` among `wafers` stages: layers ⌊w·L/W⌋ … ⌊(w+1)·L/W⌋ − 1, each dense
    or MoE where the model's layer sequence has it (a leading dense prefix, or a pattern: cost/node/mix.py)."""
    L, W, w = int(m.num_hidden_layers), np.asarray(wafers, dtype=np.int64), np.asarray(stage, dtype=np.int64)
    lo, hi = (w * L) // np.maximum(W, 1), ((w + 1) * L) // np.maximum(W, 1)
    dense = mix.dense_before(m, hi) - mix.dense_before(m, lo)
    return dense.astype(float), (hi - lo - dense).astype(float)


def stage_bytes(m, wafers, nbytes: dict, w):
    """Bytes of stage `w` among `wafers` stages (0 beyond the last)."""
    W = np.asarray(wafers, dtype=float)
    dense, moe = stage_layers(m, W, w)
    load = dense * nbytes["dense"] + moe * nbytes["moe"] + (w == 0) * nbytes["embedding"] + (w == W - 1) * nbytes["head"]
    return np.where(w < W, load, 0.0)


def every_stage(wafers):
    """Stage indices 0 … max(W) − 1 along a new leading axis (broadcasting against the points)."""
    W = np.asarray(wafers, dtype=float)
    return np.arange(int(np.max(W))).reshape((-1,) + (1,) * W.ndim)


def stage_peak(m, wafers, nbytes: dict):
    """Bytes of the fullest stage when the layers split over `wafers` stages (arrays broadcast)."""
    return np.max(stage_bytes(m, wafers, nbytes, every_stage(wafers)), axis=0)


def fits(pe, m, wl, wafers):
    """Whether a pipeline of `wafers` holds the model and the KV cache of its B sequences at the densest layout."""
    nbytes = region_bytes(m, wl, wl.B)
    return stage_peak(m, wafers, nbytes) <= wafer_pes(pe) * room(pe, m, wl, nbytes)[0]


def fewest_wafers(pe, m, wl, shape=()):
    """The fewest wafers (≤ L, ≤ MAX_WAFERS) whose pipeline fits, NaN where none does: from the bound of the
    total bytes, one wafer more at a time; past SCAN tries, one layer per wafer decides whether any will."""
    top = float(min(m.num_hidden_layers, MAX_WAFERS))
    nbytes = region_bytes(m, wl, wl.B)
    dense = params.dense_layers(m)
    total = dense * nbytes["dense"] + (m.num_hidden_layers - dense) * nbytes["moe"] + nbytes["embedding"] + nbytes["head"]
    bound = np.ceil(total / (wafer_pes(pe) * np.maximum(room(pe, m, wl, nbytes)[0], 1e-30)))
    W = np.broadcast_to(np.clip(bound, 1.0, top), np.broadcast_shapes(shape, np.shape(bound))).copy()
    ok = fits(pe, m, wl, W)
    for i in range(int(top)):
        if ok.all():
            break
        if i == SCAN:
            ok = ok | ~fits(pe, m, wl, np.full(W.shape, top))   # never fits: stop looking
        W = np.where(ok, W, np.minimum(W + 1, top))
        ok = ok | fits(pe, m, wl, W)
    return np.where(fits(pe, m, wl, W), W, np.nan)


def kv_room(pe, m, wl, wafers, u):
    """The most sequences whose KV cache fits every stage at `u` bytes per PE: per stage, the PEs' room left by the
    weights over the bytes one more sequence adds; the least over stages."""
    empty, one, cap, w = region_bytes(m, wl, 0.0), region_bytes(m, wl, 1.0), wafer_pes(pe) * u, every_stage(wafers)
    base = stage_bytes(m, wafers, empty, w)
    grow = stage_bytes(m, wafers, one, w) - base
    seqs = np.where(grow > 0, (cap - base) / np.where(grow > 0, grow, 1.0), np.inf)
    return np.maximum(np.floor(np.min(seqs, axis=0)), 0.0)


def capacity(pe, m, wl, wafers=None, shape=()) -> dict:
    """What fits: wafers needed (with and without the KV cache), the pipeline used, layers per wafer, the densest
    and the sparsest layout (`u_pack`: each PE full; `u_fill`: the fullest stage spread over every PE), the
    sequences whose cache fits, region bytes, and the constraints (g ≤ 0 fits)."""
    needed = fewest_wafers(pe, m, wl, shape)
    top = float(min(m.num_hidden_layers, MAX_WAFERS))
    auto = np.where(np.isnan(needed), top, needed)
    given = np.nan if wafers is None else np.asarray(wafers, dtype=float)   # NaN: unset (a zip's null)
    W = np.where(np.isnan(given), auto, given) + 0.0 * auto
    nbytes = region_bytes(m, wl, wl.B)
    u_pack, reserve = room(pe, m, wl, nbytes)
    cap = wafer_pes(pe)
    u_fill = stage_peak(m, W, nbytes) / cap
    units = [nbytes["moe"] if k == "attention" else nbytes[k] for k in used_kinds(m) if k not in ("expert", "shared")]
    largest = np.max(np.broadcast_arrays(*units), axis=0)   # a whole layer, the embedding or the head
    return {"wafers": W, "wafers_needed": needed, "wafers_for_weights": fewest_wafers(pe, m, _batch(wl, 0.0), shape),
            "layers_per_wafer": np.ceil(m.num_hidden_layers / W), "u_pack": u_pack, "u_fill": u_fill,
            "bytes": nbytes, "kv_fit_sequences": kv_room(pe, m, wl, W, u_pack),
            "g_sram_wafers": u_fill / np.maximum(u_pack, 1e-9) - 1.0, "g_sram_pe": reserve - 1.0,
            "g_sram_layer": largest / (cap * np.maximum(u_pack, 1e-9)) - 1.0,
            "g_sram_stages": W / m.num_hidden_layers - 1.0}


LADDER = 2.0 ** 0.5   # densities a layout may take: u_fill · √2^k (a doubling of the PEs is two rungs)


def densities(u_pack, u_fill):
    """Bytes per PE a layout may spread its regions to, one candidate per leading index: the sparsest that fits
    the fullest stage (`u_fill`), then √2, 2, 2√2 … times denser while a PE holds them (≤ `u_pack`); `u_fill` alone
    where nothing fits. Every candidate is the same function of u whatever the fabric's size or SRAM: more SRAM
    (higher u_pack) only adds rungs, twice the PEs (u_fill halved) only adds two sparser rungs below."""
    lo, hi = np.broadcast_arrays(np.asarray(u_fill, dtype=float), np.asarray(u_pack, dtype=float))
    rungs = np.floor(np.log(np.maximum(hi / lo, 1.0)) / np.log(LADDER) + 1e-9)
    rungs = np.maximum(rungs - (rung(lo, rungs) > hi), 0)   # rounding never admits a rung above u_pack
    top = int(np.max(rungs, initial=0))
    return np.stack([rung(lo, np.minimum(k, rungs)) for k in range(top + 1)])


SHARES = (1.0, 4.0, 16.0)   # attention's PEs over its bytes' share a layout may give a MoE layer (its ops are many)


def layouts(m, wafers, nbytes: dict, u_pack, cap, shares=SHARES):
    """(bytes per PE, attention share) of every candidate layout, along a leading axis: for each share ω the
    √2 ladder from the sparsest density at which a stage holds ω× attention regions up to u_pack; a share that
    does not fit repeats the first candidate. Nested in PEs and SRAM for every ω (see `densities`)."""
    us, ws = [], []
    for w in shares if params.moe_layers(m) > 0 else shares[:1]:
        fill = stage_peak(m, wafers, {**nbytes, "moe": nbytes["moe"] + (w - 1.0) * nbytes["attention"]}) / cap
        u = densities(u_pack, fill)
        fits = np.broadcast_to(fill <= u_pack, u.shape[1:])
        first = us[0][0] if us else u[0]
        us.append(np.where(fits, u, first))
        ws.append(np.where(fits, w, 1.0) + 0.0 * u)
    return np.concatenate(us), np.concatenate(ws)


def rung(lo, k):
    """u_fill · √2^k, exact in binary: a power of two times u_fill or u_fill·√2 (so halving u_fill shifts every
    rung by exactly two)."""
    k = np.asarray(k, dtype=np.int64)
    return np.ldexp(np.where(k % 2 == 1, lo * LADDER, lo), k // 2)


def _batch(wl, sequences):
    """The workload with `sequences` per batch (0: the weights alone)."""
    fields = wl.model_dump() if hasattr(wl, "model_dump") else dict(vars(wl))
    return SimpleNamespace(**{**fields, "B": sequences})
