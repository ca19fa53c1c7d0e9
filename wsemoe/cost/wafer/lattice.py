"""The lattice of square tiles an SRAM-served MoE model's regions lie on, the one place that shapes its regions for
both what fits (the stage split, cost/wafer/regions.py) and the timing (cost/wafer/geometry.py). Numpy only.

The fabric is whole rows × columns of PEs, so a layout at `u` bytes per PE lays every region of a MoE model on one
lattice of square tiles (docs/cost-model.md, "Serving from SRAM"). An expert region, `e` bytes, is one tile, the
smallest square that holds it at no more than `u` a PE: side `s = ⌈√(e/u)⌉`, so it holds `e/s² ≤ u ≤ room` bytes a
PE, and a layout's tiles are a function of `u` alone, whatever the SRAM (the largest square of its `e/u` PEs,
`⌊√(e/u)⌋²`, held more: Qwen3-235B at 8K on 12 CS-3, 37,748,736 B on 28² PEs is 48,149 B a PE, above CS-3's
49,152 − 2,304 = 46,848 B and its room of 45,832 B; widened to `⌈√(e/room)⌉` only where it overflowed, the side
moved with the SRAM, and so did a layout's speed at a given `u`). Every other region is whole tiles, each holding at most `u ≤ room` a PE: a MoE layer's attention `t = ⌈w·bytes/(u·s²)⌉` tiles laid as an `a_r × a_c` rectangle (`a_r = ⌈√t⌉`,
`a_c = ⌈t/a_r⌉`: the rectangle's a_r·a_c tiles are taken, the ones beyond `t` idle), the shared experts, a dense
layer, the embedding and the head `⌈bytes/(u·s²)⌉` tiles each. A wafer's program rectangle of R × C PEs holds
`⌊R/s⌋·⌊C/s⌋` tiles (its last `R mod s` rows and `C mod s` columns idle): the stage split counts tiles against
that, so the rounding of every region to whole tiles and of the fabric to whole tiles is counted, not ignored.

A layout's `u` on the lattice comes from fixed ladders (cost/wafer/ladder.py), and so does what fits: the fine
ladder `2^(j/256)` bytes a PE (`fine`, 0.27% apart) is the same whatever the fabric, the SRAM or the pipeline, and
capacity is counted at its densest rung that a PE's room holds (`densest`), not at the room itself, which moves
with the SRAM (a layout at the room was a candidate only at that room: Qwen3-30B-A3B at 128K, B 64 on 24 CS-3 ran
0.9% slower with twice the SRAM, its 45,832 B layout gone). What fits is counted at most 0.27% below the room (a
ladder 1.1% apart, 2^(j/64), left Qwen3-30B-A3B at 8K, B 16 needing 3 CS-3, not 2; this one moves no shipped count).

A dense model (no routed experts) has no lattice: its regions stay bytes over `u` (not modelled: packing its
squares of ⌊√P⌋ PEs on the rectangle, docs/cost-model.md).
"""

from __future__ import annotations

import numpy as np

from wsemoe.cost.wafer.fabric import program_rectangle

FUZZ = 1e-12   # a count that is whole but for float rounding (P = 784.0000000001 PEs) stays whole
FINE = 256     # rungs per doubling of the fine ladder 2^(j/256) bytes a PE (0.27% apart)


def whole(x):
    """⌈x⌉, forgiving float rounding above a whole number."""
    return np.ceil(np.asarray(x, dtype=float) * (1.0 - FUZZ))


def side(expert_bytes, u):
    """Side of a routed expert's square tile at `u` bytes per PE: the smallest square that holds its bytes at no
    more than `u` a PE (≥ 1)."""
    return np.maximum(whole(np.sqrt(np.asarray(expert_bytes, dtype=float) / np.maximum(u, 1e-9))), 1.0)


def grid(tiles):
    """(rows, cols) of a near-square arrangement of `tiles` tiles (0 tiles: 0 × 0)."""
    rows = np.ceil(np.sqrt(np.asarray(tiles, dtype=float)))
    return rows, np.where(rows > 0, np.ceil(tiles / np.maximum(rows, 1.0)), 0.0)


def tiles_of(pes, s):
    """Whole tiles of side `s` that hold a region of `pes` PEs' bytes (0 for none)."""
    return whole(np.asarray(pes, dtype=float) / (np.asarray(s, dtype=float) ** 2))


def tiles(nbytes: dict, u, share=1.0) -> dict:
    """The lattice at `u` bytes per PE (attention `share` times its bytes' share): tile `side`, the
    attention rectangle (`a_r`, `a_c`) and the tiles of each region kind (`attention`: the rectangle's a_r·a_c)."""
    u = np.maximum(np.asarray(u, dtype=float), 1e-9)   # no room (u ≤ 0): tiles too large for any wafer
    s = side(nbytes["expert"], u)
    a_r, a_c = grid(tiles_of(share * np.asarray(nbytes["attention"], dtype=float) / u, s))
    out = {k: tiles_of(np.asarray(nbytes[k], dtype=float) / u, s) for k in ("shared", "dense", "embedding", "head")}
    return {**out, "side": s, "a_r": a_r, "a_c": a_c, "attention": a_r * a_c, "expert": 1.0 + 0.0 * s}


def slots(pe, s):
    """Tiles of side `s` a wafer's program rectangle holds: ⌊R/s⌋·⌊C/s⌋."""
    rows, cols = program_rectangle(pe)
    s = np.asarray(s, dtype=float)
    return np.floor(np.asarray(rows, dtype=float) / s) * np.floor(np.asarray(cols, dtype=float) / s)


def fine(j):
    """Rung `j` of the fine ladder, 2^(j/FINE) bytes per PE: the same floats whatever the fabric or the SRAM."""
    j = np.asarray(j, dtype=np.int64)
    return np.ldexp(2.0 ** ((j % FINE) / FINE), j // FINE)


def fine_index(u):
    """Index of the densest rung of the fine ladder at most `u` (≥ 2^-64 B a PE: no room has no rung of its own)."""
    u = np.clip(np.nan_to_num(np.asarray(u, dtype=float), nan=0.0), 2.0 ** -64, 2.0 ** 64)
    j = np.floor(np.log2(u) * FINE).astype(np.int64)
    j = j - (fine(j) > u)                       # log2's rounding never puts a rung above u …
    return j + (fine(j + 1) <= u)               # … nor leaves out one at most u


def densest(room):
    """The densest rung of the fine ladder that a PE's `room` holds: where a MoE model's capacity is counted."""
    return fine(fine_index(room))
