"""Reading inputs: axis expansion edge cases, long numeric axes, user files, histogram CSVs, spec
validation, loader and cross-field rules. Each test asserts the values produced or the one-line
error (its key path and message)."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest
import yaml

import wsemoe
from wsemoe.cli import app
from wsemoe.config import axes as axes_mod
from wsemoe.config import files
from wsemoe.config.histogram import read_histogram
from wsemoe.errors import ConfigError, WsemoeError
from wsemoe.specs import WorkloadSpec
from wsemoe.specs.base import MAX_COUNT, build

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


# ------------------------------------------------------------------ user files

def _hist_cfg(path, **model):
    return {**BASE, "hardware": "wsc-b200-8x8", "model": {"preset": "qwen3-30b-a3b", **model},
            "balance": {"distribution": "histogram", "histogram": str(path)}}


def _hist_error(path, **model) -> ConfigError:
    with pytest.raises(ConfigError) as exc:
        wsemoe.load_config(_hist_cfg(path, **model))
    return exc.value


def test_histogram_path_that_is_a_directory(tmp_path):
    err = _hist_error(tmp_path)
    assert err.loc == ("balance", "histogram", str(tmp_path)) and err.message == "is a directory, expected a histogram file"


def test_histogram_path_below_a_file(tmp_path):
    (tmp_path / "f.csv").write_text("expert,tokens\n0,1\n")
    err = _hist_error(tmp_path / "f.csv" / "x.csv")
    assert err.message.startswith("cannot read histogram file:") and "not a folder (ENOTDIR)" in err.message


def test_histogram_that_is_not_utf8(tmp_path, runner):
    path = tmp_path / "h.csv"
    path.write_bytes(b"expert,tokens\n0,\xff\xfe\n")
    assert _hist_error(path).message == "cannot read histogram file: not UTF-8 text"
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(yaml.safe_dump(_hist_cfg(path)))
    res = runner.invoke(app, ["check", str(cfg)])
    assert res.exit_code == 2 and res.output.strip().splitlines() == [
        f"error: [balance -> histogram -> {path}] cannot read histogram file: not UTF-8 text"]


def test_a_file_that_cannot_be_opened(tmp_path, monkeypatch):
    """stat succeeds but open fails (root ignores chmod 0, so the failure is simulated)."""
    path = tmp_path / "h.csv"
    path.write_text("expert,tokens\n0,1\n")

    def refuse(*a, **k):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(files, "open", refuse, raising=False)
    with pytest.raises(ConfigError) as exc:
        files.read_text(path, 100, "histogram file", loc_prefix=("balance", "histogram"))
    assert exc.value.loc == ("balance", "histogram", str(path))
    assert exc.value.message == "cannot read histogram file: permission denied (EACCES)"


# ------------------------------------------------------------------ histogram CSVs

@pytest.mark.parametrize("text, needle", [
    ("expert,tokens\n", "histogram has no rows"),
    ("", "histogram has no rows"),
    ("id,count\n0,5\n", "needs columns 'expert' and 'tokens' (or 'share')"),
    ("expert\n0\n", "needs columns 'expert' and 'tokens'"),
    ("expert,tokens\nzero,5\n", "bad number in histogram"),
    ("expert,tokens\n0,five\n", "bad number in histogram"),
    ("expert,tokens\n0,5\n1\n", "bad number in histogram"),            # a short row
    ("layer,expert,tokens\nL1,0,5\n", "bad number in histogram"),
    ("expert,tokens\n0,5\n1,-1\n", "must be non-negative"),
    ("expert,tokens\n-1,5\n", "must be non-negative"),
    ("expert,tokens\n0,nan\n", "must be non-negative"),
    ("expert,share\n0,inf\n", "must be non-negative"),
    (f"expert,tokens\n0,1\n{MAX_COUNT},1\n", f"expert id {MAX_COUNT} is beyond the 1,048,576 experts"),
    ("layer,expert,tokens\n0,0,3\n0,1,1\n1,0,0\n1,1,0\n", "layer 1 has no tokens"),
    ("expert,tokens\n0," + "9" * 140_000 + "\n", "cannot read histogram: field larger than field limit"),
])
def test_bad_histogram_csv(tmp_path, text, needle):
    path = tmp_path / "h.csv"
    path.write_text(text)
    with pytest.raises(ConfigError) as exc:
        read_histogram(path)
    assert exc.value.loc == ("balance", "histogram", str(path))
    assert needle in exc.value.message, exc.value.message


def test_histogram_layers_are_normalised_then_averaged(tmp_path):
    """Each layer weighs the same: shares = mean over layers of each layer's normalised counts."""
    path = tmp_path / "h.csv"
    path.write_text("layer,expert,tokens\n0,0,1\n0,1,3\n1,0,10\n1,1,10\n1,3,0\n")
    assert read_histogram(path) == pytest.approx([(0.25 + 0.5) / 2, (0.75 + 0.5) / 2, 0.0, 0.0], rel=1e-15)
    path.write_text("expert,share\n2,0.5\n0,1.5\n")       # shares are renormalised; missing ids get 0
    assert read_histogram(path) == pytest.approx([0.75, 0.0, 0.25], rel=1e-15)


