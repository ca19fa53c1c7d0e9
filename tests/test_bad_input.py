"""Bad input: one line naming the key or file, non-zero exit, no traceback, no results folder."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from wsemoe.cli import app

GOOD = """\
name: bad
hardware: cs2
model: qwen3-30b-a3b
workload: {mode: train, seq_len: 2048}
axes:
  workload.G: [1, 2]
"""

CASES = {
    "unknown top-level key": (GOOD + "axis: {}\n", ["axis", "did you mean 'axes'"]),
    "unknown spec key": (GOOD.replace("seq_len: 2048", "seqlen: 2048"), ["workload -> seqlen", "did you mean 'seq_len'"]),
    "unknown axis field": (GOOD.replace("workload.G:", "workload.GG:"), ["axes -> workload.GG", "did you mean 'workload.G'"]),
    "unknown axis section": (GOOD.replace("workload.G:", "workloads.G:"), ["workloads.G", "did you mean 'workload'"]),
    "wrong type": (GOOD.replace("seq_len: 2048", "seq_len: long"), ["workload -> seq_len"]),
    "non-positive size": (GOOD.replace("seq_len: 2048", "seq_len: 0"), ["workload -> seq_len"]),
    "non-positive hardware figure": (GOOD.replace("hardware: cs2", "hardware: {preset: cs2, link_bw_bytes_per_s: -1}"),
                                     ["hardware -> link_bw_bytes_per_s"]),
    "G not an integer": (GOOD.replace("[1, 2]", "[1, 2.5]"), ["axes -> workload.G -> 1"]),
    "G zero": (GOOD.replace("[1, 2]", "[0, 2]"), ["axes -> workload.G -> 0"]),
    "top-k above experts": (GOOD + "  model.num_experts: [4, 8]\n", ["model.num_experts", "exceeds num_experts"]),
    "top-k above experts across axes": (GOOD + "  model.num_experts: [8, 16]\n  model.num_experts_per_tok: [8, 16]\n",
                                        ["axes -> model.num_experts_per_tok", "top-k exceeds"]),
    "top-k above experts in base": (GOOD.replace("model: qwen3-30b-a3b", "model: {preset: qwen3-30b-a3b, num_experts_per_tok: 200}"),
                                    ["model", "num_experts_per_tok"]),
    "unknown preset": (GOOD.replace("hardware: cs2", "hardware: cs9"), ["hardware", "unknown hardware preset 'cs9'"]),
    "malformed yaml": (GOOD + "  workload.B: [1, 2\n", ["malformed YAML"]),
    "duplicate keys": (GOOD + "name: again\n", ["duplicate key 'name'"]),
    "object tag": (GOOD + "description: !!python/object/apply:os.system ['echo hi']\n", ["unsupported YAML tag"]),
    "empty grid": (GOOD.replace("[1, 2]", "[]"), ["axes -> workload.G", "empty"]),
    "bad range": (GOOD.replace("[1, 2]", "{range: [4, 1]}"), ["axes -> workload.G -> range"]),
    "escaping name": (GOOD.replace("name: bad", "name: ../../etc"), ["name"]),
    "hidden name": (GOOD.replace("name: bad", "name: .bad"), ["name", "the first a letter or digit"]),   # '.' is one
    "not a mapping": ("- 1\n- 2\n", ["config"]),
    "zip lengths differ": (GOOD + "zip:\n  - {workload.B: [1, 2], workload.seq_len: [1024]}\n",
                           ["zip -> 0", "workload.B has 2 values, workload.seq_len has 1"]),
    "tiny hardware figure": (GOOD.replace("hardware: cs2", "hardware: {preset: cs2, node_peak_flops: 1.0e-300}"),
                             ["hardware -> node_peak_flops", "greater than or equal to 1e-30"]),
    "NaN bandwidth": (GOOD.replace("hardware: cs2", "hardware: {preset: cs2, io_in_bw_bytes_per_s: .nan}"),
                      ["hardware -> io_in_bw_bytes_per_s", "a number, not NaN"]),
    "contradictory constraint": (GOOD + "constraints: [{column: mfu, min: 1, max: 0}]\n",
                                 ["constraints -> 0", "min 1 is above max 0"]),
}


def _check_one_line(result, needles, tmp_path):
    assert result.exit_code != 0, result.output
    text = result.output.strip()
    assert len(text.splitlines()) == 1, text
    assert text.startswith("error: ")
    assert "Traceback" not in text
    for n in needles:
        assert n in text, (n, text)
    assert not any(p.name != "cfg.yaml" for p in tmp_path.iterdir() if not p.name.startswith("cfg")), \
        list(tmp_path.iterdir())


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_config_is_one_line(case, runner, tmp_path):
    text, needles = CASES[case]
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(text)
    result = runner.invoke(app, ["sweep", str(cfg), "--results", str(tmp_path / "res")])
    _check_one_line(result, needles, tmp_path)
    assert not (tmp_path / "res").exists() or not any((tmp_path / "res").iterdir())


@pytest.mark.parametrize("option,needle", [("--workers", "1024"), ("--chunk-size", "2147483648")])
def test_a_huge_count_option_is_refused_before_any_work(option, needle, runner, tmp_path):
    # -j 10^20 once ended in an internal error (OverflowError), --chunk-size 10^20 ran the whole sweep and then
    # failed to write its manifest (an integer of 20 digits), leaving a partial folder behind.
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(GOOD)
    result = runner.invoke(app, ["sweep", str(cfg), "--results", str(tmp_path / "res"), option, "9" * 20])
    _check_one_line(result, [option, needle], tmp_path)
    assert not (tmp_path / "res").exists()


def test_missing_file(runner, tmp_path):
    result = runner.invoke(app, ["sweep", str(tmp_path / "nope.yaml"), "--results", str(tmp_path / "res")])
    _check_one_line(result, ["nope.yaml", "file not found"], tmp_path)


@pytest.mark.skipif(os.geteuid() == 0, reason="root can read any file")
def test_unreadable_file(runner, tmp_path):
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(GOOD)
    cfg.chmod(0)
    result = runner.invoke(app, ["sweep", str(cfg), "--results", str(tmp_path / "res")])
    _check_one_line(result, ["cfg.yaml", "cannot read"], tmp_path)


def test_directory_as_config(runner, tmp_path):
    (tmp_path / "cfgdir").mkdir()
    result = runner.invoke(app, ["check", str(tmp_path / "cfgdir")])
    assert result.exit_code != 0 and "is a directory" in result.output


def test_floats_in_exponent_form_parse(tmp_path):
    """PyYAML reads 2.5e10 (no dot) as a string; pydantic's lax float parsing must accept it."""
    from wsemoe.config.loader import load_config

    data = yaml.safe_load(GOOD)
    data["hardware"] = {"preset": "cs2", "io_in_bw_bytes_per_s": "3e11"}
    cfg = load_config(data)
    assert cfg.hardware.io_in_bw_bytes_per_s == 3e11
    text = GOOD.replace("hardware: cs2", "hardware: {preset: cs2, io_in_bw_bytes_per_s: 3e11}")
    (tmp_path / "c.yaml").write_text(text)
    assert load_config(tmp_path / "c.yaml").hardware.io_in_bw_bytes_per_s == 3e11


