"""Fabric communication inside the cost model: zero cases, placement (in)dependence, caching, hand case."""

from __future__ import annotations

import numpy as np
import pytest

import wsemoe
from wsemoe.cost import structure


def cfg(hardware="wsc-b200-8x8", model="deepseek-v3", axes=None, **mapping):
    return {"name": "c", "hardware": hardware, "model": model,
            "workload": {"mode": "decode", "seq_len": 4096, "B": 256}, "mapping": mapping, "axes": axes or {}}


def test_single_node_costs_no_communication():
    hw = {"preset": "wsc-b200-8x8", "rows": 1, "cols": 1, "node_memory_bytes": 2.0e+13}
    df = wsemoe.evaluate(cfg(hardware=hw, model="qwen3-30b-a3b"))
    for col in ("attention_allreduce_s", "moe_dispatch_s", "moe_combine_s", "moe_comm_s"):
        assert df[col].iloc[0] == 0.0, col


def test_tp1_has_no_allreduce_and_one_expert_home_per_node():
    df = wsemoe.evaluate(cfg(tp=1))
    assert df["attention_allreduce_s"].iloc[0] == 0.0
    assert df["moe_dispatch_s"].iloc[0] > 0


def test_switch_is_indifferent_to_placement():
    df = wsemoe.evaluate(cfg(hardware="nvl72", tp=8, axes={"mapping.strategy": ["block", "er", "snake", "random"]}))
    for col in ("attention_allreduce_s", "moe_dispatch_s", "moe_combine_s", "step_time_s"):
        assert np.allclose(df[col], df[col].iloc[0]), col


def test_more_link_bandwidth_is_never_slower():
    """Along five link bandwidths, and by the registry's bandwidth invariant (every bandwidth ×2) at each."""
    bws = [2.0e+11, 4.5e+11, 9.0e+11, 1.8e+12, 3.6e+12]
    configs = [{**cfg(tp=4, strategy=s, axes={"hardware.link_bw_bytes_per_s": bws}), "name": s}
               for s in ("block", "er", "random")]
    for c in configs:
        df = wsemoe.evaluate(c)
        assert np.all(np.diff(df["step_time_s"].to_numpy()) <= 1e-15), c["name"]
        assert np.all(np.diff(df["moe_comm_s"].to_numpy()) <= 0)
    report = wsemoe.check_invariants(configs, only=["more_bandwidth_is_never_slower"])
    assert report.ok and all(r.outcome.checked > 0 for r in report.results)


def test_structures_built_once_per_unique_combination():
    structure.clear_cache()
    df = wsemoe.evaluate(cfg(axes={"mapping.strategy": ["block", "er", "snake", "random"],
                                   "mapping.tp": [4, 8, 16], "workload.B": list(range(1, 101))}))
    assert len(df) == 1200
    assert structure.cache_info().misses == 12


def test_hand_derived_two_node_dispatch():
    """1×2 mesh, tp 1, 2 experts (one per node), top-k 1, uniform: each node sends each of its 10 tokens across
    the single link with chance ½, so each direction carries Binomial(10, ½) copies (expected 5) and the step waits
    for the busier: E[max of 2] = Σ_x (1 − F(x)²) = 5.8810 copies (fabric/spread.py); bytes = that × H × 2 B;
    time = bytes / link + 1 hop + the call's software latency (the preset's alltoall_latency_s, 26 µs); combine the
    same, back. `dispatch_max_link_bytes` is those bytes too (it read the expected 5 copies': 20,480 B)."""
    from scipy.stats import binom

    hw = {"preset": "wsc-b200-8x8", "rows": 1, "cols": 2, "port_bw_bytes_per_s": 1.0e+15}
    model = {"preset": "qwen3-30b-a3b", "num_experts": 2, "num_experts_per_tok": 1}
    df = wsemoe.evaluate({"name": "h", "hardware": hw, "model": model,
                          "workload": {"mode": "decode", "seq_len": 128, "B": 10}, "mapping": {"tp": 1}})
    most = float((1.0 - binom.cdf(np.arange(11), 10, 0.5) ** 2).sum())
    assert most == pytest.approx(5.8810, abs=1e-4)
    bytes_ = most * 2048 * 2
    assert df["moe_dispatch_s"].iloc[0] == pytest.approx(bytes_ / 9.0e11 + 2.0e-7 + 2.6e-5)
    assert df["moe_combine_s"].iloc[0] == pytest.approx(bytes_ / 9.0e11 + 2.0e-7 + 2.6e-5)
    assert df["dispatch_max_link_bytes"].iloc[0] == pytest.approx(bytes_)


def test_er_dispatch_stays_in_ftd_and_block_does_not_benefit():
    df = wsemoe.evaluate(cfg(axes={"mapping.strategy": ["block", "er"], "mapping.tp": [4, 16]}))
    er = df[df["mapping.strategy"] == "er"]
    assert (er["dispatch_inter_ftd_share"] == 0).all()
    blk = df[df["mapping.strategy"] == "block"].set_index("mapping.tp")
    assert (er.set_index("mapping.tp")["moe_dispatch_s"] < blk["moe_dispatch_s"]).all()


def test_uniform_experts_on_mesh_are_balanced_and_nvl72_is_not(monkeypatch):
    """The expected shares: 1× on the mesh (4 experts a die), 4 / (256/72) on NVL72 (4 experts on the busiest of 72
    GPUs). The columns charge the busiest over a step's routing (cost/balance/routing.py), above both."""
    built = []
    real = structure.build
    monkeypatch.setattr(structure, "build", lambda *a, **k: built.append(real(*a, **k)) or built[-1])
    mesh = wsemoe.evaluate(cfg(tp=4))
    nvl = wsemoe.evaluate(cfg(hardware="nvl72", tp=4))
    assert [s.expert_imbalance for s in built] == pytest.approx([1.0, 4 / (256 / 72)])
    assert mesh["expert_imbalance"].iloc[0] > 1.0 and nvl["expert_imbalance"].iloc[0] > 4 / (256 / 72)


def test_each_unique_combination_is_looked_up_once_not_once_per_point(monkeypatch):
    """Unset optional fields (skew target, skew devices) must group, not make every point its own key."""
    calls = []
    real = structure.build
    monkeypatch.setattr(structure, "build", lambda *a, **k: calls.append(a) or real(*a, **k))
    df = wsemoe.evaluate(cfg(axes={"mapping.tp": [4, 8], "workload.B": list(range(1, 51))}))
    assert len(df) == 100 and len(calls) == 2
