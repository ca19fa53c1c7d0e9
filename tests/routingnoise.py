"""The busiest rank's received copies over the mean rank's in one expert-parallel call, by hand, for the tests
that derive a call's bytes: with routing spread evenly each of EP ranks holds E/EP experts and takes a copy of each
of the T = per_rank·EP tokens' k picks with chance k/E an expert, X ~ Binomial(T·E/EP, k/E) (a rank's mean and
variance), and the call waits for E[max of EP of them] = Σ_x (1 − F(x)^EP) (the approximation
cost/balance/routing.py documents: independent ranks; tests/test_routing_max.py checks it against a Monte-Carlo)."""

from __future__ import annotations

import numpy as np
from scipy.stats import binom


def noise(ep: int, per_rank: float, experts: int = 256, top_k: int = 8) -> float:
    """E[max_n X_n] / E[X] for EP ranks at `per_rank` tokens each (DeepSeek-V3's 256 experts, top-8)."""
    n, p = int(round(per_rank * experts)), top_k / experts
    cdf = binom.cdf(np.arange(n + 1), n, p)
    return float((1.0 - cdf ** ep).sum()) / (n * p)
