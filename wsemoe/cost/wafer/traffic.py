"""Token traffic between a layer's PE regions at region granularity: dispatch from attention to the experts and
combine back, as exact XY link loads on the grid of tiles (`cost.fabric.mesh` through `patterns.Transfers`),
and the longest path's hops and turns. Built once per structural combination (cached); numpy only.

Units: a *token* is one token's hidden vector, `H` wavelets. The attention tile in row i of a logical column
holds `H / a_r` of it (placement.py), so each of the a_r tiles of the column feeding an expert sends its part.

- `unicast`: token t goes to its k experts only: expert e (popularity p_e, Σ p_e = 1) receives k·p_e tokens
  per token of the batch, shared-expert tiles all of them (each 1 / shared tiles); combine is the transposed
  transfers, XY routed. Σ link loads = Σ transfers × hops (`conservation`).
- `multicast`: every token travels once along the union of XY routes from each attention tile to every expert
  tile its column feeds (the routers copy it; every region keeps its routed tokens): a link of that tree carries
  1 / a_r token per token of the batch. Combine is the reduction down the same tree: each link carries one
  partial sum, and every tile on the way adds its own (a relay stage per tile hop).

A tile edge is `side` PE links wide, so a PE link carries `load / side` of a tile link's load. The latency of a
phase is its longest path: tile hops × side PE hops, one turn if it changes dimension (`profile`: the
Pareto-maximal (hops, turns) pairs, exact for any hop and turn cycles).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from wsemoe.cost import structure
from wsemoe.cost.fabric import mesh, patterns, topology
from wsemoe.cost.fabric.cache import bounded_cache
from wsemoe.cost.wafer.placement import LayerPlacement, place_layer

MODES = ("multicast", "unicast")


@dataclass(frozen=True, eq=False)
class LayerTraffic:
    """One MoE layer's dispatch and combine per token of the batch: link loads (tile links), peaks, paths."""

    placement: LayerPlacement
    mode: str
    dispatch: mesh.LinkLoads
    combine: mesh.LinkLoads
    dispatch_max: float          # busiest tile link of the dispatch, tokens per token of the batch
    combine_max: float
    profile: np.ndarray          # (K, 2) Pareto-maximal (tile hops, turns) of the paths used
    relays: float                # relay stages of the combine (multicast: a reduction adds at each tile hop)
    shares: np.ndarray = field(repr=False)   # (E,) expert popularity
    unicast: patterns.Transfers = field(repr=False)   # the unicast dispatch, whatever the mode (invariants)

    @property
    def hops(self) -> float:
        """Tile hops of the longest path."""
        return float(self.profile[:, 0].max(initial=0.0))


def layout(p: LayerPlacement) -> topology.Layout:
    """The block as a mesh of tiles."""
    return topology.Layout("mesh", p.rows, p.cols)


def unicast_transfers(p: LayerPlacement, shares: np.ndarray, k: int) -> patterns.Transfers:
    """Every (attention tile, expert tile) transfer of a token's copies, per token of the batch."""
    a_r = p.attention.shape[0]
    dest = np.concatenate([p.experts, p.shared])
    vol = np.concatenate([k * np.asarray(shares, dtype=float), np.full(len(p.shared), 1.0 / max(len(p.shared), 1))])
    src = p.attention[:, p.sender]                                   # (a_r, destinations)
    return patterns.Transfers(p.tiles, src.ravel(), np.tile(dest, a_r), np.tile(vol / a_r, a_r))


