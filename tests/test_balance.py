"""Expert-load skew and balancers: conservation, monotonicity, slots, migration bounds, determinism."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import wsemoe
from wsemoe.cost import structure
from wsemoe.cost.balance import popularity
from wsemoe.cost.fabric import mapping as mp

PL = mp.place_groups("er", 8, 8, 4)


def test_uniform_loads_have_factor_one_and_balancers_change_nothing():
    shares = np.full(256, 1 / 256)
    before, after = popularity.balance_experts("replicate", shares, PL, spare_slots=2)
    assert popularity.imbalance(popularity.node_loads(before, shares)) == pytest.approx(1.0)
    assert after is before  # no replicas, no migration, no extra memory
    df = wsemoe.evaluate({**_cfg(zipf_s=0.0), "axes": {"balance.balancer": ["none", "replicate", "stop-the-world"]}})
    for col in ("step_time_s", "mem_weights_node_bytes", "migration_total_s", "expert_imbalance"):
        assert df[col].nunique() == 1, col


@settings(max_examples=40, deadline=None)
@given(s=st.floats(0.0, 1.2), seed=st.integers(0, 1000), spare=st.integers(1, 3), aware=st.booleans())
def test_balancing_never_raises_max_load_conserves_and_respects_slots(s, seed, spare, aware):
    shares = popularity.zipf_shares(256, s, seed)
    before, after = popularity.balance_experts("replicate", shares, PL, spare, topology_aware=aware)
    lb, la = popularity.node_loads(before, shares), popularity.node_loads(after, shares)
    assert la.max() <= lb.max() + 1e-12
    assert la.sum() == pytest.approx(1.0) and lb.sum() == pytest.approx(1.0)
    assert after.slots_per_node.max() <= before.slots_per_node.max() + spare
    assert np.all(after.replicas >= 1) and np.all(after.hosts.sum(axis=1) == after.replicas)


def test_replica_counts_go_to_hottest_first_and_stop_at_the_mean():
    # 0.7 → two copies of 0.35 (still above the mean 1/3) → three of 0.233; nothing else is hot
    assert popularity.replica_counts(np.array([0.7, 0.2, 0.1]), extra=5, max_per_expert=4).tolist() == [3, 1, 1]
    assert popularity.replica_counts(np.array([0.7, 0.2, 0.1]), extra=1, max_per_expert=4).tolist() == [2, 1, 1]
    assert popularity.replica_counts(np.full(4, 0.25), extra=4, max_per_expert=4).tolist() == [1, 1, 1, 1]


def test_zipf_is_deterministic_per_seed():
    a, b, c = (popularity.zipf_shares(64, 0.8, s) for s in (3, 3, 4))
    assert np.array_equal(a, b) and not np.array_equal(a, c)
    assert a.sum() == pytest.approx(1.0)


def _cfg(*drop, **bal):
    """The test sweep with balance fields `bal`; `drop`: fields left out where they do not apply (the loader
    refuses a setting that can change no point: config/applies.py)."""
    balance = {"distribution": "zipf", "zipf_s": 0.4, "seed": 1, "spare_slots": 2, **bal}
    return {"name": "b", "hardware": "wsc-b200-8x8", "model": "deepseek-v3",
            "workload": {"mode": "decode", "seq_len": 4096, "B": 1024}, "mapping": {"tp": 4, "strategy": "er"},
            "balance": {k: v for k, v in balance.items() if k not in drop}}


def test_same_seed_same_results():
    a, b = wsemoe.evaluate(_cfg(balancer="replicate")), wsemoe.evaluate(_cfg(balancer="replicate"))
    assert a.equals(b)


def test_exposed_zero_with_large_windows_and_hidden_never_beyond_the_windows():
    long = wsemoe.evaluate(_cfg(balancer="non-invasive", rebalance_interval=10_000, churn=0.25)).iloc[0]
    assert long["migration_exposed_s"] == 0.0
    # every rebalance: the migration needs more than the windows of one step can carry, so part is exposed,
    # and what hides is at most the busiest link's spare window time per step
    every = wsemoe.evaluate(_cfg(balancer="non-invasive", rebalance_interval=1, churn=1.0)).iloc[0]
    assert every["migration_exposed_s"] > 0
    assert every["migration_hidden_s"] + every["migration_exposed_s"] == pytest.approx(every["migration_total_s"])
    assert every["migration_hidden_s"] <= every["step_time_s"] - every["migration_exposed_s"]


def test_stop_the_world_pays_everything_and_replicas_cost_memory():
    df = wsemoe.evaluate({**_cfg(), "axes": {"balance.balancer": ["none", "replicate", "stop-the-world"]}})
    none, rep, stw = (df.iloc[i] for i in range(3))
    assert stw["migration_exposed_s"] == pytest.approx(stw["migration_total_s"] / 10)
    assert rep["mem_weights_node_bytes"] > none["mem_weights_node_bytes"]
    assert rep["moe_compute_s"] < none["moe_compute_s"]
    assert rep["expert_imbalance"] < none["expert_imbalance"] == none["imbalance_before"]


def test_replicas_that_do_not_fit_make_the_point_infeasible():
    hw = {"preset": "wsc-b200-8x8", "node_memory_bytes": 1.0e+11}
    df = wsemoe.evaluate({**_cfg(balancer="replicate", spare_slots=3), "hardware": hw})
    row = df.iloc[0]
    assert not row["feasible"] and "memory" in row["infeasible_reason"]


def test_histogram_csv(tmp_path):
    csv = tmp_path / "h.csv"
    rows = ["layer,expert,tokens"] + [f"{layer},{e},{(e + 1) * (layer + 1)}" for layer in (0, 1) for e in range(256)]
    csv.write_text("\n".join(rows))
    cfg = _cfg("zipf_s", "seed", "spare_slots", distribution="histogram", histogram=str(csv), balancer="none")
    row = wsemoe.evaluate(cfg).iloc[0]
    assert row["imbalance_before"] > 1.0
    bad = _cfg(distribution="histogram", histogram=str(tmp_path / "missing.csv"))
    with pytest.raises(wsemoe.WsemoeError, match="histogram"):
        wsemoe.evaluate(bad)


def test_a_balancer_never_deploys_a_placement_busier_than_the_default():
    """Found by the invariants on a random config: 4 experts on 8 dies (2 × 4), Zipf 0.5, `replicate` with one spare
    slot. The default already holds 2 copies of each expert; replicas counted from one copy per expert left the
    coolest experts with one copy, whose host then carried 1.66× the mean against 1.44× by default, and the
    balancer 'saved' a negative time. Counted from the default's copies (shares 0.207, 0.359, 0.254, 0.180; 2 copies
    each, then the hot ones 3: counts 2, 3, 3, 2, no copy above 1/8), LPT and the best split (a linear program over
    the hosts) give 1.156× against the default's 8·0.359/2 = 1.437×."""
    cfg = {"name": "few", "hardware": {"preset": "wsc-b200-8x8", "rows": 2, "cols": 4},
           "model": {"preset": "deepseek-v3", "num_experts": 4, "num_experts_per_tok": 1},
           "workload": {"mode": "train", "seq_len": 128}, "mapping": {"tp": 1},
           "balance": {"distribution": "zipf", "zipf_s": 0.5, "balancer": "replicate", "spare_slots": 1, "seed": 0}}
    row = wsemoe.evaluate(cfg).iloc[0]
    s = structure.build("mesh", 2, 4, 1, "block", None, 0, None, "auto", 4,
                        structure.BalanceKey("zipf", 0.5, 0, "replicate", 1, top_k=1))
    assert s.imbalance_before == pytest.approx(1.4365, abs=1e-4)   # the expected shares' busiest node
    assert s.expert_imbalance == pytest.approx(1.1560, abs=1e-4)
    # the columns: the busiest node over a step's routing (cost/balance/routing.py), at least the shares' busiest
    assert row["imbalance_before"] >= s.imbalance_before and row["expert_imbalance"] >= s.expert_imbalance
    assert row["moe_balance_saving_s"] > 0.0 and row["expert_slots_max"] == 2


