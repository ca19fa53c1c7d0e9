"""Decode-regime options: micro-batch overlap, tokens per device, one HBM term, MLA cache per TP rank, skew
calibration, water-filling over replicas, best-vs-best comparisons, and their one-line errors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import wsemoe
from wsemoe.cost.balance import popularity
from wsemoe.cost.fabric import mapping as mp

BASE = {"mode": "decode", "seq_len": 4096, "overlap": "stage"}


def _cfg(hardware="wsc-b200-8x8", workload=None, axes=None, mapping=None, balance_=None, model="deepseek-v3"):
    out = {"name": "d", "hardware": hardware, "model": model, "workload": {**BASE, **(workload or {})},
           "mapping": mapping or {}, "axes": axes or {}}
    if balance_:
        out["balance"] = balance_
    return out


@settings(max_examples=15, deadline=None)
@given(hardware=st.sampled_from(["wsc-b200-8x8", "wsc-b200-4x8x8", "nvl72", "dgx-b200-x32"]),
       tp=st.sampled_from([1, 2, 4, 8]), strategy=st.sampled_from(["block", "er", "her"]),
       tokens=st.sampled_from([1, 16, 256]), overlap=st.sampled_from(["layer", "stage", "none"]),
       balancer=st.sampled_from(["none", "replicate"]))
def test_microbatch_overlap_is_never_slower(hardware, tp, strategy, tokens, overlap, balancer):
    """Every layer and stage takes max(core, communication) instead of their sum. (With migration the step can
    still lose: see the next test.)"""
    cfg = _cfg(hardware, {"tokens_per_device": tokens, "overlap": overlap},
               {"workload.comm_overlap": ["none", "microbatch"]}, {"tp": tp, "strategy": strategy},
               {"distribution": "zipf", "zipf_s": 0.4, "seed": 1, "balancer": balancer,
                **({"spare_slots": 1} if balancer != "none" else {})})   # slots hold a balancer's replicas only
    none, micro = wsemoe.evaluate(cfg).itertuples()
    for col in ("step_time_s", "moe_layer_time_s", "moe_time_s", "attention_time_s"):
        assert getattr(micro, col) <= getattr(none, col) * (1 + 1e-12), col
    assert micro.mem_kv_node_bytes == pytest.approx(2 * none.mem_kv_node_bytes)   # the second micro-batch's cache


def test_microbatch_overlap_leaves_migration_fewer_idle_links():
    """Interleaved micro-batches keep the links busy while the other computes: less migration hides."""
    cfg = _cfg(workload={"tokens_per_device": 1}, axes={"workload.comm_overlap": ["none", "microbatch"]},
               mapping={"tp": 1}, balance_={"distribution": "zipf", "zipf_s": 0.4, "seed": 1, "spare_slots": 1,
                                           "balancer": "non-invasive", "migration_windows": "all"})
    none, micro = wsemoe.evaluate(cfg).itertuples()
    assert micro.moe_layer_time_s <= none.moe_layer_time_s
    assert micro.migration_exposed_s >= none.migration_exposed_s and micro.migration_total_s == none.migration_total_s


def test_microbatch_layer_time_is_the_larger_of_core_and_communication():
    cfg = _cfg(workload={"B": 256, "overlap": "stage"}, axes={"workload.comm_overlap": ["none", "microbatch"]},
               mapping={"tp": 4, "strategy": "er"})
    none, micro = wsemoe.evaluate(cfg).itertuples()
    comm = none.attention_allreduce_s + none.moe_dispatch_s + none.moe_combine_s + none.moe_reduce_s
    core = none.moe_layer_time_s - comm
    assert micro.moe_layer_time_s == pytest.approx(max(core, comm))


def test_tokens_per_device_sets_the_batch():
    df = wsemoe.evaluate(_cfg("wsc-b200-4x8x8", {"tokens_per_device": 8}, {"mapping.tp": [1, 4, 16]}))
    assert np.allclose(df["tokens_per_device"], 8)
    assert df["attention_batch"].tolist() == [8.0, 32.0, 128.0]
    assert (df["tokens_per_microbatch"] == 8 * 256).all()


def test_resident_weights_and_kv_cache_share_one_hbm_term():
    df = wsemoe.evaluate(_cfg(workload={"B": 64}, mapping={"tp": 4}))
    r = df.iloc[0]
    kv_layer = r["mem_kv_node_bytes"] / 61
    weights = r["attention_hbm_s"] * 8.0e12 - kv_layer
    assert weights > 0 and kv_layer > 0   # both are in the one term, summed rather than overlapped
    assert "attention_memory_s" not in df and "attention_weights_s" not in df


def test_mla_latent_is_replicated_on_every_tp_rank_unless_sharded():
    axes = {"mapping.tp": [1, 4], "mapping.mla_cache": ["replicated", "sharded"]}
    df = wsemoe.evaluate(_cfg(workload={"tokens_per_device": 16}, axes=axes)).set_index(["mapping.tp", "mapping.mla_cache"])
    kv = df["mem_kv_node_bytes"]
    assert kv[(4, "replicated")] == pytest.approx(4 * kv[(1, "replicated")])      # 4× the sequences per rank
    assert kv[(4, "sharded")] == pytest.approx(kv[(1, "sharded")]) == pytest.approx(kv[(1, "replicated")])
    per_token_layer = (512 + 64) * 2
    assert kv[(1, "replicated")] == pytest.approx(16 * 4096 * 61 * per_token_layer)
    gqa = wsemoe.evaluate(_cfg(workload={"tokens_per_device": 16}, axes={"mapping.tp": [1, 4, 8]},
                               model="qwen3-235b-a22b"))["mem_kv_node_bytes"].to_numpy()
    assert gqa[1] == pytest.approx(gqa[0]) and gqa[2] == pytest.approx(2 * gqa[0])  # 4 KV heads: replicated past tp 4


@pytest.mark.parametrize("devices,target", [(256, 2.0), (64, 2.0), (64, 2.12), (256, 5.0)])
def test_zipf_calibration_hits_its_target(devices, target):
    s = popularity.calibrate_zipf(target, 256, devices, 1)
    assert popularity.zipf_imbalance(s, 256, devices, 1) == pytest.approx(target, rel=1e-6)


def test_one_popularity_shows_more_skew_with_fewer_experts_per_device():
    s = popularity.calibrate_zipf(2.12, 256, 64, 1)
    assert s == pytest.approx(0.4, abs=0.01)
    assert popularity.zipf_imbalance(s, 256, 256, 1) == pytest.approx(5.7, abs=0.1)
    with pytest.raises(ValueError, match="skew_target"):
        popularity.calibrate_zipf(0.5, 256, 64, 1)


@settings(max_examples=40, deadline=None)
@given(s=st.floats(0.0, 1.5), seed=st.integers(0, 1000), spare=st.integers(1, 3),
       policy=st.sampled_from(["hot", "fill"]), experts=st.sampled_from([64, 256]))
def test_water_filling_never_leaves_a_busier_host_than_even_splitting(s, seed, spare, policy, experts):
    pl = mp.place_er(8, 8, 4)
    shares = popularity.zipf_shares(experts, s, seed)
    _, even = popularity.balance_experts("replicate", shares, pl, spare, split="even", policy=policy)
    _, filled = popularity.balance_experts("replicate", shares, pl, spare, split="water-fill", policy=policy)
    assert np.array_equal(even.hosts, filled.hosts)
    le, lw = popularity.node_loads(even, shares), popularity.node_loads(filled, shares)
    assert lw.max() <= le.max() * (1 + 1e-12)
    assert lw.sum() == pytest.approx(1.0) and np.allclose(filled.weights.sum(axis=1), 1.0)
    assert np.all(filled.weights[~filled.hosts] == 0) and np.all(filled.weights >= 0)


def test_fill_uses_every_spare_slot_but_uniform_loads_change_nothing():
    shares = popularity.zipf_shares(256, 0.4, 1)
    assert popularity.replica_counts(shares, 128, 256, "fill").sum() == 256 + 128
    assert popularity.replica_counts(shares, 128, 256, "hot").sum() < 256 + 128
    assert popularity.replica_counts(np.full(256, 1 / 256), 128, 256, "fill").sum() == 256


def test_best_vs_best_comparison_tunes_each_side_for_each_metric(tmp_path):
    cfg = {"name": "bvb", "hardware": "wsc-b200-8x8", "model": "deepseek-v3", "workload": BASE,
           "zip": [{"hardware": ["wsc-b200-8x8", "wsc-b200-8x8", "nvl72", "nvl72"], "mapping.tp": [1, 4, 1, 4]}],
           "axes": {"workload.tokens_per_device": [1, 64]},
           "compare": {"name": "nvl72", "baseline": {"hardware": "nvl72"}, "candidate": {"hardware": "wsc-b200-8x8"},
                       "metric": "per_device_moe_block_tokens_per_s", "also": ["per_device_moe_tokens_per_s"],
                       "over": ["mapping.tp"]}}
    res = wsemoe.run_sweep(cfg, out_root=tmp_path)
    pts, table = wsemoe.evaluate(cfg), res.comparison.set_index("workload.tokens_per_device")
    for metric, col in (("per_device_moe_block_tokens_per_s", "speedup_vs_nvl72"),
                        ("per_device_moe_tokens_per_s", "speedup_vs_nvl72_per_device_moe_tokens_per_s")):
        best = pts.groupby(["workload.tokens_per_device", "hardware"])[metric].max().unstack()
        np.testing.assert_allclose(table[col], (best["wsc-b200-8x8"] / best["nvl72"]).loc[table.index], rtol=1e-12)


@pytest.mark.parametrize("patch,where", [
    ({"hardware": {"preset": "nvl72", "wafers": [2, 2]}}, "hardware"),
    ({"hardware": {"preset": "nvl72", "scale_up_size": 7}}, "hardware"),
    ({"hardware": {"preset": "wsc-b200-8x8", "scale_up_size": 8}}, "hardware"),
    ({"hardware": {"preset": "wsc-b200-8x8", "in_switch_reduction": True}}, "hardware"),
    ({"mapping": {"tp": 128, "strategy": "her"}, "hardware": "wsc-b200-4x8x8"}, "tp"),
    ({"mapping": {"tp": 4, "strategy": "er", "ftd": [3, 3]}}, "ftd"),
    ({"mapping": {"tp": 4, "strategy": "her", "ftd": [8, 8]}, "hardware": "wsc-b200-4x8x8"}, "ftd"),
    ({"workload": {"mode": "train", "tokens_per_device": 4}}, "tokens_per_device"),
    ({"workload": {**BASE, "tokens_per_device": 3, "G": 2}, "mapping": {"tp": 1}}, "tokens_per_device"),
    ({"axes": {"workload.B": [1, 2]}, "workload": {**BASE, "tokens_per_device": 4}}, "workload.B"),
    ({"compare": {"name": "x", "baseline": {"mapping.tp": 1}, "metric": "no_such_column"},
      "axes": {"mapping.tp": [1, 4]}}, "compare"),
    ({"balance": {"distribution": "zipf", "skew_target": 0.5}}, "skew_target"),
    ({"balance": {"distribution": "zipf", "skew_target": 1000.0}}, "skew_target"),
    ({"balance": {"distribution": "zipf", "skew_target": 2.0}, "axes": {"balance.skew_devices": [64, 1]}},
     "skew_devices"),
])
def test_bad_inputs_are_one_line_errors(runner, tmp_path, patch, where):
    import yaml

    from wsemoe.cli import app

    cfg = {**_cfg(workload={"B": 8}), **patch}
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(cfg))
    r = runner.invoke(app, ["sweep", str(path), "--results", str(tmp_path / "results")])
    assert r.exit_code != 0 and "Traceback" not in r.output
    line = r.output.strip().splitlines()[-1]
    assert line.startswith("error:") and where in line and len(r.output.strip().splitlines()) == 1, r.output
    assert not (tmp_path / "results" / "d").exists()
