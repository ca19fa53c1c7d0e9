"""The experts of a weight-streaming MoE layer on a grid of PE regions, and the token all-to-all between them at
region granularity: exact XY link loads of dispatch and combine (`cost.fabric.mesh` through `patterns.Outer`, or
the multicast trees in closed form) and the longest path. Built once per structural combination (cached); numpy.

The layer's E experts take the first E tiles, row-major, of an a × b grid (b = ⌈E/a⌉ columns); a tile is one
expert's region. The layer's tokens live on the same tiles, 1/E of them each (the experts share the wafer, and so
do the activations). Units: a *token* is one token's hidden vector; loads are tokens per token of the micro-batch
on a tile link (docs/cost-model.md, "Weight streaming at PE level").

- `unicast`: a token's copy goes to each of its k experts: tile s sends (1/E)·k·p_e to expert e's tile (p the
  popularity, Σp = 1): an outer-product all-to-all, exact in closed form (`patterns.Outer`); combine is its
  transpose. Loads are given per unit of k (multiply by k).
- `multicast`: every tile sends each of its tokens once along the union of its XY routes to every expert tile (the
  routers copy it; each expert keeps its routed tokens): along its row to every column, then up and down each
  column. Combine is the reduction back down the same trees (a relay stage per tile hop of the longest path).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from wsemoe.cost import structure
from wsemoe.cost.fabric import mesh, patterns, topology
from wsemoe.cost.fabric.cache import bounded_cache

MODES = ("multicast", "unicast")


def shapes(experts: int) -> list[tuple[int, int]]:
    """Every (rows a, columns b) of a grid that holds `experts` tiles without an empty row: b = ⌈E/a⌉, a = ⌈E/b⌉,
    one per distinct b (more rows for the same columns would only be empty)."""
    out = {}
    for a in range(1, experts + 1):
        b = -(-experts // a)
        out.setdefault(b, -(-experts // b))
    return sorted((a, b) for b, a in out.items())


@dataclass(frozen=True, eq=False)
class Grid:
    """One layout of E expert tiles on a × b and its dispatch and combine per token of the micro-batch."""

    experts: int
    rows: int
    cols: int
    mode: str
    dispatch: mesh.LinkLoads
    combine: mesh.LinkLoads
    profile: np.ndarray            # (K, 3) Pareto-maximal (tile rows, tile columns, turns) of the paths used
    relays: float                  # relay stages of the combine (multicast: a reduction at each tile hop)
    shares: np.ndarray = field(repr=False)                # (E,) expert popularity
    pattern: patterns.Outer | None = field(repr=False)    # the unicast all-to-all (unit k); None for multicast

    @property
    def tiles(self) -> int:
        """Tiles of the grid."""
        return self.rows * self.cols

    def peaks(self, which: str) -> tuple[float, float]:
        """(busiest east/west tile link, busiest south/north tile link) of `dispatch` or `combine`."""
        loads = getattr(self, which)
        return (float(max(loads.east.max(initial=0.0), loads.west.max(initial=0.0))),
                float(max(loads.south.max(initial=0.0), loads.north.max(initial=0.0))))


def used(experts: int, rows: int, cols: int) -> np.ndarray:
    """(rows, cols) mask of the tiles holding an expert (the first E, row-major)."""
    return (np.arange(rows * cols) < experts).reshape(rows, cols)


def outer(experts: int, rows: int, cols: int, shares: np.ndarray) -> patterns.Outer:
    """The unicast all-to-all (per unit of k): tile s holds 1/E of the tokens and sends p_e of them to expert e."""
    home = used(experts, rows, cols).ravel() / experts
    dest = np.zeros(rows * cols)
    dest[:experts] = shares
    return patterns.Outer((rows, cols), home, dest)


def multicast_loads(experts: int, rows: int, cols: int) -> mesh.LinkLoads:
    """Loads of every tile's multicast tree to every expert tile, in closed form (no path is walked).

    Tile (r0, c0) sends its 1/E along row r0 to every column holding an expert, then in each such column c from
    row r0 to every expert row there (rows 0 … last[c]): an east link (r, c→c+1) carries the sources of row r at
    columns ≤ c while an expert column lies beyond c; a south link (r→r+1) of column c the sources at rows ≤ r while
    r < last[c]; west and north links likewise (every expert column reaches row 0).
    """
    v = used(experts, rows, cols) / experts
    reach = min(experts, cols)                                  # columns holding an expert: 0 … reach − 1
    east = np.cumsum(v, axis=1)[:, :-1] * (np.arange(cols - 1) < reach - 1)
    west = np.cumsum(v[:, ::-1], axis=1)[:, ::-1][:, 1:]
    last = (experts - 1 - np.arange(cols)) // cols              # last expert row of each column (< 0: none)
    upto = np.cumsum(v.sum(axis=1))[:-1]                        # sources at rows ≤ r
    south = upto[:, None] * (np.arange(rows - 1)[:, None] < last[None, :])
    north = (1.0 - upto)[:, None] * (np.arange(cols) < reach)[None, :]
    inject, eject = v.ravel(), used(experts, rows, cols).ravel() * (1.0 - v.ravel())
    return mesh.LinkLoads(rows, cols, east, west, south, north, inject, eject)


def path_profile(experts: int, cols: int, dest: np.ndarray) -> np.ndarray:
    """Pareto-maximal (|Δ rows|, |Δ columns|, turn) over the pairs of distinct expert tiles with traffic to `dest`
    (a mask of the destinations used): exact longest path for any tile sides and hop and turn cycles."""
    r, c = np.divmod(np.arange(experts), cols)
    dr, dc = np.abs(r[:, None] - r[None, :]), np.abs(c[:, None] - c[None, :])
    pick = (dr + dc > 0) & dest[None, :experts]
    code = np.unique((dr[pick] * cols + dc[pick]) * 2 + ((dr > 0) & (dc > 0))[pick])   # one integer per triple
    triples = np.stack([code // 2 // cols, code // 2 % cols, code % 2], axis=1)
    if not len(triples):
        return np.zeros((0, 3))
    beaten = (np.all(triples[None, :, :] >= triples[:, None, :], axis=2)
              & np.any(triples[None, :, :] > triples[:, None, :], axis=2)).any(axis=1)
    return triples[~beaten].astype(float)


def build(experts: int, rows: int, cols: int, shares: np.ndarray, mode: str) -> Grid:
    """The grid's dispatch and combine (module docstring)."""
    lay = topology.Layout("mesh", rows, cols)
    if mode == "unicast":
        p = outer(experts, rows, cols, shares)
        profile = path_profile(experts, cols, np.asarray(shares) > 0)
        return Grid(experts, rows, cols, mode, p.loads(lay), p.T.loads(lay), profile, 0.0, shares, p)
    if mode == "multicast":
        loads = multicast_loads(experts, rows, cols)
        profile = path_profile(experts, cols, np.ones(experts, dtype=bool))
        hops = float((profile[:, 0] + profile[:, 1]).max(initial=0.0))
        return Grid(experts, rows, cols, mode, loads, loads.reversed(), profile, hops, shares, None)
    raise ValueError(f"dispatch {mode!r}: one of {', '.join(MODES)}")


def _held(_, value: Grid) -> int:
    return value.tiles


@bounded_cache(1024, structure.CACHE_NODES, _held)
def grid(experts: int, rows: int, cols: int, mode: str, bal: structure.BalanceKey = structure.UNIFORM) -> Grid:
    """The grid and its traffic for one structural combination (cached); popularity from the balance."""
    shares, _ = structure.expert_shares(experts, bal, experts)
    return build(experts, rows, cols, shares, mode)
