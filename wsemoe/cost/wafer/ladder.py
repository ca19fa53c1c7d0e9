"""The candidate layouts of an SRAM-served model: the densities (bytes per PE) a layout may spread its regions to,
on a √2 ladder from the sparsest that holds the fullest stage up to a PE's room, the attention shares a MoE layer
may take, and, on a MoE model's whole-tile lattice, the sparsest rung of a fixed fine ladder (lattice.fine) whose
tiles fit where a candidate's do not. What fits and how the stages split are cost/wafer/regions.py's; numpy only.
"""

from __future__ import annotations

import numpy as np

from wsemoe.cost.node import params
from wsemoe.cost.wafer import lattice, stagesplit
from wsemoe.cost.wafer.regions import SPLIT_BYTES, is_tiled, split, stages_needed, tile_parts


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


def _shared(nbytes: dict, w):
    """The bytes a split orders when a MoE layer's attention region takes `w` times its bytes' share."""
    return {**nbytes, "moe": nbytes["moe"] + (w - 1.0) * nbytes["attention"]}


def prefetch(m, wafers, many: list, shares=SHARES) -> None:
    """Search in one pass the splits `layouts` will ask of each byte set in `many` (stagesplit.once keeps each
    combination's result): a pass costs its loop over the layers, not its arrays' width, so one wide search
    replaces one per byte set and share, and each combination's result is the one it would get alone."""
    items = [_shared(nbytes, w) for nbytes in many for w in (shares if params.moe_layers(m) > 0 else shares[:1])]
    shape = np.broadcast_shapes(*(np.shape(it[k]) for it in items for k in SPLIT_BYTES))
    split(m, wafers, {k: np.stack([np.broadcast_to(it[k], shape) for it in items]) for k in SPLIT_BYTES})


OCTAVES = 8    # doublings above u_fill the sparsest fitting rung is searched over


REFINE = (16, 1)   # the √2 step (128 fine rungs) searched in steps of 16, then of 1: three passes, not one of 128


