"""Readings analysis: robustness summaries are right by hand (range, main effects, flips, a design screened one
reading at a time, the budget in distinct configs), a comparison of folders flips with a reading, and the
evidence behind the attention-kernel reading holds (the reading the BTA speedup hinges on). How the commands,
the report, the figure and the API show or refuse it: tests/test_readings_shown.py."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

import wsemoe
from wsemoe.analysis.uncertainty import readings as rd
from wsemoe.analysis.uncertainty import robustness
from wsemoe.cli import app
from wsemoe.config import readings as registry
from wsemoe.config.loader import load_config

SMALL = {"name": "small", "hardware": "cs2", "model": "qwen3-30b-a3b",
         "workload": {"mode": "train", "seq_len": 4096, "attn_kernel": "materialized"},
         "sparsity": {"vary": "num_experts_per_tok", "values": [8, 2], "hold": "active"},
         "axes": {"workload.B": [1, 2, 4], "workload.G": [1, 4, 16]},
         "compare": {"name": "uniform", "baseline": {"workload.G": 1}}}

# ---- robustness by hand ------------------------------------------------------------------------------------

def _hand_result() -> rd.Readings:
    """Two readings A (a0 configured, a1) and B (b0 configured, b1); the ratio at each combination:
    (a0,b0) 2.0  (a0,b1) 0.5  (a1,b0) 1.5  (a1,b1) 0.8; defaults a1 and b0."""
    grid = {("a0", "b0"): 2.0, ("a0", "b1"): 0.5, ("a1", "b0"): 1.5, ("a1", "b1"): 0.8}
    runs = [{"run": 0, "role": "configured", "label": "as configured", "key": "k0", "A": "a0", "B": "b0"}]
    runs += [{"run": i + 1, "role": "combination", "label": f"A={a}, B={b}", "key": f"k{a}{b}", "A": a, "B": b}
             for i, (a, b) in enumerate(grid)]
    runs += [{"run": 5, "role": "alone", "label": "A=a1", "key": "ka1b0", "A": "a1", "B": "b0"},
             {"run": 6, "role": "alone", "label": "B=b1", "key": "ka0b1", "A": "a0", "B": "b1"}]
    value = {r["run"]: grid[(r["A"], r["B"])] for r in runs}
    values = pd.DataFrame([{"run": r, "quantity": "speedup_vs_x", "group": "all", "value": v} for r, v in value.items()])
    meta = {"readings": [{"name": "A", "state": "varied", "default": "a1", "configured": "a0", "options": ["a0", "a1"]},
                         {"name": "B", "state": "varied", "default": "b0", "configured": "b0", "options": ["b0", "b1"]}],
            "comparison": {"name": "x", "metric": "m", "quantity": "speedup_vs_x", "extents": {}}, "fixed": {}}
    return rd.Readings(pd.DataFrame(runs), values, meta)


def test_robustness_of_a_hand_made_comparison():
    s = robustness.summarize(_hand_result()).iloc[0]
    assert (s["configured"], s["default"], s["low"], s["high"]) == (2.0, 1.5, 0.5, 2.0)
    # Main effects on log values: A: mean(ln 2, ln 0.5) = 0 against mean(ln 1.5, ln 0.8) = ln(1.2)/2;
    # B: mean(ln 2, ln 1.5) = ln(3)/2 against mean(ln 0.5, ln 0.8) = ln(0.4)/2, a spread of ln(7.5)/2.
    assert s["hinge"] == "B" and s["effect"] == pytest.approx(math.sqrt(7.5))
    assert "A 1.1×" in s["effects"] and "B 2.74×" in s["effects"]
    # B=b1 alone puts the ratio behind 1 (0.5); A=a1 alone keeps it ahead (1.5); two of four combinations flip
    assert s["flips"] == "B=b1 (0.50×, behind)" and s["flipped"] == 2
    line = robustness.statement(_hand_result())[0]
    assert line == ("speedup_vs_x: 2.00× as configured; 1.50× at the default readings; 0.50×–2.00× over 4 "
                    "combinations of A, B; flips from ahead with B=b1 (0.50×, behind); hinges on B (main effect 2.74×)")


def test_equal_values_are_not_the_default_readings():
    """A sweep configured off its defaults (A=a0, default a1) whose ratio happens to equal the defaults' (2.0 at
    both, as flash ties per_head at 1.00× on bta_topk's top-k 8) is not '= the default readings': both are said."""
    r = _hand_result()
    r.values.loc[r.values["run"].isin([3, 5]), "value"] = 2.0   # (a1, b0): the default readings' run and A=a1 alone
    line = robustness.statement(r)[0]
    assert "(= the default readings)" not in line
    assert line.startswith("speedup_vs_x: 2.00× as configured; 2.00× at the default readings; ")
    r.meta["readings"][0]["default"] = "a0"   # now the configured sweep is the defaults' run
    assert robustness.statement(r)[0].startswith("speedup_vs_x: 2.00× as configured (= the default readings); ")