def test_exposed_migration_that_outweighs_every_layer_kind_is_the_bound():
    """Migration exposed once per step is a term of the step (eval adds it beside the layers): where it takes more of
    the step than any layer kind, `bound` names it (it read moe_layer:hbm, 59.8 ms of a 153 ms step beside 90.8 ms of
    exposed migration; and comm:dispatch on moentwine_vs_nvl72's point 198, 55% of its step migration)."""
    df = wsemoe.evaluate({**_cfg(balancer="stop-the-world"), "axes": {"balance.rebalance_interval": [1, 10]}})
    every, tenth = df.iloc[0], df.iloc[1]
    assert every["migration_exposed_s"] > 58 * every["moe_layer_time_s"]   # 90.8 ms > 59.8 ms
    assert every["bound"] == "comm:migration"
    assert tenth["migration_exposed_s"] < 58 * tenth["moe_layer_time_s"]   # 9.1 ms: the layers still bind
    # compute: the busiest die's 1.06× the mean over a step's routing of 16,384 tokens (it read hbm at the expected
    # shares' 1.01×, cost/balance/routing.py)
    assert tenth["bound"] == "moe_layer:compute"


def test_fewer_experts_than_dies_keep_the_default_copies_and_fill_every_slot():
    # 128 experts on 256 dies: the default holds 2 copies of each (one a die); 2 spare slots: 3 a die, 768 in all.
    # Hand derivation (Zipf 0.4, seed 1): the default's busiest die carries E·max share = 4.33× the mean. Counting
    # replicas from the 256 default copies, "hot" gives 321 copies (no copy above 1/256) and LPT plus the best split
    # (a linear program over the hosts) gives 1.3755×; "fill" gives all 768 and 1.000×. Counting from one copy gave
    # 175 copies (81 empty dies, 2.00×) and 640 (128 slots unused, 1.07×).
    pl = mp.place_groups("block", 16, 16, 1)
    shares = popularity.zipf_shares(128, 0.4, 1)
    before, _ = popularity.balance_experts("none", shares, pl, 2)
    assert popularity.imbalance(popularity.node_loads(before, shares)) == pytest.approx(128 * shares.max())
    _, hot = popularity.balance_experts("replicate", shares, pl, 2, topology_aware=False, policy="hot")
    _, fill = popularity.balance_experts("replicate", shares, pl, 2, topology_aware=False, policy="fill")
    assert np.all(hot.replicas >= before.replicas) and hot.slots_per_node.min() >= 1
    assert hot.replicas.sum() == 321
    assert popularity.imbalance(popularity.node_loads(hot, shares)) == pytest.approx(1.3755, abs=1e-4)
    assert fill.replicas.sum() == 3 * 256
    assert popularity.imbalance(popularity.node_loads(fill, shares)) == pytest.approx(1.0, abs=1e-5)   # water-fill stops within 1e-5


