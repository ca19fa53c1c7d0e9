"""Expert-load models and balancers: Zipf or measured popularity, skew calibration, greedy replication, token splits.

Node load = Σ over hosted experts of expert load × the share of its tokens that copy receives (evenly, or by
water-filling that minimises the busiest host); the expert stage runs at the busiest node's pace.
"""

from __future__ import annotations

import functools
import heapq

import numpy as np

from wsemoe.cost.fabric.mapping import ExpertPlacement, Placement, place_experts


def zipf_shares(num_experts: int, s: float, seed: int) -> np.ndarray:
    """Expert popularity ∝ 1 / rank^s, with ranks assigned to experts by a seeded permutation."""
    ranks = np.random.default_rng(seed).permutation(num_experts) + 1
    w = 1.0 / ranks.astype(float) ** s
    return w / w.sum()


def distinct_shares(shares: np.ndarray, top_k: int) -> np.ndarray:
    """Shares of token copies when every token picks `top_k` distinct experts: no expert can take more than 1/k
    of the copies (that is every token). Shares above 1/k are capped there and the excess goes to the others in
    proportion to their shares: inclusion probabilities min(1, c·share) summing to k, those of sampling k distinct
    items with probability proportional to size (Hájek 1964; Sampford 1967). Unchanged when no share exceeds 1/k.
    DeepSeek-V3 (256 experts, k = 8) at Zipf 1: the hottest expert's 0.163 would have taken 1.31 copies a token
    (busiest of 64 dies 11.7x the mean); capped at 1/8, 9.33x."""
    p = np.asarray(shares, dtype=float)
    if top_k <= 1 or p.max() * top_k <= p.sum() * (1.0 + 1e-12):
        return p   # as given (bit for bit): nothing to cap
    p = p / p.sum()
    order = np.argsort(-p, kind="stable")
    incl = np.zeros(len(p))
    for capped in range(1, top_k + 1):   # the `capped` largest take every token; the rest share k − capped
        rest = p[order[capped:]]
        incl[order[:capped]] = 1.0
        left = top_k - capped
        if rest.sum() > 0:
            incl[order[capped:]] = left * rest / rest.sum()
        else:   # fewer experts with any popularity than k: the remaining picks fall evenly on the others
            incl[order[capped:]] = left / max(len(rest), 1)
        if incl[order[capped:]].max(initial=0.0) <= 1.0 + 1e-12:
            break
    return incl / top_k


def zipf_imbalance(s: float, num_experts: int, devices: int, seed: int, top_k: int = 1) -> float:
    """Busiest device over mean expert load under Zipf(s) with the default placement on `devices` devices (shares
    of tokens that pick `top_k` distinct experts)."""
    shares = distinct_shares(zipf_shares(num_experts, s, seed), top_k)
    return imbalance(node_loads(place_experts(num_experts, 1, devices), shares))


@functools.lru_cache(maxsize=256)
def calibrate_zipf(target: float, num_experts: int, devices: int, seed: int, hi: float = 64.0,
                   top_k: int = 1) -> float:
    """The Zipf exponent whose busiest device carries `target` × the mean load on `devices` devices (bisection).

    The imbalance a given popularity shows depends on experts per device: the exponent that puts 2.1× on the
    busiest of 64 dies holding 4 experts each puts 5.6× on the busiest of 256 dies holding one. Raises when no
    exponent in [0, hi] reaches the target (e.g. a target below what an uneven expert count already gives, or
    above what tokens of `top_k` distinct experts allow: no expert takes more than every token).
    """
    lo_val, hi_val = (zipf_imbalance(x, num_experts, devices, seed, top_k) for x in (0.0, hi))
    if not lo_val <= target <= hi_val:
        raise ValueError(f"skew_target {target:g} is outside what Zipf exponents 0…{hi:g} give "
                         f"({lo_val:.3g}…{hi_val:.3g}) for {num_experts} experts on {devices} devices")
    lo = 0.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if zipf_imbalance(mid, num_experts, devices, seed, top_k) < target:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def node_loads(experts: ExpertPlacement, shares: np.ndarray) -> np.ndarray:
    """Share of all token copies each node's experts receive (each copy gets its split of its expert's tokens)."""
    return (experts.weights * shares[:, None]).sum(axis=0)


def _pour(base: np.ndarray, amount: np.ndarray, real: np.ndarray) -> np.ndarray:
    """Water-filling, one row per expert: amounts that raise the lowest real entries of `base` to one common
    level, adding up to `amount` (padding entries, `real` False, receive nothing)."""
    big = np.where(real, base, np.inf)
    order = np.sort(big, axis=1)
    csum = np.cumsum(np.where(np.isfinite(order), order, 0.0), axis=1)
    levels = (amount[:, None] + csum) / np.arange(1, base.shape[1] + 1)
    ok = (levels >= order) & np.isfinite(order)                 # the k lowest can share one level
    k = base.shape[1] - 1 - np.argmax(ok[:, ::-1], axis=1)      # the most hosts that can
    level = levels[np.arange(len(k)), k]
    return np.where(real, np.maximum(level[:, None] - base, 0.0), 0.0)


def _disjoint_classes(host_sets: list) -> list[list[int]]:
    """Greedy colouring: classes of experts no two of which share a host (so one class re-pours at once)."""
    classes, used = [], []
    for i, h in enumerate(host_sets):
        for c, u in zip(classes, used):
            if not u[h].any():
                c.append(i)
                u[h] = True
                break
        else:
            u = np.zeros(max(int(x.max()) for x in host_sets) + 1, dtype=bool)
            u[h] = True
            classes.append([i])
            used.append(u)
    return classes


