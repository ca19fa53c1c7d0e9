"""The busiest node's expert load over a step's random routing: the expected maximum of the nodes' token copies.

A step's T tokens each pick k distinct experts; node n's copies X_n add up, over the tokens, the copies its experts
receive (a replicated expert's token goes to one of its hosts, with the balancer's split as the odds). The expert
stage waits for the busiest node, so its pace is E[max_n X_n], not the hottest node's expected share max_n E[X_n]:
at 1 token per device the routing's noise adds to the skew (DeepSeek-V3 on one 8×8 wafer, Zipf 0.4: 2.41× the
mean, not 2.12×; with replication 1.90×, not 1.01×; a Monte-Carlo of top-8 routing: 2.41× and 1.91×). As T grows,
E[max]/mean tends to the share's max/mean.

Each X_n is taken as a binomial that has its mean and variance: a token gives node n a copy of expert e with
probability q_e = k·share_e·split_en, so E[X_n] = T·Σq and Var X_n = T·Σq(1 − q) (each expert picked by itself:
exact for a node of one expert, and within the Monte-Carlo noise for DeepSeek-V3's four); the binomial with
p = Σq²/Σq and T·Σq/p trials matches both. The nodes are taken independent, P(max ≤ x) = Π_n P(X_n ≤ x): their
only coupling is that a token's k picks are distinct and a copy goes to one host, a negative correlation that
lowers the maximum by less than the sampling noise of 4,000 Monte-Carlo steps (tests/test_routing_max.py:
top-k routing simulated token by token against this sum). E[max] = Σ_x (1 − Π_n P(X_n ≤ x)).
"""

from __future__ import annotations

import hashlib

import numpy as np

GRID = 160      # most CDF points per (structure, copies) pair: one per integer while the spread is narrower; wider,
                # bins of h integers each read at their middle (h ≤ 17σ/160: within 1e-4 of the mean at 2¹⁶ copies)
MEMO = 1 << 17   # (structure, copies, k) results kept: a sweep re-evaluated under other bandwidths or latencies
                 # (validate's perturbations, tuning) routes the same tokens over the same nodes
TAIL = 8.0      # standard deviations (plus as many copies, for small means' skewed tails) past which a node's CDF
                # is taken as 0 (below) or 1 (above): below 1e-13


def pick_scales(weights: np.ndarray, shares: np.ndarray, top_k: int) -> tuple[np.ndarray, np.ndarray] | None:
    """Per node d, (Σ_e α_e·split_ed, Σ_e (α_e·split_ed)²) over Σ_e share_e·split_ed (`pick_covariance`'s α; 0 on
    a node receiving nothing): the factors on the dispatch's transfers into d that give a link's α terms (None
    where the shares are uniform: a link's spread takes the hypergeometric's closed form)."""
    alpha = pick_covariance(shares, top_k)
    if alpha is None:
        return None
    w = np.asarray(weights, float)
    per, pa = w * np.asarray(shares, float)[:, None], w * np.asarray(alpha, float)[:, None]
    load = per.sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(load > 0, pa.sum(axis=0) / load, 0.0), np.where(load > 0, (pa ** 2).sum(axis=0) / load, 0.0)


def node_concentration(weights: np.ndarray, shares: np.ndarray) -> np.ndarray:
    """Per node, Σ_e (share_e·split_en)² / Σ_e share_e·split_en: k times it is the probability p of the binomial
    that has a node's mean and variance of copies per token (0 on a node receiving nothing)."""
    per = np.asarray(weights, float) * np.asarray(shares, float)[:, None]
    load = per.sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(load > 0, (per ** 2).sum(axis=0) / load, 0.0)


def pick_covariance(shares: np.ndarray, top_k: int) -> np.ndarray | None:
    """α per expert such that −k²·α_e·α_f is the covariance of a token's picks of experts e ≠ f (None where the
    shares are uniform: there the picks are a hypergeometric draw, whose covariance −π(1 − π)/(E − 1) a link's
    spread takes in closed form, comm._link_spread).

    A token picks k distinct experts, expert e with probability π_e = k·share_e, so its picks' count is k exactly:
    Σ_{f≠e} Cov(I_e, I_f) = −π_e(1 − π_e) for every e. The covariance taken rank one, −a_e·a_f, meets all E of these
    with a_e(Σa − a_e) = π_e(1 − π_e), solved here (a = kα). It is exact at top-1 (a = π) and for uniform shares;
    against the Monte-Carlo's systematic sampling (tests/test_routing_max.py) at Zipf 0.8, top-2 of 6 to top-8 of
    64, a random expert set's count variance comes within 14% of its pieces' Σ π(1 − π) (median 0), where a
    covariance proportional to π_e·π_f missed by up to 52%."""
    shares = np.asarray(shares, float)
    k = max(int(top_k), 1)
    if shares.size < 2 or np.ptp(shares) <= 1e-12 * shares.max(initial=0.0):
        return None
    pi = np.clip(k * shares, 0.0, 1.0)
    v = pi * (1.0 - pi)
    fallback = np.sqrt(max(shares.size - k, 0) / (k * (shares.size - 1.0))) * pi   # the uniform case's form
    if v.sum() <= 0:
        return np.zeros_like(shares)
    a = _rank_one(v)
    good = a is not None and np.allclose(a * (a.sum() - a), v, rtol=1e-6, atol=1e-12)
    return (a if good else fallback) / k