def sparsest(pe, m, wafers, nbytes: dict, fill, u_pack, share=1.0):
    """(the sparsest rung of the fine ladder (lattice.fine, 2^(j/256) B a PE) from `fill` up, at most `u_pack`,
    whose whole tiles fit `wafers` stages; whether there is one): the first of every 128th rung (√2 apart) from
    `fill` that fits (or the first above u_pack where none does), then the first that fits in the step below it in
    steps of 16 rungs, then of 1 (REFINE): stage-count passes (stages_needed) instead of one over every fine rung. No rung
    below `fill` fits (its stages' tiles hold fewer bytes than the fullest stage's). The ladder is fixed, so the rung
    depends neither on the SRAM (a lattice is a function of u: lattice.side; more SRAM only admits denser rungs) nor
    on where `fill` falls between two rungs."""
    fill = np.asarray(fill, dtype=float)
    lead = (-1,) + (1,) * np.ndim(fill)
    start = lattice.fine_index(fill)[None]   # the densest rung at most fill
    span = np.log2(np.maximum(np.asarray(u_pack, dtype=float) / np.maximum(fill, 1e-300), 1.0))
    octaves = int(min(np.ceil(np.max(span, initial=0.0) + 1e-9), OCTAVES))
    step = lattice.FINE // 2   # rungs per √2 step

    def fitting(j):
        grid = lattice.fine(start + j)
        parts, held = tile_parts(pe, m, nbytes, grid, share)
        return (stages_needed(m, nbytes, held, parts) <= wafers) & (grid <= u_pack)

    j = step * np.arange(2 * octaves + 2).reshape(lead)
    ok = fitting(j)
    found = np.any(ok, axis=0)
    below = np.sum(np.broadcast_to(lattice.fine(start + j) <= u_pack, ok.shape), axis=0)   # first step above u_pack
    last = step * np.where(found, np.argmax(ok, axis=0), below)
    for sub in REFINE:   # the first that fits in the step below `last` (which fits, or lies above u_pack)
        j = np.maximum(last[None] - step + sub * np.arange(1, step // sub + 1).reshape(lead), 0)
        ok = fitting(j)
        hit = np.any(ok, axis=0)
        last = np.where(hit, np.take_along_axis(np.broadcast_to(j, ok.shape), np.argmax(ok, axis=0)[None], axis=0)[0],
                        last)
        found, step = found | hit, sub
    return np.where(found, lattice.fine(start[0] + last), u_pack), found


def layouts(m, wafers, nbytes: dict, u_pack, cap, shares=SHARES, pe=None):
    """(bytes per PE, attention share, wafer hops inside a MoE layer, expected extra expert wafers a token visits)
    of every candidate layout, along a leading axis: for each share ω the √2 ladder from the sparsest density at
    which a stage holds ω× attention regions' bytes up to u_pack, with the crossings of that split; a share that
    does not fit repeats the first candidate. Nested in PEs and SRAM for every ω (see `densities`). Given the PE
    facts `pe`, a MoE model's candidates are split in whole tiles of their own lattice (tile_parts), crossings
    included, and one whose tiles do not fit `wafers` stages is the sparsest rung of the fine ladder whose tiles do
    (`sparsest`: a function of u, so more SRAM keeps it; twice the PEs may fit a sparser one instead), else share
    1's first candidate (as a share that does not fit at all), else the layout capacity is counted at
    (lattice.densest: share 1 at the densest fine rung the room holds, which stands in only where that does not fit
    either: an infeasible point). No candidate sits at the room itself, nor at a share's densest layout: they moved
    with the SRAM, so a layout there was lost with more of it (Qwen3-30B-A3B at 128K, B 64 on 24 CS-3, 0.9%)."""
    tiled = pe is not None and is_tiled(m)
    if tiled:   # capacity's layout, the stand-in of last resort
        u_cap = lattice.densest(u_pack)
        parts, _ = tile_parts(pe, m, nbytes, u_cap)
        dense = split(m, wafers, nbytes, parts=parts)
        stand_in = (u_cap + 0.0 * dense["peak"], dense["crossings"], dense["visits"])
    us, ws, cs, vs = [], [], [], []
    for w in shares if params.moe_layers(m) > 0 else shares[:1]:
        plan = split(m, wafers, _shared(nbytes, w))
        fill = plan["peak"] / cap
        u = densities(u_pack, fill)
        if tiled:   # the ladder's rungs in tiles and the sparsest fine rung that fits (last)
            low, found = sparsest(pe, m, wafers, nbytes, fill, u_pack, w)
            rows = np.concatenate([u, low + 0.0 * u[:1]])
            parts, held = tile_parts(pe, m, nbytes, rows, w)
            plan = split(m, wafers, nbytes, parts=parts)
            fits = (plan["peak"] <= held * (1.0 + stagesplit.SLACK)) & (rows <= u_pack)
            fits[-1] &= found
            low_fits = fits[-1]
            # where no rung fits: the sparsest fine rung, else share 1's first candidate, else capacity's layout
            other = (us[0][0], cs[0][0], vs[0][0]) if us else stand_in
            first = [np.where(low_fits, x[-1], y) for x, y in zip((rows, plan["crossings"], plan["visits"]), other)]
            fits, plan = fits[:-1], {k: v[:-1] for k, v in plan.items()}
            us.append(np.where(fits, u, first[0]))
            ws.append(np.where(fits | low_fits, w, ws[0][0] if ws else 1.0) + 0.0 * u)
            cs.append(np.where(fits, plan["crossings"], first[1]) + 0.0 * u)
            vs.append(np.where(fits, plan["visits"], first[2]) + 0.0 * u)
            continue
        fits = np.broadcast_to(fill <= u_pack, u.shape[1:])
        first = (us[0][0], cs[0][0], vs[0][0]) if us else (u[0], plan["crossings"] + 0.0 * u[0],
                                                            plan["visits"] + 0.0 * u[0])
        us.append(np.where(fits, u, first[0]))
        ws.append(np.where(fits, w, 1.0) + 0.0 * u)
        cs.append(np.where(fits, plan["crossings"], first[1]) + 0.0 * u)
        vs.append(np.where(fits, plan["visits"], first[2]) + 0.0 * u)
    return np.concatenate(us), np.concatenate(ws), np.concatenate(cs), np.concatenate(vs)


def rung(lo, k):
    """u_fill · √2^k, exact in binary: a power of two times u_fill or u_fill·√2 (so halving u_fill shifts every
    rung by exactly two)."""
    k = np.asarray(k, dtype=np.int64)
    return np.ldexp(np.where(k % 2 == 1, lo * LADDER, lo), k // 2)
