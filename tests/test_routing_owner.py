"""A token is one draw of k distinct experts, so the copies it puts on a mesh link are one count, not independent
(sender, expert) pieces (fabric/spread.owner_squares, comm._link_spread): each link's binomial must carry the mean
and the variance of the sum over the step's tokens of those counts. Checked against an exact enumeration of every
token's picks on tiny meshes, the paths walked here hop by hop (XY: along the sender's row, then the column)."""

from itertools import combinations

import numpy as np
import pytest

from wsemoe.cost import comm, structure


def _link_index(rows: int, cols: int):
    """Index in all_links order (east (R, C−1), west, south (R−1, C), north) of the hop a → b."""
    h, v = rows * (cols - 1), (rows - 1) * cols

    def at(a, b):
        (ra, ca), (rb, cb) = divmod(a, cols), divmod(b, cols)
        if ra == rb:
            return ra * (cols - 1) + min(ca, cb) + (0 if cb > ca else h)
        return 2 * h + min(ra, rb) * cols + ca + (0 if rb > ra else v)
    return at, 2 * h + 2 * v


def _xy_links(rows: int, cols: int, s: int, d: int, reverse: bool = False) -> list:
    """Links the XY path s → d crosses (`reverse`: the path d → s routed YX, i.e. XY's path walked back)."""
    at, _ = _link_index(rows, cols)
    (r, c), (rd, cd) = divmod(s, cols), divmod(d, cols)
    nodes = [(r, c)]
    while c != cd:
        c += 1 if cd > c else -1
        nodes.append((r, c))
    while r != rd:
        r += 1 if rd > r else -1
        nodes.append((r, c))
    ids = [a * cols + b for a, b in nodes]
    hops = list(zip(ids, ids[1:]))
    return [at(b, a) for a, b in hops] if reverse else [at(a, b) for a, b in hops]


def _exact(s: structure.Structure, k: int, phase: str) -> tuple[np.ndarray, np.ndarray]:
    """(mean, variance) per link of the copies of one token per owner (group), every k-subset of the experts
    equally likely (uniform shares) or, at k = 1, each expert with its share: enumerated."""
    c = structure.core(*s.key)
    rows, cols = s.layout.rows, s.layout.cols
    t = structure.phase_traffic(s, "dispatch")
    host = np.argmax(c.experts.weights, axis=1)            # every expert has one host here (no balancer)
    assert np.allclose(c.experts.weights.max(axis=1), 1.0)
    shares, E = c.shares, len(c.shares)
    picks = [(p, float(np.prod(shares[list(p)]) / 1.0)) for p in combinations(range(E), k)]
    if k > 1:
        assert np.allclose(shares, 1.0 / E)
        picks = [(p, 1.0 / len(picks)) for p, _ in picks]
    _, n_links = _link_index(rows, cols)
    mean, var = np.zeros(n_links), np.zeros(n_links)
    owner = s.placement.group_of if s.flow != "slice" else np.arange(s.layout.nodes)   # slice: a member's own token
    for g in np.unique(owner):
        members = np.flatnonzero(owner == g)
        ex, ex2 = np.zeros(n_links), np.zeros(n_links)
        for p, prob in picks:
            y = np.zeros(n_links)
            for e in p:
                d = host[e]
                sender = members[np.argmax(t[members, d])]     # the member that sends this group's copies to d
                if phase == "combine":
                    y[_xy_links(rows, cols, d, sender)] += 1    # the output comes back XY from the expert
                else:
                    y[_xy_links(rows, cols, sender, d, phase == "combine_reverse")] += 1
            ex, ex2 = ex + prob * y, ex2 + prob * y ** 2
        mean, var = mean + ex, var + ex2 - ex ** 2
    return mean, var


def _model(s: structure.Structure, k: int, experts: int, phase: str) -> tuple[np.ndarray, np.ndarray]:
    """(mean, variance) of the model's per-link binomial at one token per owner (a member under the slice flow)."""
    load, conc = comm._link_spread(s, phase, experts, k)
    owners = float(s.node_load.sum())                     # one unit a group
    tokens = float(s.layout.nodes) if s.flow == "slice" else owners
    mu = tokens * k * load / owners
    return mu, mu * (1.0 - k * conc)