def test_a_range_that_prints_as_one_value_is_said_as_one():
    """Every combination at 1.00× as printed (0.996× and 1.004×) read '1.00×–1.00× over 4 combinations', and a
    candidate ahead in both groups at every run '2–2 over the combinations': a spread that is not there."""
    r = _hand_result()
    r.values["value"] = [0.996 if i % 2 else 1.004 for i in range(len(r.values))]
    line = robustness.statement(r)[0]
    assert "1.00× over 4 combinations" in line and "1.00×–1.00×" not in line, line
    r.values = pd.concat([r.values.assign(value=2.0), r.values.assign(value=2.0, group="other")], ignore_index=True)
    lines = robustness.statement(r)
    assert any("candidate ahead in 2 of 2 groups as configured; 2 over the combinations" in x for x in lines), lines
    assert not any("2–2" in x for x in lines), lines


def test_an_undefined_combination_is_not_on_another_side():
    """A combination where a side has no feasible point (NaN ratio) is counted as undefined, not as a flip: of the
    four, (a0,b1) at 0.5 is behind and (a1,b1) now undefined; only one is on another side."""
    r = _hand_result()
    r.values.loc[r.values["run"] == 4, "value"] = math.nan   # (a1, b1)
    s = robustness.summarize(r).iloc[0]
    assert (s["flipped"], s["undefined"], s["combinations"]) == (1, 1, 4)


@settings(max_examples=15)
@given(st.lists(st.floats(0.05, 20.0), min_size=6, max_size=6), st.permutations([0, 1, 2]))
def test_main_effects_ignore_option_order_and_direction(vals, order):
    """A 2×3 factorial: the hinge's effect is the largest, the effects of 1/x equal those of x (log scale), and
    listing the options in another order changes nothing."""
    def result(values, opts_b):
        runs = [{"run": 0, "role": "configured", "label": "as configured", "key": "c", "A": "a0", "B": "b0"}]
        runs += [{"run": 1 + 3 * i + j, "role": "combination", "label": "", "key": f"{i}{j}", "A": f"a{i}",
                  "B": opts_b[j]} for i in range(2) for j in range(3)]
        v = pd.DataFrame([{"run": 0, "quantity": "q", "group": "g", "value": values[0]}] +
                         [{"run": 1 + k, "quantity": "q", "group": "g", "value": values[k]} for k in range(6)])
        meta = {"readings": [{"name": "A", "state": "varied", "default": "a0"},
                             {"name": "B", "state": "varied", "default": "b0"}], "comparison": None}
        return robustness.summarize(rd.Readings(pd.DataFrame(runs), v, meta)).iloc[0]
    b = ["b0", "b1", "b2"]
    base = result(vals, b)
    flipped = result([1 / v for v in vals], b)
    shuffled = result([vals[3 * i + order[j]] for i in range(2) for j in range(3)], [b[k] for k in order])
    assert flipped["effect"] == pytest.approx(base["effect"]) and flipped["hinge"] == base["hinge"]
    assert shuffled["effect"] == pytest.approx(base["effect"])
    assert base["low"] == min(vals) and base["high"] == max(vals)