def test_results_not_written_on_error_inside_evaluation(runner, tmp_path, monkeypatch):
    """A failure mid-sweep leaves no results folder; only a hidden partial one (for --resume) without a manifest."""
    from wsemoe.sweep import engine

    def boom(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(engine, "evaluate_block", boom)
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(GOOD)
    result = runner.invoke(app, ["sweep", str(cfg), "--results", str(tmp_path / "res")])
    assert result.exit_code == 130
    assert not (tmp_path / "res" / "bad").exists()
    left = list(Path(tmp_path / "res").iterdir()) if (tmp_path / "res").exists() else []
    assert all(p.name.startswith(".bad.partial-") for p in left)
    assert not any((p / "manifest.json").exists() for p in left)
    assert "--resume" in result.output


def test_a_name_taken_from_the_file_name_says_so(runner, tmp_path):
    cfg = tmp_path / "my sweep.yaml"
    cfg.write_text(GOOD.replace("name: bad\n", ""))
    assert "name:" not in cfg.read_text()
    result = runner.invoke(app, ["check", str(cfg)])
    assert result.exit_code != 0 and "file name 'my sweep'" in result.output and "add a name: key" in result.output


@pytest.mark.parametrize("argv,needle", [(["ls"], "is a file, not a folder of results"),
                                         (["show"], "is a file, not a results folder")])
def test_a_file_given_as_results_is_called_a_file(argv, needle, runner, tmp_path):
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(GOOD)
    result = runner.invoke(app, [*argv, str(cfg)])
    assert result.exit_code != 0 and needle in result.output, result.output


@pytest.mark.parametrize("argv", [["ls"], ["show"], ["plot"], ["report"]])
def test_a_pipe_given_as_results_is_never_called_a_file(argv, runner, tmp_path):
    # as every reader of a named input says it (config/files.read_text: 'not a regular file (a pipe or device?)')
    os.mkfifo(tmp_path / "pipe")
    result = runner.invoke(app, [*argv, str(tmp_path / "pipe")])
    assert result.exit_code != 0 and "is a pipe or device, not a" in result.output, result.output