@pytest.mark.parametrize("rows, cols, tp, experts, k, zipf", [
    (2, 2, 1, 4, 1, None),   # the hand case: a link beside a sender is Bernoulli(1/2), not Binomial(2, 1/4)
    (2, 3, 1, 6, 2, None),   # top-2 of 6: each owner's count hypergeometric
    (2, 3, 1, 6, 3, None),
    (2, 3, 1, 6, 1, 0.8),    # skewed shares at top-1: a token is one multinomial draw
    (2, 2, 2, 4, 2, None),   # groups of 2 dies: an owner's copies leave from both members
    (2, 4, 2, 8, 2, "slice"),  # the slice flow: each member's token is its own (tp 2: half a group's unit)
    (2, 4, 4, 8, 1, "slice"),
])
@pytest.mark.parametrize("phase", ["dispatch", "combine", "combine_reverse"])
def test_link_binomial_has_the_exact_mean_and_variance_of_a_step(rows, cols, tp, experts, k, zipf, phase):
    skew = isinstance(zipf, float)
    bal = structure.BalanceKey("zipf", zipf, 1, "none", 0, top_k=k) if skew else structure.UNIFORM
    coll = structure.Collectives(1, "reverse" if phase == "combine_reverse" else "xy", False, False)
    source = "slice" if zipf == "slice" else "auto"
    s = structure.build("mesh", rows, cols, tp, "er", None, 0, None, source, experts, bal, coll=coll)
    mean, var = _exact(s, k, phase)
    mu, v = _model(s, k, experts, "dispatch" if phase == "dispatch" else "combine")
    np.testing.assert_allclose(mu, mean, atol=1e-12)
    np.testing.assert_allclose(v, var, atol=1e-12)


def test_the_hand_case_link_beside_a_sender_is_one_draw():
    """2 × 2 mesh, top-1 of 4 experts one a die: the east link 0 → 1 carries die 0's token iff it picks die 1 or
    3, Bernoulli(1/2): variance 1/4 (independent pieces read Binomial(2, 1/4): 3/8)."""
    s = structure.build("mesh", 2, 2, 1, "er", None, 0, None, "auto", 4)
    mu, v = _model(s, 1, 4, "dispatch")
    assert mu[0] == pytest.approx(0.5) and v[0] == pytest.approx(0.25)


def _monte_carlo(s: structure.Structure, k: int, steps: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(mean, variance) per link of one token per owner, every token picking k distinct experts by systematic
    sampling in a random order (inclusion probability k·share, as tests/test_routing_max.py simulates)."""
    c = structure.core(*s.key)
    rows, cols = s.layout.rows, s.layout.cols
    t, host, pi = structure.phase_traffic(s, "dispatch"), np.argmax(c.experts.weights, axis=1), k * c.shares
    _, n_links = _link_index(rows, cols)
    rng, mean, var = np.random.default_rng(seed), np.zeros(n_links), np.zeros(n_links)
    for g in np.unique(s.placement.group_of):
        members = np.flatnonzero(s.placement.group_of == g)
        crossed = np.zeros((len(pi), n_links))
        for e, d in enumerate(host):
            crossed[e, _xy_links(rows, cols, members[np.argmax(t[members, d])], d)] = 1.0
        order = np.argsort(rng.random((steps, len(pi))), axis=1)
        upto, u = np.cumsum(pi[order], axis=1), rng.random((steps, 1))
        picked = np.zeros((steps, len(pi)))
        np.put_along_axis(picked, order, (np.floor(upto - u) > np.floor(upto - pi[order] - u)).astype(float), axis=1)
        y = picked @ crossed
        mean, var = mean + y.mean(axis=0), var + y.var(axis=0)
    return mean, var


@pytest.mark.parametrize("tp, k", [(1, 2), (1, 3), (2, 2)])
def test_skewed_top_k_link_variance_matches_a_monte_carlo(tp, k):
    """2 × 4 mesh, 8 experts one a die, Zipf 0.8 (hot expert's π up to 0.6): a token's picks are negatively
    correlated (they number k exactly), the rank-one covariance (routing.pick_covariance) keeps each link's
    variance within 3% of the busiest link's mean of a 40,000-step Monte-Carlo (within 1% at 10⁵ steps); the
    independent pieces overstated it by up to 34%."""
    bal = structure.BalanceKey("zipf", 0.8, 1, "none", 0, top_k=k)
    s = structure.build("mesh", 2, 4, tp, "er", None, 0, None, "auto", 8, bal)
    mean, var = _monte_carlo(s, k, 40_000)
    mu, v = _model(s, k, 8, "dispatch")
    assert np.abs(mu - mean).max() < 0.01 * mean.max()
    assert np.abs(v - var).max() < 0.03 * mean.max()


def test_pick_covariance_meets_every_experts_count():
    """Σ_{f≠e} Cov(I_e, I_f) = −π_e(1 − π_e) (a token's picks number k exactly) for the rank-one α; at top-1 α is
    the share itself (Cov = −π_e·π_f, one multinomial draw); uniform shares have the closed form (None)."""
    from wsemoe.cost.balance import popularity, routing
    shares = popularity.distinct_shares(popularity.zipf_shares(16, 0.8, 1), 4)
    a, pi = 4 * routing.pick_covariance(shares, 4), 4 * shares
    assert np.allclose(a * (a.sum() - a), pi * (1 - pi), rtol=1e-6)
    np.testing.assert_allclose(routing.pick_covariance(shares, 1), shares, rtol=1e-6)
    assert routing.pick_covariance(np.full(8, 1 / 8), 2) is None
