"""Across servers a prefill or training batch crosses the scale-out network once per server a token reaches, a
decode step once per routed copy (cost/fabric/scaleout.py, the `scale_out_dispatch` reading): the share by hand
from the binomial coefficients, the node model's combine call and the energy model's leaving bytes that follow
from it, and the cases where nothing changes."""

from __future__ import annotations

from math import comb
from types import SimpleNamespace as NS

import numpy as np
from scipy.stats import binom
import pytest
from hypothesis import given, settings, strategies as st

from wsemoe.config import presets
from wsemoe.cost.fabric import scaleout

from routingnoise import nic_noise

DSV3 = NS(num_experts=256, num_experts_per_tok=8)
SERVERS_OF_8 = NS(topology="switch", scale_up_size=8)


def test_the_share_by_hand():
    # 32 GPUs in 4 servers of 8: 64 experts a server; a token reaches a server unless all 8 experts miss its 64
    reached = 1 - comb(192, 8) / comb(256, 8)
    assert scaleout.crossing_share(SERVERS_OF_8, DSV3, "auto", "prefill", 32) == pytest.approx(reached / 2.0)
    assert float(scaleout.miss_probability(256, 64, 8)) == pytest.approx(comb(192, 8) / comb(256, 8))


@pytest.mark.parametrize("mode,phase,expected_one", [
    ("auto", "decode", True), ("auto", "prefill", False), ("auto", "train", False),
    ("per_copy", "prefill", True), ("per_server", "decode", False)])
def test_which_kernel_runs(mode, phase, expected_one):
    share = float(scaleout.crossing_share(SERVERS_OF_8, DSV3, mode, phase, 64))
    assert (share == 1.0) is expected_one and 0.0 < share <= 1.0


def test_nothing_to_deduplicate():
    # one copy a token, one server, a single NVLink domain of 72, or a mesh: every copy crosses (or none does)
    assert scaleout.crossing_share(SERVERS_OF_8, NS(num_experts=256, num_experts_per_tok=1), "per_server", "prefill",
                                   32) == pytest.approx(1.0)
    assert scaleout.crossing_share(SERVERS_OF_8, DSV3, "per_server", "prefill", 8) == 1.0
    assert scaleout.crossing_share(NS(topology="switch", scale_up_size=72), DSV3, "per_server", "prefill", 72) == 1.0
    assert scaleout.crossing_share(NS(topology="mesh"), DSV3, "per_server", "prefill", 64) == 1.0


def test_more_servers_deduplicate_less():
    # spread over more servers, fewer of a token's copies share one: the share rises towards 1 (one copy a server)
    shares = [float(scaleout.crossing_share(SERVERS_OF_8, DSV3, "per_server", "prefill", n)) for n in (16, 32, 64, 256)]
    assert shares == sorted(shares) and shares[-1] < 1.0 and shares[-1] > 0.85


def _prefill(dispatch: str):
    from wsemoe.config.single import parse_sets, point_mapping
    from wsemoe.sweep.chunked import evaluate

    sets = ["hardware.cols=32", "workload.mode=prefill", "workload.B=4", "workload.seq_len=4096", "mapping.tp=1",
            "workload.expert_weight_format=fp8", f"mapping.scale_out_dispatch={dispatch}"]
    return evaluate(point_mapping("h100-sxm", "deepseek-v3", parse_sets(sets), "t")).iloc[0]


