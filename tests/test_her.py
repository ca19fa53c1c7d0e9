"""Hierarchical ER and the collective schedules: what moves in each step, against closed forms and the flat ring."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st

import wsemoe
from wsemoe.cost.fabric import collectives, topology, mapping as mp, mesh, traffic
from wsemoe.cost import structure


def _bytes_per_member(steps, n) -> np.ndarray:
    """Bytes each node injects over all steps (per unit of one member's message)."""
    total = sum((s.traffic for s in steps), np.zeros((n, n)))
    return total.sum(axis=1) - np.diag(total)


@settings(max_examples=30, deadline=None)
@given(rw=st.sampled_from([2, 4, 8]), cw=st.sampled_from([2, 4, 8]), wr=st.integers(1, 3), wc=st.integers(1, 3),
       log_tp=st.integers(0, 4), dirs=st.sampled_from([1, 2]))
def test_her_reduce_scatter_and_all_gather_move_an_all_reduce_plus_the_replication(rw, cw, wr, wc, log_tp, dirs):
    tp = 2 ** log_tp
    if (rw * cw) % tp:
        return
    pl = mp.place_her(rw, cw, (wr, wc), tp)
    w, t, n = wr * wc, tp, pl.num_nodes
    ring_ar = collectives.ring_traffic(pl.rings, 2.0 * (t - 1) / t, n, dirs) if t > 1 else np.zeros((n, n))
    # slice flow: on-wafer reduce-scatter + all-gather are exactly the ring all-reduce of each wafer's groups
    slc = collectives.attention_steps(pl, "slice", dirs)
    on_wafer = slc[0].traffic + slc[-1].traffic if t > 1 else np.zeros((n, n))  # [RS, cross-wafer AG, home AG]
    assert len(slc) == 2 * (t > 1) + (w > 1)
    np.testing.assert_allclose(on_wafer, ring_ar, rtol=1e-12, atol=1e-12)
    # replicated flow: an all-reduce's 2(t−1)/t per member, plus (W−1) whole messages of replication
    rep = collectives.attention_steps(pl, "replicated", dirs)
    np.testing.assert_allclose(_bytes_per_member(rep, n), 2.0 * (t - 1) / t + (w - 1), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(_bytes_per_member(slc, n), 2.0 * (t - 1) / t + (w - 1) / t, rtol=1e-12, atol=1e-12)
    # the output reduction mirrors the forward collective (replicated) or returns the slices home (slice)
    back = collectives.reduce_steps(pl, "replicated", dirs)
    total = lambda steps: sum((s.traffic for s in steps), np.zeros((n, n)))  # noqa: E731
    np.testing.assert_allclose(total(back), total(rep).T, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(_bytes_per_member(collectives.reduce_steps(pl, "slice", dirs), n), (w - 1) / t,
                               rtol=1e-12, atol=1e-12)


def test_her_on_one_wafer_is_flat_er():
    er, her = mp.place_er(8, 8, 4), mp.place_her(8, 8, (1, 1), 4)
    assert np.array_equal(er.rings, her.rings) and np.array_equal(er.group_of, her.group_of)
    for flow in ("replicated", "slice"):
        for a, b in zip(collectives.attention_steps(er, flow), collectives.attention_steps(her, flow)):
            assert np.array_equal(a.traffic, b.traffic) and a.rounds == b.rounds
    flat = collectives.ring_traffic(er.rings, 2 * 3 / 4, 64)
    np.testing.assert_allclose(sum(s.traffic for s in collectives.attention_steps(er, "replicated")), flat)
    cfg = {"name": "h", "hardware": "wsc-b200-8x8", "model": "deepseek-v3",
           "workload": {"mode": "decode", "seq_len": 4096, "B": 64}, "mapping": {"tp": 4},
           "axes": {"mapping.strategy": ["er", "her"], "mapping.token_source": ["auto", "slice"]}}
    df = wsemoe.evaluate(cfg)
    a, b = df[df["mapping.strategy"] == "er"], df[df["mapping.strategy"] == "her"]
    num = [c for c in df.columns if df[c].dtype.kind in "fi" and not c.startswith(("dense_allreduce", "dense_layer_allreduce"))]  # HER's own
    pd.testing.assert_frame_equal(a[num].reset_index(drop=True), b[num].reset_index(drop=True), rtol=1e-12)


@pytest.mark.parametrize("strategy", ["block", "er"])
@pytest.mark.parametrize("tp", [4, 8, 16])
def test_bidirectional_rings_halve_the_busiest_link(strategy, tp):
    pl = mp.place_groups(strategy, 8, 8, tp)
    one, two = (mesh.xy_link_loads(8, 8, collectives.ring_traffic(pl.rings, 1.0, 64, d)).max_link() for d in (1, 2))
    assert two == pytest.approx(one / 2, rel=1e-12)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), tp=st.sampled_from([2, 4, 8, 16]))
def test_bidirectional_rings_are_half_of_each_way_round(seed, tp):
    """On rings whose neighbours do not share a row or column the reverse XY path uses other links: a link may
    then carry more than half (even more than one way round did). What holds: each link carries half of its
    one-way load plus half of the reverse ring's, so the busiest link never drops below half."""
    pl = mp.place_random(8, 8, tp, seed)
    fwd = collectives.ring_traffic(pl.rings, 1.0, 64)
    one, rev, two = (mesh.xy_link_loads(8, 8, t).all_links() for t in (fwd, fwd.T, collectives.ring_traffic(pl.rings, 1.0, 64, 2)))
    np.testing.assert_allclose(two, 0.5 * one + 0.5 * rev, rtol=1e-12, atol=1e-12)
    assert two.max() >= one.max() / 2 - 1e-12


def test_bidirectional_rings_halve_the_all_reduce_volume_in_a_sweep():
    cfg = {"name": "b", "hardware": "wsc-b200-8x8", "model": "deepseek-v3",
           "workload": {"mode": "decode", "seq_len": 4096, "B": 512}, "mapping": {"tp": 8, "strategy": "er"},
           "axes": {"mapping.ring_directions": [1, 2]}}
    one, two = wsemoe.evaluate(cfg).itertuples()
    assert two.allreduce_max_link_bytes == pytest.approx(one.allreduce_max_link_bytes / 2)
    assert two.attention_allreduce_s < one.attention_allreduce_s


@pytest.mark.parametrize("source", ["auto", "nearest"])
def test_her_dispatch_sources_tokens_on_the_experts_own_wafer(source):
    s = structure.build("mesh", 8, 8, 4, "her", None, 0, None, source, 256, wafers=(2, 2))
    src, dst = np.nonzero(structure.phase_traffic(s, "dispatch"))
    wafer = s.layout.wafer_of()
    assert np.all(wafer[src] == wafer[dst])
    if source == "auto":   # inside the expert's FTD tile, too
        assert np.all(s.placement.ftd_id[src] == s.placement.ftd_id[dst])


def test_slice_flow_splits_tokens_evenly_and_needs_no_output_reduction():
    pl = mp.place_her(8, 8, (2, 2), 4)
    experts = mp.place_experts(256, 16, 16)
    t = traffic.slice_dispatch(pl, experts, None, (8, 8))
    wafer = topology.Layout("mesh", 8, 8, (2, 2)).wafer_of()
    assert np.all(t[wafer[:, None] != wafer[None, :]] == 0)
    # every group's copies (one unit per group, 64 groups) arrive: each node receives its expert's share
    np.testing.assert_allclose(t.sum(axis=0), 64 / 256)
    cfg = {"name": "r", "hardware": "wsc-b200-8x8", "model": "deepseek-v3",
           "workload": {"mode": "decode", "seq_len": 4096, "B": 64}, "mapping": {"tp": 4},
           "axes": {"mapping.strategy": ["block", "er"], "mapping.token_source": ["auto", "slice"]}}
    df = wsemoe.evaluate(cfg)
    rep, slc = df[df["token_flow"] == "replicated"], df[df["token_flow"] == "slice"]
    assert (slc["moe_reduce_s"] == 0).all()
    np.testing.assert_allclose(rep["moe_reduce_s"], rep["attention_allreduce_s"], rtol=1e-12)  # G = 1: same bytes


def test_her_dense_layers_all_reduce_on_their_home_wafer_only():
    cfg = {"name": "d", "hardware": "wsc-b200-4x8x8", "model": "deepseek-v3",
           "workload": {"mode": "decode", "seq_len": 4096, "tokens_per_device": 8}, "mapping": {"tp": 4},
           "axes": {"mapping.strategy": ["er", "her"]}}
    df = wsemoe.evaluate(cfg).set_index("mapping.strategy")
    her = structure.build("mesh", 8, 8, 4, "her", None, 0, None, "auto", 256, wafers=(2, 2))
    home = collectives.ring_traffic(her.placement.rings, 2 * 3 / 4, 256)
    np.testing.assert_allclose(structure.phase_traffic(her, "dense_allreduce"), home, rtol=1e-12)
    assert "dense_allreduce_bound" in df.columns and "dense_allreduce" not in structure.build(
        "mesh", 8, 8, 4, "er", None, 0, None, "auto", 256, wafers=(2, 2)).phases
    r = df.loc["her"]
    moe_attn = r["attention_time_s"]   # the MoE layers' attention stage, with the cross-wafer gather
    assert r["dense_layer_time_s"] < moe_attn + r["dense_ffn_time_s"]


@pytest.mark.parametrize("strategy", ["er", "her"])
def test_equally_near_copies_share_the_tokens(strategy):
    # Qwen3-235B (128 experts) on 4 wafers of 8 x 8 dies: each expert has two copies, e and e + 128, at one place
    # of corresponding tiles or wafers, so every group finds both equally near. Sent all to the lower id, half the
    # dies got no tokens under uniform routing (expert imbalance 2.0, ER dispatch 4,194,304 bytes on the busiest
    # link: a group's 64 tokens x top-8 x 4,096 x 2 bytes); split evenly, every die gets its share (1.0) and ER's
    # busiest link carries half, 2,097,152 bytes (an independent hand derivation, walking every XY route).
    # The expert stage waits for the busiest die of the step's routing, not the mean one: each of 4,096 tokens
    # sends a die's copy a token with probability 8/128 × 1/2 = 1/32, so a die's copies are Binomial(4096, 1/32)
    # (mean 128) and the busiest of 256, E[max] = Σ_x (1 − F(x)^256), is 1.254× the mean.
    from wsemoe.config.loader import load_config
    from wsemoe.sweep import engine

    cfg = load_config({"name": "ties", "hardware": "wsc-b200-4x8x8", "model": "qwen3-235b-a22b",
                       "workload": {"mode": "decode", "seq_len": 4096, "tokens_per_device": 16},
                       "mapping": {"tp": 4, "strategy": strategy}})
    cols = engine.evaluate_block(cfg).columns
    x = np.arange(4097)
    logs = [math.lgamma(4097) - math.lgamma(v + 1) - math.lgamma(4097 - v) + v * math.log(1 / 32)
            + (4096 - v) * math.log(31 / 32) for v in x]
    busiest = float((1.0 - np.minimum(np.cumsum(np.exp(logs)), 1.0) ** 256).sum()) / 128
    assert busiest == pytest.approx(1.2544, abs=1e-4)
    assert float(np.asarray(cols["expert_imbalance"])[0]) == pytest.approx(busiest, rel=1e-6)
    if strategy == "er":   # the hottest link's expected bytes; the column is a step's maximum over its routing
        er = structure.build("mesh", 8, 8, 4, "er", None, 0, None, "auto", 128, wafers=(2, 2))
        assert er.phases["dispatch"].max_link * 64 * 8 * 4096 * 2 == pytest.approx(2_097_152, rel=1e-9)
        assert float(np.asarray(cols["dispatch_max_link_bytes"])[0]) > 2_097_152
