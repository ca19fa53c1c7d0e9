"""Bad input that used to reach an internal error, be ignored, or be accepted into a broken column: each is one
line naming what to change, exit 2, and nothing written (found by fuzzing the CLI)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from wsemoe.cli import app

ROOT = Path(__file__).resolve().parents[1]

BASE = {"name": "bad", "hardware": "cs2", "model": "qwen3-30b-a3b", "workload": {"mode": "train", "seq_len": 2048},
        "axes": {"workload.B": [1, 2]}}


@pytest.mark.parametrize("change, message", [
    ({"sparsity": {"vary": "num_experts", "values": [0]}}, "greater than 0"),
    ({"axes": {"workload.B": [1, 2], "model.hf_aliases": [["a"], ["b"]]}}, "cannot vary point by point"),
    ({"axes": {"workload.B": [1, 2], "hardware.sources": [{}]}}, "cannot vary point by point"),
    ({"compare": {"name": "../x"}}, "letters, digits and '_'"),
    ({"compare": {"name": ""}}, "letters, digits and '_'"),
])
def test_a_config_that_cannot_make_points_is_one_line(change, message, runner, tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump({**BASE, **change}))
    for argv in (["check", str(path)], ["sweep", str(path), "--results", str(tmp_path / "out"), "-q"]):
        r = runner.invoke(app, argv)
        assert r.exit_code == 2 and message in r.output and len(r.output.strip().splitlines()) == 1, r.output
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


@pytest.mark.parametrize("argv, message", [
    (["eval", "--hardware", "cs2", "--model", "qwen3-30b-a3b", "-p", "5"], "--point 5"),
    (["eval", "--hardware", "cs2"], "needs --model too"),
    (["export", "traffic", "sweeps/quickstart.yaml", "--hardware", "cs2"], "error: [--hardware] --hardware and"),
    (["readings", "--set", "attn_kernel=flash"], "--set needs a TARGET"),
    (["sensitivity", "sweeps/quickstart.yaml", "--seed", "-1"], "--seed"),
    (["calibrate", "--seed", "-1"], "--seed"),
])
def test_an_option_that_would_be_ignored_or_crash_is_one_line(argv, message, runner):
    r = runner.invoke(app, argv)
    assert r.exit_code == 2 and message in r.output and len(r.output.strip().splitlines()) == 1, r.output


def test_a_name_of_other_letters_says_ascii(runner, tmp_path):
    # 'ünïcode_名前' was refused as not "letters, digits, '.', '_' or '-'": letters it holds, ASCII it is not.
    path = tmp_path / "u.yaml"
    path.write_text("name: ünïcode_名前\nhardware: cs2\nmodel: qwen3-30b-a3b\nworkload: {mode: train, seq_len: 2048}\n",
                    encoding="utf-8")
    r = runner.invoke(app, ["check", str(path)])
    assert r.exit_code == 2 and "ASCII letters" in r.output and len(r.output.strip().splitlines()) == 1, r.output


@pytest.mark.parametrize("section", ["hardware", "model"])
def test_a_sweep_file_naming_a_yaml_file_as_its_section_is_told_how(section, runner, tmp_path):
    # `hardware: hw.yaml` (a file beside the sweep, as `eval --hardware hw.yaml` reads one) was "unknown hardware
    # preset 'hw.yaml'; known: a100-x8, ..." as if mistyped; a path said how, a file's bare name did not.
    (tmp_path / "f.yaml").write_text("preset: cs2\n")
    sweep = {"name": "a", "hardware": "cs2", "model": "qwen3-30b-a3b", "workload": {"mode": "train", "seq_len": 2048},
             section: "f.yaml"}
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(sweep))
    r = runner.invoke(app, ["check", str(path)])
    assert r.exit_code == 2 and len(r.output.strip().splitlines()) == 1, r.output
    assert f"--{section} FILE reads a file's fields" in r.output and "known:" not in r.output, r.output


def test_exponent_numbers_read_as_numbers():
    """PyYAML (YAML 1.1) reads 1e-9 as text for want of a dot; a sweep file reads it as YAML 1.2 and users do."""
    from wsemoe.config import yamlio

    got = yamlio.loads("a: 1e-9\nb: 2E6\nc: -1.5e3\nd: '1e3'\ne: 1e3x\n")
    assert got == {"a": 1e-9, "b": 2e6, "c": -1500.0, "d": "1e3", "e": "1e3x"}


@pytest.mark.parametrize("text, held", [("# nothing here\n", "is empty"), ("- a\n- b\n", "holds a list"),
                                        ("5\n", "holds a number"), ("true\n", "holds a true/false value"),
                                        ("yes\n", "holds a string")])   # YAML 1.2: yes is text
def test_a_file_that_is_no_mapping_is_named(text, held, runner, tmp_path):
    path = tmp_path / "x.yaml"
    path.write_text(text)
    r = runner.invoke(app, ["check", str(path)])
    assert r.exit_code == 2 and str(path) in r.output and held in r.output, r.output


def test_a_grid_finer_than_the_pe_fabric_names_the_grid(runner, tmp_path):
    """cs2 split into 1,024 x 1,024 nodes: each node would be narrower than one PE. The error names the grid the
    user set, not a link figure derived from it."""
    hw = tmp_path / "big.yaml"
    hw.write_text("preset: cs2\nrows: 1024\ncols: 1024\n")
    r = runner.invoke(app, ["eval", "--hardware", str(hw), "--model", "qwen3-30b-a3b"])
    assert r.exit_code == 2 and "narrower than one PE" in r.output and "link_bw" not in r.output, r.output


@pytest.mark.parametrize("argv, message", [
    (["sweep", "sweeps/quickstart.yaml", "--results", ""], "--results is empty"),
    (["sweep", "sweeps/quickstart.yaml", "--results="], "--results is empty"),
    (["show", ""], "an argument is empty"),
])
def test_an_empty_argument_is_one_line_and_writes_nothing(argv, message, runner, tmp_path, monkeypatch):
    """`--results ""` (an unset shell variable) used to read as the current folder and write a sweep there."""
    monkeypatch.chdir(tmp_path)
    r = runner.invoke(app, [str(ROOT / a) if a.startswith("sweeps/") else a for a in argv])
    assert r.exit_code == 2 and message in r.output and len(r.output.strip().splitlines()) == 1, r.output
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("option, name", [("-o", "page.txt"), ("--output", "page")])
def test_a_report_file_named_other_than_html_is_refused(option, name, runner, tmp_path):
    """The page is HTML: a file named .txt (or nothing) would hold what its name does not say."""
    r = runner.invoke(app, ["report", str(tmp_path / "any"), option, str(tmp_path / name)])
    assert r.exit_code == 2 and "name a .html or .htm file" in r.output, r.output
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("argv", [["compare", "a", "b", "--plot"], ["validate", "--silicon", "x.csv", "--plot"]])
def test_a_figure_file_of_another_kind_is_refused_before_any_work(argv, runner, tmp_path):
    r = runner.invoke(app, [*argv, str(tmp_path / "fig.gif")])
    assert r.exit_code == 2 and "name a .png, .svg or .pdf file" in r.output, r.output
    assert not any(tmp_path.iterdir())


NVFP4 = ROOT / "tests" / "data" / "hf" / "qwen3.5-397b-a17b-nvfp4"


@pytest.mark.parametrize("quantization, message", [
    ([1], "without a readable 'quantization' mapping"),   # was an internal error (a list has no .get)
    ({"quant_algo": "NVFP4", "group_size": 16, "exclude_modules": "self_attn"},   # was read letter by letter
     "'exclude_modules' must be a list of module names or patterns, got 'self_attn'"),
    ({"quant_algo": "NVFP4", "group_size": 16, "exclude_modules": ["lm_head", 3]}, "'exclude_modules' must be a list"),
])
def test_a_malformed_modelopt_quant_config_is_one_line(quantization, message, runner, tmp_path):
    import json
    import shutil

    shutil.copy(NVFP4 / "config.json", tmp_path / "config.json")
    (tmp_path / "hf_quant_config.json").write_text(json.dumps({"quantization": quantization}))
    r = runner.invoke(app, ["eval", "--hardware", "cs2", "--model", str(tmp_path), "-F", "csv"])
    assert r.exit_code == 2 and message in r.output and len(r.output.strip().splitlines()) == 1, r.output


@pytest.mark.parametrize("quantization_config, message", [
    ("fp4", "quantization_config must be a mapping"),   # was ignored: the ModelOpt file beside it took over
    ({"quant_method": "fp8", "weight_block_size": [128, 128]}, "hf_quant_config.json beside it"),
])
def test_a_config_jsons_quantization_beside_a_modelopt_file_is_read_too(quantization_config, message, runner,
                                                                        tmp_path):
    """config.json's own quantization_config was dropped in silence whenever hf_quant_config.json sat beside it,
    malformed or stating another format; both are read, and two different statements are refused by name."""
    import json
    import shutil

    config = json.loads((NVFP4 / "config.json").read_text())
    config["quantization_config"] = quantization_config
    (tmp_path / "config.json").write_text(json.dumps(config))
    shutil.copy(NVFP4 / "hf_quant_config.json", tmp_path / "hf_quant_config.json")
    r = runner.invoke(app, ["eval", "--hardware", "cs2", "--model", str(tmp_path), "-F", "csv"])
    assert r.exit_code == 2 and message in r.output and len(r.output.strip().splitlines()) == 1, r.output
    shutil.copy(NVFP4 / "config.json", tmp_path / "config.json")   # the release as shipped: the two agree
    assert runner.invoke(app, ["eval", "--hardware", "cs2", "--model", str(tmp_path), "-F", "csv"]).exit_code == 0


@pytest.mark.filterwarnings("error::RuntimeWarning")
def test_a_peak_below_its_floor_is_one_line_without_a_numpy_warning(runner):
    """The energy rule divided by the peak before the peak's own check: numpy's overflow warning went to stderr
    ahead of the error, three lines instead of one."""
    r = runner.invoke(app, ["eval", "--hardware", "cs2", "--model", "qwen3-30b-a3b", "--set",
                            "hardware.node_peak_flops=1e-320", "-F", "csv"])
    assert r.exit_code == 2 and "greater than or equal to 1e-30" in r.output, r.output
    assert len(r.output.strip().splitlines()) == 1, r.output


def test_a_vanishing_amortization_is_refused_by_the_figures_floor(runner):
    """amortization_years took any positive number: 1e-320 years divided the capital into inf USD per million tokens,
    shown as a result. It is a divisor like every rate, so it has the positive figures' floor, 1e-30."""
    r = runner.invoke(app, ["eval", "--hardware", "cs2", "--model", "qwen3-30b-a3b", "--set",
                            "hardware.amortization_years=1e-320", "-F", "csv"])
    assert r.exit_code == 2 and "amortization_years" in r.output and "1e-30" in r.output, r.output
    assert len(r.output.strip().splitlines()) == 1, r.output


