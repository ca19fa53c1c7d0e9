"""The busiest node's expert load is the expected maximum over a step's random routing (cost/balance/routing.py),
checked against a hand-derived binomial maximum and a token-by-token Monte-Carlo of top-k routing."""

from math import comb

import numpy as np
import pytest

import wsemoe
from wsemoe.cost import structure
from wsemoe.cost.balance import routing

K, DIES = 8, 64   # DeepSeek-V3's top-8 of 256 experts on one 8 × 8 wafer (MoEntwine's, validate/balance.py)


def _moentwine(balancer: str) -> structure.Structure:
    """The one-wafer NI-Balancer structure: ER, TP 4, Zipf 0.4 (seed 1), 2 spare slots (sweeps/moentwine_balance)."""
    bal = structure.BalanceKey("zipf", 0.4, 1, balancer, 2, top_k=K)
    return structure.build("mesh", 8, 8, 4, "er", None, 0, None, "auto", 256, bal)


def _monte_carlo(s: structure.Structure, tokens: int, steps: int, seed: int = 0) -> tuple[float, float]:
    """(mean, standard error) of the busiest die's copies over the mean die's in `steps` simulated steps: each token
    picks K distinct experts by systematic sampling in a random order (inclusion probability K·share exactly, as
    structure.expert_shares has them), each copy goes to one host with the balancer's split as the odds."""
    c = structure.core(*s.key)
    pi, split = K * c.shares, c.experts.weights
    rng, out = np.random.default_rng(seed), []
    for _ in range(steps):
        order = np.argsort(rng.random((tokens, len(pi))), axis=1)
        upto = np.cumsum(pi[order], axis=1)
        u = rng.random((tokens, 1))
        picked = order[np.floor(upto - u) > np.floor(upto - pi[order] - u)]
        host = (rng.random((len(picked), 1)) > np.cumsum(split[picked], axis=1)).sum(axis=1)
        out.append(np.bincount(host, minlength=DIES).max() / (tokens * K / DIES))
    return float(np.mean(out)), float(np.std(out) / np.sqrt(steps))


def _model(s: structure.Structure, tokens: int) -> float:
    return float(routing.busiest_load([s.node_load], [s.concentration], np.zeros(1, int), tokens * K, K)[0])


def test_uniform_routing_busiest_die_is_the_binomial_maximum():
    """Uniform routing, 4 experts a die, 64 tokens (1 a die): each of the 64 × 4 (token, expert) pairs on a die hits
    with probability 8/256 = 1/32, so a die's copies are Binomial(256, 1/32) (mean 8); the busiest of 64 such dies,
    E[max] = Σ_x (1 − F(x)^64), is 15.18 copies: 1.90× the mean, where the expected share reads 1×."""
    cdf = np.cumsum([comb(256, x) * (1 / 32) ** x * (31 / 32) ** (256 - x) for x in range(257)])
    want = float((1.0 - np.minimum(cdf, 1.0) ** DIES).sum()) / 8.0
    assert want == pytest.approx(1.8975, abs=1e-4)
    s = structure.build("mesh", 8, 8, 4, "er", None, 0, None, "auto", 256)
    assert s.expert_imbalance == 1.0
    assert _model(s, 64) == pytest.approx(want, rel=1e-6)


@pytest.mark.parametrize("balancer, share, one, many", [("none", 2.1154, 2.41, 2.1154), ("replicate", 1.0057, 1.91, 1.057)])
def test_moentwine_wafer_busiest_die_over_random_routing(balancer, share, one, many):
    """MoEntwine's wafer: the expected shares put the busiest die at 2.12× the mean without a balancer and 1.01× with
    replication. Over a step's routing the busiest die is busier: at 1 token a die (64 tokens) 2.41× and 1.91×, at
    256 (16,384 tokens) 2.12× (the hot die is 8σ clear of every other: its mean is the max) and 1.06× (Monte-Carlo
    of top-8 routing, 4,000 and 12 steps; the model's binomials with independent dies agree within 1% and 3σ)."""
    s = _moentwine(balancer)
    assert s.expert_imbalance == pytest.approx(share, abs=1e-4)
    for tokens, steps, want in ((64, 4000, one), (16384, 12, many)):
        mc, err = _monte_carlo(s, tokens, steps)
        assert mc == pytest.approx(want, abs=0.01)
        model = _model(s, tokens)
        assert model == pytest.approx(mc, rel=0.01) and abs(model - mc) < 3 * err + 2e-3
    assert _model(s, 1 << 30) == pytest.approx(share, rel=1e-3)   # many tokens: the expected share's max


