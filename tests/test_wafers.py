"""Several wafers as one mesh: link classes against a brute-force walk, the 2×2-of-8×8 = 16×16 identity,
slower wafer links never speed anything up, latency profiles, YX routing, switches of scale-up domains."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import wsemoe
from test_mesh import walk_loads
from wsemoe.cost.fabric import topology, mesh
from wsemoe.cost import structure

GRID = {"preset": "wsc-b200-4x8x8"}
FLAT = {"preset": "wsc-b200-4x8x8", "rows": 16, "cols": 16, "wafers": [1, 1],
        "inter_wafer_link_bw_bytes_per_s": None, "inter_wafer_hop_latency_s": None}


def _cfg(hardware, axes=None, **mapping):
    return {"name": "w", "hardware": hardware, "model": "deepseek-v3",
            "workload": {"mode": "decode", "seq_len": 4096, "overlap": "stage"}, "mapping": mapping,
            "axes": axes or {}}


def _crossing_walk(rw, cw, wafers, traffic):
    """Brute force: walk every packet, then split the links into on-wafer and wafer-crossing ones."""
    R, C = rw * wafers[0], cw * wafers[1]
    east, west, south, north = walk_loads(R, C, traffic)
    ce = (np.arange(C - 1) // cw != np.arange(1, C) // cw)[None, :].repeat(R, 0)
    cs = (np.arange(R - 1) // rw != np.arange(1, R) // rw)[:, None].repeat(C, 1)
    loads = np.concatenate([east.ravel(), west.ravel(), south.ravel(), north.ravel()])
    cross = np.concatenate([ce.ravel(), ce.ravel(), cs.ravel(), cs.ravel()])
    return loads, cross


@st.composite
def wafer_traffic(draw):
    rw, cw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    wafers = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    n = rw * cw * wafers[0] * wafers[1]
    vals = draw(st.lists(st.floats(0, 1e6, allow_nan=False), min_size=n * n, max_size=n * n))
    return rw, cw, wafers, np.array(vals).reshape(n, n)


@settings(max_examples=50, deadline=None)
@given(wafer_traffic(), st.floats(1e9, 1e12), st.floats(1e9, 1e12))
def test_class_peaks_and_per_link_time_match_a_brute_force_walk(case, bw, bw_x):
    rw, cw, wafers, t = case
    layout = topology.Layout("mesh", rw, cw, wafers)
    walked, cross = _crossing_walk(rw, cw, wafers, t)
    loads = mesh.xy_link_loads(*layout.grid, t)
    l0, l1 = topology.class_peaks(layout, loads, t)
    assert l0 == pytest.approx(walked[~cross].max(initial=0), rel=1e-12, abs=1e-6)
    assert l1 == pytest.approx(walked[cross].max(initial=0), rel=1e-12, abs=1e-6)
    brute = (walked / np.where(cross, bw_x, bw)).max(initial=0)   # max over links of load / its bandwidth
    per_link = mesh.phase_time(loads, topology.link_bandwidths(rw, cw, wafers, bw, bw_x), np.inf, 0.0, 0)
    assert per_link.link_s == pytest.approx(brute, rel=1e-12, abs=1e-15)
    assert max(l0 / bw, l1 / bw_x) == pytest.approx(brute, rel=1e-12, abs=1e-15)


@settings(max_examples=40, deadline=None)
@given(wafer_traffic(), st.floats(0, 1e-6), st.floats(0, 1e-6))
def test_latency_profile_is_the_longest_transfer(case, t0, t1):
    rw, cw, wafers, t = case
    layout = topology.Layout("mesh", rw, cw, wafers)
    on, cross = layout.hop_split()
    used = (t > 0) & ~np.eye(layout.nodes, dtype=bool)
    brute = (on * t0 + cross * t1)[used].max(initial=0.0)
    assert topology.profile_latency(topology.latency_profile(used, on, cross), t0, t1) == pytest.approx(brute, abs=1e-18)
    assert np.all(on + cross == mesh.hops_matrix(*layout.grid))


def test_reverse_path_loads_are_the_yx_loads_of_the_transpose():
    rng = np.random.default_rng(7)
    t = rng.random((20, 20)) * (rng.random((20, 20)) < 0.5)
    xy, yx = mesh.xy_link_loads(4, 5, t), mesh.yx_link_loads(4, 5, t.T)
    for a, b in zip((yx.east, yx.west, yx.south, yx.north, yx.inject, yx.eject),
                    (xy.west, xy.east, xy.north, xy.south, xy.eject, xy.inject)):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    # and YX itself against a walker on the transposed mesh
    perm = (np.arange(20) % 5) * 4 + np.arange(20) // 5
    east, west, south, north = walk_loads(5, 4, t[np.ix_(np.argsort(perm), np.argsort(perm))])
    np.testing.assert_allclose(mesh.yx_link_loads(4, 5, t).south, east.T, rtol=1e-12, atol=1e-12)


def test_two_by_two_wafers_of_8x8_equal_one_16x16_mesh_when_wafer_links_match():
    axes = {"mapping.strategy": ["block", "er", "snake", "random"], "mapping.tp": [4, 16],
            "mapping.token_source": ["auto", "slice"], "mapping.ring_directions": [1, 2],
            "workload.tokens_per_device": [1, 64]}
    a, b = wsemoe.evaluate(_cfg(GRID, axes)), wsemoe.evaluate(_cfg(FLAT, axes))
    # times and bytes match; energy does not: a byte crossing a wafer edge is priced off-chip (network tier),
    # one crossing a die edge inside a wafer on the fabric, whatever the two links' bandwidths
    energy = ("energy_", "avg_power_w", "topdown_", "cost_")
    numeric = [c for c in a.columns if a[c].dtype.kind in "fi" and c != "dispatch_inter_wafer_share"
               and not c.endswith(("_cross_bytes", "_hop_bytes")) and not c.startswith("hardware.")
               and not c.startswith(energy)]
    for c in numeric:
        np.testing.assert_allclose(a[c].to_numpy(float), b[c].to_numpy(float), rtol=1e-12, err_msg=c)
    for c in ("bound", "allreduce_bound", "dispatch_bound", "feasible"):
        assert (a[c].astype(str).str.replace("wafer-link", "link") == b[c].astype(str)).all(), c
    assert b["dispatch_inter_wafer_share"].isna().all() and (a["dispatch_inter_wafer_share"] >= 0).all()
    # what crosses a wafer edge is a share of the same byte-hops: none on one mesh
    for phase in ("allreduce", "dispatch", "combine", "reduce"):   # a crossing link is the network's, not the fabric's
        assert (b[f"{phase}_cross_bytes"] == 0).all()
        np.testing.assert_allclose(a[f"{phase}_hop_bytes"] + a[f"{phase}_cross_bytes"], b[f"{phase}_hop_bytes"],
                                   rtol=1e-12, err_msg=phase)
    assert (a["dispatch_cross_bytes"] > 0).any()


@settings(max_examples=12, deadline=None)
@given(strategy=st.sampled_from(["block", "er", "her", "random"]), tp=st.sampled_from([1, 4, 16]),
       source=st.sampled_from(["auto", "slice"]), dirs=st.sampled_from([1, 2]))
def test_slower_wafer_links_never_speed_anything_up(strategy, tp, source, dirs):
    bws = [9.0e11, 6.0e11, 3.0e11, 1.0e11, 2.0e10]
    hw = {"preset": "wsc-b200-4x8x8"}
    df = wsemoe.evaluate(_cfg(hw, {"hardware.inter_wafer_link_bw_bytes_per_s": bws,
                                   "workload.tokens_per_device": [1, 32]},
                              tp=tp, strategy=strategy, token_source=source, ring_directions=dirs))
    for _, sub in df.groupby("workload.tokens_per_device"):
        for col in ("step_time_s", "moe_comm_s", "moe_dispatch_s", "attention_allreduce_s", "moe_reduce_s"):
            assert np.all(np.diff(sub[col].to_numpy()) >= -1e-15), col


def test_wafer_link_binds_when_it_is_slow_and_her_dispatch_stays_on_its_wafer():
    hw = {"preset": "wsc-b200-4x8x8", "inter_wafer_link_bw_bytes_per_s": 1.0e10}
    df = wsemoe.evaluate(_cfg(hw, {"mapping.strategy": ["block", "her"], "workload.tokens_per_device": [64]}, tp=4))
    block, her = (df[df["mapping.strategy"] == s].iloc[0] for s in ("block", "her"))
    assert block["dispatch_bound"] == "wafer-link" and block["dispatch_inter_wafer_share"] > 0
    assert her["dispatch_inter_wafer_share"] == 0.0 and her["dispatch_bound"] != "wafer-link"
    assert her["allreduce_bound"] == "wafer-link"   # its cross-wafer all-gather pays for it instead


def test_switch_domains_hand_case():
    """2 domains of 2 devices, tp 1, 4 experts (one each), top-k 1, uniform: every device sends a quarter of its
    copies to each device; half of them leave the domain, per copy (decode) through the device's own NIC, half its
    domain's. A step's busiest NIC binds (fabric/spread.py): device d receives its expert's copies from the other
    domain's 2,000 tokens, Binomial(2,000, 1/4); it sends its own 1,000 tokens' copies but those its domain's two
    experts take, variance 1,000 × 2 × (1/4)(3/4) (the smaller of its remote and local pieces' sums, here equal),
    the same Binomial(2,000, 1/4): the busiest of 8, E[max] = Σ_x (1 − F(x)⁸) = 527.68 copies (mean 500), at half
    the domain's NICs: 1,055.4 copies' bytes over 100 GB/s (the domain's pool, the busiest of 4 Binomial(4,000, 1/4),
    1,028.2, binds less; the expected load read 1,000). (The dispatch call's software latency is off here, so the
    volume binds; tests/test_physics.py prices it.)"""
    from scipy.stats import binom

    hw = {"preset": "dgx-b200-x32", "cols": 4, "scale_up_size": 2, "scale_out_bw_bytes_per_s": 1.0e11,
          "scale_out_latency_s": 2.0e-6, "hop_latency_s": 5.0e-7, "port_bw_bytes_per_s": 1.0e15,
          "alltoall_latency_s": 0.0}
    model = {"preset": "qwen3-30b-a3b", "num_experts": 4, "num_experts_per_tok": 1}
    df = wsemoe.evaluate({"name": "s", "hardware": hw, "model": model, "mapping": {"tp": 1},
                          "workload": {"mode": "decode", "seq_len": 128, "B": 1000}})
    x = np.arange(4001)
    device = float((1.0 - binom.cdf(x, 2000, 0.25) ** 8).sum())
    pool = float((1.0 - binom.cdf(x, 4000, 0.25) ** 4).sum())
    assert device == pytest.approx(527.68, abs=0.01) and pool == pytest.approx(1028.24, abs=0.01)
    nic = 2 * device * 2048 * 2                             # the busiest device's copies × H bytes of bf16, × 2 devices
    assert nic > pool * 2048 * 2
    assert df["moe_dispatch_s"].iloc[0] == pytest.approx(nic / 1.0e11 + 2.0e-6, rel=1e-9)
    assert df["dispatch_bound"].iloc[0] == "scale-out"


def test_in_switch_reduction_sends_the_message_once():
    """NVL72, TP 8: a ring all-reduce moves 2·7/8 of each message per port, the switch reduction one message,
    in two traversals; either is one collective call (collective_latency_s, 4.5 µs)."""
    cfg = _cfg("nvl72", {"hardware.in_switch_reduction": [False, True]}, tp=8)
    cfg["workload"] = {"mode": "decode", "seq_len": 4096, "B": 64}
    ring, nvls = wsemoe.evaluate(cfg)["attention_allreduce_s"]
    msg = 64 * 7168 * 2
    assert ring == pytest.approx(2 * 7 / 8 * msg / 9.0e11 + 14 * 5.0e-7 + 4.5e-6)
    assert nvls == pytest.approx(msg / 9.0e11 + 2 * 5.0e-7 + 4.5e-6)


def test_four_wafer_structures_cached_once_and_steps_add_up():
    structure.clear_cache()
    s = structure.build("mesh", 8, 8, 4, "her", None, 0, None, "auto", 256, wafers=(2, 2))
    assert structure.cache_info().misses == 1 and s.layout.nodes == 256
    ar = s.phases["allreduce"]
    np.testing.assert_allclose(ar.loads.all_links(), mesh.xy_link_loads(16, 16, structure.phase_traffic(s, "allreduce")).all_links(), rtol=1e-12)
    assert len(ar.steps) == 3   # on-wafer reduce-scatter, cross-wafer all-gather, on-wafer all-gather
    assert ar.max_link >= max(max(st_.max_link, st_.max_cross) for st_ in ar.steps) - 1e-12


def test_combine_on_the_reverse_path_mirrors_dispatch_link_by_link():
    xy = structure.build("mesh", 8, 8, 8, "block", None, 0, None, "auto", 256)
    rev = structure.build("mesh", 8, 8, 8, "block", None, 0, None, "auto", 256,
                          coll=structure.Collectives(1, "reverse"))
    d, c = rev.phases["dispatch"].loads, rev.phases["combine"].loads
    for a, b in ((c.east, d.west), (c.west, d.east), (c.south, d.north), (c.north, d.south)):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    assert rev.phases["combine"].max_link == pytest.approx(xy.phases["dispatch"].max_link)
    df = wsemoe.evaluate(_cfg("wsc-b200-8x8", {"mapping.combine_routing": ["xy", "reverse"]}, tp=8, strategy="block")
                         | {"workload": {"mode": "decode", "seq_len": 4096, "B": 1024}})
    xy_row, rev_row = df.itertuples()
    assert rev_row.moe_combine_s == pytest.approx(rev_row.moe_dispatch_s)
    assert xy_row.combine_max_link_bytes != pytest.approx(rev_row.combine_max_link_bytes)  # XY changes block TP 8
