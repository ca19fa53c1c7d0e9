"""Every message names the real cause and the option at fault: a description too long for the manifest is refused
by `check` before a run; `new --mode decode` on a serving (SRAM) hardware file works, and training there is refused
at --mode; a key set twice or set to nothing is an error (eval --set, readings --set); each option's error names
that option."""

from __future__ import annotations

import shutil

import pytest
import yaml

from wsemoe.cli import app
from clicheck import one_line_error

CFG = {"name": "msg", "hardware": "cs2", "model": "qwen3-30b-a3b", "workload": {"mode": "train", "seq_len": 2048},
       "axes": {"workload.G": [1, 2]}}



@pytest.fixture
def cfg(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "msg.yaml").write_text(yaml.safe_dump(CFG))
    return tmp_path / "msg.yaml"


def test_a_description_longer_than_the_manifest_holds_is_refused_by_check(cfg, runner, tmp_path):
    (tmp_path / "long.yaml").write_text(yaml.safe_dump({**CFG, "name": "long", "description": "x" * 20_001}))
    one_line_error(runner.invoke(app, ["check", "long.yaml"]), "[description]", "20000")
    one_line_error(runner.invoke(app, ["sweep", "long.yaml"]), "[description]")
    assert not (tmp_path / "results").exists()
    (tmp_path / "ok.yaml").write_text(yaml.safe_dump({**CFG, "name": "ok", "description": "x" * 20_000}))
    assert runner.invoke(app, ["sweep", "ok.yaml", "-q"]).exit_code == 0


def test_new_on_a_serving_hardware_file(runner, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "srv.yaml").write_text("preset: cs3\nweight_source: sram\n")
    for mode in ("decode", "prefill"):
        r = runner.invoke(app, ["new", f"s{mode}", "--hardware", "srv.yaml", "--model", "qwen3-30b-a3b", "--mode", mode])
        assert r.exit_code == 0, r.output
        assert runner.invoke(app, ["check", f"s{mode}.yaml"]).exit_code == 0
    one_line_error(runner.invoke(app, ["new", "strain", "--hardware", "srv.yaml", "--model", "qwen3-30b-a3b",
                                       "--mode", "train"]), "[--mode]", "decode")


@pytest.mark.parametrize("argv, needles", [
    (["eval", "msg.yaml", "--set", "workload.B=2", "--set", "workload.B=4"], ["--set -> workload.B", "twice"]),
    (["readings", "msg.yaml", "--set", "attn_kernel=flash", "--set", "attn_kernel=per_head"],
     ["--set -> attn_kernel", "twice"]),
    (["calibrate", "--reading", "nosuch"], ["[--reading]", "unknown reading 'nosuch'"]),
    (["calibrate", "--only", "nosuch"], ["--only"]),
    (["readings", "msg.yaml", "--only", "nosuch"], ["[--only]", "unknown reading"]),
    (["readings", "msg.yaml", "--set", "nosuch=x"], ["[--set]", "unknown reading"]),
    (["new", "x", "--hardware", "cs2", "--model", "qwen3-30b-a3b", "--mode", "serve"], ["[--mode]"]),
    (["new", "x", "--hardware", "nosuch", "--model", "qwen3-30b-a3b"], ["hardware", "nosuch"]),
    (["sweep", "msg.yaml", "--chunk-size", "0"], ["--chunk-size"]),
    (["eval", "msg.yaml", "--set", "workload"], ["--set"]),
    # nothing after '=' is no value, not YAML's null: B said "got None", and a preset field went back to its spec
    # default (cs2's memory_usable_fraction 0.85 read as 1.0) without a word
    (["eval", "msg.yaml", "--set", "workload.B="], ["[--set -> workload.B] no value after '='"]),
    (["eval", "msg.yaml", "--set", "hardware.memory_usable_fraction= "],
     ["[--set -> hardware.memory_usable_fraction] no value after '='"]),
    # an explicit null on a PE-derived preset (cs2) as on any other (nvl72): refused, not the field's default 1.0
    (["eval", "msg.yaml", "--set", "hardware.memory_usable_fraction=null"],
     ["[--set -> hardware.memory_usable_fraction]", "valid number"]),
])
def test_each_option_error_names_its_option(cfg, runner, argv, needles):
    one_line_error(runner.invoke(app, argv), *needles)


