"""`wsemoe eval`: --point is the index `show` and pareto.csv give, --set overrides that point's own values,
the breakdown adds up (every written-out sum equals the model's column), and infeasible_reason gives the
ratio to the limit."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st
import wsemoe
from wsemoe.analysis.explain.point import breakdown
from wsemoe.cli import app
from wsemoe.sweep import feasibility
from wsemoe.sweep.run import run_sweep

TOPK = {"name": "topk", "hardware": "cs2", "model": "qwen3-30b-a3b",
        "workload": {"mode": "train", "seq_len": 8192, "attn_kernel": "materialized", "recompute": "full"},
        "sparsity": {"vary": "num_experts_per_tok", "values": [8, 4, 2, 1]},
        # B to 8: every head's scores at 2 bytes a score (no attention dropout) fit up to B = 7 (5 bytes: B = 2)
        "axes": {"workload.B": {"range": [1, 8]}, "workload.G": {"range": [1, 8]}},
        "compare": {"name": "uniform", "baseline": {"workload.G": 1}}}


@pytest.fixture(scope="module")
def topk(tmp_path_factory):
    return run_sweep(TOPK, out_root=tmp_path_factory.mktemp("eval"))


def _inputs(rows):
    return {name: value for group, name, value, _, _ in rows if group == "inputs"}


@pytest.mark.parametrize("point", [0, 17, 53, 127])
def test_point_is_the_sweep_index(topk, point):
    points = pd.read_parquet(topk.path / "points.parquet").sort_index()
    row, rows = breakdown(topk.path / "config.yaml", point)
    for col in ("workload.B", "workload.G", "model.num_experts_per_tok", "step_time_s", "mfu", "g_mem_attn"):
        assert row[col] == pytest.approx(points.loc[point, col], rel=1e-12), col
    assert set(_inputs(rows)) == set(topk.config.axis_names())


def test_set_overrides_that_points_value_and_shows_it(topk, tmp_path):
    points = pd.read_parquet(topk.path / "points.parquet").sort_index()
    p = 17
    row, rows = breakdown(topk.path / "config.yaml", p, ["workload.G=8"])
    ins = _inputs(rows)
    assert ins["workload.G"] == 8 and ins["workload.B"] == points.loc[p, "workload.B"]
    assert ins["model.num_experts_per_tok"] == points.loc[p, "model.num_experts_per_tok"]
    same = points[(points["workload.B"] == points.loc[p, "workload.B"]) & (points["workload.G"] == 8)
                  & (points["model.num_experts_per_tok"] == points.loc[p, "model.num_experts_per_tok"])]
    assert row["step_time_s"] == pytest.approx(same["step_time_s"].iloc[0], rel=1e-12)
    doc = next(d for g, n, _, _, d in rows if n == "workload.G")
    assert "--set" in doc and f"the point has {points.loc[p, 'workload.G']}" in doc
    # a field that is not swept shows too, with the config's own value
    _, rows = breakdown(topk.path / "config.yaml", p, ["workload.seq_len=4096"])
    assert _inputs(rows)["workload.seq_len"] == 4096


def test_eval_cli_takes_a_results_folder_and_prints_every_override(topk, runner):
    r = runner.invoke(app, ["eval", str(topk.path), "--point", "17", "--set", "workload.G=8",
                            "--set", "workload.overlap=stage"], env={"COLUMNS": "120"})
    assert r.exit_code == 0, r.output
    assert "the point has" in r.output and "workload.overlap" in r.output and "✓" in r.output and "≠" not in r.output


@pytest.mark.parametrize("config,point,sets", [
    ("sweeps/bta_topk.yaml", 17, []), ("sweeps/bta_topk.yaml", 17, ["workload.overlap=stage"]),
    ("sweeps/bta_topk.yaml", 40, ["workload.overlap=none", "workload.recompute=selective"]),
    ("sweeps/moentwine_balance.yaml", 7, []), ("sweeps/moentwine_mapping.yaml", 11, []),
    ("sweeps/moentwine_vs_nvl72.yaml", 5, []), ("sweeps/moentwine_scale.yaml", 3, []),
    ("sweeps/moentwine_scale.yaml", 3, ["workload.comm_overlap=none"]),
    # two micro-batches: each stage's peak holds the other stage's transients too (memory.memory_terms)
    ("sweeps/moentwine_vs_nvl72.yaml", 5, ["workload.comm_overlap=microbatch"]),
    # ... and their prompts take turns in the prefill behind ttft_s as their tokens do in decode
    ("sweeps/moentwine_vs_nvl72.yaml", 5, ["workload.comm_overlap=microbatch", "workload.prompt_len=1024"]),
    ("sweeps/moentwine_vs_nvl72.yaml", 2300, ["workload.expert_weight_format=fp8", "workload.kv_format=fp8"]),
])
def test_breakdown_adds_up(config, point, sets):
    _, rows = breakdown(config, point, sets)
    sums = [(n, text) for g, n, _, _, text in rows if g.startswith(("how", "serving"))]
    assert {n for n, _ in sums} >= {"step_time_s", "tokens_per_s", "mfu", "moe_layer_time_s", "g_mem_attn"}
    assert ("workload.prompt_len=1024" in sets) == ("ttft_s" in {n for n, _ in sums})
    for name, text in sums:
        assert text.endswith("✓"), (name, text)


@pytest.mark.parametrize("workload, mapping", [
    ({"mode": "decode", "B": 2, "seq_len": 2048, "prompt_len": 1000}, {}),
    ({"mode": "decode", "B": 3, "seq_len": 2048, "prompt_len": 512}, {"wafer_io": "sync"}),
    ({"mode": "prefill", "B": 2, "seq_len": 1000}, {"wafer_io": "sync"}),
])
def test_sram_serving_ttft_adds_up_with_numbers(workload, mapping):
    """TTFT of SRAM serving is written out in numbers that add up (t1 and β at the prompt's context, the I/O
    stalls), as every other line of the breakdown, not as a formula without values."""
    cfg = {"name": "e", "hardware": {"preset": "cs3", "weight_source": "sram"}, "model": "llama-3.1-8b",
           "workload": workload, "mapping": mapping}
    row, rows = breakdown(cfg, 0)
    sums = {n: text for g, n, _, _, text in rows if g.startswith("how a token")}
    assert "ttft_s" in sums and "β" in sums["ttft_s"], sums
    for name, text in sums.items():
        assert name == "bound" or text.endswith("✓"), (name, text)
    if mapping:   # σ is written out where the wafer I/O stalls
        assert "σ" in sums["ttft_s"]


def test_breakdown_shows_kernel_launches_collective_latencies_and_formats():
    """NVL72 decode at TP 8 with FP8 experts: the layer formula carries the stages' kernel launches (MLA attention 8,
    MoE block 4: 12 µs), the phases their fixed software latencies, and the precision group the formats with their
    bytes and the peaks they run at."""
    cfg = {"name": "e", "hardware": "nvl72", "model": "deepseek-v3", "mapping": {"tp": 8},
           "workload": {"mode": "decode", "seq_len": 4096, "tokens_per_device": 8, "expert_weight_format": "fp8"}}
    row, rows = breakdown(cfg, 0)
    text = {n: t for g, n, _, _, t in rows}
    value = {n: v for g, n, v, _, _ in rows}
    assert "kernel launches 12 µs" in text["moe_layer_time_s"] and text["moe_layer_time_s"].endswith("✓")
    assert value["dispatch_fixed_s"] == value["combine_fixed_s"] == 26e-6 and value["allreduce_fixed_s"] == 4.5e-6
    precision = {n: (v, t) for g, n, v, _, t in rows if g.startswith("precision")}
    assert precision["workload.expert_weight_format"][0] == "fp8" and "[1 byte per value]" in \
        precision["workload.expert_weight_format"][1]
    assert precision["expert_peak_flops"][0] == 5e15 and precision["attention_peak_flops"][0] == 2.5e15
    assert text["mfu"].endswith("✓") and row["format_peak_flops"] > 2.5e15


def test_breakdown_notices_a_wrong_column(monkeypatch):
    from wsemoe.analysis.explain import addsup

    row = pd.Series({"moe_layer_time_s": 1.0, "attention_compute_s": 0.5, "moe_compute_s": 0.25,
                     "attention_weights_s": 0.1, "moe_weights_s": 0.1})
    time, _ = addsup._layer(row, "moe_layer", "layer", "none")
    assert time == 0.75 and addsup.check(time, 1.0).startswith("≠")


def test_point_out_of_range_and_bad_sets_are_one_line(runner):
    for args, needle in ((["--point", "32768"], "out of range"), (["--set", "workload.GG=2"], "did you mean"),
                         (["--set", "G"], "use --set section.field=value"), (["--set", "workload.G=0"], "greater than 0"),
                         (["--set", "model.num_experts_per_tok=999"], "exceeds")):
        r = runner.invoke(app, ["eval", "sweeps/bta_topk.yaml", *args])
        text = r.output.strip()
        assert r.exit_code != 0 and len(text.splitlines()) == 1 and needle in text, (args, text)


# ---------------------------------------------------------------- infeasible_reason

def test_infeasible_reason_gives_the_ratio_to_capacity(topk):
    points = pd.read_parquet(topk.path / "points.parquet")
    bad = points[~points["feasible"]]
    assert len(bad) > 0
    for _, r in bad.iterrows():
        g = {c: r[c] for c in ("g_mem_attn", "g_mem_moe")}
        worst = max(g, key=g.get)
        text = r["infeasible_reason"]
        assert ("attention-stage" if worst == "g_mem_attn" else "MoE-stage") in text
        ratio = float(text.split(" needs ")[1].split("×")[0])
        assert g[worst] + 1 <= ratio <= (g[worst] + 1) * 1.01  # rounded up: never reads as within capacity


def test_ratios_round_away_from_the_limit():
    bounds = {"g_x_max": 2.0, "g_y_min": 100.0}
    g = np.array([[0.0004, -1.0, -1.0], [-1.0, 0.5, -1.0], [-1.0, -1.0, 0.2]])
    reasons = feasibility.reasons(g.max(axis=1), g.argmax(axis=1).astype(np.int32), ["g_mem_attn", "g_y_min", "g_x_max"],
                                  bounds, np.array([False, False, False])).to_pandas()
    assert list(reasons) == ["attention-stage memory needs 1.01× the usable node memory (weights + training state "
                             "+ kept activations + KV cache + attention transient at B + BTA buffer + prefetched "
                             "weights; eval splits them)",
                             "y is 0.5× its configured minimum (100)",
                             "x is 1.2× its configured maximum (2)"]


def test_reasons_formatted_once_read_the_same_as_formatted_afresh(monkeypatch):
    """Reasons come from a per-process cache: chunk after chunk (the same ratios under two bounds read
    differently), and after the cache overflows and starts over, each reads exactly as `_texts` formats it."""
    monkeypatch.setattr(feasibility, "_TEXTS", {})
    rng = np.random.default_rng(3)
    for limit, bound, g in ((1000, 5.0, rng.uniform(0.001, 3.0, 40).round(2)), (1000, 2.0, None), (1000, 5.0, None),
                            (5, 2.0, rng.uniform(3.0, 9.0, 40).round(2)), (5, 5.0, None)):
        monkeypatch.setattr(feasibility, "MAX_TEXTS", limit)
        g = ratios if g is None else g
        ratios, keys = g, feasibility._rounded_keys(g + 1.0, False)
        got = feasibility.reasons(g, np.zeros(40, dtype=np.int32), ["g_x_max"], {"g_x_max": bound},
                                  np.zeros(40, dtype=bool)).values()
        want = feasibility._texts("g_x_max", [feasibility._key_value(int(k)) for k in keys], bound)
        assert list(got) == want
        assert len(feasibility._TEXTS) <= (80 if limit > 80 else 40)  # two bounds' reasons; else started over


def test_user_constraints_read_as_ratios():
    cfg = {"name": "u", "hardware": "cs2", "model": "qwen3-30b-a3b", "workload": {"seq_len": 2048},
           "axes": {"workload.B": [1, 8]}, "constraints": [{"column": "step_time_s", "max": 0.1}]}
    df = wsemoe.evaluate(cfg)
    r = df.iloc[0]
    assert "step_time_s is" in r["infeasible_reason"] and "configured maximum (0.1)" in r["infeasible_reason"]
    assert float(r["infeasible_reason"].split(" is ")[1].split("×")[0]) >= r["step_time_s"] / 0.1


def test_parts_with_few_then_many_reasons_read_as_one_dataset(tmp_path):
    """pandas codes a categorical in 8 bits up to 127 categories and wider beyond; a first part with few
    reasons and a later one with many must still read as one table, so parts use one index width."""
    from wsemoe.store.block import Block, Labels
    from wsemoe.store.partfile import to_bytes as part_bytes

    few = Block(np.arange(0, 100), {"infeasible_reason": Labels(np.tile(np.arange(2, dtype=np.int32), 50), ["a", "b"])})
    many = Block(np.arange(100, 400), {"infeasible_reason": Labels(np.arange(300, dtype=np.int32),
                                                                   [f"needs {i}×" for i in range(300)])})
    folder = tmp_path / "points.parquet"
    folder.mkdir()
    (folder / "part-000000000000-000000000100.parquet").write_bytes(part_bytes(few))
    (folder / "part-000000000100-000000000400.parquet").write_bytes(part_bytes(many))
    df = pd.read_parquet(folder).sort_index()
    assert len(df) == 400 and df["infeasible_reason"].iloc[0] == "a" and df["infeasible_reason"].iloc[-1] == "needs 299×"


@settings(max_examples=300)
@given(st.lists(st.floats(min_value=1e-300, max_value=1e300, allow_nan=False), min_size=1, max_size=50),
       st.booleans())
def test_rounded_ratios_never_cross_the_limit_side(ratios, below):
    """Three significant digits, up above the limit and down below it: the text never reads closer to the
    limit than the value is, and never more than one step away."""
    r = np.asarray(ratios)
    keys = feasibility._rounded_keys(r, below)
    shown = np.array([float(f"{feasibility._key_value(k):.3g}") for k in keys])
    if below:
        assert np.all(shown <= r * (1 + 1e-12)) and np.all(shown >= r * (1 - 1e-2) * (1 - 1e-12))
    else:
        assert np.all(shown >= r * (1 - 1e-12)) and np.all(shown <= r * (1 + 1e-2) * (1 + 1e-12))
    uniq, inverse = feasibility._factorize(keys)
    assert np.array_equal(uniq[inverse], keys) and np.all(np.diff(uniq) > 0)


def test_time_rows_say_what_they_are_and_each_shows_its_unit(topk):
    """The group holds per-layer stage terms and once-per-step head terms of one micro-batch step; no heading
    claims a unit its rows do not use (each value is shown in ms, µs or s by its size)."""
    from wsemoe.report.terminal import formats

    _, rows = breakdown(topk.path / "config.yaml", 0)
    times = [r for r in rows if r[0].startswith("times of one micro-batch step")]
    assert times and not any("(s)" in r[0] for r in rows)
    head = {r[1]: r[4] for r in times if r[1].startswith("head_")}
    assert head and all("once per micro-batch step" in doc for doc in head.values())
    shown = {formats.quantity(r[2], r[3])[1] for r in times if r[2]}
    assert shown & {"ms", "µs"}  # values in readable units under a heading that names none


def test_a_memory_reason_names_every_term_of_its_sum():
    """moentwine_vs_nvl72's GPU decode points are infeasible mostly by their KV cache (98% of the attention
    stage's bytes), while the reason named only the transient, kept activations and BTA buffer."""
    for col in ("g_mem_attn", "g_mem_moe"):
        for term in ("weights", "training state", "kept activations", "KV cache", "eval splits them"):
            assert term in feasibility.REASONS[col], (col, term)


