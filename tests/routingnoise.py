"""The busiest rank's received copies over the mean rank's in one expert-parallel call, by hand, for the tests
that derive a call's bytes: with routing spread evenly each of EP ranks holds E/EP experts and takes a copy of each
of the T = per_rank·EP tokens' k picks with chance k/E an expert, X ~ Binomial(T·E/EP, k/E) (a rank's mean and
variance), and the call waits for E[max of EP of them] = Σ_x (1 − F(x)^EP) (the approximation
cost/balance/routing.py documents: independent ranks; tests/test_routing_max.py checks it against a Monte-Carlo)."""

from __future__ import annotations

import numpy as np
from scipy.stats import binom


def noise(ep: int, per_rank: float, experts: int = 256, top_k: int = 8, senders: int | None = None) -> float:
    """E[max_n X_n] / E[X] for EP ranks at `per_rank` tokens each (DeepSeek-V3's 256 experts, top-8); `senders`:
    the ranks whose tokens a carrier takes (a rank's port: the other ep − 1; None: all ep, the rank's whole load)."""
    n, p = int(round(per_rank * (ep if senders is None else senders) * experts / ep)), top_k / experts
    cdf = binom.cdf(np.arange(n + 1), n, p)
    return float((1.0 - cdf ** ep).sum()) / (n * p)


def nic_noise(ep: int, per_rank: float, size: int = 8, experts: int = 256, top_k: int = 8) -> float:
    """E[max] / mean of a step's busiest GPU NIC direction (per-copy kernels, fabric/spread.py) over `ep` ranks in
    servers of `size`, routing spread evenly: a rank receives its E/EP experts' copies from the other servers'
    tokens, Binomial(per_rank·(ep − size)·E/EP, k/E); it sends its own tokens' remote copies, mean
    per_rank·k·(ep − size)/ep, with the variance of its local count, per_rank·Σ_local q(1 − q) over its server's
    E·size/EP experts (the smaller of the remote and local pieces' sums), a binomial of that mean and variance
    (p = 1 − variance/mean, non-integer trials: its CDF the regularized incomplete beta function)."""
    from scipy.special import betainc

    q = top_k / experts
    n_in = int(round(per_rank * (ep - size) * experts / ep))
    mean = n_in * q
    local, remote = experts * size / ep, experts - experts * size / ep
    var_out = per_rank * min(local, remote) * q * (1 - q)
    p_out = 1.0 - var_out / mean
    x = np.arange(n_in + 1, dtype=float)
    n_out = mean / p_out
    f_out = np.where(x >= n_out, 1.0, betainc(np.maximum(n_out - x, 1e-300), x + 1.0, 1.0 - p_out))
    return float((1.0 - (binom.cdf(x, n_in, q) * f_out) ** ep).sum()) / mean
