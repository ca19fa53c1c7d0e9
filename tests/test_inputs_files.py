"""Reading the files a sweep names: a user's file that cannot be read (a folder, a path below a file, not UTF-8,
not openable), histogram CSVs (every malformed one refused with its key path, layers normalised then averaged,
the expert count matched, one histogram per sweep, never swept), and Hugging Face config.json values. Each test
asserts the values produced or the one-line error. The sweep file itself: tests/test_inputs.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from test_inputs import BASE

import wsemoe
from wsemoe.cli import app
from wsemoe.config import files
from wsemoe.config.histogram import read_histogram
from wsemoe.errors import ConfigError, WsemoeError
from wsemoe.specs.base import MAX_COUNT


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


# ------------------------------------------------------------------ one histogram per sweep

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