def water_fill(hosts: np.ndarray, shares: np.ndarray, sweeps: int = 300) -> np.ndarray:
    """Split of every expert's tokens over its copies that minimises the busiest host (E×N, rows sum to 1).

    Starts from the even split and re-pours each replicated expert onto its hosts, lowest first: exact block
    minimisation of Σ load², whose optimum is also the min-max split. Experts that share no host re-pour
    together. A re-pour never raises the busiest of the expert's hosts and leaves every other host alone, so
    the busiest node never gets busier than under the even split, whenever the iteration stops: it stops
    when 20 sweeps lower the busiest node by less than a millionth of the mean load, or after `sweeps`.
    """
    split = hosts / hosts.sum(axis=1, keepdims=True)
    load = (split * shares[:, None]).sum(axis=0)
    multi = [e for e in np.flatnonzero(hosts.sum(axis=1) > 1) if shares[e] > 0]
    if not multi:
        return split
    sets = [np.flatnonzero(hosts[e]) for e in multi]
    width = max(len(h) for h in sets)
    idx = np.array([np.pad(h, (0, width - len(h)), constant_values=h[0]) for h in sets])
    real = np.arange(width)[None, :] < np.array([len(h) for h in sets])[:, None]
    amount = shares[multi]
    classes = [np.asarray(c) for c in _disjoint_classes(sets)]
    peaks = [float(load.max())]
    for sweep in range(sweeps):
        moved = 0.0
        for c in classes:
            e, h, r = np.asarray(multi)[c], idx[c], real[c]
            mine = np.where(r, split[e[:, None], h] * amount[c][:, None], 0.0)
            base = load[h] - mine
            new = _pour(base, amount[c], r)
            moved = max(moved, float(np.abs(new - mine).max()))
            rows = np.broadcast_to(e[:, None], h.shape)[r]
            split[rows, h[r]] = (new / amount[c][:, None])[r]
            load[h[r]] = (base + new)[r]
        peaks.append(float(load.max()))
        if moved <= 1e-9 * float(load.mean()) or (sweep >= 20 and peaks[-21] - peaks[-1] < 1e-6 * float(load.mean())):
            break
    return split


def imbalance(loads: np.ndarray) -> float:
    """Busiest node's load over the mean node load (1 = perfectly balanced)."""
    mean = loads.mean()
    return float(loads.max() / mean) if mean > 0 else 1.0


def replica_counts(shares: np.ndarray, extra: int, max_per_expert: int, policy: str = "hot",
                   start: np.ndarray | None = None) -> np.ndarray:
    """Give up to `extra` replicas, one at a time, to the expert with the largest load per copy (EPLB-style).

    Counting starts from `start`, the copies the default placement already holds (one each when E ≥ N, N/E
    when E < N; None: one each), whose total the spare budget `extra` is counted against. "hot" stops once no
    copy carries more than a mean copy's share of that placement (1/E when E ≥ N, 1/N when E < N): replicas of
    experts that are not hot would only cost memory, HBM reads and migration. "fill" uses every spare slot, as
    EPLB fills its redundant slots, when any copy is hotter than that mean: with one expert per device the
    copies must be small against a device's load for the packing to even out, whatever that costs in reads.
    Counting from one copy when E < N gave back the default's spare copies: 128 experts on 256 dies ended with
    175 copies and 81 empty dies under "hot" (busiest 2.00× the mean where 1.38× was there to take).

    It plans on the experts' expected shares, not on a step's routing, as deployed balancers do: a placement is
    fixed before the steps it serves, which route at random. EPLB "computes a balanced expert replication and
    placement plan based on the estimated expert loads ... A common method is to use moving average of historical
    statistics" (github.com/deepseek-ai/EPLB, README); DeepSeek-V3 detects high-load experts "based on statistics
    collected during the online deployment" and adjusts them periodically (arXiv 2412.19437, §3.4.1); MoEntwine's
    NI-Balancer migrates a placement over several steps, so it too serves steps it was planned before. Its copies
    split an expert's tokens into smaller pieces, which add routing noise, so at a few tokens a step the busiest
    node can end busier (moe_balance_saving_s < 0; tests/test_routing_max.py).
    """
    counts = np.ones(len(shares), dtype=np.int64) if start is None else np.array(start, dtype=np.int64)
    base = 1.0 / counts.sum()
    mean = base if policy == "hot" or (shares / counts).max() <= (1 + 1e-9) * base else 0.0
    heap = [(-s / c, e) for e, (s, c) in enumerate(zip(shares, counts))]
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
                    topology_aware: bool = True, split: str = "water-fill",
                    policy: str = "hot") -> tuple[ExpertPlacement, ExpertPlacement]:
    """(placement before, placement after) balancing; `none` leaves the default round-robin placement.

    `split` says how an expert's tokens divide over its copies after balancing: "water-fill" (the busiest
    host as low as the copies allow) or "even"; `policy` how many replicas (see `replica_counts`).
    """
    E, n = len(shares), placement.num_nodes
    before = place_experts(E, placement.rows, placement.cols)
    if balancer == "none" or spare_slots == 0:
        return before, before
    base_slots = int(before.slots_per_node.max())
    slots = base_slots + spare_slots
    extra = slots * n - int(before.replicas.sum())
    start = before.replicas
    counts = replica_counts(shares, extra, n, policy, start)
    if np.array_equal(counts, start):  # nothing is hot: the default placement stays
        return before, before
    hosts = pack(shares, counts, slots, n, placement.ftd_id if topology_aware else None)
    return before, ExpertPlacement(hosts, water_fill(hosts, shares) if split == "water-fill" else None)
