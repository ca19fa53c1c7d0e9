"""Consistency rules live on the spec (specs/rules.py) and meet every entry path: YAML, `eval --set`, sweep axes
(one value, two axes that clash only together, a long axis typed at its extremes), config.json, the Python API;
the sweep's cross-field check goes through every combination in bounded chunks and refuses, by count, before it
allocates, a set of combinations too large to check."""

from __future__ import annotations

import itertools
import json
from types import SimpleNamespace

import numpy as np
import pytest
import yaml

import wsemoe
from wsemoe.cli import app
from wsemoe.config import checks, combos
from wsemoe.config.loader import load_config
from wsemoe.config.presets import raw
from wsemoe.cost.wafer import pememory
from wsemoe.errors import ConfigError, PresetError
from wsemoe.specs import HardwareSpec, ModelSpec

BASE = {"name": "rules", "hardware": "cs2", "model": "qwen3-30b-a3b", "workload": {"mode": "train", "seq_len": 2048}}
GQA = "does not divide num_attention_heads"


def _refused(cfg, *words):
    with pytest.raises(ConfigError) as exc:
        load_config(cfg)
    for w in words:
        assert w in exc.value.line(), exc.value.line()
    return exc.value


def test_gqa_rule_in_yaml_base_and_python_api():
    cfg = {**BASE, "model": {"preset": "qwen3-30b-a3b", "num_key_value_heads": 5}}
    _refused(cfg, "model", GQA)
    with pytest.raises(ConfigError, match=GQA):
        wsemoe.evaluate(cfg)
    with pytest.raises(ValueError, match=GQA):
        ModelSpec(**{**raw("models", "qwen3-30b-a3b"), "num_key_value_heads": 64})  # more KV heads than heads


@pytest.mark.parametrize("kv", [5, 64])
def test_gqa_rule_through_eval_set(runner, tmp_path, kv):
    path = tmp_path / "rules.yaml"
    path.write_text(yaml.safe_dump(BASE))
    result = runner.invoke(app, ["eval", str(path), "--set", f"model.num_key_value_heads={kv}"])
    assert result.exit_code != 0
    line = result.output.strip()
    assert len(line.splitlines()) == 1 and "--set -> model.num_key_value_heads" in line and GQA in line, line


def test_gqa_rule_on_one_axis_and_on_axes_that_clash_only_together():
    _refused({**BASE, "axes": {"model.num_key_value_heads": [4, 64]}}, "axes -> model.num_key_value_heads", GQA)
    # 36 heads take 4 KV heads and 32 heads take 8: each value alone fits the base model, 36 with 8 does not
    _refused({**BASE, "axes": {"model.num_attention_heads": [32, 36], "model.num_key_value_heads": [4, 8]}},
             "axes -> model.num_key_value_heads", "8 does not divide num_attention_heads 36")
    # a preset axis brings its own KV heads: DeepSeek-V3's 128 do not divide 32 query heads
    _refused({**BASE, "axes": {"model": ["qwen3-30b-a3b", "deepseek-v3"], "model.num_attention_heads": [32, 128]}},
             "axes -> model.num_attention_heads", "128 does not divide num_attention_heads 32")


def test_gqa_rule_on_a_long_axis_typed_at_its_extremes_only():
    heads = [4 * i for i in range(1, 601)]
    heads[300] = 1202  # 4 KV heads do not divide it; the extremes 4 and 2400 do
    _refused({**BASE, "axes": {"model.num_attention_heads": heads}}, "axes -> model.num_attention_heads",
             "4 does not divide num_attention_heads 1202")
    heads[300] = 1204
    assert load_config({**BASE, "axes": {"model.num_attention_heads": heads}}).size() == 600


def test_gqa_rule_in_config_json(tmp_path):
    src = tmp_path / "m" / "config.json"
    src.parent.mkdir()
    data = json.loads((__import__("pathlib").Path(__file__).parent / "data" / "hf" / "qwen3-30b-a3b.json").read_text())
    src.write_text(json.dumps({**data, "num_key_value_heads": 5}))
    with pytest.raises(PresetError, match="num_key_value_heads"):
        load_config({**BASE, "model": {"hf_config": str(src)}})
    with pytest.raises(PresetError, match="num_key_value_heads"):
        load_config({**BASE, "axes": {"model": [str(src)]}})


def _cs2(**pe):
    hw = raw("hardware", "cs2")
    return {**hw, "pe": {**hw["pe"], **pe}}


@pytest.mark.parametrize("pe, field", [
    ({"program_bytes_per_pe": 48 * 1024}, "program_bytes_per_pe"),     # the whole 48 KiB of a CS-2 PE
    ({"program_bytes_per_pe": 1e6}, "program_bytes_per_pe"),
    ({"kernel_margin_rows": 10**6}, "kernel_margin_rows"),
    ({"kernel_margin_cols": 10**5}, "kernel_margin_cols"),
])
def test_a_program_needs_room_on_the_pe(pe, field):
    hw = _cs2(**pe)
    if "fabric_rows" in hw["pe"] and field == "kernel_margin_rows":
        hw["pe"]["kernel_margin_rows"] = hw["pe"]["fabric_rows"]  # exactly the fabric: no row left
    with pytest.raises(ValueError, match=field):
        HardwareSpec(**hw)
    _refused({**BASE, "hardware": hw}, "hardware", field)
    with pytest.raises(ConfigError, match=field):
        wsemoe.evaluate({**BASE, "hardware": hw})