def test_eval_without_a_capital_cost_says_so_instead_of_a_failed_check(runner):
    """Hardware with energy figures but no capital_usd: the breakdown read 'capital nan = nan ≠ nan in the model's
    column', a check failing on NaN against NaN; the model gives no total there, and the line now says why."""
    import json

    r = runner.invoke(app, ["eval", "--hardware", "cs2", "--model", "qwen3-30b-a3b", "--set",
                            "hardware.capital_usd=null", "-F", "json"])
    assert r.exit_code == 0, r.output
    line = next(t for t in json.loads(r.stdout) if t["term"] == "cost_per_mtok")
    assert line["value"] is None and "≠" not in line["meaning"] and "nan" not in line["meaning"], line
    assert "capital_usd unset" in line["meaning"], line


@pytest.mark.parametrize("unknown, message", [
    ({"paths": ["model.num_experts"], "range": [8, 200], "nominal": 128},   # sampled as 37.4 experts
     "model.num_experts is a whole number"),
    ({"paths": ["model.num_experts"], "values": [2, 4], "nominal": 4},   # E = 2 under top-k 8 was evaluated
     "num_experts_per_tok (8) exceeds num_experts (2)"),
])
def test_an_unknown_the_sweep_cannot_take_is_one_line(unknown, message, runner, tmp_path):
    """Sensitivity writes samples straight into the frame: a model field (whose spec needs the model's other
    fields, so its own check was skipped) took a continuous range, and values breaking the sweep's cross-field
    rules were evaluated; both gave numbers (a 4-point sweep's best tokens/s 11× too high) instead of a line."""
    cfg, unknowns = tmp_path / "bad.yaml", tmp_path / "unknowns.yaml"
    cfg.write_text(yaml.safe_dump(BASE))
    unknowns.write_text(yaml.safe_dump({"cs2": {"x": unknown}}))
    r = runner.invoke(app, ["sensitivity", str(cfg), "--results", str(tmp_path / "res"), "--no-readings",
                            "--samples", "8", "--unknowns", str(unknowns)])
    assert r.exit_code == 2 and message in r.output and len(r.output.strip().splitlines()) == 1, r.output
    assert not (tmp_path / "res" / "bad" / "sensitivity").exists()