def test_flips_elsewhere_name_a_few_groups_and_count_the_rest():
    """A reading flipping the ratio in many other groups: the first three named, the rest counted; few: all named."""
    import pandas as pd

    from wsemoe.analysis.uncertainty import robustness

    groups = [f"k={k}" for k in range(10)]
    flips = ["d2d=per_die (0.5×)"] * 9 + [""]
    flips[0] = "d2d=per_die (0.5×); mla=sharded (1.2×)"
    summary = pd.DataFrame({"quantity": "q", "group": ["head", *groups[:9]], "flips": ["", *flips[:9]]})
    text = robustness._elsewhere(summary, "q", "head")
    assert text == ("d2d=per_die flips it at k=0, k=1, k=2 and 6 more of the 9 other groups; "
                    "mla=sharded flips it at k=0")
    two_keys = summary.assign(group=summary["group"].str.replace(r"k=(\d)", r"model=m\1, B=\1", regex=True))
    assert robustness._elsewhere(two_keys, "q", "head").endswith(   # one group's comma is not the list's comma
        "mla=sharded flips it at (model=m0, B=0)")


# ---- on shipped sweeps, folders and the registry's evidence ------------------------------------------------

def test_bta_topk_hinges_on_the_attention_kernel():
    result = wsemoe.robustness("sweeps/bta_topk.yaml")
    s = result.summary()
    row = s[(s["quantity"] == "speedup_vs_uniform") & (s["group"] == "num_experts_per_tok=1")].iloc[0]
    assert row["hinge"] == "attn_kernel" and row["configured"] == pytest.approx(row["default"])  # per_head
    assert row["combinations"] == 18 and row["low"] == pytest.approx(1.0, abs=0.01)
    assert row["high"] == pytest.approx(18.93, rel=1e-3)  # every head's scores held with their dP (8.202× before)
    # every run is a whole sweep: distinct configs once (hold=width and total are one config at fixed E)
    assert result.meta["evaluated"] == 12 and result.meta["runs"] == 24


def test_compare_of_folders_flips_with_a_reading(runner, tmp_path):
    """cs3 (at its SIMD MAC rate, ahead) against cs2 by tokens/s: a reading (here a user registry) that cuts cs3's
    matmul efficiency to a tenth puts cs3 behind; it applies to cs3 only, so its rule keeps cs2 as it is."""
    reg = {"cs3_efficiency": {"question": "q?", "default": "nominal", "why": "w", "applies_to": {"hardware.name": ["cs3"]},
                              "options": {"nominal": {"set": {"hardware.matmul_efficiency": 0.5}, "evidence": "e", "source": "s"},
                                          "tenth": {"set": {"hardware.matmul_efficiency": 0.05}, "evidence": "e", "source": "s"}}}}
    (tmp_path / "readings.yaml").write_text(yaml.safe_dump(reg))
    custom = registry.load(tmp_path / "readings.yaml")
    wafer = {"cs2": "cs2", "cs3": {"preset": "cs3", "pe": {"mac_memory_operands": 0}}}   # cs3 at its SIMD rate
    folders = [wsemoe.run_sweep({**SMALL, "name": n, "hardware": wafer[n], "objectives": {"tokens_per_s": "max"}},
                                out_root=tmp_path).path for n in ("cs2", "cs3")]
    cmp = wsemoe.compare(folders)
    from wsemoe.analysis.uncertainty.folder_readings import evaluate_folders

    result = evaluate_folders(folders, cmp, readings=custom)
    s = result.summary()
    assert set(s["hinge"]) == {"cs3_efficiency"} and (s["configured"] > 1).all() and (s["low"] < 1).all()
    assert all("cs3_efficiency=tenth" in f for f in s["flips"])
    r = runner.invoke(app, ["compare", *map(str, folders)], env={"COLUMNS": "1000"})
    assert r.exit_code == 0 and "cs3/cs2:tokens_per_s:" in r.output and "as configured" in r.output


