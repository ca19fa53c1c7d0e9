"""Region shapes of a served layer from its PEs, and its placed traffic, per point: a structure (placement,
link loads, paths) is built once per unique (placement, dispatch, experts, top-k, shared tiles, attention tiles,
popularity) combination and its numbers are gathered for every point that uses it. Numpy only.

Shapes (docs/cost-model.md, "Serving from SRAM"; the lattice's, cost/wafer/lattice.py, which the stage split counts
too): an expert region is one square tile, the smallest that holds it at no more than `u` a PE (side
`s = ⌈√(e/u)⌉`, `pes["tile"]`); the attention region is `a_r × a_c` tiles, `t = ⌈P_attention / s²⌉`,
`a_r = ⌈√t⌉`, `a_c = ⌈t / a_r⌉`; the shared experts `⌈P_shared / s²⌉` tiles; a dense layer, the head and the
embedding are timed as squares of their PEs.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np

from wsemoe.cost import structure
from wsemoe.cost.balance import routing
from wsemoe.cost.comm import balance_key
from wsemoe.cost.node import params
from wsemoe.cost.wafer import lattice, traffic, unique
from wsemoe.cost.wafer.layer import Geometry


def square(pes):
    """Side of the largest square of `pes` PEs (at least 1)."""
    return np.maximum(np.floor(np.sqrt(np.asarray(pes, dtype=float))), 1.0)


grid = lattice.grid   # (rows, cols) of a near-square arrangement of tiles


def balance_fields(bal):
    """The numeric balance fields a layer's popularity depends on (arrays or scalars; None when unset)."""
    if bal is None:
        return []
    return [bal.zipf_s, bal.seed, getattr(bal, "skew_target", None)]


class Built(Sequence):
    """The LayerTraffic of each structural combination, taken from traffic's cache (or built) when read: a frame's
    evaluation reads only their numbers (`summary`), figures and invariants the structures themselves."""

    def __init__(self, args: list):
        self.args = args   # traffic.layer_traffic's arguments, one tuple per combination

    def __len__(self) -> int:
        return len(self.args)

    def __getitem__(self, i):
        return traffic.layer_traffic(*self.args[i])


SUMMARY = ("hops_turning", "hops_straight", "block_cols", "stretch", "dispatch_max", "combine_max", "relays",
           "busiest_share")


@functools.lru_cache(maxsize=1 << 16)   # a few dozen bytes each: every structure a session meets stays
def summary(*args) -> tuple:
    """The numbers of one structure a Geometry reads (SUMMARY), kept after traffic's bounded cache drops the
    structure: tile hops of the longest turning and straight paths, the block's columns, the stretch, the busiest
    dispatch and combine links, the relays, the busiest expert's share."""
    s = traffic.layer_traffic(*args)
    return (max([h for h, t in s.profile if t > 0], default=0.0), max([h for h, t in s.profile if t == 0], default=0.0),
            s.placement.cols, s.placement.stretch, s.dispatch_max, s.combine_max, s.relays, s.shares.max())


def structures(m, mp, bal, histogram, a_r, a_c, shared, shape):
    """(the structures (Built), index of each point's structure) over the unique combinations."""
    fields = [a_r, a_c, shared, m.num_experts, m.num_experts_per_tok]   # the routing too: a swept E or k is an array
    fields += [np.nan if v is None else v for v in balance_fields(bal)]
    values = [np.nan_to_num(np.asarray(f, dtype=float), nan=-1.0) for f in fields]
    # Only the fields that vary are hashed (a constant column changes neither the distinct rows nor their order).
    varying = [i for i, v in enumerate(values) if v.size > 1]
    arrays = [np.broadcast_to(values[i], shape).ravel() for i in varying]
    if arrays:
        first, inverse = unique.rows(arrays, ordered=True)   # np.unique(axis=0)'s rows and order, without its sort
    else:
        first, inverse = np.zeros(1, dtype=np.intp), np.zeros(int(np.prod(shape)), dtype=np.intp)
    columns = {i: a[first] for i, a in zip(varying, arrays)}
    keys = np.stack([columns[i] if i in columns else np.full(len(first), float(v.ravel()[0]))
                     for i, v in enumerate(values)], axis=1)
    args = []
    for key in keys:
        r, c, sh, e, k, *b = key
        numeric = (b[0], b[1], 0, None if b[2] < 0 else b[2], getattr(bal, "skew_devices", None)) if b else None
        bk = balance_key(bal, numeric, histogram, int(k))
        args.append((getattr(mp, "pe_placement", "blocked"), getattr(mp, "pe_dispatch", "multicast"),
                     int(e), int(k), int(sh), int(r), int(c), bk))
    return Built(args), inverse.ravel()