def test_an_override_is_checked_against_the_points_own_hardware():
    """A sweep over a mesh (the base) and a switch: a switch field set on the switch's point was refused as
    'applies to a switch topology, not to a mesh' (checked against the sweep's base hardware); on the mesh's
    point it is still refused."""
    import wsemoe
    from wsemoe.analysis.explain.point import point_config
    from wsemoe.errors import ConfigError

    cfg = wsemoe.load_config({"name": "two", "hardware": "wsc-b200-8x8", "model": "qwen3-30b-a3b",
                              "workload": {"mode": "decode", "B": 4, "seq_len": 4096},
                              "axes": {"hardware": ["wsc-b200-8x8", "nvl72"]}})
    one, values, typed = point_config(cfg, 1, {"hardware.scale_out_bw_bytes_per_s": 1e11})
    assert values["hardware"] == "nvl72" and typed == {"hardware.scale_out_bw_bytes_per_s": 1e11}
    with pytest.raises(ConfigError, match="switch"):
        point_config(cfg, 0, {"hardware.scale_out_bw_bytes_per_s": 1e11})


def test_eval_json_carries_every_float_exactly_as_the_api_gives_it(runner):
    """`eval -F json` wrote pandas' to_json with 15 significant digits (0.016672474453333 for
    0.016672474453333332): the CLI and the API differed in the last bits. Now every finite float reads back to the
    API's very double, NaN as null (JSON has none)."""
    import json
    import math

    r = runner.invoke(app, ["eval", "--hardware", "cs2", "--model", "qwen3-30b-a3b", "-F", "json"])
    assert r.exit_code == 0, r.output
    shown = {(x["group"], x["term"]): x["value"] for x in json.loads(r.output)}
    _, terms = wsemoe.explain(hardware="cs2", model="qwen3-30b-a3b")
    floats = [(k, v) for *k, v, _, _ in terms if isinstance(v, float)]
    assert len(floats) > 50
    for key, value in floats:
        assert shown[tuple(key)] == value if math.isfinite(value) else shown[tuple(key)] is None, key


