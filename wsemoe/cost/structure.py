"""Structural communication terms, built once per unique (mesh, mapping, experts) combination.

A Structure holds the per-unit traffic matrices, link loads and their peaks for each phase;
callers scale the peaks by bytes (numpy broadcasting), so a sweep's cost grows with its number
of points, not with points × mesh size. `cache_info()` tells how many patterns were built.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from wsemoe.cost import balance, mesh, traffic
from wsemoe.cost import mapping as mp

@dataclass(frozen=True, eq=False)
class PhasePeaks:
    """Peaks of one phase per unit of its volume (bytes per unit), plus the hop statistics."""

    max_link: float
    max_inject: float
    max_eject: float
    max_hops: float
    mean_hops: float
    idle_share: float
    loads: mesh.LinkLoads | None = field(default=None, repr=False)
    traffic: np.ndarray | None = field(default=None, repr=False)


@dataclass(frozen=True, eq=False)
class Structure:
    """Everything about communication that depends only on structure, not on batch or bandwidth."""

    placement: mp.Placement
    experts: mp.ExpertPlacement
    phases: dict
    ring_step_hops: float      # longest hop distance between ring neighbours (all-reduce latency)
    grad_step_hops: float
    hot_overlap: float         # Jaccard of the hottest links of all-reduce and dispatch
    inter_ftd_share: float     # share of dispatch link load on links crossing FTD tiles (NaN without FTDs)
    node_load: np.ndarray      # token copies each node's experts receive per unit dispatch (local included)
    expert_imbalance: float    # busiest node's expert load over the mean (the expert stage runs at its pace)
    imbalance_before: float    # the same without the balancer's replicas
    slots_max: int             # most expert copies any node holds (memory, weight reads)
    copies_moved: int          # new expert copies the balancer creates (migration)


def _peaks(topology: str, rows: int, cols: int, t: np.ndarray) -> PhasePeaks:
    hops = mesh.hops_matrix(rows, cols)
    send = t.sum(axis=1) - np.diag(t)
    recv = t.sum(axis=0) - np.diag(t)
    moving = t * (hops > 0)
    mean = float((moving * hops).sum() / moving.sum()) if moving.sum() > 0 else 0.0
    if topology == "switch":  # one switch traversal per transfer; no links to load
        return PhasePeaks(0.0, float(send.max(initial=0)), float(recv.max(initial=0)),
                          float(moving.sum() > 0), float(moving.sum() > 0), 0.0, None, t)
    loads = mesh.xy_link_loads(rows, cols, t)
    return PhasePeaks(float(loads.max_link()), float(send.max(initial=0)), float(recv.max(initial=0)),
                      float(mesh.max_hops(rows, cols, t)), mean, mesh.idle_share(loads), loads, t)


def _ring_hops(rings: np.ndarray, hops: np.ndarray) -> float:
    if rings.shape[1] < 2:
        return 0.0
    return float(hops[rings, np.roll(rings, -1, axis=1)].max())


def _inter_ftd_share(placement: mp.Placement, loads: mesh.LinkLoads | None) -> float:
    """Share of load on links whose two ends lie in different FTD tiles."""
    if loads is None or placement.ftd_shape is None:
        return float("nan")
    tile = placement.ftd_id.reshape(placement.rows, placement.cols)
    cross_h = tile[:, :-1] != tile[:, 1:]
    cross_v = tile[:-1, :] != tile[1:, :]
    cross = (loads.east * cross_h).sum() + (loads.west * cross_h).sum() + \
        (loads.south * cross_v).sum() + (loads.north * cross_v).sum()
    total = loads.total()
    return float(cross / total) if total > 0 else 0.0


def switch_dispatch(placement: mp.Placement, experts: mp.ExpertPlacement, expert_load=None) -> np.ndarray:
    """Dispatch on a switch: distance means nothing, so every member sends 1/tp of its group's
    token copies, split evenly over each expert's hosts (per unit token copy of one byte)."""
    n, tp = placement.num_nodes, placement.tp
    share = np.full(experts.num_experts, 1.0 / experts.num_experts) if expert_load is None else np.asarray(expert_load)
    per_host = (experts.hosts / experts.replicas[:, None]) * share[:, None]  # (E, N) share landing on node
    into = per_host.sum(axis=0)                                              # (N,) per unit from one group
    return np.full((n, 1), 1.0 / tp) * into[None, :]


def split_dispatch(placement: mp.Placement, experts: mp.ExpertPlacement, shares: np.ndarray, source: str) -> np.ndarray:
    """Dispatch when a balancer made replicas: an expert's copies share its tokens evenly, each copy
    fed by the sender the token-source policy picks for that host (per unit token copy of one byte)."""
    n = placement.num_nodes
    into = balance.node_loads(experts, shares)                 # (N,) per unit from one group
    sender, _ = traffic.dispatch_senders(placement, source)    # (ng, N)
    out = np.zeros((n, n))
    np.add.at(out, (sender.ravel(), np.tile(np.arange(n), placement.num_groups)), np.tile(into, placement.num_groups))
    return out


