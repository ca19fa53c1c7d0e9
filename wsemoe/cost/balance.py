"""Expert-load models and balancers: Zipf or measured popularity, greedy replication, migration.

Node load = Σ over hosted experts of expert load / replicas (tokens of an expert are split
evenly over its copies); the expert stage runs at the busiest node's pace.
"""

from __future__ import annotations

import heapq

import numpy as np

from wsemoe.cost.mapping import ExpertPlacement, Placement, place_experts


def zipf_shares(num_experts: int, s: float, seed: int) -> np.ndarray:
    """Expert popularity ∝ 1 / rank^s, with ranks assigned to experts by a seeded permutation."""
    ranks = np.random.default_rng(seed).permutation(num_experts) + 1
    w = 1.0 / ranks.astype(float) ** s
    return w / w.sum()


def node_loads(experts: ExpertPlacement, shares: np.ndarray) -> np.ndarray:
    """Share of all token copies each node's experts receive (copies split evenly over replicas)."""
    return (experts.hosts / experts.replicas[:, None] * shares[:, None]).sum(axis=0)


def imbalance(loads: np.ndarray) -> float:
    """Busiest node's load over the mean node load (1 = perfectly balanced)."""
    mean = loads.mean()
    return float(loads.max() / mean) if mean > 0 else 1.0


def replica_counts(shares: np.ndarray, extra: int, max_per_expert: int) -> np.ndarray:
    """Give up to `extra` replicas, one at a time, to the expert with the largest load per copy
    (EPLB-style), stopping once no copy carries more than a mean expert's share: replicas of
    experts that are not hot would only cost memory and migration."""
    counts = np.ones(len(shares), dtype=np.int64)
    mean = 1.0 / len(shares)
    heap = [(-s, e) for e, s in enumerate(shares)]
    heapq.heapify(heap)
    for _ in range(extra):
        while heap:
            neg, e = heapq.heappop(heap)
            if counts[e] < max_per_expert:
                break
        else:
            break
        if -neg <= mean * (1 + 1e-9):
            break
        counts[e] += 1
        heapq.heappush(heap, (-shares[e] / counts[e], e))
    return counts


def pack(shares: np.ndarray, counts: np.ndarray, slots: int, nodes: int,
         ftd_id: np.ndarray | None = None) -> np.ndarray:
    """Place copies (heaviest first) on the least-loaded node with a free slot not holding that expert.

    Longest-processing-time packing minimises the maximum node load greedily. Topology-aware
    (`ftd_id` given): among nodes within 5% of the least load, prefer an FTD tile that has no copy
    of the expert yet, so every tile keeps a nearby copy.
    """
    items = sorted(((shares[e] / counts[e], e) for e in range(len(shares)) for _ in range(counts[e])), reverse=True)
    hosts = np.zeros((len(shares), nodes), dtype=bool)
    load, used = np.zeros(nodes), np.zeros(nodes, dtype=np.int64)
    tiles = None if ftd_id is None or np.all(ftd_id < 0) else ftd_id
    for w, e in items:
        free = (used < slots) & ~hosts[e]
        if not free.any():
            raise ValueError("not enough expert slots for the replicas")
        cand = np.flatnonzero(free)
        if tiles is not None:
            near = cand[load[cand] <= load[cand].min() + 0.05 * max(load.mean(), w)]
            covered = np.isin(tiles[near], tiles[hosts[e]])
            pick = near[~covered][0] if (~covered).any() else near[np.argmin(load[near])]
        else:
            pick = cand[np.lexsort((cand, load[cand]))[0]]
        hosts[e, pick] = True
        load[pick] += w
        used[pick] += 1
    return hosts


def balance_experts(balancer: str, shares: np.ndarray, placement: Placement, spare_slots: int,
                    topology_aware: bool = True) -> tuple[ExpertPlacement, ExpertPlacement]:
    """(placement before, placement after) balancing; `none` leaves the default round-robin placement."""
    E, n = len(shares), placement.num_nodes
    before = place_experts(E, placement.rows, placement.cols)
    if balancer == "none" or spare_slots == 0:
        return before, before
    base_slots = int(before.slots_per_node.max())
    slots = base_slots + spare_slots
    extra = slots * n - int(before.replicas.sum())
    counts = replica_counts(shares, extra, n)
    if counts.max() == 1:  # nothing is hot: the default placement stays
        return before, before
    hosts = pack(shares, counts, slots, n, placement.ftd_id if topology_aware else None)
    return before, ExpertPlacement(hosts)