def test_imbalance_falls_with_tokens_to_the_expected_share():
    """More tokens a step average the routing's noise out: the busiest die's load over the mean falls with T, to the
    expected share's max/mean, never below it."""
    s = _moentwine("replicate")
    imb = routing.busiest_load([s.node_load], [s.concentration], np.zeros(15, int), K * 2.0 ** np.arange(15), K)
    assert np.all(np.diff(imb) < 0) and imb[-1] >= s.expert_imbalance


def test_the_sweep_charges_the_busiest_die_of_its_step():
    """The evaluated columns: at 1 token a die (B = 4 a TP-4 group, 16 groups) `expert_imbalance` is the expected
    maximum (2.41×), not the share's 2.12×; before the balancer too (`imbalance_before`)."""
    cfg = {"name": "emax", "hardware": "wsc-b200-8x8", "model": "deepseek-v3",
           "workload": {"mode": "decode", "seq_len": 4096, "B": 4},
           "mapping": {"tp": 4, "strategy": "er"},
           "balance": {"distribution": "zipf", "zipf_s": 0.4, "seed": 1, "spare_slots": 2},
           "axes": {"balance.balancer": ["none", "replicate"]}}
    df = wsemoe.evaluate(cfg).set_index("balance.balancer")
    assert df.loc["none", "expert_imbalance"] == pytest.approx(_model(_moentwine("none"), 64), rel=1e-9)
    assert df.loc["none", "expert_imbalance"] == pytest.approx(2.408, abs=1e-3)
    assert df.loc["replicate", "expert_imbalance"] == pytest.approx(1.903, abs=1e-3)
    assert df.loc["replicate", "imbalance_before"] == pytest.approx(2.408, abs=1e-3)


def test_copies_that_split_an_experts_tokens_add_routing_noise_so_a_balancer_can_cost_a_little():
    """Twelve dies with equal expected loads: one copy per expert (each die's share made of whole experts, 1/256
    each) against every expert split over two copies (1/512 each). The pieces are smaller, so a die's count is
    nearer a Poisson one, q(1 − q) summed over more, smaller q: its variance is higher and a step's busiest die busier
    at few tokens. The same expected shares meet in the limit of many tokens. So a replicating balancer planned on
    expected shares can leave the busiest node busier at a few tokens a step: `moe_balance_saving_s` is a
    difference, negative there (found by the random-config invariants, hypothesis seed 3), and the invariants'
    non-negative law skips it (sweep.columns.DIFFERENCES)."""
    from wsemoe.sweep.columns import DIFFERENCES

    load = [np.full(12, 1.0)]
    whole, split = [np.full(12, 1 / 256)], [np.full(12, 1 / 512)]
    few = np.array([0])   # every point reads structure 0
    one = routing.busiest_load(load, whole, few, np.array([8.0 * 12]), 8)[0]
    two = routing.busiest_load(load, split, few, np.array([8.0 * 12]), 8)[0]
    assert two > one > 1.0
    far = [routing.busiest_load(load, c, few, np.array([8.0 * 12 * 4096]), 8)[0] for c in (whole, split)]
    assert far[0] == pytest.approx(far[1], rel=2e-3) and far[0] < 1.02
    assert "moe_balance_saving_s" in DIFFERENCES


def test_structures_whose_carriers_group_alike_share_one_expected_maximum(monkeypatch):
    """The expected maximum depends only on the carriers' groups (shares, concentrations, counts): a structure
    whose loads are another's scaled (the same shares) reuses its result, and gets exactly the same value."""
    calls = []
    real = routing._expected_max
    monkeypatch.setattr(routing, "_expected_max", lambda *a: calls.append(a) or real(*a))
    routing._memo.clear()
    load = np.array([3.0, 1.0, 1.0, 1.0, 2.0, 0.0])
    conc = np.array([0.5, 0.25, 0.25, 0.25, 0.5, 0.0])
    twice = routing.busiest_fraction([load, 2.0 * load], [conc, conc], np.array([0, 1]), 64.0, 8.0)
    assert len(calls) == 1
    assert twice[0] == twice[1]
    routing._memo.clear()
    assert routing.busiest_fraction([load], [conc], np.array([0]), 64.0, 8.0)[0] == twice[0]