class BalanceKey(NamedTuple):
    """What the expert placement depends on (hashable: it keys the structure cache)."""

    distribution: str = "uniform"
    zipf_s: float = 1.0
    seed: int = 0
    balancer: str = "none"
    spare_slots: int = 0
    histogram: tuple | None = None  # measured per-expert shares


UNIFORM = BalanceKey()


def expert_shares(num_experts: int, bal: BalanceKey) -> np.ndarray:
    """Per-expert popularity from the balance key."""
    if bal.distribution == "zipf":
        return balance.zipf_shares(num_experts, bal.zipf_s, bal.seed)
    if bal.distribution == "histogram":
        h = np.asarray(bal.histogram, dtype=float)
        if len(h) != num_experts:
            raise ValueError(f"histogram has {len(h)} experts, the model {num_experts}")
        return h / h.sum()
    return np.full(num_experts, 1.0 / num_experts)




def _migration(topology, rows, cols, before, after) -> tuple[PhasePeaks, int]:
    """Unit traffic (one byte per new copy) of fetching every new replica from its nearest old host."""
    experts, dst = np.nonzero(after.hosts & ~before.hosts)
    hops = mesh.hops_matrix(rows, cols)
    src = np.array([np.flatnonzero(before.hosts[e])[np.argmin(hops[before.hosts[e], d])] for e, d in zip(experts, dst)],
                   dtype=np.int64)
    t = traffic.migration_traffic(src, dst.astype(np.int64), 1.0, rows * cols) if len(dst) else np.zeros((rows * cols,) * 2)
    return _peaks(topology, rows, cols, t), int(len(dst))


@functools.lru_cache(maxsize=512)
def build(topology: str, rows: int, cols: int, tp: int, strategy: str, ftd, seed: int, explicit,
          token_source: str, num_experts: int, bal: BalanceKey = UNIFORM) -> Structure:
    """Placement, unit traffic of every phase, link loads and peaks for one structural combination.

    Units: all-reduce and gradient per byte of each member's message; dispatch and combine per
    token copy of one byte sent by every group (scale by tokens per group × top-k × H × bytes);
    migration per byte of each new expert copy.
    """
    placement = mp.place_groups(strategy, rows, cols, tp, ftd=ftd, seed=seed, explicit=explicit)
    shares = expert_shares(num_experts, bal)
    before, experts = balance.balance_experts(bal.balancer, shares, placement, bal.spare_slots)
    source = token_source if token_source != "auto" else ("ftd" if strategy == "er" else "nearest")
    if topology == "switch":
        first = switch_dispatch(placement, before, shares)
        dispatch = switch_dispatch(placement, experts, shares)
    else:
        first = traffic.dispatch_traffic(placement, before, 1.0, 1, 1.0, shares, source)
        dispatch = first if experts is before else split_dispatch(placement, experts, shares, source)
    mats = {
        "allreduce": traffic.allreduce_ring_traffic(placement, 1.0),
        "dispatch": dispatch,
        "combine": dispatch.T.copy(),
        "gradient": traffic.gradient_traffic(placement, 1.0),
    }
    phases = {k: _peaks(topology, rows, cols, v) for k, v in mats.items()}
    phases["migration"], moved = _migration(topology, rows, cols, before, experts)
    hops = mesh.hops_matrix(rows, cols)
    overlap = 0.0
    if topology == "mesh":
        overlap = mesh.hot_overlap(phases["allreduce"].loads, phases["dispatch"].loads)
    return Structure(
        placement=placement, experts=experts, phases=phases,
        ring_step_hops=_ring_hops(placement.rings, hops) if topology == "mesh" else float(tp > 1),
        grad_step_hops=_ring_hops(placement.rings.T, hops) if topology == "mesh" else float(rows * cols // tp > 1),
        hot_overlap=overlap,
        inter_ftd_share=_inter_ftd_share(placement, phases["dispatch"].loads),
        node_load=dispatch.sum(axis=0),
        expert_imbalance=balance.imbalance(dispatch.sum(axis=0)),
        imbalance_before=balance.imbalance(first.sum(axis=0)),
        slots_max=int(experts.slots_per_node.max()),
        copies_moved=moved,
    )


def cache_info():
    """How many structures were built (misses) and reused (hits)."""
    return build.cache_info()


def clear_cache() -> None:
    """Forget every built structure (benchmarks measure cold builds)."""
    build.cache_clear()
