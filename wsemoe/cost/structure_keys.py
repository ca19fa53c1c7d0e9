"""What a communication structure is keyed by (cost/structure.py caches one per key): the balance key (how expert
popularity and the balancer are set), the collectives' settings, and the per-expert shares a balance key gives.
Hashable named tuples, so they key the structure caches; numpy only.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from wsemoe.cost.balance import popularity


class BalanceKey(NamedTuple):
    """What the expert placement depends on (hashable: it keys the structure cache)."""

    distribution: str = "uniform"
    zipf_s: float = 1.0
    seed: int = 0
    balancer: str = "none"
    spare_slots: int = 0
    histogram: tuple | None = None  # measured per-expert shares
    skew_target: float | None = None
    skew_devices: int | None = None
    split: str = "water-fill"
    policy: str = "hot"
    top_k: int = 1                  # experts a token picks, all distinct: no share above 1/top_k


UNIFORM = BalanceKey()


class Collectives(NamedTuple):
    """How collectives run: ring directions (1 or 2), combine routing ("xy" or "reverse"), in-switch reduction, and
    whether the slice flow gathers its group's tokens for TP-split shared experts (`gather_shared`)."""

    ring_directions: int = 1
    combine_routing: str = "xy"
    switch_reduction: bool = False
    gather_shared: bool = False


PLAIN = Collectives()


def expert_shares(num_experts: int, bal: BalanceKey, devices: int) -> tuple[np.ndarray, float]:
    """Per-expert share of token copies from the balance key, and the Zipf exponent used (solved for a skew
    target). A token's `bal.top_k` experts are distinct, so no share exceeds 1/top_k (`distinct_shares`)."""
    k = bal.top_k
    if bal.distribution == "zipf":
        s = bal.zipf_s
        if bal.skew_target is not None:
            s = popularity.calibrate_zipf(bal.skew_target, num_experts, bal.skew_devices or devices, bal.seed,
                                          top_k=k)
        return popularity.distinct_shares(popularity.zipf_shares(num_experts, s, bal.seed), k), float(s)
    if bal.distribution == "histogram":
        h = np.asarray(bal.histogram, dtype=float)
        if len(h) != num_experts:
            raise ValueError(f"histogram has {len(h)} experts, the model {num_experts}")
        return popularity.distinct_shares(h / h.sum(), k), float("nan")
    return np.full(num_experts, 1.0 / num_experts), float("nan")