def test_a_tokens_k_experts_are_distinct_so_no_expert_takes_more_than_every_token():
    # DeepSeek-V3 (E = 256, k = 8) at the default Zipf exponent 1 (seed 0): the hottest expert's share is 1/H_256 =
    # 0.1633, i.e. 8 × 0.1633 = 1.306 copies a token, more than every token. Capped at 1/8, its excess spread over
    # the others in proportion (inclusion probabilities min(1, c·w) summing to 8), the busiest of 64 dies (expert e
    # on die e mod 64) carries 9.3278× the mean, where uncapped shares gave 11.72×.
    row = wsemoe.evaluate(_cfg("spare_slots", zipf_s=1.0, seed=0)).iloc[0]
    assert row["imbalance_before"] == pytest.approx(9.3278, abs=1e-4)   # was 11.72
    raw = popularity.zipf_shares(256, 1.0, 0)
    assert 8 * raw.max() == pytest.approx(1.3063, abs=1e-4)
    capped = popularity.distinct_shares(raw, 8)
    assert capped.max() == pytest.approx(1 / 8) and capped.sum() == pytest.approx(1.0)
    hot = raw.argmax()
    rest = np.arange(256) != hot
    assert np.allclose(capped[rest] / raw[rest], (7 / 8) / raw[rest].sum())   # the rest keep their proportions
    assert popularity.zipf_imbalance(1.0, 256, 64, 0, top_k=8) == pytest.approx(9.3278, abs=1e-4)
    feasible = popularity.zipf_shares(256, 0.4, 1)
    assert np.array_equal(popularity.distinct_shares(feasible, 8), feasible)   # nothing above 1/8: bit for bit
    # the most a skew can reach with k = 8 on one expert a die: the 8 hottest take every token, 256/8 = 32×
    with pytest.raises(ValueError, match="skew_target"):
        popularity.calibrate_zipf(40.0, 256, 256, 1, top_k=8)


def test_the_stop_the_world_fit_keeps_churn_within_its_bound():
    """validate's balance rows fit the churn that makes stop-the-world cost 2 iterations in 10 at each batch; churn
    is a share of the new copies (≤ 1), so where even every copy moved costs less (B = 1024 on one wafer: 1.53 in
    10) the fit stops at 1 and the row says so, rather than running on to a churn the config would refuse."""
    from wsemoe.specs.mapping import BalanceSpec
    from wsemoe.validate import balance, figures
    from wsemoe.validate.common import sweep_config

    bound = BalanceSpec.model_fields["churn"].metadata
    assert any(getattr(m, "le", None) == balance.CHURN_MAX for m in bound)
    fits = balance.matched(figures.at(sweep_config("moentwine_balance"), figures.MOENTWINE))
    assert all(0 < churn <= balance.CHURN_MAX for churn, _, _ in fits.values())
    churn, iterations, _ = fits[max(balance.BATCHES)]
    assert churn == balance.CHURN_MAX and 1.5 < iterations < 2.0
    smaller = [fits[b] for b in balance.BATCHES[:-1]]
    assert all(c < balance.CHURN_MAX and it == pytest.approx(balance.STW_ITERATIONS, rel=1e-6) for c, it, _ in smaller)
