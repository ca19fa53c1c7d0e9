"""The busiest node's expert reads (weights.busiest_hits): hand cases, an independent Monte-Carlo reference, and
the mean node's reads that energy counts instead."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import wsemoe
from wsemoe.cost.node.weights import busiest_hits


def test_hand_cases():
    # one node: the max is the mean, C·p
    assert busiest_hits(0.3, 256, 1) == pytest.approx(76.8)
    # 8 nodes of one copy each: P(any hit) = 1 − 0.5^8
    assert busiest_hits(0.5, 8, 8) == pytest.approx(1 - 0.5 ** 8)
    # 3 copies on 2 nodes (2 and 1): P(max ≥ 1) + P(max ≥ 2) = (1 − 0.25·0.5) + 0.25
    assert busiest_hits(0.5, 3, 2) == pytest.approx(1.125)
    # a sure hit reads every copy of the fullest node; no token reads none
    assert busiest_hits(1.0, 256, 72) == pytest.approx(4.0) and busiest_hits(0.0, 256, 72) == 0.0


def test_one_token_on_nvl72_against_monte_carlo():
    """DeepSeek-V3 (256 experts, top-8) on 72 GPUs (40 hold 4 experts, 32 hold 3): one token reaches 8 experts; the
    mean GPU reads 8/72 = 0.11 of them, the busiest ~1.28. An independent simulation of the routing (8 distinct experts
    a token, expert e on GPU e mod 72) agrees within its sampling error."""
    rng = np.random.default_rng(7)
    owner = np.arange(256) % 72
    draws = [np.bincount(owner[rng.choice(256, 8, replace=False)], minlength=72).max() for _ in range(20_000)]
    mc = float(np.mean(draws))
    assert busiest_hits(8 / 256, 256, 72) == pytest.approx(mc, abs=0.02)
    # the exact expectation by hand: 40 GPUs hold 4 experts, 32 hold 3, each reached with p = 8/256 on its own;
    # E[max] = Σ_x (1 − P(X4 < x)^40 · P(X3 < x)^32)
    p = 8 / 256
    cdf = lambda s, x: sum(math.comb(s, j) * p ** j * (1 - p) ** (s - j) for j in range(x))   # noqa: E731
    exact = sum(1 - cdf(4, x) ** 40 * cdf(3, x) ** 32 for x in range(1, 5))
    assert busiest_hits(8 / 256, 256, 72) == pytest.approx(exact, rel=1e-12)


@settings(max_examples=60, deadline=None)
@given(p=st.floats(0.0, 1.0), copies=st.integers(1, 512), nodes=st.integers(1, 300))
def test_between_the_mean_and_the_fullest_node(p, copies, nodes):
    got = busiest_hits(p, copies, nodes)
    assert copies * p / nodes - 1e-9 <= got <= math.ceil(copies / nodes) + 1e-9
    assert busiest_hits(min(1.0, p + 0.1), copies, nodes) >= got - 1e-9   # more tokens never read fewer


def test_the_step_waits_for_the_busiest_reads_energy_counts_the_mean():
    """NVL72, DeepSeek-V3 decode, TP 8 (9 groups), B 1 a group: 9 tokens. The MoE stage's HBM term reads the
    busiest GPU's experts (busiest_hits); energy's HBM tier reads every GPU's (C·p), which is what the GPUs read."""
    row = wsemoe.evaluate({"name": "r", "hardware": "nvl72", "model": "deepseek-v3",
                           "workload": {"mode": "decode", "seq_len": 1024, "B": 1}, "mapping": {"tp": 8}}).iloc[0]
    T, expert = 9, 3 * 7168 * 2048 * 2   # bf16 expert weights of one layer
    p = 1 - (1 - 8 / 256) ** T
    # 9 groups on one switch: each member holds only its slice of its group's tokens, so it routes it and runs the
    # whole shared expert on it (stagecost.shared_split): shared expert and router read whole, not an eighth
    shared_router = (3 * 7168 * 2048 + 7168 * 256 + 256) * 2
    assert row["moe_hbm_s"] == pytest.approx((busiest_hits(p, 256, 72) * expert + shared_router) / 8.0e12, rel=1e-9)
    assert busiest_hits(p, 256, 72) > 1.5 * 256 * p / 72   # the busiest reads far more than the mean here
