"""`wsemoe new`: a commented starting sweep that `check` and `sweep` accept as written, on every hardware preset
and in every mode; it never replaces a file."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from wsemoe.cli import app
from wsemoe.config import presets, yamlio

ROOT = Path(__file__).resolve().parents[1]
MODES = ("train", "prefill", "decode")
SECTIONS = ("# The machine", "# The model", "# What runs", "# Mapping", "# Expert load", "# The design space",
            "# Objectives")
# One sweep per hardware preset, the modes rotated over them (every mode runs on a streamed wafer, a switch
# and a mesh); `check` covers every pair.
RUN = [(hw, MODES[i % 3]) for i, hw in enumerate(presets.names("hardware"))]


def _new(runner, tmp_path, name, *args):
    r = runner.invoke(app, ["new", name, *args, "-o", str(tmp_path / f"{name}.yaml")])
    assert r.exit_code == 0, r.output
    return tmp_path / f"{name}.yaml"


@pytest.mark.parametrize("hardware,mode", list(itertools.product(presets.names("hardware"), MODES)))
def test_every_preset_and_mode_checks_as_written(runner, tmp_path, hardware, mode):
    path = _new(runner, tmp_path, f"{hardware}-{mode}", "--hardware", hardware, "--model", "qwen3-30b-a3b",
                "--mode", mode)
    text = path.read_text()
    assert all(s in text for s in SECTIONS), text
    assert yamlio.load(path)["workload"]["mode"] == mode
    r = runner.invoke(app, ["check", str(path)])
    assert r.exit_code == 0 and "valid" in r.output, r.output


@pytest.mark.parametrize("hardware,mode", RUN)
def test_it_runs_as_written(runner, tmp_path, hardware, mode):
    path = _new(runner, tmp_path, "start", "--hardware", hardware, "--model", "deepseek-v3", "--mode", mode)
    r = runner.invoke(app, ["sweep", str(path), "--results", str(tmp_path / "results"), "-q"])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "results" / "start" / "manifest.json").is_file()


def test_serving_columns_and_objectives_by_mode(runner, tmp_path):
    for mode, objectives in (("train", {"mfu", "mem_peak_node_bytes"}), ("prefill", {"tokens_per_s", "ttft_s"}),
                             ("decode", {"tokens_per_s", "tpot_s"})):
        cfg = yamlio.load(_new(runner, tmp_path, mode, "--hardware", "wsc-b200-8x8", "--model", "deepseek-v3",
                               "--mode", mode))
        assert set(cfg["objectives"]) == objectives
    assert cfg["workload"]["prompt_len"] <= cfg["workload"]["seq_len"]   # decode: ttft_s from a prompt


def test_a_hugging_face_config_is_written_relative_to_the_file(runner, tmp_path, monkeypatch):
    """The path in the file resolves against the file's folder, wherever it is run from."""
    model = ROOT / "tests" / "data" / "hf" / "olmoe-1b-7b-0924.json"
    (tmp_path / "sub").mkdir()
    path = _new(runner, tmp_path / "sub", "olmoe", "--hardware", "wsc-b200-8x8", "--model", str(model))
    hf = yamlio.load(path)["model"]["hf_config"]
    assert not Path(hf).is_absolute() and (path.parent / hf).resolve() == model.resolve()
    monkeypatch.chdir(tmp_path)
    assert runner.invoke(app, ["check", str(path)]).exit_code == 0


def test_a_local_model_folder_is_named_as_it_is(runner, tmp_path, monkeypatch):
    """`--model mymodel` for ./mymodel/config.json (no ./ needed, as a Hugging Face loader reads a local folder);
    a folder named like a preset does not hide the preset."""
    import shutil

    shutil.copytree(ROOT / "tests" / "data" / "hf" / "deepseek-v3.2-nvfp4", tmp_path / "mymodel")
    (tmp_path / "deepseek-v3").mkdir()
    monkeypatch.chdir(tmp_path)
    assert yamlio.load(_new(runner, tmp_path, "mine", "--hardware", "cs3", "--model", "mymodel",
                            "--mode", "decode"))["model"] == {"hf_config": "mymodel"}
    assert yamlio.load(_new(runner, tmp_path, "preset", "--hardware", "cs3", "--model", "deepseek-v3",
                            "--mode", "decode"))["model"] == "deepseek-v3"


