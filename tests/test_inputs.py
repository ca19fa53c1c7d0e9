"""Reading a sweep file: axis expansion edge cases, long numeric axes, axis paths, spec validation, loader and
cross-field rules, the sparsity and comparison sections, options a command would drop. Each test asserts the
values produced or the one-line error (its key path and message). The files a sweep names (histogram CSVs,
Hugging Face config.json): tests/test_inputs_files.py."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import pytest
import yaml

import wsemoe
from wsemoe.cli import app
from wsemoe.config import axes as axes_mod
from wsemoe.errors import ConfigError, WsemoeError
from wsemoe.specs import WorkloadSpec
from wsemoe.specs.base import build

BASE = {"name": "inp", "hardware": "cs2", "model": "qwen3-30b-a3b", "workload": {"mode": "train", "seq_len": 2048}}


def _load(**extra):
    return wsemoe.load_config({**BASE, **extra})


def _error(**extra) -> WsemoeError:
    with pytest.raises(WsemoeError) as exc:
        _load(**extra)
    return exc.value


def _axis(path, spec):
    return _load(axes={path: spec}).axes[path]


# ------------------------------------------------------------------ range and pow2

@pytest.mark.parametrize("path, spec, want", [
    ("workload.G", {"range": [2, 10, 4]}, [2, 6, 10]),
    ("workload.G", {"range": [2, 8], "step": 2.0}, [2, 4, 6, 8]),                # a float step, whole values
    ("hardware.matmul_efficiency", {"range": [0.1, 0.3, 0.1]}, [0.1, 0.2, 0.3]),  # last value survives rounding
    ("hardware.matmul_efficiency", {"range": [0.25, 1], "step": 0.25}, [0.25, 0.5, 0.75, 1.0]),
    ("workload.G", {"pow2": [3, 64]}, [4, 8, 16, 32, 64]),
    ("workload.G", {"pow2": [1.5, 8.5]}, [2, 4, 8]),
    ("workload.G", {"pow2": [1, 1]}, [1]),
])
def test_range_and_pow2_expand_inclusively(path, spec, want):
    got = _axis(path, spec)
    assert got == pytest.approx(want, rel=1e-15)
    assert [type(v) for v in got] == [type(w) for w in want]   # typed by the spec: int for G, float for eff


@pytest.mark.parametrize("spec, where, needle", [
    ({"range": ["a", 4]}, ("range", "0"), "expected a number, got 'a'"),
    ({"range": [1, True]}, ("range", "1"), "expected a number, got True"),
    ({"range": [1, 4], "step": "x"}, ("range", "step"), "expected a number"),
    ({"range": [1, 2.0**60]}, ("range", "1"), "magnitude at most 2**53"),
    ({"range": [1]}, ("range",), "range takes [start, stop]"),
    ({"range": [1, 4, 1], "step": 1}, ("range",), "range takes [start, stop]"),
    ({"range": "1..4"}, ("range",), "range takes [start, stop]"),
    ({"range": [4, 1]}, ("range",), "start <= stop and step > 0"),
    ({"range": [1, 4, 0]}, ("range",), "start <= stop and step > 0"),
    ({"range": [1, 2**53]}, ("range",), "range has 9.01e+15 values"),
    ({"range": [0, 1e6], "step": 0.5}, ("range",), "range has 2,000,001 values"),
    # a subnormal step: (stop - start) / step is inf, whose floor() was an internal error (OverflowError)
    ({"range": [0.3, 0.6], "step": 1e-320}, ("range",), "range has countless values"),
    ({"pow2": [1]}, ("pow2",), "pow2 takes [lo, hi]"),
    ({"pow2": [0, 4]}, ("pow2",), "0 < lo <= hi"),
    ({"pow2": [8, 4]}, ("pow2",), "0 < lo <= hi"),
    ({"pow2": [5, 7]}, ("pow2",), "no power of two lies in [5, 7]"),
    ({"pow2": [1, float("inf")]}, ("pow2", "1"), "finite number"),
    ({"values": [1, 2]}, (), "an axis takes a list of values"),
    ({"range": [1, 2], "pow2": [1, 2]}, (), "an axis takes a list of values"),
])
def test_bad_range_or_pow2_names_the_argument(spec, where, needle):
    err = _error(axes={"workload.G": spec})
    assert err.loc == ("axes", "workload.G", *where)
    assert needle in err.message


def test_too_many_values_in_one_list_axis():
    err = _error(axes={"workload.G": list(range(1, axes_mod.MAX_AXIS_VALUES + 2))})
    assert err.loc == ("axes", "workload.G") and "1,000,001 values" in err.message


# ------------------------------------------------------------------ long numeric axes (> FULL_CHECK values)

LONG = list(range(1, 601))
assert len(LONG) > axes_mod.FULL_CHECK


def test_long_integer_axis_is_typed_whole():
    assert _axis("workload.G", LONG) == LONG
    as_floats = _axis("workload.G", [float(v) for v in LONG])
    assert as_floats == LONG and all(type(v) is int for v in as_floats)
    eff = _axis("hardware.matmul_efficiency", [i / 600 for i in LONG])
    assert eff[0] == 1 / 600 and eff[-1] == 1.0 and all(type(v) is float for v in eff)


@pytest.mark.parametrize("index, value, needle", [
    (250, 70_000, "less than or equal to 65536"),      # above the bound, not at either end of the list
    (0, 0, "greater than 0"),                          # the smallest value breaks the lower bound
    (400, 2.5, "valid integer (got 2.5)"),
    (300, float("nan"), "not a finite number"),
    (599, float("inf"), "not a finite number"),
    (123, True, "got a boolean"),                      # a boolean is never a number, even in a long list
    (77, "eight", "valid integer"),                    # text: every value is checked on its own
])
def test_long_axis_error_names_the_offending_position(index, value, needle):
    values = list(LONG)
    values[index] = value
    err = _error(axes={"workload.G": values})
    assert err.loc[:3] == ("axes", "workload.G", str(index)), err.line()
    assert needle in err.message


def test_long_float_axis_checks_its_extremes():
    values = [i / 600 for i in LONG]
    values[42] = 1.5                                   # matmul_efficiency ≤ 1
    err = _error(axes={"hardware.matmul_efficiency": values})
    assert err.loc == ("axes", "hardware.matmul_efficiency", "42") and "less than or equal to 1" in err.message


# ------------------------------------------------------------------ axis paths

@pytest.mark.parametrize("axes, loc, needle", [
    ({"workload": [1, 2]}, ("axes", "workload"), "axis 'workload' needs a field"),
    ({"hardware": [1]}, ("axes", "hardware", "0"), "a preset axis takes preset names"),
    ({"model": ["qwen3-30b-a3b", "qwen3-30b-a3c"]}, ("axes", "model", "1"), "did you mean 'qwen3-30b-a3b'"),
])
def test_bad_axis_path(axes, loc, needle):
    err = _error(axes=axes)
    assert err.loc == loc and needle in err.message


def test_a_preset_axis_supplies_the_missing_base_section():
    cfg = wsemoe.load_config({k: v for k, v in BASE.items() if k != "hardware"} | {"axes": {"hardware": ["cs3", "cs2"]}})
    assert cfg.hardware.name == "cs3" and set(cfg.presets) == {"cs2", "cs3"}
    df = wsemoe.evaluate(cfg)
    assert df["hardware"].tolist() == ["cs3", "cs2"]
    alone = [wsemoe.evaluate(wsemoe.load_config({**BASE, "hardware": n}))["mfu"].iloc[0] for n in ("cs3", "cs2")]
    assert df["mfu"].tolist() == alone and alone[0] != alone[1]   # each point runs its own preset


# ------------------------------------------------------------------ loader and cross-field rules

@pytest.mark.parametrize("extra, loc, needle", [
    ({"zip": [{}]}, ("zip", "0"), "a zip group needs at least one axis"),
    ({"axes": {"workload.G": [1, 2]}, "zip": [{"workload.G": [1], "workload.B": [2]}]},
     ("axes", "workload.G"), "axis 'workload.G' is swept twice"),
    ({"hardware": "wsc-b200-8x8", "axes": {"mapping.tp": [4, 6]}}, ("axes", "mapping.tp"),
     "mapping.tp = 6 does not divide the 64 nodes"),
    ({"hardware": "wsc-b200-8x8", "mapping": {"tp": 24}}, ("mapping", "tp"), "mapping.tp = 24 does not divide"),
    ({"hardware": "wsc-b200-8x8", "mapping": {"tp": 32}, "axes": {"hardware.rows": [8, 6, 4]}},
     ("mapping", "tp"), "does not divide the 48 nodes"),
    ({"hardware": "wsc-b200-8x8", "mapping": {"tp": 16}, "axes": {"hardware": ["wsc-b200-8x8", "nvl72"]}},
     ("mapping", "tp"), "does not divide the 72 nodes"),
    ({"mapping": {"tp": 42}}, ("mapping", "tp"), "mapping.tp = 42 on a weight-streaming wafer"),
    ({"hardware": "wsc-b200-8x8", "mapping": {"tp": 16},
      "axes": {"hardware.weight_source": ["resident", "streamed"]}}, ("mapping", "tp"), "weight-streaming"),
    ({"hardware": "wsc-b200-8x8", "axes": {"mapping.tp": [4, 16], "hardware": ["wsc-b200-8x8", "cs2"]}},
     ("axes", "mapping.tp"), "mapping.tp = 16 does not divide the 84 nodes"),
    ({"balance": {"distribution": "histogram"}}, ("balance", "histogram"), "needs balance.histogram"),
])
def test_loader_and_cross_field_errors(extra, loc, needle):
    err = _error(**extra)
    assert err.loc == loc, err.line()
    assert needle in err.message


def test_tp_equal_to_the_wafer_is_accepted_on_a_streaming_wafer():
    cfg = _load(mapping={"tp": 84})
    assert wsemoe.evaluate(cfg)["step_time_s"].iloc[0] == wsemoe.evaluate(_load())["step_time_s"].iloc[0]
    ok = _load(hardware="wsc-b200-8x8", mapping={"tp": 64}, axes={"hardware.weight_source": ["resident", "streamed"]})
    assert ok.size() == 2


# ------------------------------------------------------------------ spec validation

@pytest.mark.parametrize("extra, loc, needle", [
    ({"workload": {"mode": "train", "recompute": True}}, ("workload", "recompute"), "got a boolean (True)"),
    ({"workload": {"mode": "train", "recompute": False}}, ("workload", "recompute"), "got a boolean (False)"),
    ({"mapping": {"ftd": [True, 2]}}, ("mapping", "ftd"), "got a boolean ([True, 2])"),
    ({"mapping": {"strategy": "explicit", "placement": [0, 1, False]}}, ("mapping", "placement"), "got a boolean"),
    ({"mapping": {"ftd": [1, 2, 3]}}, ("mapping", "ftd"), "at most 2 items"),
    ({"model": {"hidden_size": 1024}}, ("model", "num_hidden_layers"), "required field is missing"),
    ({"workload": {"seq_len": 2.5}}, ("workload", "seq_len"), "(got 2.5)"),
    ({"output": {"column": ["mfu"]}}, ("output", "column"), "unknown key 'column'; did you mean 'columns'?"),
    ({"constraints": [{"column": "mfu", "mx": 1}]}, ("constraints", "0", "mx"), "unknown key 'mx'"),
    # g divides by the bound: a subnormal one overflowed (numpy warnings on stderr, reasons citing 9.99989e-321)
    ({"constraints": [{"column": "step_time_s", "max": 1e-320}]}, ("constraints", "0"),
     "max 1e-320: a bound is 0 or of magnitude at least 1e-30"),
    ({"constraints": [{"column": "step_time_s", "min": -1e-31}]}, ("constraints", "0"), "min -1e-31: a bound is 0"),
])
def test_spec_errors_name_the_key(extra, loc, needle):
    err = _error(**extra)
    assert err.loc == loc, err.line()
    assert needle in err.message


def test_boolean_fields_still_take_booleans():
    cfg = _load(model={"preset": "qwen3-30b-a3b", "tie_word_embeddings": True})
    assert cfg.model.tie_word_embeddings is True
    assert wsemoe.parameter_counts(cfg.model)["total"] < wsemoe.parameter_counts(_load().model)["total"]


def test_build_refuses_a_non_mapping():
    with pytest.raises(ConfigError) as exc:
        build(WorkloadSpec, [("seq_len", 2048)], loc=("workload",))
    assert exc.value.loc == ("workload",) and "expected a mapping of WorkloadSpec fields, got list" in exc.value.message


@pytest.mark.parametrize("extra, hint", [
    ({"axes": {"workload.G": [1, 2]}, "compare": {"baseline": {"workload.G": 1}, "metrc": "mfu"}}, "'metric'"),
    ({"sparsity": {"vary": "num_experts", "values": [8], "hld": "total"}}, "'hold'"),
])
def test_did_you_mean_inside_optional_sections(extra, hint):
    err = _error(**extra)
    assert f"did you mean {hint}" in err.message


def test_errors_inside_pe_facts_name_the_pe_key():
    from wsemoe.config.presets import raw

    hw = raw("hardware", "cs2")
    hw["pe"] = {**hw["pe"], "fabric_row": 996}
    err = _error(hardware=hw)
    assert err.loc == ("hardware", "pe", "fabric_row")


def test_pe_facts_derive_the_node_figures_of_the_grid_they_are_given():
    """rows×cols set in the base section split the same fabric: node figures scale by 84/42."""
    a = _load().hardware
    b = _load(hardware={"preset": "cs2", "rows": 6}).hardware
    assert b.node_peak_flops == pytest.approx(2 * a.node_peak_flops, rel=1e-15)
    assert b.node_memory_bytes == pytest.approx(2 * a.node_memory_bytes, rel=1e-15)
    assert b.hop_latency_s == pytest.approx(max(996 / 6, 757 / 7) / 1.1e9, rel=1e-15)
    assert b.link_bw_bytes_per_s == math.floor(min(996 / 6, 757 / 7)) * 4 * 1.1e9


# ------------------------------------------------------------------ CLI: failures that are bugs

def test_an_internal_error_is_still_one_line_and_debuggable(runner, tmp_path, monkeypatch):
    """An unexpected exception is one `error: internal error (...)` line with exit 1; WSEMOE_DEBUG
    lets the traceback through."""
    from wsemoe.sweep import plan

    def boom(config, estimate=False):
        raise RuntimeError("boom")

    monkeypatch.setattr(plan, "check", boom)
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(yaml.safe_dump(BASE))
    res = runner.invoke(app, ["check", str(cfg)])
    assert res.exit_code == 1
    assert res.output.strip().splitlines() == [
        "error: internal error (RuntimeError: boom); rerun with WSEMOE_DEBUG=1 for a traceback"]
    monkeypatch.setenv("WSEMOE_DEBUG", "1")
    res = runner.invoke(app, ["check", str(cfg)])
    assert isinstance(res.exception, RuntimeError) and str(res.exception) == "boom"


# ------------------------------------------------------------------ sparsity, comparison and lists of names; options

def test_a_sparsity_value_twice_is_named_where_it_is_written():
    """It was reported at '[zip -> 0 -> 1] row (64, 768)': a zip the user never wrote."""
    with pytest.raises(ConfigError, match="appears twice") as exc:
        wsemoe.load_config({**BASE, "sparsity": {"vary": "num_experts", "values": [64, 64], "hold": "width"}})
    assert exc.value.loc[:2] == ("sparsity", "values")


@pytest.mark.parametrize("values,hold,ok", [([128, 1_048_576], "total", False), ([128, 65_536], "total", False),
                                            ([128, 256, 1024], "total", True), ([8, 1], "active", True)])
def test_the_sparsity_helper_holds_what_it_says_or_refuses(values, hold, ok):
    """hold: total at 1,048,576 experts set the width to 1 (from max(1, round(0.094))): total expert parameters
    10.7x the held value, silently. A whole width that misses the held one by more than 5% is refused."""
    vary = "num_experts" if hold == "total" else "num_experts_per_tok"
    cfg = {**BASE, "sparsity": {"vary": vary, "values": values, "hold": hold}}
    if not ok:
        with pytest.raises(ConfigError, match="misses by more than 5%") as exc:
            wsemoe.load_config(cfg)
        assert exc.value.loc == ("sparsity", "values", "1")
        return
    zipped = wsemoe.load_config(cfg).zip[-1]
    for n, f in zip(zipped[f"model.{vary}"], zipped["model.moe_intermediate_size"]):
        assert n * f == pytest.approx(values[0] * 768, rel=0.05)   # (active) experts × width: the base's


@pytest.mark.parametrize("extra,loc,needle", [
    ({"objectives": {}}, ("objectives",), "names no objective"),                # read as the defaults, unsaid
    ({"compare": {"over": ["workload.B", "workload.B"]}}, ("compare", "over"), "named twice"),
    ({"pareto": {"group_by": ["model", "model"]}}, ("pareto", "group_by"), "named twice"),
])
def test_empty_or_repeated_lists_of_names_are_refused(extra, loc, needle):
    with pytest.raises(ConfigError, match=needle) as exc:
        wsemoe.load_config({**BASE, "axes": {"workload.B": [1, 2]}, **extra})
    assert tuple(exc.value.loc[:len(loc)]) == loc


def test_a_candidate_equal_to_the_baseline_is_refused():
    """`compare: {baseline: {workload.G: 1}, candidate: {workload.G: 1}}` gave 1.00x by construction."""
    cfg = {**BASE, "axes": {"workload.G": [1, 2]},
           "compare": {"baseline": {"workload.G": 1}, "candidate": {"workload.G": 1}}}
    with pytest.raises(ConfigError, match="1.00× by construction"):
        wsemoe.load_config(cfg)


@pytest.mark.parametrize("args,needle", [
    (["readings", "sweeps/quickstart.yaml", "--set", "attn_kernel=flash", "--only", "attn_kernel"], "give one"),
    (["readings", "sweeps/quickstart.yaml", "-e"], "without a TARGET"),
    (["invariants", "--list", "--only", "x"], "does not apply"),
    (["invariants", "sweeps/quickstart.yaml", "sweeps/quickstart.yaml", "--only", "x"], "named twice"),
])
def test_options_a_command_would_drop_are_refused(runner, args, needle, monkeypatch):
    """Each ran and dropped what it was told: 'a full factorial of 0 readings', -e and --only ignored, a config
    counted twice."""
    from clicheck import one_line_error

    monkeypatch.chdir(Path(__file__).resolve().parents[1])
    one_line_error(runner.invoke(app, args), needle)


def test_a_preset_name_is_a_plain_name_not_a_path_into_another_kind():
    """`load_hardware('../models/qwen3-30b-a3b')` read a model preset as hardware ('unknown key hidden_size')."""
    from wsemoe.config.presets import PresetError

    with pytest.raises(PresetError, match="unknown hardware preset"):
        wsemoe.load_hardware("../models/qwen3-30b-a3b")
    assert wsemoe.load_hardware("cs2").name == "cs2"


def test_a_baseline_of_no_axis_value_is_refused():
    """`compare: {baseline: {}}` made every point a baseline: the best compared with itself."""
    with pytest.raises(ConfigError, match="names no axis value") as exc:
        wsemoe.load_config({**BASE, "axes": {"workload.G": [1, 2]}, "compare": {"baseline": {}}})
    assert exc.value.loc == ("compare", "baseline")


def test_an_empty_comparison_metric_is_refused(tmp_path):
    """`wsemoe.compare([a, b], '')` silently used the default metric."""
    from wsemoe.sweep.run import run_sweep

    path = run_sweep({**BASE, "axes": {"workload.B": [1, 2]}}, out_root=tmp_path).path
    again = shutil.copytree(path, tmp_path / "again")   # compare takes two different folders
    with pytest.raises(ConfigError, match="a column name"):
        wsemoe.compare([path, again], "")


@pytest.mark.parametrize("side", ["baseline", "candidate"])
def test_a_compare_value_is_typed_as_its_axis_values_are(side):
    """`baseline: {workload.G: "1"}` was 'not among the values of workload.G (1, 2)' though the axis itself reads
    "1" as 1, and `{workload.G: true}` matched G = 1 (True == 1) where the axis refuses a boolean."""
    other = {"baseline": {"workload.G": 4}} if side == "candidate" else {}
    cfg = wsemoe.load_config({**BASE, "axes": {"workload.G": [1, 2, 4]},
                              "compare": {**other, side: {"workload.G": "1"}}})
    assert getattr(cfg.compare, side) == {"workload.G": 1} and type(getattr(cfg.compare, side)["workload.G"]) is int
    with pytest.raises(ConfigError, match="got a boolean") as exc:
        wsemoe.load_config({**BASE, "axes": {"workload.G": [1, 2, 4]}, "compare": {**other, side: {"workload.G": True}}})
    assert exc.value.loc[:3] == ("compare", side, "workload.G")