@functools.lru_cache(maxsize=1 << 12)
def _shares(experts: int, bal) -> np.ndarray:
    """Per-expert shares of one structure (as traffic.layer_traffic reads them: one expert per region)."""
    return structure.expert_shares(experts, bal, experts)[0]


def routing_noise(built: Built, inv: np.ndarray, p_max, tokens, k) -> np.ndarray:
    """Per point (the shape of `p_max`, the busiest expert's expected share), the busiest expert region's expected
    maximum of copies over a step of `tokens` tokens (routing.busiest_expert) over k·p_max·tokens; 1 for a dense
    model or no tokens."""
    p_max = np.asarray(p_max, dtype=float)
    if not len(built):
        return np.ones(p_max.shape)
    full = np.broadcast_shapes(p_max.shape, np.shape(tokens))
    # the shares follow the model's experts and the balance, never the candidate layout (the leading axis): the
    # first candidate's stand for all
    lead = full[:1] and (1,) + full[1:]
    which = np.broadcast_to(np.asarray(inv).reshape(p_max.shape), full)[:1]
    copies = np.broadcast_to(np.asarray(tokens, dtype=float) * k, full)[:1]
    first = np.broadcast_to(p_max, full)[:1]
    shares = [_shares(a[2], a[7]) for a in built.args]
    most = routing.busiest_expert(shares, which, copies, k)
    expected = copies * first
    noise = np.where(expected > 0, most / np.where(expected > 0, expected, 1.0), 1.0)
    return np.broadcast_to(noise.reshape(lead), full) if full else noise.reshape(())


def geometry(m, mp, bal, histogram, pes: dict, shape) -> tuple[Geometry, list, np.ndarray]:
    """The Geometry of every point, the structures built and each point's structure index."""
    side = pes["tile"]
    a_r, a_c = grid(lattice.tiles_of(pes["attention"], side))
    shared = np.where(pes["shared"] > 0, lattice.tiles_of(pes["shared"], side), 0.0)
    sh_r, sh_c = grid(shared)
    shape = np.broadcast_shapes(shape, np.shape(a_r), np.shape(shared), *map(np.shape, balance_fields(bal)))
    if params.moe_layers(m) == 0:   # a dense model: no expert regions, no dispatch
        zero = np.zeros(shape)
        return Geometry(a_r * side, a_c * side, side, zero, zero, square(pes["dense"]), square(pes["head"]),
                        square(pes["embedding"]), square(pes["dense"]), 1.0 + zero, zero, zero, zero, zero, zero,
                        zero), [], np.zeros(int(np.prod(shape)), dtype=np.intp)
    built, inv = structures(m, mp, bal, histogram, a_r, a_c, shared, shape)

    table = np.asarray([summary(*a) for a in built.args], dtype=float).reshape(len(built), len(SUMMARY))
    col = {name: table[:, j][inv].reshape(shape) for j, name in enumerate(SUMMARY)}
    g = Geometry(a_r * side, a_c * side, side, sh_r * side, sh_c * side, square(pes["dense"]), square(pes["head"]),
                 square(pes["embedding"]), col["block_cols"] * side, col["stretch"], col["dispatch_max"],
                 col["combine_max"], col["hops_turning"], col["hops_straight"], col["relays"], col["busiest_share"])
    return g, built, inv