def test_the_combine_call_by_hand():
    hw = presets.load_hardware("h100-sxm")
    fixed = hw.alltoall_latency_s + hw.scale_out_latency_s
    # 16,384 tokens a GPU, 8 copies of 7,168 16-bit elements, 3 in 4 to another server (expected 98,304 copies a
    # GPU sends or receives), a step's busiest (fabric/spread.py). Per copy each GPU's own NIC at 1/8 of its server's
    # 400 GB/s: GPU d receives its 8 experts' copies from the 24 GPUs of other servers, Binomial(393,216 × 8, 1/32),
    # and sends its own tokens' remote copies with its local count's variance (routingnoise.nic_noise): the busiest
    # of the 64 directions, 98,946.7 copies; the server's pool (786,432 expected) binds less. Per server a token
    # crosses to each other server it reaches, with chance r: a server receives Binomial(3 × 131,072, r) tokens
    # (355,291.7 expected) and sends its own 131,072 tokens' 3 chances of r alike: the busiest of 8, 355,555.1
    dev = 98304 * nic_noise(32, 16384)
    assert dev == pytest.approx(98946.7, abs=0.1)
    r = 1 - comb(192, 8) / comb(256, 8)
    x = np.arange(393216 + 1)
    server = float((1.0 - binom.cdf(x, 393216, r) ** 8).sum())
    assert server == pytest.approx(355555.1, abs=0.1) and 393216 * r == pytest.approx(355291.7, abs=0.1)
    nic, pooled = 8 * dev * 7168 * 2.0 / hw.scale_out_bw_bytes_per_s, server * 7168 * 2.0 / hw.scale_out_bw_bytes_per_s
    for dispatch, expected in (("per_copy", nic), ("per_server", pooled), ("auto", pooled)):
        assert float(_prefill(dispatch)["moe_combine_s"]) == pytest.approx(fixed + expected, rel=1e-6)


def test_the_energy_models_leaving_bytes_follow():
    """4 H100 servers (32 GPUs), TP 1, prefill: per_server sends a token across InfiniBand once per remote server
    it reaches, per_copy once per remote copy; the bytes between servers (what the network tier prices) follow
    the crossing share, the NVLink paths do not move (NVLink forwards each copy inside the server)."""
    import wsemoe

    def row(d):
        return wsemoe.evaluate({"name": "e", "hardware": {"preset": "h100-sxm", "cols": 32}, "model": "deepseek-v3",
                                "workload": {"mode": "prefill", "B": 4, "seq_len": 4096},
                                "mapping": {"tp": 1, "scale_out_dispatch": d}}).iloc[0]

    c, s = row("per_copy"), row("per_server")
    assert s["dispatch_hop_bytes"] == pytest.approx(c["dispatch_hop_bytes"])
    assert c["dispatch_cross_bytes"] > 0
    assert s["dispatch_cross_bytes"] / c["dispatch_cross_bytes"] == pytest.approx(
        (1 - comb(192, 8) / comb(256, 8)) / 2.0, rel=1e-12)


def test_against_sampled_routing():
    # an independent reference: draw tokens' k distinct experts, count the servers each reaches beyond its own
    rng = np.random.default_rng(7)
    E, k, n, s = 256, 8, 64, 8
    picks = np.argsort(rng.random((100_000, E)), axis=1)[:, :k]     # k distinct experts a token, uniformly
    servers = picks // (E // (n // s))                                # experts spread evenly over the servers
    reached = np.mean([len(set(row)) for row in servers])            # servers a token reaches (own one included)
    share = float(scaleout.crossing_share(SERVERS_OF_8, DSV3, "per_server", "prefill", n))
    assert reached / k == pytest.approx(share, rel=0.01)             # every server alike: the ratio is the share


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 512), st.integers(1, 16), st.sampled_from([1, 2, 4, 8, 16]), st.integers(1, 64))
def test_the_share_is_bounded(E, k, s, servers):
    k = min(k, E)
    n = s * servers
    share = float(scaleout.crossing_share(NS(topology="switch", scale_up_size=s),
                                          NS(num_experts=E, num_experts_per_tok=k), "per_server", "prefill", n))
    e = E * s / n
    # a server reached takes at most min(k, e) of a token's copies, so the share is at least 1/min(k, e), and
    # deduplication never sends more than the copies
    assert 0.0 < share <= 1.0
    if n > s:
        assert share >= 1.0 / max(min(k, e), 1.0) - 1e-12