def multicast_loads(p: LayerPlacement) -> mesh.LinkLoads:
    """Loads of the multicast trees: each attention tile's part crosses every link of its XY routes once.

    The a_r tiles of logical column j sit in rows r0 … r0 + a_r − 1 of block column c_j and feed the tiles D_j.
    Row r's tile sends east along row r up to the farthest column of D_j (west likewise), then in every column c
    of D_j south from row r to D_j's lowest tile there (north likewise): a south link (y, c) carries the parts of
    the sources at rows ≤ y while y is above that lowest tile, 1 / a_r each. Closed form, no path is walked.
    """
    a_r, a_c = p.attention.shape
    dest = np.concatenate([p.experts, p.shared])
    dr, dc = p.coordinates(dest)
    r0 = int(p.attention[0, 0] // p.cols)
    east, west = np.zeros((p.rows, max(p.cols - 1, 0))), np.zeros((p.rows, max(p.cols - 1, 0)))
    south, north = np.zeros((max(p.rows - 1, 0), p.cols)), np.zeros((max(p.rows - 1, 0), p.cols))
    inject, eject = np.zeros(p.tiles), np.zeros(p.tiles)
    y = np.arange(max(p.rows - 1, 0))
    below = np.clip(y - r0 + 1, 0, a_r) / a_r          # sources at rows ≤ y (south links leave row y)
    above = np.clip(r0 + a_r - 1 - y, 0, a_r) / a_r     # sources at rows > y (north links enter row y)
    for j in range(a_c):
        fed = p.sender == j
        if not fed.any():
            continue
        c, rows = int(p.attention[0, j] % p.cols), slice(r0, r0 + a_r)
        east[rows, c:int(dc[fed].max())] += 1.0 / a_r
        west[rows, int(dc[fed].min()):c] += 1.0 / a_r
        for col in np.unique(dc[fed]):
            here = dr[fed & (dc == col)]
            south[:, col] += below * (y < here.max())
            north[:, col] += above * (y >= here.min())
        inject[p.attention[:, j]] += 1.0 / a_r
        eject[dest[fed]] += 1.0
    return mesh.LinkLoads(p.rows, p.cols, east, west, south, north, inject, eject)


def path_profile(p: LayerPlacement, t: patterns.Transfers) -> np.ndarray:
    """Pareto-maximal (tile hops, turns) of the transfers that carry something."""
    (r0, c0), (r1, c1) = p.coordinates(t.src), p.coordinates(t.dst)
    dr, dc = np.abs(r1 - r0), np.abs(c1 - c0)
    used = (t.vol > 0) & (dr + dc > 0)
    return topology.latency_profile(used, dr + dc, ((dr > 0) & (dc > 0)).astype(np.int64))


def build(p: LayerPlacement, shares: np.ndarray, k: int, mode: str) -> LayerTraffic:
    """Dispatch and combine of one placed layer (module docstring)."""
    t = unicast_transfers(p, shares, k)
    lay = layout(p)
    if mode == "unicast":
        dispatch, combine, relays = t.loads(lay), t.T.loads(lay), 0.0
        profile = path_profile(p, t)
    elif mode == "multicast":
        every = patterns.Transfers(t.n, t.src, t.dst, np.ones(len(t.src)))   # every fed tile hears every token
        dispatch = multicast_loads(p)
        combine, profile = dispatch.reversed(), path_profile(p, every)
        relays = float(profile[:, 0].max(initial=0.0))
    else:
        raise ValueError(f"dispatch {mode!r}: one of {', '.join(MODES)}")
    return LayerTraffic(p, mode, dispatch, combine, float(dispatch.max_link()), float(combine.max_link()), profile,
                        relays, np.asarray(shares, dtype=float), t)


def _held(_, value: LayerTraffic) -> int:
    return value.placement.tiles


@bounded_cache(1024, structure.CACHE_NODES, _held)
def layer_traffic(strategy: str, mode: str, experts: int, k: int, shared_tiles: int, a_r: int, a_c: int,
                  bal: structure.BalanceKey = structure.UNIFORM) -> LayerTraffic:
    """The placed layer and its traffic for one structural combination (cached): popularity from the balance
    (skew measured on one expert per region)."""
    shares, _ = structure.expert_shares(experts, bal, experts)
    return build(place_layer(strategy, experts, shared_tiles, a_r, a_c), shares, k, mode)


@dataclass(frozen=True, eq=False)
class WaferTraffic:
    """Every layer block of one wafer on the wafer's grid of tiles, and their dispatch loads together (one token
    per layer at once: the stream with a token in every layer)."""

    rows: int
    cols: int
    offsets: np.ndarray          # (blocks, 2) tile offsets of the layer blocks
    transfers: patterns.Transfers
    loads: mesh.LinkLoads

    @property
    def tiles(self) -> int:
        """Tiles of the wafer's grid."""
        return self.rows * self.cols


def shift(p: LayerPlacement, tiles, offset, cols: int) -> np.ndarray:
    """Tile ids of a block's `tiles` on a grid `cols` wide, the block's corner at `offset` (row, column)."""
    r, c = p.coordinates(tiles)
    return (r + offset[0]) * cols + c + offset[1]


def wafer(p: LayerPlacement, shares: np.ndarray, k: int, tile_rows: int, tile_cols: int, layers: int,
          mode: str = "unicast") -> WaferTraffic:
    """A wafer of `tile_rows × tile_cols` tiles holding as many of `layers` blocks of placement `p` as fit (a grid
    of blocks, row by row), with each block's dispatch: unicast transfers routed XY on the whole grid, or each
    block's multicast trees. Blocks never share a link (each route stays inside its block)."""
    from wsemoe.cost.wafer.placement import wafer_blocks

    offsets = wafer_blocks(tile_rows, tile_cols, p.rows, p.cols, layers)
    unit = unicast_transfers(p, shares, k)
    n = tile_rows * tile_cols
    src = np.concatenate([shift(p, unit.src, o, tile_cols) for o in offsets]) if len(offsets) else np.zeros(0, int)
    dst = np.concatenate([shift(p, unit.dst, o, tile_cols) for o in offsets]) if len(offsets) else np.zeros(0, int)
    t = patterns.Transfers(n, src, dst, np.tile(unit.vol, len(offsets)))
    grid = topology.Layout("mesh", tile_rows, tile_cols)
    if mode == "unicast":
        return WaferTraffic(tile_rows, tile_cols, offsets, t, t.loads(grid))
    block = multicast_loads(p)
    loads = patterns.Transfers.empty(n).loads(grid)
    for r0, c0 in offsets:   # each block's trees, placed at its corner
        loads.east[r0:r0 + p.rows, c0:c0 + p.cols - 1] += block.east
        loads.west[r0:r0 + p.rows, c0:c0 + p.cols - 1] += block.west
        loads.south[r0:r0 + p.rows - 1, c0:c0 + p.cols] += block.south
        loads.north[r0:r0 + p.rows - 1, c0:c0 + p.cols] += block.north
    return WaferTraffic(tile_rows, tile_cols, offsets, t, loads)