def test_invariants_points_are_bounded(runner):
    """--points had no upper bound: 10⁸ on a large grid ran 44 s and ended in an internal MemoryError."""
    r = runner.invoke(app, ["invariants", str(ROOT / "sweeps" / "quickstart.yaml"), "--points", "100000000"])
    assert r.exit_code == 2 and "--points" in r.output and "65,536" in r.output, r.output
    assert len(r.output.strip().splitlines()) == 1, r.output


@pytest.mark.filterwarnings("error::RuntimeWarning")
def test_a_vanishing_operand_count_evaluates_without_a_numpy_warning(runner, tmp_path):
    """pe.mac_memory_operands takes 0 (no SRAM bound) or more; 1e-320 overflowed the SRAM-fed MAC rate and numpy's
    warning reached stderr beside the answer. The fed rate is then above the SIMD width, which binds, as at 0."""
    import json

    rows = {}
    for v in (0, 1e-320):
        path = tmp_path / f"pe{v}.yaml"
        path.write_text(yaml.safe_dump({**BASE, "hardware": {"preset": "cs2", "pe": {"mac_memory_operands": v}}}))
        r = runner.invoke(app, ["eval", str(path), "-F", "json"])
        assert r.exit_code == 0 and "Warning" not in r.output, r.output
        rows[v] = {t["term"]: t["value"] for t in json.loads(r.stdout)}
    assert rows[1e-320]["tokens_per_s"] == rows[0]["tokens_per_s"]


