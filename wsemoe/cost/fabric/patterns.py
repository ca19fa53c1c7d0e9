"""Unit traffic of one communication step, and what a structure reads from it, with or without an N×N matrix.

A step's traffic t[s, d] (bytes from node s to node d per unit) comes in one of four forms:

- `Transfers`: point-to-point transfers (src, dst, bytes), repeats adding up: ring steps, dispatch, migration.
  Memory O(transfers).
- `Outer`: an all-to-all whose volume factorises by sender and receiver, t[s, d] = f·a[s]·b[d], optionally only
  between dies of the same tile (a wafer): the slice dispatch (uniform all-to-all: a and b constant). Memory O(N).
- `Blocks`: transfers made a block at a time, too many to hold at once: the dispatch after a balancer made
  replicas, which reaches every node from every group. Memory O(one block).
- `Dense`: the N×N matrix itself, the general path.

Each gives the exact XY (or YX) link loads, the per-node port volumes, the bytes each node receives, the
traffic-weighted mean and longest hop count and the latency profile (a switch, whose devices number hundreds,
keeps the matrix: `Dense` also gives the bytes between its scale-up domains). XY loads depend on t only
through what each row carries between its columns and each column between its rows (`mesh.loads_from_lines`,
R·C² + C·R² numbers): `Transfers` and `Blocks` sum them by `bincount`, `Outer` has them in closed form
(segmented prefix sums of a and b, O(N)), so none builds an N×N array. Every load is a sum of non-negative
terms, never a difference, so an idle link is exactly 0 on every path.

`dense()` materialises the matrix, adding the transfers in their order, so a `Dense` built from a compact
pattern holds the very matrix the general path always used; `structure` evaluates `Dense` while N×N matrices
are small and the compact forms above that (tests hold them to the general path and to a path walker).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from wsemoe.cost.fabric import topology, mesh

INF = np.inf


@dataclass(frozen=True, eq=False)
class Transfers:
    """Point-to-point transfers: `vol[i]` bytes from node `src[i]` to node `dst[i]` among `n` nodes."""

    n: int
    src: np.ndarray
    dst: np.ndarray
    vol: np.ndarray

    @staticmethod
    def empty(n: int) -> Transfers:
        """No traffic."""
        return Transfers(n, np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0))

    @property
    def T(self) -> Transfers:
        """Every transfer sent back: the transposed matrix."""
        return Transfers(self.n, self.dst, self.src, self.vol)

    def any(self) -> bool:
        """Whether anything is sent."""
        return bool(np.any(self.vol != 0))

    def dense(self) -> np.ndarray:
        """The N×N matrix, transfers added in their order."""
        t = np.zeros((self.n, self.n))
        np.add.at(t, (self.src, self.dst), self.vol)
        return t

    def loads(self, layout: topology.Layout, routing: str = "xy") -> mesh.LinkLoads:
        """Exact link loads; `reverse` routes YX, which retraces the XY path of the transposed transfers backwards."""
        if routing == "reverse":
            return self.T.loads(layout).reversed()
        return mesh.loads_from_lines(*layout.grid, *self.lines(layout), *self.ports())

    def lines(self, layout: topology.Layout) -> tuple[np.ndarray, np.ndarray]:
        """What each row carries between its columns (R, C, C) and each column between its rows (C, R, R)."""
        (R, C), (r, c, _, _) = layout.grid, layout.coords
        horiz = np.bincount(self.src * C + c[self.dst], self.vol, R * C * C).reshape(R, C, C)   # [rs, cs, cd]
        vert = np.bincount((c[self.dst] * R + r[self.src]) * R + r[self.dst], self.vol, C * R * R).reshape(C, R, R)
        return horiz, vert

    def ports(self) -> tuple[np.ndarray, np.ndarray]:
        """Bytes each node sends and receives over the network (self traffic excluded)."""
        moving = self.src != self.dst
        vol = self.vol[moving]
        return np.bincount(self.src[moving], vol, self.n), np.bincount(self.dst[moving], vol, self.n)

    def received(self) -> np.ndarray:
        """Bytes each node receives, local deliveries included."""
        return np.bincount(self.dst, self.vol, self.n)

    def hop_stats(self, layout: topology.Layout) -> tuple[float, float]:
        """(traffic-weighted mean hops, longest hops) of what crosses the network."""
        return _mean_longest(*self.hop_sums(layout))

    def hop_sums(self, layout: topology.Layout, split=None) -> tuple[float, float, float]:
        """(Σ bytes × hops, Σ bytes, longest hops) of what crosses the network (`split`: `layout.hops_of` known)."""
        hops = sum(split or layout.hops_of(self.src, self.dst))
        moving = (hops > 0) & (self.vol > 0)
        vol, hops = self.vol[moving], hops[moving]
        return float((vol * hops).sum()), float(vol.sum()), float(hops.max(initial=0))

    def profile(self, layout: topology.Layout, split=None) -> np.ndarray:
        """Pareto-maximal (on-wafer hops, crossing hops) of the transfers (see `topology.latency_profile`)."""
        on, cross = split or layout.hops_of(self.src, self.dst)
        return topology.latency_profile((self.vol > 0) & (self.src != self.dst), on, cross)


def _mean_longest(moved: float, weight: float, longest: float) -> tuple[float, float]:
    return (moved / weight if weight > 0 else 0.0), longest


@dataclass(frozen=True, eq=False)
class Blocks:
    """Transfers too many to hold at once (a dispatch that reaches every node from every group), made block by
    block: `make(i)` for i in range(count), in this order, are the whole list (`flipped`: sent back, the
    transpose). Every quantity is summed (or maximised) over blocks, so memory is one block's whatever the
    number of transfers; one pass per layout gathers what the transfers and their transpose give (`memo`,
    shared with `T`), since making a block is the expensive part."""

    n: int
    count: int
    make: Callable[[int], Transfers]
    flipped: bool = False
    memo: dict = field(default_factory=dict, repr=False)

    def _each(self):
        return (self.make(i) for i in range(self.count))

    @property
    def T(self) -> Blocks:
        """Every transfer sent back."""
        return Blocks(self.n, self.count, self.make, not self.flipped, self.memo)

    def dense(self) -> np.ndarray:
        """The N×N matrix, transfers added in their order."""
        t = np.zeros((self.n, self.n))
        for b in self._each():
            np.add.at(t, (b.dst, b.src) if self.flipped else (b.src, b.dst), b.vol)
        return t

    def _sums(self, layout: topology.Layout) -> dict:
        """Lines of the transfers and of their transpose, ports, hop sums and profile, in one pass (memoised)."""
        if layout not in self.memo:
            acc = {}
            for b in self._each():
                split = layout.hops_of(b.src, b.dst)
                part = {"lines": b.lines(layout), "lines_T": b.T.lines(layout), "ports": b.ports(),
                        "received": (b.received(), b.T.received()), "hops": b.hop_sums(layout, split)}
                for k, v in part.items():
                    acc[k] = v if k not in acc else tuple(x + y for x, y in zip(acc[k], v))
                acc["longest"] = max(acc.get("longest", 0.0), part["hops"][2])
                acc.setdefault("profile", []).append(b.profile(layout, split))
            pairs = np.concatenate(acc["profile"])
            acc["profile"] = topology.latency_profile(np.ones(len(pairs), dtype=bool), pairs[:, 0], pairs[:, 1])
            self.memo[layout] = acc
        return self.memo[layout]

    def loads(self, layout: topology.Layout, routing: str = "xy") -> mesh.LinkLoads:
        """Exact link loads (`reverse`: YX, as for `Transfers`), the lines of every block added up."""
        if routing == "reverse":
            return self.T.loads(layout).reversed()
        sums = self._sums(layout)
        return mesh.loads_from_lines(*layout.grid, *sums["lines_T" if self.flipped else "lines"], *self.ports(sums))

    def ports(self, sums: dict | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Bytes each node sends and receives over the network (self traffic excluded)."""
        sums = sums or next(iter(self.memo.values()), None)   # ports do not depend on the layout
        if sums is None:
            parts = [b.ports() for b in self._each()]
            send, recv = sum(p[0] for p in parts), sum(p[1] for p in parts)
        else:
            send, recv = sums["ports"]
        return (recv, send) if self.flipped else (send, recv)

    def received(self) -> np.ndarray:
        """Bytes each node receives, local deliveries included."""
        sums = next(iter(self.memo.values()), None)   # what is received does not depend on the layout
        if sums is not None:
            return sums["received"][int(self.flipped)]
        return sum((b.T if self.flipped else b).received() for b in self._each())

    def hop_stats(self, layout: topology.Layout) -> tuple[float, float]:
        """(traffic-weighted mean hops, longest hops): hop counts are symmetric, so the transpose's are the same."""
        moved, weight, _ = self._sums(layout)["hops"]
        return _mean_longest(moved, weight, self._sums(layout)["longest"])

    def profile(self, layout: topology.Layout) -> np.ndarray:
        """Pareto-maximal (on-wafer hops, crossing hops) of the union of every block's Pareto set (symmetric)."""
        return self._sums(layout)["profile"]


