"""A setting given where it applies to no point is refused in one line naming it and what it needs
(config/applies.py); where it applies to some point it passes; and each refused setting is one that indeed moves
no output column there (the rule is read off the code, this checks it against the model)."""

from __future__ import annotations

import pandas as pd
import pytest

import wsemoe
from wsemoe.config import applies
from wsemoe.config.loader import load_config
from wsemoe.errors import ConfigError

BASE = {"name": "a", "hardware": "wsc-b200-8x8", "model": "deepseek-v3",
        "workload": {"mode": "decode", "seq_len": 4096, "B": 64}, "mapping": {"tp": 4, "strategy": "er"},
        "balance": {"distribution": "zipf", "zipf_s": 0.6, "seed": 1}}
PLACEMENT = [i // 4 for i in range(64)]   # 16 groups of 4 nodes, one after another
SRAM = {"hardware": {"preset": "cs3", "weight_source": "sram"}, "model": "qwen3-30b-a3b", "mapping": {}}

# setting -> (a value other than its default, changes where it applies to nothing, changes where it applies)
CASES = {
    "balance.zipf_s": (0.9, {"balance": {"distribution": "uniform"}}, {}),
    "balance.skew_target": (2.0, {"balance": {"distribution": "uniform"}}, {"balance": {"distribution": "zipf"}}),
    "balance.skew_devices": (16, {}, {"balance": {"distribution": "zipf", "skew_target": 2.0}}),
    "balance.seed": (3, {"balance": {"distribution": "uniform"}}, {}),
    "balance.spare_slots": (2, {}, {"balance": {"distribution": "zipf", "balancer": "replicate"}}),
    "balance.replica_policy": ("fill", {},
                               {"balance": {"distribution": "zipf", "spare_slots": 2, "balancer": "replicate"}}),
    "balance.replica_split": ("even", {},
                              {"balance": {"distribution": "zipf", "spare_slots": 2, "balancer": "replicate"}}),
    "balance.rebalance_interval": (3, {"balance": {"distribution": "zipf", "spare_slots": 2, "balancer": "replicate"}},
                                   {"balance": {"distribution": "zipf", "spare_slots": 2, "balancer": "non-invasive"}}),
    "balance.churn": (0.5, {"balance": {"distribution": "zipf", "spare_slots": 2, "balancer": "replicate"}},
                      {"balance": {"distribution": "zipf", "spare_slots": 2, "balancer": "stop-the-world"}}),
    "balance.migration_windows": ("comm", {"balance": {"distribution": "zipf", "spare_slots": 2,
                                                       "balancer": "stop-the-world"}},
                                  {"balance": {"distribution": "zipf", "spare_slots": 2, "balancer": "non-invasive"}}),
    "mapping.seed": (5, {}, {"mapping": {"tp": 4, "strategy": "random"}}),
    "mapping.ftd": ([4, 4], {"mapping": {"tp": 4, "strategy": "block"}}, {}),
    "mapping.placement": (PLACEMENT, {}, {"mapping": {"tp": 4, "strategy": "explicit"}}),
    "mapping.mla_cache": ("sharded", {"model": "qwen3-235b-a22b"}, {}),
    "mapping.pe_placement": ("interleaved", {}, SRAM),
    "mapping.pe_reduction": ("ring", {}, SRAM),
    "mapping.pe_kernels": ("per_primitive", {}, SRAM),
    "mapping.pe_dispatch": ("unicast", {}, SRAM),
    "workload.recompute": ("none", {}, {"workload": {"mode": "train", "seq_len": 4096, "B": 64}}),
    "workload.bytes_per_grad": (4.0, {}, {"workload": {"mode": "train", "seq_len": 4096, "B": 64}}),
    "workload.optimizer_bytes_per_param": (8.0, {}, {"workload": {"mode": "train", "seq_len": 4096, "B": 64}}),
    "workload.optimizer_sharding": ("none", {}, {"workload": {"mode": "train", "seq_len": 4096, "B": 64}}),
}


def _with(changes: dict, path: str | None = None, value=None) -> dict:
    cfg = {**BASE, **changes}
    if path is not None:
        section, field = path.split(".")
        cfg[section] = {**cfg[section], field: value}
    return cfg


def test_every_rule_is_tested():
    assert set(CASES) | {"balance.histogram"} == set(applies.NEEDS)


@pytest.mark.parametrize("path", sorted(CASES))
def test_a_setting_that_applies_nowhere_is_refused_and_one_that_applies_passes(path):
    value, nowhere, there = CASES[path]
    with pytest.raises(ConfigError) as e:
        load_config(_with(nowhere, path, value))
    assert e.value.loc == tuple(path.split(".")) and path in e.value.message and "\n" not in e.value.message
    assert "applies only with" in e.value.message
    load_config(_with(there, path, value))
    load_config(_with(nowhere))   # its default says nothing: a resolved config.yaml writes every default back


@pytest.mark.parametrize("path", sorted(CASES))
def test_a_refused_setting_indeed_moves_no_column(path, monkeypatch):
    """Where the rule refuses a setting, the model given it anyway computes every column as without it."""
    value, nowhere, _ = CASES[path]
    monkeypatch.setattr(applies, "check_applies", lambda cfg: None)
    plain = wsemoe.evaluate(_with(nowhere)).iloc[0]
    given = wsemoe.evaluate(_with(nowhere, path, value)).iloc[0]
    columns = [c for c in plain.index if c != path and c in given.index]
    differ = [c for c in columns if not (plain[c] == given[c] or (pd.isna(plain[c]) and pd.isna(given[c])))]
    assert differ == []


def test_zipf_s_under_uniform_popularity_is_one_line_naming_both():
    with pytest.raises(ConfigError) as e:
        load_config(_with({"balance": {"distribution": "uniform", "zipf_s": 1.5}}))
    assert e.value.message == ("balance.zipf_s is set but can change no result: it applies only with distribution: "
                               "zipf without a skew_target (which solves for the exponent), which no point here has")


def test_a_setting_that_applies_to_some_points_passes_and_a_swept_one_is_named_at_its_axis():
    load_config(_with({"balance": {"zipf_s": 0.9}, "axes": {"balance.distribution": ["uniform", "zipf"]}}))
    with pytest.raises(ConfigError) as e:
        load_config(_with({"balance": {"distribution": "uniform"}, "axes": {"balance.zipf_s": [0.5, 1.0]}}))
    assert e.value.loc == ("axes", "balance.zipf_s") and "is swept" in e.value.message


def test_a_histogram_under_another_distribution_is_refused(tmp_path):
    """The file is never read unless distribution is histogram: a path to a missing file passed silently."""
    with pytest.raises(ConfigError) as e:
        load_config(_with({"balance": {"distribution": "zipf", "histogram": str(tmp_path / "none.csv")}}))
    assert e.value.loc == ("balance", "histogram")
    counts = tmp_path / "h.csv"
    counts.write_text("expert,tokens\n" + "".join(f"{i},{i + 1}\n" for i in range(256)))
    load_config(_with({"balance": {"distribution": "histogram", "histogram": str(counts)}}))