def test_a_prefill_only_sram_point_defaults_to_objectives_it_has():
    """`evaluate(point_config('cs3', 'qwen3-30b-a3b', [weight_source=sram, mode=prefill]))` was refused with
    "unknown objective column 'tokens_per_s_per_user'": the SRAM-serving default objectives are decode's. A sweep
    that only prefills defaults to aggregate tokens/s and the time to first token; one that sweeps the mode keeps
    the decode defaults (its decode rows carry them)."""
    import wsemoe
    from wsemoe.config.loader import load_config

    cfg = wsemoe.point_config("cs3", "qwen3-30b-a3b", ["hardware.weight_source=sram", "workload.mode=prefill"])
    assert load_config(cfg).objectives == {"tokens_per_s": "max", "ttft_s": "min"}
    row = wsemoe.evaluate(cfg).iloc[0]
    assert bool(row["feasible"]) and row["ttft_s"] > 0
    swept = {**cfg, "axes": {"workload.mode": ["decode", "prefill"]}}
    assert "tokens_per_s_per_user" in load_config(swept).objectives


def test_an_sram_prefill_says_its_rate_from_its_ttft(runner):
    # the prompts are the step: tokens_per_s = B·seq_len / ttft_s, said and checked (the decode formulas beside
    # step_latency_s and tokens_per_s gave ~700 µs and 203 tokens/s where the columns held 19.7 ms and 415k)
    r = runner.invoke(app, ["eval", "--hardware", "cs3", "--model", "qwen3-30b-a3b", "--set",
                            "hardware.weight_source=sram", "--set", "workload.mode=prefill", "--set", "workload.B=4"])
    assert r.exit_code == 0, r.output
    text = " ".join(r.output.split())   # the table wraps to the terminal's width
    assert re.search(r"4 prompts × 2,048 tokens / TTFT = [0-9,.]+ ✓", text) and "✗" not in text, r.output


def test_a_rule_an_override_breaks_names_the_override():
    """--set hardware.rows=3 on the 8×8 die wafer leaves 3·8 = 24 nodes: the sweep's own tp 16 (which divided its 64
    nodes) no longer divides them, and a rows × cols past the CS-3's 1,172 × 762 PE fabric splits it below one PE.
    Each is the --set's doing: the error names it, not the sweep's axis [axes -> mapping.tp] or the --hardware
    preset whose fields were fine."""
    from wsemoe.analysis.explain.point import resolve
    from wsemoe.errors import ConfigError
    sweep = {"name": "s", "hardware": "wsc-b200-8x8", "model": "deepseek-v3", "workload": {"mode": "decode"},
             "axes": {"mapping.tp": [16]}}
    with pytest.raises(ConfigError, match="does not divide the 24 nodes") as e:
        resolve(sweep, 0, ["hardware.rows=3"])
    assert e.value.loc == ("--set", "hardware.rows")
    with pytest.raises(ConfigError, match="narrower than one PE") as e:
        resolve(None, 0, ["hardware.rows=100000"], hardware="cs3", model="qwen3-30b-a3b")
    assert e.value.loc == ("--set", "hardware.rows")