def test_a_yaml_file_over_a_mebibyte_is_refused_before_it_is_parsed(runner, tmp_path):
    """A sweep file of a million-entry axis (6.9 MB) took 28 s of pure-Python parsing before its refusal, and the
    bound was 16 MiB (about a minute); the file's size is the first check: one line, at once."""
    path = tmp_path / "huge.yaml"
    path.write_text("name: huge\nhardware: cs2\nmodel: qwen3-30b-a3b\naxes:\n  workload.B:\n"
                    + "".join(f"  - {i}\n" for i in range(1, 200_000)))
    assert path.stat().st_size > 2**20
    r = runner.invoke(app, ["check", str(path)])
    assert r.exit_code == 2 and "larger than 1,048,576 bytes" in r.output, r.output
    assert len(r.output.strip().splitlines()) == 1, r.output


def test_sensitivity_names_the_sweeps_hardware_not_an_option_it_lacks(runner, tmp_path):
    """A sweep whose hardware has no listed unknowns: the line named `[--hardware]`, an option sensitivity does not
    have (calibrate's); it names the sweep's `hardware`."""
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump({"name": "s", "hardware": "wsc-b200-4x8x8", "model": "deepseek-v3",
                                    "workload": {"mode": "decode", "seq_len": 1024, "B": 4}}))
    r = runner.invoke(app, ["sensitivity", str(path), "--results", str(tmp_path / "res")])
    assert r.exit_code == 2 and "[hardware] no calibration unknowns" in r.output, r.output
    assert len(r.output.strip().splitlines()) == 1 and not (tmp_path / "res").exists()
