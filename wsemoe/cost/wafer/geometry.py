"""Region shapes of a served layer from its PEs, and its placed traffic, per point: a structure (placement,
link loads, paths) is built once per unique (placement, dispatch, experts, top-k, shared tiles, attention tiles,
popularity) combination and its numbers are gathered for every point that uses it. Numpy only.

Shapes (docs/cost-model.md, "Serving from SRAM"): an expert region is the largest square of its PEs (side `s`,
one tile); the attention region is `a_r × a_c` tiles, `t = ⌈P_attention / s²⌉`, `a_r = ⌈√t⌉`, `a_c = ⌈t / a_r⌉`;
the shared experts `⌈P_shared / s²⌉` tiles; a dense layer, the head and the embedding are squares of their PEs.
"""

from __future__ import annotations

import numpy as np

from wsemoe.cost.comm import balance_key
from wsemoe.cost.node import params
from wsemoe.cost.wafer import traffic
from wsemoe.cost.wafer.layer import Geometry


def square(pes):
    """Side of the largest square of `pes` PEs (at least 1)."""
    return np.maximum(np.floor(np.sqrt(np.asarray(pes, dtype=float))), 1.0)


def grid(tiles):
    """(rows, cols) of a near-square arrangement of `tiles` tiles (0 tiles: 0 × 0)."""
    rows = np.ceil(np.sqrt(np.asarray(tiles, dtype=float)))
    return rows, np.where(rows > 0, np.ceil(tiles / np.maximum(rows, 1.0)), 0.0)


def balance_fields(bal):
    """The numeric balance fields a layer's popularity depends on (arrays or scalars; None when unset)."""
    if bal is None:
        return []
    return [bal.zipf_s, bal.seed, getattr(bal, "skew_target", None)]


def structures(m, mp, bal, histogram, a_r, a_c, shared, shape):
    """(built LayerTraffic list, index of each point's structure) over the unique combinations."""
    fields = [a_r, a_c, shared] + [np.nan if v is None else v for v in balance_fields(bal)]
    arrays = [np.broadcast_to(np.asarray(f, dtype=float), shape).ravel() for f in fields]
    keys, inverse = np.unique(np.nan_to_num(np.stack(arrays, axis=1), nan=-1.0), axis=0, return_inverse=True)
    built = []
    for key in keys:
        r, c, sh, *b = key
        numeric = (b[0], b[1], 0, None if b[2] < 0 else b[2], getattr(bal, "skew_devices", None)) if b else None
        bk = balance_key(bal, numeric, histogram)
        built.append(traffic.layer_traffic(getattr(mp, "pe_placement", "blocked"),
                                           getattr(mp, "pe_dispatch", "multicast"), int(m.num_experts),
                                           int(m.num_experts_per_tok), int(sh), int(r), int(c), bk))
    return built, inverse.ravel()


def geometry(m, mp, bal, histogram, pes: dict, shape) -> tuple[Geometry, list, np.ndarray]:
    """The Geometry of every point, the structures built and each point's structure index."""
    side = square(pes["expert"])
    a_r, a_c = grid(np.ceil(pes["attention"] / side ** 2))
    shared = np.where(pes["shared"] > 0, np.ceil(pes["shared"] / side ** 2), 0.0)
    sh_r, sh_c = grid(shared)
    shape = np.broadcast_shapes(shape, np.shape(a_r), np.shape(shared), *map(np.shape, balance_fields(bal)))
    if params.moe_layers(m) == 0:   # a dense model: no expert regions, no dispatch
        zero = np.zeros(shape)
        return Geometry(a_r * side, a_c * side, side, zero, zero, square(pes["dense"]), square(pes["head"]),
                        square(pes["embedding"]), square(pes["dense"]), 1.0 + zero, zero, zero, zero, zero, zero,
                        zero), [], np.zeros(int(np.prod(shape)), dtype=np.intp)
    built, inv = structures(m, mp, bal, histogram, a_r, a_c, shared, shape)

    def pick(fn):
        return np.asarray([fn(s) for s in built], dtype=float)[inv].reshape(shape)

    turning = pick(lambda s: max([h for h, t in s.profile if t > 0], default=0.0))
    straight = pick(lambda s: max([h for h, t in s.profile if t == 0], default=0.0))
    g = Geometry(a_r * side, a_c * side, side, sh_r * side, sh_c * side, square(pes["dense"]), square(pes["head"]),
                 square(pes["embedding"]), pick(lambda s: s.placement.cols) * side,
                 pick(lambda s: s.placement.stretch), pick(lambda s: s.dispatch_max), pick(lambda s: s.combine_max),
                 turning, straight, pick(lambda s: s.relays), pick(lambda s: s.shares.max()))
    return g, built, inv