def test_histogram_must_match_every_expert_count_the_sweep_uses(tmp_path):
    path = tmp_path / "h.csv"
    path.write_text("expert,tokens\n" + "".join(f"{e},{e + 1}\n" for e in range(128)))
    cfg = wsemoe.load_config(_hist_cfg(path))
    assert len(cfg.expert_histogram) == 128
    assert cfg.expert_histogram[127] / cfg.expert_histogram[0] == pytest.approx(128.0)
    err = _hist_error(path, num_experts=64)
    assert err.loc == ("balance", "histogram") and "histogram has 128 experts but the model has [64]" in err.message
    with pytest.raises(ConfigError, match=r"the model has \[64, 128\]"):
        wsemoe.load_config({**_hist_cfg(path), "zip": [{"model.num_experts": [64, 128],
                                                         "model.moe_intermediate_size": [1536, 768]}]})


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


# ------------------------------------------------------------------ Hugging Face config.json

HF = Path(__file__).parent / "data" / "hf" / "qwen3-30b-a3b.json"


def _hf(**changes) -> dict:
    data = json.loads(HF.read_text())
    for k, v in changes.items():
        if v is _DROP:
            data.pop(k, None)
        else:
            data[k] = v
    return data


_DROP = object()


def test_hf_integral_floats_are_whole_numbers():
    from wsemoe.config.hf import model_from_hf_config

    ref = model_from_hf_config(_hf())
    spec = model_from_hf_config(_hf(hidden_size=float(ref.hidden_size), num_experts=128.0))
    assert spec.hidden_size == ref.hidden_size and type(spec.hidden_size) is int
    assert spec == ref


@pytest.mark.parametrize("changes, key, needle", [
    ({"hidden_size": 2048.5}, "hidden_size", "Input should be a valid integer, got a number with a fractional part"),
    ({"hidden_size": True}, "hidden_size", "Input should be a valid integer (got True)"),
    ({"head_dim": _DROP, "hidden_size": 2050}, "num_attention_heads", "hidden_size 2050 is not divisible"),
    ({"mlp_only_layers": "0,1"}, "mlp_only_layers", "'mlp_only_layers' must be a list"),
    ({"mlp_only_layers": [0]}, "mlp_only_layers", "must be empty"),
    ({"decoder_sparse_step": 2}, "decoder_sparse_step", "only 1 is supported"),
])
def test_hf_bad_values_name_the_key(changes, key, needle):
    from wsemoe.config.hf import model_from_hf_config

    with pytest.raises(WsemoeError) as exc:
        model_from_hf_config(_hf(**changes))
    assert exc.value.loc == ("hf_config", key), exc.value.line()
    assert needle in exc.value.message