def test_never_replaces_a_file(runner, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine.yaml").write_text("my notes\n")
    r = runner.invoke(app, ["new", "mine", "--hardware", "cs2", "--model", "qwen3-30b-a3b"])
    assert r.exit_code != 0 and "exists; wsemoe new never replaces a file" in r.output
    assert len(r.output.strip().splitlines()) == 1 and (tmp_path / "mine.yaml").read_text() == "my notes\n"
    r = runner.invoke(app, ["new", "other", "--hardware", "cs2", "--model", "qwen3-30b-a3b"])
    assert r.exit_code == 0 and (tmp_path / "other.yaml").is_file()      # NAME.yaml in the current folder
    r = runner.invoke(app, ["new", "other", "--hardware", "cs2", "--model", "qwen3-30b-a3b"])
    assert r.exit_code != 0 and "exists" in r.output                      # not even its own file


@pytest.mark.parametrize("args,message", [
    (["bad/name", "--hardware", "cs2", "--model", "qwen3-30b-a3b"], "[NAME] a sweep name is 1-100 ASCII letters"),
    (["ok", "--hardware", "cs2", "--model", "qwen3-30b-a3b", "--mode", "serve"], "[--mode] 'serve' is not one of"),
    (["ok", "--hardware", "cs9", "--model", "qwen3-30b-a3b"], "unknown hardware preset 'cs9'"),
])
def test_bad_input_is_one_line_and_writes_nothing(runner, tmp_path, monkeypatch, args, message):
    monkeypatch.chdir(tmp_path)
    r = runner.invoke(app, ["new", *args])
    assert r.exit_code != 0 and message in r.output and len(r.output.strip().splitlines()) == 1, r.output
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("mode", ("prefill", "decode"))
def test_a_serving_wafer_says_where_its_weights_live(runner, tmp_path, mode):
    """An SRAM-serving wafer's starter names SRAM and its pipeline, not streaming, sweeps where attention sits, and
    runs as written; a weight-streaming wafer asked to serve points at SRAM serving, and a GPU server does not."""
    hw = tmp_path / "cs3-sram.yaml"
    hw.write_text("preset: cs3\nweight_source: sram\n")
    path = _new(runner, tmp_path, "serve", "--hardware", str(hw), "--model", "qwen3-30b-a3b", "--mode", mode)
    text = path.read_text()
    mapping = text[text.index("# Mapping"):text.index("mapping:")]
    assert "SRAM" in mapping and "pipeline_wafers" in mapping and "stream" not in mapping, mapping
    assert yamlio.load(path)["axes"]["mapping.pe_placement"] == ["blocked", "interleaved"]
    r = runner.invoke(app, ["sweep", str(path), "--results", str(tmp_path / "results"), "-q"])
    assert r.exit_code == 0, r.output
    if mode == "decode":   # its figures too: the stored config leaves pipeline_wafers (unset) out
        r = runner.invoke(app, ["plot", str(tmp_path / "results" / "serve"), "--format", "png"])
        assert r.exit_code == 0, r.output
        plots = tmp_path / "results" / "serve" / "plots"
        assert (plots / "serving_wafers.png").is_file() and (plots / "serving_heatmap_serve.png").is_file()
        from wsemoe.report.figures import fig_serving
        from wsemoe.report.figures.view import ResultsView

        view = ResultsView.load(tmp_path / "results" / "serve")
        fig = fig_serving.per_user(view, fig_serving._serving_rows(view))   # its legend beside the panels, off the lines
        assert all(ax.get_legend() is None for ax in fig.axes) and len(fig.legends) == 1
    streamed = _new(runner, tmp_path, "stream", "--hardware", "cs3", "--model", "qwen3-30b-a3b", "--mode", mode)
    assert "hardware: {preset: cs3, weight_source: sram}" in streamed.read_text()
    for args in (("cs3", "train"), ("h200-sxm", mode)):
        other = _new(runner, tmp_path, f"other-{args[1]}", "--hardware", args[0], "--model", "qwen3-30b-a3b",
                     "--mode", args[1])
        assert "weight_source: sram" not in other.read_text()


@pytest.mark.parametrize("hardware", ("wsc-b200-4x8x8", "cs3"))
def test_axis_comments_stand_apart_from_their_values(runner, tmp_path, hardware):
    text = _new(runner, tmp_path, "axes", "--hardware", hardware, "--model", "deepseek-v3", "--mode", "decode")
    axes = text.read_text().split("\naxes:\n")[1].split("\n\n")[0].splitlines()
    assert axes and all(" # " in line or "  #" in line for line in axes if "#" in line), axes


def test_the_mode_defaults_as_the_config_does(tmp_path, runner, monkeypatch):
    # one default per choice: unset, a sweep runs train, or decode where the hardware serves from SRAM; `new`
    # defaulted to train and refused a serving wafer until told --mode
    monkeypatch.chdir(tmp_path)
    (tmp_path / "hw.yaml").write_text("preset: cs3\nweight_source: sram\n")
    r = runner.invoke(app, ["new", "serve", "--hardware", "hw.yaml", "--model", "qwen3-30b-a3b"])
    assert r.exit_code == 0, r.output
    assert "a starting decode sweep" in (tmp_path / "serve.yaml").read_text()
    assert runner.invoke(app, ["new", "train", "--hardware", "cs2", "--model", "qwen3-30b-a3b"]).exit_code == 0
    assert "a starting train sweep" in (tmp_path / "train.yaml").read_text()