def test_the_attention_kernel_evidence_holds():
    """What the registry says of Cerebras' shipped micro-batches on cs2, recomputed: with every head's scores
    6 of 7 do not fit, one head's at a time all fit (largest need 0.74 of SRAM, Mixtral-8x7B's MoE stage with the
    backward's deltas; 0.66 before them), and a KV-head group at once (4 heads for Mixtral-8x7B) does not fit it."""
    from wsemoe.analysis.uncertainty.shipped import calibration_models, max_batch, memory_at
    from wsemoe.config.presets import load_hardware
    from wsemoe.specs import WorkloadSpec

    hw = load_hardware("cs2")
    fields, models = calibration_models()
    fits = {}
    for kernel in ("materialized", "per_head", "flash"):
        wl = {m.name: WorkloadSpec(seq_len=seq, **{**fields, "attn_kernel": kernel}) for _, seq, _, m in models}
        fits[kernel] = {m.name: max_batch(hw, m, wl[m.name]) >= mb for _, _, mb, m in models}
        if kernel == "per_head":
            need = {m.name: float(memory_at(hw, m, wl[m.name], mb)["mem_peak_node_bytes"]) / hw.node_memory_bytes
                    for _, _, mb, m in models}
    # every head's scores with their dP refute six of seven (five before the backward's dP was charged)
    assert [n for n, ok in fits["materialized"].items() if ok] == ["gpt3-xl"]
    assert all(fits["per_head"].values()) and all(fits["flash"].values())
    assert max(need, key=need.get) == "mixtral-8x7b" and round(max(need.values()), 2) == 0.74
    mixtral = next(m for _, _, _, m in models if m.name == "mixtral-8x7b")
    group = mixtral.num_attention_heads // mixtral.num_key_value_heads  # 4 query heads per KV head
    wl = WorkloadSpec(seq_len=32768, **{**fields, "attn_kernel": "per_head"})
    grouped = memory_at(hw, mixtral, wl, 4)["mem_attn_transient_node_bytes"] + \
        (group - 1) * 2 * 32768 * 32768 * 4 / hw.nodes  # the other heads of the group: 2·S bytes per token each
    assert grouped > hw.node_memory_bytes * hw.memory_usable_fraction


def test_per_head_scores_hold_one_head():
    """Attention transient per node at B sequences of S tokens in training: (11·H + 2·H + 4·h·S)·B·S / N bytes
    (16-bit: the linear terms, the tile's norm input, 2 bytes a score without attention dropout and 2 of its
    backward's dP beside it), h = n_h materialized, 1 per_head, and no score term with flash."""
    cfg = load_config({"name": "kernels", "hardware": "cs2", "model": "qwen3-30b-a3b",
                       "workload": {"mode": "train", "seq_len": 4096, "B": 2},
                       "axes": {"workload.attn_kernel": ["materialized", "per_head", "flash"]}})
    df = wsemoe.evaluate(cfg).set_index("workload.attn_kernel")["mem_attn_transient_node_bytes"]
    H, S, heads, N = 2048, 4096, 32, 84
    for kernel, h in (("materialized", heads), ("per_head", 1), ("flash", 0)):
        assert df[kernel] == pytest.approx((13 * H + 4 * h * S) * 2 * S / N)
    assert np.isfinite(df).all()