def test_an_sram_constraint_over_no_free_room_is_violated():
    """Whatever a caller passes, g over zero or negative free bytes is violated, never negative (satisfied)."""
    g = pememory._over(np.array([1.0, 1.0, 1.0]), np.array([2.0, 0.0, -5.0]))
    assert g[0] == pytest.approx(-0.5) and np.isinf(g[1]) and g[1] > 0 and np.isinf(g[2]) and g[2] > 0
    assert pememory.room(SimpleNamespace(sram_per_pe_bytes=48.0, program_bytes_per_pe=64.0)) < 0


def test_cross_checks_go_through_every_combination_in_chunks(monkeypatch):
    """Chunks of 3 cover exactly the product of the distinct rows of each factor involved (no more, no fewer)."""
    cfg = load_config({**BASE, "axes": {"model.num_experts": [32, 64, 128], "workload.B": [1, 2]},
                       "zip": [{"model.num_experts_per_tok": [2, 4, 2, 4], "workload.G": [1, 2, 4, 8]}]})
    monkeypatch.setattr(combos, "CHUNK", 3)
    paths = ["model.num_experts", "model.num_experts_per_tok"]
    got = [tuple(r) for c in combos.combos(cfg, paths) for r in zip(*(c[p] for p in paths))]
    assert sorted(got) == sorted(itertools.product([32, 64, 128], [2, 4]))


def test_too_many_combinations_are_refused_by_count_before_any_allocation(monkeypatch):
    cfg = load_config({**BASE, "axes": {"model.num_experts": [64, 128], "model.num_experts_per_tok": [2, 4, 8]}})
    monkeypatch.setattr(combos, "MAX_CHECKED", 5)
    with pytest.raises(ConfigError, match="6 combinations"):
        checks.check_points(cfg)
    monkeypatch.setattr(combos, "MAX_CHECKED", 6)
    checks.check_points(cfg)


def test_an_slo_over_points_without_the_column_says_it_cannot_be_checked():
    """A TTFT SLO over decode points without a prompt (no TTFT) says there is no TTFT, never "above the SLO";
    points that have one are judged by their ratio."""
    cfg = {"name": "slo", "hardware": "cs3", "model": "qwen3-30b-a3b", "workload": {"mode": "decode", "seq_len": 2048},
           "axes": {"workload.mode": ["prefill", "decode"]}, "constraints": [{"column": "ttft_s", "max": 1e-6}]}
    df = wsemoe.evaluate(cfg)
    decode, prefill = df[df["workload.mode"] == "decode"].iloc[0], df[df["workload.mode"] == "prefill"].iloc[0]
    assert np.isnan(decode["ttft_s"]) and not decode["feasible"]
    assert decode["infeasible_reason"].startswith("no TTFT at this point") and "cannot be checked" in \
        decode["infeasible_reason"] and "above" not in decode["infeasible_reason"]
    assert "× the SLO (1 µs)" in prefill["infeasible_reason"], prefill["infeasible_reason"]


@pytest.mark.parametrize("cfg, where", [
    ({"hardware": {"preset": "wsc-b200-8x8", "rows": 256, "cols": 256}}, "hardware"),
    ({"hardware": {"preset": "wsc-b200-8x8", "rows": 100, "wafers": [2, 1]}}, "hardware"),
    ({"hardware": "wsc-b200-8x8", "axes": {"hardware.rows": [8, 100], "hardware.wafers": [[1, 1], [2, 2]]}},
     "axes -> hardware.wafers"),
])
def test_a_mesh_larger_than_the_engine_finishes_in_seconds_is_refused(cfg, where):
    """The die grid (rows·Wr × cols·Wc) of a mesh is at most MAX_GRID_SIDE a side, on the spec and on every
    combination of axes (a switch of as many devices is not a mesh: dgx-b200-x32 has 256 columns)."""
    _refused({**BASE, **cfg}, where, "at most 128 a side")
    assert load_config({**BASE, "hardware": "dgx-b200-x32"}).hardware.cols == 256
    assert load_config({**BASE, "hardware": {"preset": "wsc-b200-8x8", "rows": 64, "cols": 64, "wafers": [2, 2]}})


from hypothesis import given, settings, strategies as st  # noqa: E402


@settings(max_examples=25, deadline=None)
@given(experts=st.lists(st.sampled_from([8, 16, 32, 64, 128]), min_size=1, max_size=5, unique=True),
       topk=st.lists(st.integers(1, 8), min_size=1, max_size=4, unique=True),
       rows=st.integers(1, 4), chunk=st.integers(1, 7), zipped=st.booleans())
def test_chunked_combinations_are_exactly_the_distinct_product(experts, topk, rows, chunk, zipped):
    """Whatever the chunk size and however the fields are grouped (grid axes or one zip group with repeats), the
    chunks hold each distinct combination the sweep takes exactly once."""
    import unittest.mock

    if zipped:
        n = max(len(experts), len(topk))
        e_col, k_col = (experts * n)[:n], (topk * n)[:n]
        cfg = load_config({**BASE, "model": {"preset": "qwen3-30b-a3b", "num_experts": 128},
                           "zip": [{"model.num_experts": e_col, "model.num_experts_per_tok": k_col,
                                    "workload.B": list(range(1, n + 1))}], "axes": {"workload.G": list(range(1, rows + 1))}})
        want = set(zip(e_col, k_col))
    else:
        cfg = load_config({**BASE, "model": {"preset": "qwen3-30b-a3b", "num_experts": 128},
                           "axes": {"model.num_experts": experts, "model.num_experts_per_tok": topk}})
        want = set(itertools.product(experts, topk))
    paths = ["model.num_experts", "model.num_experts_per_tok"]
    with unittest.mock.patch.object(combos, "CHUNK", chunk):
        got = [tuple(r) for c in combos.combos(cfg, paths) for r in zip(*(c[p] for p in paths))]
    assert sorted(got) == sorted(want)
