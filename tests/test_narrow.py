"""At 80 columns names are never broken inside a word (a table wraps at spaces, after '.' or '_' in headers, or
leaves a column out and says so), and cross-run columns carry their units."""

from __future__ import annotations

import pytest

from wsemoe.cli import app
from wsemoe.sweep.run import run_sweep

CFG = {"hardware": "cs2", "model": "qwen3-30b-a3b", "workload": {"mode": "train", "seq_len": 8192},
       "axes": {"workload.B": [1, 2], "workload.G": [1, 8]}, "objectives": {"tokens_per_s": "max"}}


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    root = tmp_path_factory.mktemp("narrow")
    for name, hw in (("moentwine_scale_balance_long", "cs2"), ("another_rather_long_sweep_name", "cs3")):
        run_sweep({**CFG, "name": name, "hardware": hw}, out_root=root)
    return root


def test_ls_keeps_names_whole(root, runner):
    r = runner.invoke(app, ["ls", str(root)], env={"COLUMNS": "80"})
    assert r.exit_code == 0
    text = r.output.replace("_\n", "_").replace(" ", "")  # a long name breaks after '_' only
    assert "moentwine_scale_balance_long" in text and "another_rather_long_sweep_name" in text
    words = set(r.output.split())
    assert {"config", "unknown", "Python"} <= words and not words & {"con", "unk", "Pyt"}  # wrapped at spaces only


def test_presets_keep_names_whole(runner):
    r = runner.invoke(app, ["presets"], env={"COLUMNS": "80"})
    for name in ("wsc-b200-4x8x8", "dgx-b200-x32", "qwen3-235b-a22b", "deepseek-v3"):
        assert name in r.output


def test_compare_columns_carry_units(root, runner):
    a, b = root / "moentwine_scale_balance_long", root / "another_rather_long_sweep_name"
    r = runner.invoke(app, ["compare", str(a), str(b)], env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    assert "[k tokens/s]" in r.output and "[×]" in r.output and "e+0" not in r.output