def test_a_factorial_too_large_to_run_is_screened_one_reading_at_a_time(monkeypatch):
    """Over MAX_COMBINATIONS (cerebras_serving's 12 readings make 9,216) the robustness was "not computable": only
    a what-if over a few readings (--only) ran, never stored. Now the design is the configured sweep and each
    reading moved alone: its runs are counted so, show names the command that stores it, and the statement says
    the range is one reading at a time with the interactions unseen; a reading's effect is the spread of its own
    runs (configured and alone), and a flip is a reading alone putting the ratio on the other side."""
    monkeypatch.setattr(rd, "MAX_COMBINATIONS", 100)
    cfg = load_config("sweeps/moentwine_vs_nvl72.yaml")
    varied = [s for s in registry.plan(cfg, registry.load()) if s.varied]
    assert rd.cost(cfg)[0] == 1 + sum(len(s.reading.options) - 1 for s in varied)
    text = rd.how_to_compute(cfg, "results/x")
    assert text.startswith("not computed; `wsemoe readings results/x` computes it one reading at a time (")
    assert "exceed 100" in text and "--only NAME" in text
    named = text.rsplit("of: ", 1)[1].split(", ")
    assert set(named) == {s.reading.name for s in varied}
    monkeypatch.setattr(rd, "MAX_COMBINATIONS", 512)
    assert rd.how_to_compute(cfg, "results/x") == "not computed; `wsemoe readings results/x` computes it"

    monkeypatch.setattr(rd, "MAX_COMBINATIONS", 2)
    result = wsemoe.robustness(SMALL)
    assert set(result.runs["role"]) == {"configured", "alone"} and robustness.screened(result)
    assert result.meta["screened"].endswith("exceed 2")
    summary = robustness.summarize(result)
    q = "speedup_vs_uniform"
    row = robustness.headline(summary, q)
    v = result.values[(result.values["quantity"] == q) & (result.values["group"] == row["group"])].merge(result.runs)
    conf = float(v.loc[v["role"] == "configured", "value"].iloc[0])
    for name in result.varied:   # each reading's effect: the spread of log ratio over its configured and alone runs
        own = [conf, *v.loc[v["label"].str.startswith(f"{name}="), "value"]]
        assert f"{name} {math.exp(np.log(max(own)) - np.log(min(own))):.3g}×" in row["effects"]
    assert row["low"] == min(v["value"]) and row["high"] == max(v["value"]) and row["combinations"] == len(v)
    line = robustness.statement(result, summary, q)[0]
    assert f"over {len(v)} runs one reading at a time of " in line and "interactions unseen" in line, line
    assert "combinations do" not in line


def test_runs_of_coinciding_configs_count_once_against_the_budget(tmp_path):
    """A reading whose every option sets what cs3 already has triples the design's runs but not the configs
    evaluated (`execute` evaluates equal configs once), so the budget counts distinct configs: the cs3/cs2
    comparison is computed at exactly their evaluations and refused one below, naming both counts; the
    single-sweep cost counts the same way once the designed runs exceed the budget."""
    reg = {"cs3_efficiency": {"question": "q?", "default": "nominal", "why": "w", "applies_to": {"hardware.name": ["cs3"]},
                              "options": {"nominal": {"set": {"hardware.matmul_efficiency": 0.5}, "evidence": "e", "source": "s"},
                                          "tenth": {"set": {"hardware.matmul_efficiency": 0.05}, "evidence": "e", "source": "s"}}},
           "moot": {"question": "q?", "default": "a", "why": "w", "applies_to": {"hardware.name": ["cs3"]},
                    "options": {o: {"set": {"hardware.inter_wafer_hop_latency_s": 2.0e-6}, "evidence": "e", "source": "s"}
                                for o in ("a", "b", "c")}}}   # cs3's own value, by every option: no config moves
    (tmp_path / "readings.yaml").write_text(yaml.safe_dump(reg))
    custom = registry.load(tmp_path / "readings.yaml")
    folders = [wsemoe.run_sweep({**SMALL, "name": n, "hardware": n, "objectives": {"tokens_per_s": "max"}},
                                out_root=tmp_path).path for n in ("cs2", "cs3")]
    from wsemoe.analysis.uncertainty.folder_readings import evaluate_folders

    cmp = wsemoe.compare(folders)
    size = load_config(folders[0] / "config.yaml").size()
    designed = len(rd.design([st for st in registry.plan(load_config(folders[1] / "config.yaml"), custom) if st.varied]))
    assert designed > 2   # the 2 × 3 factorial and its one-at-a-time runs; 2 distinct configs on cs3, 1 on cs2
    exact = (2 + 1) * size
    assert not isinstance(evaluate_folders(folders, cmp, readings=custom, budget=exact), str)
    refused = evaluate_folders(folders, cmp, readings=custom, budget=exact - 1)
    assert isinstance(refused, str) and f"{exact:,} evaluations of distinct configs" in refused, refused
    cs3 = load_config(folders[1] / "config.yaml")
    assert rd.cost(cs3, readings=custom) == (designed, designed * size)
    assert rd.cost(cs3, readings=custom, budget=0) == (2, 2 * size)
