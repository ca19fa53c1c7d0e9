"""A what-if never replaces the stored answer: `wsemoe readings CONFIG --set ... / --only ...` evaluates and prints,
labelled as a what-if, and leaves results/<name>/readings/ as the sweep's own analysis wrote it; a what-if stored
by an older version is not read as the answer; `show` keeps printing the stored answer."""

from __future__ import annotations

import json

import pytest

from wsemoe.analysis.uncertainty import readings as rd
from wsemoe.analysis.uncertainty import robustness
from wsemoe.cli import app
from wsemoe.config import yamlio

SWEEP = {
    "name": "whatif", "hardware": "cs2", "model": "qwen3-30b-a3b",
    "workload": {"mode": "train", "seq_len": 8192},
    "axes": {"model.num_experts": [32, 128], "workload.B": {"range": [1, 8]}, "workload.G": {"pow2": [1, 16]}},
    "objectives": {"tokens_per_s": "max"},
    "compare": {"name": "uniform", "baseline": {"workload.G": 1}, "metric": "tokens_per_s"},
}


@pytest.fixture
def swept(runner, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "whatif.yaml"
    path.write_text(yamlio.dumps(SWEEP))
    r = runner.invoke(app, ["sweep", str(path)])
    assert r.exit_code == 0, r.output
    folder = tmp_path / "results" / "whatif" / rd.FOLDER
    assert folder.is_dir()
    return path, folder


def _snapshot(folder):
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


@pytest.mark.parametrize("args", [["--set", "attn_kernel=flash"], ["--only", "kept_activations"],
                                  ["--set", "attn_kernel=materialized", "--only", "kept_activations"]])
def test_a_what_if_leaves_the_stored_answer_and_says_it_is_one(runner, swept, args):
    path, folder = swept
    before = _snapshot(folder)
    r = runner.invoke(app, ["readings", str(path), *args], env={"COLUMNS": "400"})
    assert r.exit_code == 0, r.output
    assert _snapshot(folder) == before  # not rewritten, not touched
    assert "what-if" in r.output and "not stored" in r.output
    statement = [ln for ln in r.output.splitlines() if "speedup_vs_uniform: " in ln]
    assert statement and all(ln.startswith("what-if (") for ln in statement), statement


def test_show_prints_the_stored_answer_after_a_what_if(runner, swept):
    path, _ = swept
    shown = runner.invoke(app, ["show", "results/whatif"]).output
    runner.invoke(app, ["readings", str(path), "--set", "attn_kernel=materialized"])
    after = runner.invoke(app, ["show", "results/whatif"]).output
    assert after == shown and "what-if" not in after


def test_the_full_analysis_is_still_written_by_readings(runner, swept):
    path, folder = swept
    meta = json.loads((folder / "meta.json").read_text())
    assert not robustness.what_if(meta) and meta["varied"]


def test_a_what_if_stored_by_an_older_version_is_not_the_answer(swept):
    """An older version wrote what-ifs into readings/: read back, it is not taken as the sweep's analysis."""
    _, folder = swept
    from wsemoe.config.loader import load_config

    result = rd.evaluate(load_config(SWEEP), fixed={"attn_kernel": "flash"})
    assert robustness.what_if(result.meta) == "attn_kernel=flash set for every run"
    rd.write(result, folder.parent, force=True)
    assert rd.load(folder.parent) is None


def test_the_python_api_does_not_store_a_what_if(swept):
    import wsemoe

    path, folder = swept
    before = _snapshot(folder)
    r = wsemoe.robustness(str(path), fixed={"attn_kernel": "flash"}, write=True)
    assert _snapshot(folder) == before
    assert all(line.startswith("what-if (") for line in r.statement())


def test_the_python_api_writes_the_readings_of_a_sweep_given_as_a_dict(tmp_path):
    """`robustness(config_dict, write=True)` was a TypeError (Path of a dict), though every API function takes a
    sweep as a dict."""
    import wsemoe

    cfg = {"name": "asdict", "hardware": "cs2", "model": "qwen3-30b-a3b", "axes": {"workload.G": [1, 2]}}
    wsemoe.robustness(cfg, write=True, out_root=tmp_path)
    assert (tmp_path / "asdict" / "readings").is_dir()