def _segments(x: np.ndarray, m: int, reverse: bool = False) -> np.ndarray:
    """Prefix sums of x along its last axis restarting every m positions (suffix sums with `reverse`)."""
    seg = x.reshape(x.shape[:-1] + (x.shape[-1] // m, m))
    out = np.flip(np.flip(seg, -1).cumsum(-1), -1) if reverse else seg.cumsum(-1)
    return out.reshape(x.shape)


def _crossing(x_from: np.ndarray, x_to: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
    """Loads of the links k→k+1 and k+1→k of lines carrying x_from[s]·x_to[d] between positions s, d of one segment
    of m: forward (Σ_{s≤k} x_from)(Σ_{d>k} x_to), backward (Σ_{s>k} x_from)(Σ_{d≤k} x_to), 0 between segments."""
    inside = np.arange(1, x_from.shape[-1]) % m != 0
    up_f, down_f = _segments(x_from, m), _segments(x_from, m, True)
    up_t, down_t = _segments(x_to, m), _segments(x_to, m, True)
    forward = np.where(inside, up_f[..., :-1] * down_t[..., 1:], 0.0)
    backward = np.where(inside, down_f[..., 1:] * up_t[..., :-1], 0.0)
    return forward, backward


@dataclass(frozen=True, eq=False)
class Outer:
    """An all-to-all t[s, d] = f·a[s]·b[d] on a `shape` = (R, C) die grid, between dies of the same `tile`
    (tiles of tr×tc dies tiling the grid; None: the whole grid)."""

    shape: tuple[int, int]
    a: np.ndarray
    b: np.ndarray
    f: float = 1.0
    tile: tuple[int, int] | None = None

    @property
    def n(self) -> int:
        return self.shape[0] * self.shape[1]

    @property
    def T(self) -> Outer:
        """The transposed all-to-all."""
        return Outer(self.shape, self.b, self.a, self.f, self.tile)

    def _tiles(self) -> tuple[int, int]:
        return self.tile or self.shape

    def tile_of(self) -> np.ndarray:
        """Tile of every node."""
        (R, C), (tr, tc) = self.shape, self._tiles()
        r, c = np.divmod(np.arange(self.n), C)
        return (r // tr) * (C // tc) + c // tc

    def _tile_sum(self, x: np.ndarray) -> np.ndarray:
        """Σ of x over each node's tile, per node."""
        (R, C), (tr, tc) = self.shape, self._tiles()
        sums = x.reshape(R // tr, tr, C // tc, tc).sum(axis=(1, 3))
        return sums.ravel()[self.tile_of()]

    def dense(self) -> np.ndarray:
        """The N×N matrix."""
        t = self.f * (self.a[:, None] * self.b[None, :])
        if self.tile is not None:
            tile = self.tile_of()
            t = np.where(tile[:, None] == tile[None, :], t, 0.0)
        return t

    def loads(self, layout: topology.Layout, routing: str = "xy") -> mesh.LinkLoads:
        """Exact link loads in closed form: a row carries f·a[r, cs]·(b summed over the tile's rows)[cd] between
        its columns, a column f·(a summed over the tile's columns)[rs]·b[rd, c] between its rows."""
        if routing == "reverse":
            return self.T.loads(layout).reversed()
        (R, C), (tr, tc) = self.shape, self._tiles()
        a, b = self.a.reshape(R, C), self.b.reshape(R, C)
        b_rows = np.repeat(b.reshape(R // tr, tr, C).sum(axis=1), tr, axis=0)      # Σ over rd in r's tile rows
        a_cols = np.repeat(a.reshape(R, C // tc, tc).sum(axis=2), tc, axis=1)      # Σ over cs in c's tile columns
        east, west = _crossing(a, b_rows, tc)
        south, north = _crossing(a_cols.T, b.T, tr)
        send, recv = self.ports()
        f = self.f
        return mesh.LinkLoads(R, C, f * east, f * west, f * south.T, f * north.T, send, recv)

    def ports(self) -> tuple[np.ndarray, np.ndarray]:
        """Bytes each node sends and receives over the network (self traffic excluded)."""
        send = self.f * self.a * np.maximum(self._tile_sum(self.b) - self.b, 0.0)
        recv = self.f * self.b * np.maximum(self._tile_sum(self.a) - self.a, 0.0)
        return send, recv

    def received(self) -> np.ndarray:
        """Bytes each node receives, local deliveries included."""
        return self.f * self.b * self._tile_sum(self.a)

    def hop_stats(self, layout: topology.Layout) -> tuple[float, float]:
        """(traffic-weighted mean hops, longest hops): Σ a[s]·b[d]·|Δr| and Σ a[s]·b[d]·|Δc| split into sums over
        each tile's rows and columns."""
        (R, C), (tr, tc) = self.shape, self._tiles()
        a4, b4 = self.a.reshape(R // tr, tr, C // tc, tc), self.b.reshape(R // tr, tr, C // tc, tc)
        dr = np.abs(np.arange(tr)[:, None] - np.arange(tr)[None, :])
        dc = np.abs(np.arange(tc)[:, None] - np.arange(tc)[None, :])
        moved = np.einsum("pia,ij,pja->", a4.sum(axis=3), dr, b4.sum(axis=3)) + \
            np.einsum("paj,jk,pak->", a4.sum(axis=1), dc, b4.sum(axis=1))
        weight = (a4.sum(axis=(1, 3)) * b4.sum(axis=(1, 3))).sum() - (self.a * self.b).sum()
        _, dist, _ = self._cells(layout)
        longest = float(dist.max(initial=0.0))
        return (float(moved / weight) if weight > 0 and longest > 0 else 0.0), longest

    def _cells(self, layout: topology.Layout) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(used, longest hops, crossing hops) for every pair of cells, the blocks that lie in one tile and one wafer.

        The longest distance from a sender in cell p to a receiver in cell q is the largest of
        max_p(±r ± c) − min_q(±r ± c) over the senders (a > 0) and receivers (b > 0); a pair is used when that is
        positive (distance 0 is a node to itself) and p, q share a tile.
        """
        (R, C), (tr, tc) = self.shape, self._tiles()
        cr, cc = math.gcd(tr, layout.rows), math.gcd(tc, layout.cols)
        r, c = np.divmod(np.arange(self.n), C)
        cell, k = (r // cr) * (C // cc) + c // cc, (R // cr) * (C // cc)
        dist = np.full((k, k), -INF)
        for sign in (1, -1):
            x = r + sign * c
            hi_a, lo_b = _extreme(np.maximum, x, cell, self.a > 0, k), _extreme(np.minimum, x, cell, self.b > 0, k)
            hi_b, lo_a = _extreme(np.maximum, x, cell, self.b > 0, k), _extreme(np.minimum, x, cell, self.a > 0, k)
            dist = np.maximum(dist, np.maximum(hi_a[:, None] - lo_b[None, :], hi_b[None, :] - lo_a[:, None]))
        centre = np.arange(k)
        ci, cj = np.divmod(centre, C // cc)
        tile = (ci * cr // tr) * (C // tc) + cj * cc // tc
        wr, wc = ci * cr // layout.rows, cj * cc // layout.cols
        cross = np.abs(wr[:, None] - wr[None, :]) + np.abs(wc[:, None] - wc[None, :])
        used = (dist > 0) & np.isfinite(dist) & (tile[:, None] == tile[None, :])
        return used, np.where(used, dist, 0.0), cross

    def profile(self, layout: topology.Layout) -> np.ndarray:
        """Pareto-maximal (on-wafer hops, crossing hops) of the transfers, over pairs of cells."""
        used, dist, cross = self._cells(layout)
        return topology.latency_profile(used, dist - cross, cross)


def _extreme(fn, x: np.ndarray, cell: np.ndarray, mask: np.ndarray, k: int) -> np.ndarray:
    """fn (np.maximum or np.minimum) of x over the masked nodes of every cell (∓inf for a cell without any)."""
    out = np.full(k, -INF if fn is np.maximum else INF)
    fn.at(out, cell[mask], x[mask])
    return out


@dataclass(frozen=True, eq=False)
class Dense:
    """The N×N matrix: the general path, every quantity computed as the model always has."""

    t: np.ndarray

    @property
    def n(self) -> int:
        return self.t.shape[0]

    @property
    def T(self) -> Dense:
        """The transposed matrix (contiguous, as the general path always summed it)."""
        return Dense(self.t.T.copy())

    def dense(self) -> np.ndarray:
        return self.t

    def loads(self, layout: topology.Layout, routing: str = "xy") -> mesh.LinkLoads:
        """Exact XY (or YX, `reverse`) loads by prefix sums over the matrix."""
        return (mesh.yx_link_loads if routing == "reverse" else mesh.xy_link_loads)(*layout.grid, self.t)

    def ports(self) -> tuple[np.ndarray, np.ndarray]:
        diag = np.diag(self.t)
        return self.t.sum(axis=1) - diag, self.t.sum(axis=0) - diag

    def received(self) -> np.ndarray:
        return self.t.sum(axis=0)

    def hop_stats(self, layout: topology.Layout) -> tuple[float, float]:
        on, cross = hop_split(layout)
        hops = on + cross
        moving = self.t * (hops > 0)
        mean = float((moving * hops).sum() / moving.sum()) if moving.sum() > 0 else 0.0
        return mean, float(hops[moving > 0].max(initial=0))

    def profile(self, layout: topology.Layout) -> np.ndarray:
        on, cross = hop_split(layout)
        return topology.latency_profile((self.t > 0) & ~np.eye(self.n, dtype=bool), on, cross)

    def between(self, layout: topology.Layout) -> np.ndarray:
        """Bytes from every scale-up domain to every other (domains × domains; a switch keeps its matrices)."""
        member = np.eye(layout.domains)[layout.wafer_of()]   # (N, domains) one-hot
        return member.T @ self.t @ member


@functools.lru_cache(maxsize=8)
def hop_split(layout: topology.Layout) -> tuple[np.ndarray, np.ndarray]:
    """The layout's N×N (on-wafer, crossing) hop matrices, for the general path (cached: they are large)."""
    return layout.hop_split()


def total(parts: list, n: int):
    """The sum of a phase's step patterns (of one kind): the transfers of all, or the matrices added in order."""
    if not parts:
        return Transfers.empty(n)
    if len(parts) == 1:
        return parts[0]
    if all(isinstance(p, Transfers) for p in parts):
        return Transfers(n, *(np.concatenate([getattr(p, f) for p in parts]) for f in ("src", "dst", "vol")))
    if all(isinstance(p, Dense) for p in parts):
        return Dense(sum((p.t for p in parts), np.zeros((n, n))))
    raise TypeError("a phase's steps must be patterns of one kind")
