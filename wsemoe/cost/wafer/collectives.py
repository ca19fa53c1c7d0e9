"""Reductions and broadcasts along one row or column of a PE region: chain, K-level tree and ring, and
what each costs. Scalars or arrays that broadcast (line lengths, message sizes, tree levels); numpy only.

A line of `p` PEs holds `b` wavelets each (the pipeline moves one wavelet per cycle per link and per PE
ramp). A collective's cost is a `Cost`: the wavelets its busiest PE streams, one after another
(`volume`), and the critical path of its first wavelet (`hops`, `turns`, `relays`: see `fabric`). Its
cycles are `volume + path_cycles(hops, turns, relays)`: Luczynski et al.'s model of collectives on the
WSE (HPDC '24; within 4% of measurement on a CS-2), T = max(contention, energy / links) + distance +
(2·T_R + 1)·depth, on one line, where the busiest PE's stream bounds the links.

Patterns (docs/cost-model.md, "The wafer at PE level"):

- `chain` (reduce): every PE adds its part to what arrives and passes it on towards the root at one end;
  p − 1 relay stages of one hop each, the root streams b wavelets (Luczynski's chain).
- `tree` (reduce): `levels` K rounds of two-sided chains. Round k joins groups of `group` members spaced
  group^k apart, each into the member in its middle (the last round joins all that remain); a middle root
  takes both halves one after the other (2b). K = 1 is one two-sided chain, K = 2 is WaferLLM's K-tree
  (MeshGEMV, group = P / group_num) and Luczynski's two-phase reduce, K = ⌈log2 p⌉ a binary tree.
  `group` defaults to ⌈p^(1/K)⌉.
- `ring` (all-reduce only): reduce-scatter then all-gather, 2(p − 1) rounds of ⌈b/p⌉ wavelets on the
  folded ring whose neighbours sit at most two hops apart (WaferLLM's interleaving); one relay per round.
- broadcast: the root's b wavelets multicast along the line (routers copy them, no relay): one relay for
  the ramps, hops to the farthest PE. An all-reduce by chain or tree is the reduce then this broadcast.

The pattern is an input (a modelling choice with its cost); `best_allreduce` picks the cheapest per shape.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from wsemoe.cost.wafer.fabric import path_cycles

PATTERNS = ("chain", "tree", "ring")
MAX_LEVELS = 12  # a tree deeper than this is never cheaper on a line of ≤ 4096 PEs (binary tree: 12 levels)
MAX_GROUP = 64   # groups of more PEs than this are never the best first levels on a wafer's lines (≤ 1170 PEs)


@dataclass(frozen=True)
class Cost:
    """A collective's cost in counts: wavelets the busiest PE streams and the first wavelet's path."""

    volume: np.ndarray | float
    hops: np.ndarray | float
    relays: np.ndarray | float
    turns: np.ndarray | float = 0.0

    def latency(self, pe):
        """Cycles of the critical path (hops, turns, relay stages)."""
        return path_cycles(self.hops, self.turns, self.relays, pe)

    def cycles(self, pe):
        """Cycles of the whole collective: streamed volume plus critical path."""
        return np.asarray(self.volume, dtype=float) + self.latency(pe)

    def __add__(self, other: Cost) -> Cost:
        """The two collectives one after the other."""
        return Cost(np.add(self.volume, other.volume), np.add(self.hops, other.hops),
                    np.add(self.relays, other.relays), np.add(self.turns, other.turns))

    def times(self, k) -> Cost:
        """`k` of these one after the other."""
        k = np.asarray(k, dtype=float)
        return Cost(k * self.volume, k * self.hops, k * self.relays, k * self.turns)


def _active(p, b):
    """Lines that move anything: more than one PE and a non-empty message."""
    return (np.asarray(p, dtype=float) > 1) & (np.asarray(b, dtype=float) > 0)


def default_group(p, levels):
    """⌈p^(1/K)⌉, at least 2: the group size that balances the K rounds of a tree."""
    p, k = np.asarray(p, dtype=float), np.asarray(levels, dtype=float)
    return np.maximum(np.ceil(p ** (1.0 / k) - 1e-9), 2.0)


def chain_reduce(p, b) -> Cost:
    """Reduce to one end: p − 1 stages of one hop and one relay; the stream of b wavelets."""
    p, b = np.asarray(p, dtype=float), np.asarray(b, dtype=float)
    on = _active(p, b)
    return Cost(np.where(on, b, 0.0), np.where(on, p - 1, 0.0), np.where(on, p - 1, 0.0))


def tree_reduce(p, b, levels=2, group=None) -> Cost:
    """Reduce by `levels` rounds of two-sided chains into middle roots (module docstring)."""
    p, b, levels = np.asarray(p, dtype=float), np.asarray(b, dtype=float), np.asarray(levels, dtype=float)
    s = default_group(p, levels) if group is None else np.maximum(np.asarray(group, dtype=float), 2.0)
    volume = hops = relays = np.zeros(np.broadcast_shapes(p.shape, b.shape, levels.shape, s.shape))
    for k in range(int(np.max(levels))):
        spacing = s ** k
        members = np.ceil(p / spacing - 1e-9)
        last = levels == k + 1
        m = np.where(last, members, np.minimum(s, members))
        m = np.where(levels > k, m, 1.0)
        depth = np.floor(m / 2)
        volume = volume + b * np.clip(m - 1, 0, 2)
        hops = hops + depth * spacing
        relays = relays + depth
    on = _active(p, b)
    return Cost(np.where(on, volume, 0.0), np.where(on, hops, 0.0), np.where(on, relays, 0.0))


def broadcast(p, b, root="middle") -> Cost:
    """Multicast b wavelets from the root (`middle` or `end` of the line) to every PE of it."""
    p, b = np.asarray(p, dtype=float), np.asarray(b, dtype=float)
    far = np.floor(p / 2) if root == "middle" else p - 1
    on = _active(p, b)
    return Cost(np.where(on, b, 0.0), np.where(on, far, 0.0), np.where(on, 1.0, 0.0))


def ring_allreduce(p, b) -> Cost:
    """Reduce-scatter and all-gather on the folded ring: 2(p − 1) rounds of ⌈b/p⌉, ≤ 2 hops each."""
    p, b = np.asarray(p, dtype=float), np.asarray(b, dtype=float)
    rounds = 2 * (p - 1)
    on = _active(p, b)
    return Cost(np.where(on, rounds * np.ceil(b / np.maximum(p, 1)), 0.0),
                np.where(on, rounds * np.minimum(2, p - 1), 0.0), np.where(on, rounds, 0.0))


def reduce(p, b, pattern="tree", levels=2, group=None) -> Cost:
    """Reduce b wavelets over a line of p PEs into one root, by `chain` or `tree`."""
    if pattern == "chain":
        return chain_reduce(p, b)
    if pattern == "tree":
        return tree_reduce(p, b, levels, group)
    raise ValueError(f"reduce pattern {pattern!r}: chain or tree")


def allreduce(p, b, pattern="tree", levels=2, group=None) -> Cost:
    """Every PE of the line ends with the sum: `ring`, or a `chain`/`tree` reduce then the broadcast."""
    if pattern == "ring":
        return ring_allreduce(p, b)
    root = "end" if pattern == "chain" else "middle"
    return reduce(p, b, pattern, levels, group) + broadcast(p, b, root)


def best_allreduce(p, b, pe, max_levels=MAX_LEVELS, max_group=MAX_GROUP, patterns=PATTERNS):
    """The cheapest all-reduce per shape: (cycles, pattern index into PATTERNS, tree levels, tree group),
    levels and group 0 for chain and ring.

    Candidates: the chain, the ring, and trees of 1…`max_levels` levels with every group size
    2…`max_group` (the default ⌈p^(1/K)⌉ is not always the best: with relays dearer than hops the first
    levels want smaller groups). Without the ring the best time never falls as the line grows; the ring
    can, since its chunks are whole wavelets (2(p − 1)·⌈b/p⌉ is not monotone in p).
    """
    p, b = np.broadcast_arrays(np.asarray(p, dtype=float), np.asarray(b, dtype=float))
    options = [(pat, 0, 0) for pat in ("chain", "ring") if pat in patterns]
    if "tree" in patterns:
        options += [("tree", 1, 0)] + [("tree", k, g) for k in range(2, max_levels + 1)
                                       for g in range(2, max_group + 1)]
    best = np.full(p.shape, np.inf)
    which = np.zeros(p.shape, dtype=int)
    for i, (pat, k, g) in enumerate(options):
        t = allreduce(p, b, pat, max(k, 1), g or None).cycles(pe) * np.ones(p.shape)
        better = t < best
        best, which = np.where(better, t, best), np.where(better, i, which)
    table = np.array([(PATTERNS.index(pat), k, g) for pat, k, g in options])
    return best, table[which, 0], table[which, 1], table[which, 2]