def _rank_one(v: np.ndarray) -> np.ndarray | None:
    """a ≥ 0 with a_e(A − a_e) = v_e, A = Σa: each a_e a root of a² − A·a + v_e, the smaller one but for the
    largest v where its expert holds most of the variance (top-1 with a share above 1/2: a = π there); A by
    bisection on Σ a(A) = A (None where neither branch meets it)."""
    lo0 = 2.0 * np.sqrt(v.max())
    hot = np.argmax(v)

    def excess(A, large):
        root = np.sqrt(np.maximum(A * A - 4.0 * v, 0.0))
        a = (A - root) / 2.0
        if large:
            a[hot] = (A + root[hot]) / 2.0
        return a.sum() - A, a

    for large, sign in ((False, 1.0), (True, -1.0)):   # the small branch's excess falls through 0, the large's rises
        lo, hi = lo0, max(lo0, 2.0 * np.sqrt(v.sum())) * 4.0
        if not sign * excess(lo, large)[0] >= 0 > sign * excess(hi, large)[0]:
            continue
        for _ in range(200):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if sign * excess(mid, large)[0] >= 0 else (lo, mid)
        return excess(0.5 * (lo + hi), large)[1]
    return None


def _groups(load, conc, total=None) -> tuple:
    """A structure's carriers (nodes, links) that take copies, grouped by (share, concentration): (shares,
    concentrations, how many carriers each; the carriers in all). A share is a carrier's load over `total` (None:
    the loads' sum, as for nodes, which receive every copy once). Uniform routing makes one group."""
    load = np.asarray(load, float)
    share = load / (load.sum() if total is None else total)
    live = share > 0
    rows, counts = np.unique(np.stack([share[live], np.asarray(conc, float)[live]], axis=1), axis=0,
                             return_counts=True)
    return rows[:, 0], rows[:, 1], counts, len(share)