def test_hf_source_must_be_a_path_or_a_dict():
    from wsemoe.config.hf import model_from_hf_config

    with pytest.raises(WsemoeError, match="expected a config.json path or a dict, got int"):
        model_from_hf_config(5)


def _hist_file(tmp_path, name: str, n: int, hot: int = 0) -> Path:
    path = tmp_path / name
    path.write_text("expert,tokens\n" + "".join(f"{e},{e + 1 + (hot if e == 0 else 0)}\n" for e in range(n)))
    return path


@pytest.mark.parametrize("where", ["axes", "zip"])
def test_a_swept_histogram_is_refused_not_mislabelled(tmp_path, where):
    """`axes: {balance.histogram: [a.csv, b.csv]}` ran every point on the base file: the row labelled b.csv held
    a.csv's numbers. One histogram per sweep; sweeping the file is refused where it is written."""
    a, b = _hist_file(tmp_path, "a.csv", 128), _hist_file(tmp_path, "b.csv", 128, hot=10_000)
    swept = {"balance.histogram": [str(a), str(b)]}
    cfg = {**_hist_cfg(a), **({"axes": swept} if where == "axes" else
                               {"zip": [{**swept, "workload.B": [1, 2]}]})}
    with pytest.raises(ConfigError, match="balance.histogram cannot be swept") as exc:
        wsemoe.load_config(cfg)
    assert exc.value.loc[0] == where and exc.value.loc[-1] == "balance.histogram"


def test_a_histogram_point_among_swept_distributions_reads_the_file(tmp_path):
    """A base distribution of zipf with 'histogram' among the axis values was an internal error (TypeError)."""
    a = _hist_file(tmp_path, "a.csv", 128, hot=10_000)
    cfg = {**_hist_cfg(a), "balance": {"distribution": "zipf", "histogram": str(a)},
           "axes": {"balance.distribution": ["zipf", "histogram"]}}
    rows = wsemoe.evaluate(cfg).set_index("balance.distribution")
    # the file's hot expert (10,001 of 18,256 tokens) is capped at 1/k = 1/8 of the copies (a token's 8 experts are
    # distinct); its die also holds expert 64, 65/8,255 of the other 7/8: 64 × (1/8 + 65/8255 · 7/8) = 8.441× the mean
    assert rows.loc["histogram", "imbalance_before"] == pytest.approx(64 * (1 / 8 + 65 / 8255 * 7 / 8))
    assert rows.loc["zipf", "imbalance_before"] != pytest.approx(rows.loc["histogram", "imbalance_before"], rel=0.01)


def test_a_model_axis_checks_each_presets_expert_count_against_the_histogram(tmp_path):
    """A `model` preset axis with 128 and 256 experts was an internal error (ValueError) at evaluation."""
    a = _hist_file(tmp_path, "a.csv", 128)
    with pytest.raises(ConfigError, match=r"histogram has 128 experts but the model has \[128, 256\]"):
        wsemoe.load_config({**_hist_cfg(a), "axes": {"model": ["qwen3-30b-a3b", "deepseek-v3"]}})


@pytest.mark.parametrize("sets,needle", [(["balance.histogram=/nonexistent.csv"], "read with the sweep file"),
                                         (["balance.distribution=histogram"], "needs balance.histogram")])
def test_eval_set_of_a_histogram_is_one_line(tmp_path, runner, sets, needle):
    """`eval --set balance.histogram=…` was ignored (the base file's numbers, exit 0, even for a missing file);
    `--set balance.distribution=histogram` on a sweep without a file was an internal error."""
    from clicheck import one_line_error

    path = tmp_path / "h.yaml"
    path.write_text(yaml.safe_dump({**BASE, "name": "h", "hardware": "wsc-b200-8x8", "model": "qwen3-30b-a3b"}
                                   if "distribution" in sets[0] else _hist_cfg(_hist_file(tmp_path, "a.csv", 128))
                                   | {"name": "h"}))
    args = ["eval", str(path)] + [x for s in sets for x in ("--set", s)]
    one_line_error(runner.invoke(app, args), "--set", needle)


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