def test_sensitivity_counts_its_evaluations_before_any_work(runner, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.yaml").write_text(yaml.safe_dump({**CFG, "name": "s", "axes": {"workload.B": list(range(1, 1001))}}))
    one_line_error(runner.invoke(app, ["sensitivity", "s.yaml", "-n", "1000000", "--no-readings"]), "[--samples]",
              "× 1,000 points")
    assert not (tmp_path / "results").exists()


def test_histogram_of_many_layers_is_read_without_a_loop_per_layer(tmp_path):
    """Each layer weighs the same: shares of a two-layer histogram are the mean of each layer's shares."""
    from wsemoe.config.histogram import read_histogram

    rows = ["layer,expert,tokens"] + [f"{layer},{e},{t}" for layer, counts in ((0, (1, 3)), (1, (30, 10)))
                                      for e, t in enumerate(counts)]
    (tmp_path / "h.csv").write_text("\n".join(rows) + "\n")
    assert read_histogram(tmp_path / "h.csv") == pytest.approx([(0.25 + 0.75) / 2, (0.75 + 0.25) / 2])
    (tmp_path / "z.csv").write_text("layer,expert,tokens\n0,0,1\n1,0,0\n")
    with pytest.raises(Exception, match="layer 1 has no tokens"):
        read_histogram(tmp_path / "z.csv")


def test_results_at_a_relative_path_with_a_colon_read_back(cfg, runner, tmp_path):
    """'a:b' is a legal folder name, not a scheme or a drive: every reader takes it, and the index links to it."""
    assert runner.invoke(app, ["sweep", "msg.yaml", "-o", "a:b", "-q"]).exit_code == 0
    shutil.copytree(tmp_path / "a:b", tmp_path / "c:d")   # compare takes two different folders
    for argv in (["show", "a:b"], ["eval", "a:b", "-p", "1"], ["report", "a:b"], ["compare", "a:b", "c:d"],
                 ["report", ".", "--index"]):
        r = runner.invoke(app, argv)
        assert r.exit_code == 0, (argv, r.output)
    assert 'href="./a%3Ab/report.html"' in (tmp_path / "index.html").read_text()


def test_a_few_pe_facts_over_a_preset_keep_the_others():
    # `hardware: {preset: cs2, pe: {clock_hz: …}}` replaced the preset's whole pe block, and the check then said
    # "node_peak_flops: required field is missing". The other facts now stay the preset's, and the die figures
    # follow the changed clock.
    from wsemoe.config import presets
    from wsemoe.config.loader import load_config

    cs2 = presets.load_hardware("cs2")
    hardware = {"preset": "cs2", "pe": {"clock_hz": 0.55e9}}
    cfg = load_config({"name": "pe", "hardware": hardware, "model": "qwen3-30b-a3b"})
    assert cfg.hardware.pe.clock_hz == 0.55e9 and cfg.hardware.pe.pe_count == cs2.pe.pe_count
    assert cfg.hardware.node_peak_flops == pytest.approx(cs2.node_peak_flops / 2)


def test_a_pe_fact_as_an_axis_says_where_it_goes():
    from wsemoe.config.loader import load_config
    from wsemoe.errors import ConfigError

    with pytest.raises(ConfigError) as err:
        load_config({"name": "pe", "hardware": "cs2", "model": "qwen3-30b-a3b",
                     "axes": {"hardware.pe.clock_hz": [1e9, 2e9]}})
    assert "hardware: {preset: …, pe: {clock_hz: …}}" in err.value.line()