def _expected_max(s: np.ndarray, c: np.ndarray, counts: np.ndarray, copies: float, top_k: float) -> float:
    """E[max_n X_n] at `copies` = T·k token copies in the step over node groups (`_groups`; X_n as the module
    says)."""
    from scipy.special import betainc   # scipy only where a step's routing is priced (CLI start stays light)

    p = np.clip(top_k * c, 1e-300, 1.0)
    mu = copies * s
    n = mu / p                       # trials (T tokens × the node's expected copies per token / p)
    sd = np.sqrt(mu * (1.0 - p))
    lo = max(0.0, np.floor((mu - TAIL * sd).max()))          # the hottest node is surely past it
    top = np.minimum(mu + TAIL * sd + TAIL, n)
    hi = np.ceil(top.max())                                   # every node surely below it
    keep = top > lo                                           # the rest are surely below lo: P(X ≤ x) = 1 there
    n, p, counts, top = n[keep], p[keep], counts[keep], top[keep]
    h = max(1.0, np.ceil((hi - lo) / GRID))
    h += 1.0 - h % 2                                          # odd: a bin's middle is an integer
    x = np.floor(lo + h * np.arange(np.ceil((hi - lo) / h) + 1)[:, None] + (h - 1.0) // 2)
    # a node's CDF is read only below its own tail's top (and its trials): past them it is 1 to 1e-13, and the
    # incomplete beta, most of a serving sweep's routing time, is not spent on the ~half of the grid they cover
    x, n, p, top = np.broadcast_arrays(x, n, p, top)
    live = (x < top) & (x < n)
    log_cdf = np.zeros(x.shape)
    with np.errstate(divide="ignore", invalid="ignore"):
        xl, nl = x[live], n[live]
        log_cdf[live] = np.log(betainc(np.maximum(nl - xl, 1e-300), xl + 1.0, 1.0 - p[live]))
        below = np.exp((counts * log_cdf).sum(axis=1))       # P(max ≤ x), nodes independent
    return float(lo + h * (1.0 - below).sum())


def busiest_load(node_load: list, conc: list, which: np.ndarray, copies: np.ndarray, top_k) -> np.ndarray:
    """Expected busiest node's token copies over the mean node's (the expert imbalance) per point.

    `node_load[i]`, `conc[i]`: structure i's copies per node (any unit) and `node_concentration`; `which` each
    point's structure, `copies` its token copies per step (T·k), `top_k` its k. Computed once per unique
    (structure, copies, k); a point with no copies takes the expected share's max/mean (the T → ∞ limit)."""
    nodes = np.asarray([len(np.asarray(x)) for x in node_load], dtype=float)[np.asarray(which)]
    return busiest_fraction(node_load, conc, which, copies, top_k) * nodes


def busiest_carrier(load: list, conc: list, total: list, which: np.ndarray, copies: np.ndarray,
                    top_k) -> np.ndarray:
    """Expected busiest carrier's copies over the hottest carrier's expected copies per point, where carrier j of
    structure i takes load[i][j] / total[i] of a step's copies (a link of the dispatch: the copies whose paths
    cross it) and `conc[i][j]` its binomial's p/k (a port's or NIC's Σ(piece²)/Σ piece over its (source, expert
    copy) shares; a link's from its token owners' counts, comm._link_spread). The
    factor a step's routing puts on a busiest-link term (1 with no copies, the T → ∞ limit, or no load)."""
    hottest = np.asarray([float(np.max(x, initial=0.0)) / t if t > 0 else 0.0 for x, t in zip(load, total)])
    hot = hottest[np.asarray(which)]
    most = busiest_fraction(load, conc, which, copies, top_k, total)
    return np.where(hot > 0, most / np.where(hot > 0, hot, 1.0), 1.0)


def busiest_fraction(load: list, conc: list, which, copies, top_k, total: list | None = None) -> np.ndarray:
    """E[max_j X_j] / copies over structure i's carriers (`_groups`; shares over `total[i]`, None: the loads' sum)
    per point, memoized per unique (structure, copies, k); the expected shares' max where nothing is random (no
    copies, the T → ∞ limit, or one carrier)."""
    which, copies, top_k = np.broadcast_arrays(np.asarray(which), np.asarray(copies, float), np.asarray(top_k, float))
    # distinct (structure, copies, k) rows by a 1-D unique of each column and of their combined codes: a sort of
    # rows (np.unique's axis=0) took 4 s over a serving sweep's 10⁶ candidate points
    codes, width = np.zeros(which.size, dtype=np.int64), 1
    columns = []
    for col in (which.ravel(), copies.ravel(), top_k.ravel()):
        values, at = np.unique(col, return_inverse=True)
        codes, width = codes + at.ravel() * width, width * len(values)
        columns.append(values[at.ravel()])
    first, inv = np.unique(codes, return_index=True, return_inverse=True)[1:]
    keys = np.stack([c[first] for c in columns], axis=1)
    out = np.empty(len(keys))
    groups, digests = {}, {}
    for j, (i, m, k) in enumerate(keys):
        i = int(i)
        if i not in digests:
            ld, c = np.ascontiguousarray(load[i], float), np.ascontiguousarray(conc[i], float)
            t = b"" if total is None else np.float64(total[i]).tobytes()
            digests[i] = hashlib.blake2b(ld.tobytes() + c.tobytes() + t, digest_size=16).digest()
        key = (digests[i], float(m), float(k))
        if key not in _memo:
            if i not in groups:
                g = _groups(load[i], conc[i], None if total is None else total[i])
                # structures whose carriers group alike (a link's loads scaled, a second fabric with the same
                # shares: 2,520 distinct of 4,284 in validate's MoEntwine headline) share one result
                groups[i] = (*g, hashlib.blake2b(b"".join(x.tobytes() for x in g[:3]) + np.int64(g[3]).tobytes(),
                                                 digest_size=16).digest())
            s, c, counts, carriers, alike = groups[i]
            if len(_memo) >= MEMO:
                _memo.clear()
            same = (alike, float(m), float(k))
            if same not in _memo:
                random = m > 0 and carriers > 1 and len(s) > 0
                _memo[same] = _expected_max(s, c, counts, m, k) / m if random else float(np.max(s, initial=0.0))
            _memo[key] = _memo[same]
        out[j] = _memo[key]
    return out[inv.ravel()].reshape(which.shape)


def busiest_expert(shares: list, which: np.ndarray, copies: np.ndarray, top_k) -> np.ndarray:
    """Expected token copies of the busiest expert per point where every expert is a region of its own (the PE
    level: SRAM serving's and weight streaming's expert regions): `busiest_load` with one node per expert, whose
    concentration is its share. `shares[i]`: structure i's per-expert shares; `which`, `copies`, `top_k` as there."""
    shares = [np.asarray(s, float) for s in shares]
    return busiest_fraction(shares, shares, which, copies, top_k) * np.asarray(copies, float)


_memo: dict = {}
