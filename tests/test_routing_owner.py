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
    owner = s.placement.group_of if s.flow != "slice" else np.arange(s.layout.nodes)
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
    """(mean, variance) of the model's per-link binomial at one token per owner."""
    load, conc = comm._link_spread(s, phase, experts, k)
    owners = float(s.node_load.sum())                     # one unit a group
    tokens = owners                                       # one token an owner
    mu = tokens * k * load / owners
    return mu, mu * (1.0 - k * conc)


@pytest.mark.parametrize("rows, cols, tp, experts, k, zipf", [
    (2, 2, 1, 4, 1, None),   # the hand case: a link beside a sender is Bernoulli(1/2), not Binomial(2, 1/4)
    (2, 3, 1, 6, 2, None),   # top-2 of 6: each owner's count hypergeometric
    (2, 3, 1, 6, 3, None),
    (2, 3, 1, 6, 1, 0.8),    # skewed shares at top-1: a token is one multinomial draw
    (2, 2, 2, 4, 2, None),   # groups of 2 dies: an owner's copies leave from both members
])
@pytest.mark.parametrize("phase", ["dispatch", "combine", "combine_reverse"])
def test_link_binomial_has_the_exact_mean_and_variance_of_a_step(rows, cols, tp, experts, k, zipf, phase):
    bal = structure.BalanceKey("zipf", zipf, 1, "none", 0, top_k=k) if zipf else structure.UNIFORM
    coll = structure.Collectives(1, "reverse" if phase == "combine_reverse" else "xy", False, False)
    s = structure.build("mesh", rows, cols, tp, "er", None, 0, None, "auto", experts, bal, coll=coll)
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
