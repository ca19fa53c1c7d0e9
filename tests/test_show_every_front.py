"""A sweep about a system shows it: when the Pareto front is one front per hardware (or model) and `show`'s limit
cuts it, the rows are the best of every front in turn, not the first fronts' rows alone (cerebras_serving printed
20 rows, none of them CS-3); an explicit --sort keeps its one global order."""

from __future__ import annotations

import io

import pandas as pd
import pytest

from wsemoe.cli import app
from wsemoe.sweep.run import run_sweep

CFG = {"name": "fronts", "hardware": "nvl72", "model": "qwen3-30b-a3b", "workload": {"mode": "decode", "seq_len": 4096},
       "zip": [{"hardware": ["nvl72"] * 6 + ["wsc-b200-8x8"], "mapping.tp": [1, 2, 4, 8, 24, 72, None]}],
       "axes": {"workload.B": [1, 2, 4, 8, 16, 32]},
       "objectives": {"tokens_per_s_per_user": "max", "tokens_per_s": "max"}}


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return run_sweep(CFG, out_root=tmp_path_factory.mktemp("f")).path


def _shown(runner, folder, *args) -> pd.DataFrame:
    r = runner.invoke(app, ["show", str(folder), "--format", "csv", *args])
    assert r.exit_code == 0, r.output
    return pd.read_csv(io.StringIO(r.output[r.output.index("point,"):]), index_col="point")


def test_a_limit_takes_the_best_rows_of_every_front_in_turn(runner, folder):
    front = pd.read_csv(folder / "pareto.csv", index_col=0)
    sizes = front["hardware"].value_counts()
    assert sizes["nvl72"] > 4 and sizes["wsc-b200-8x8"] >= 2  # one front longer than the limit
    rows = _shown(runner, folder, "--limit", "4")
    assert len(rows) == 4 and rows["hardware"].value_counts().to_dict() == {"nvl72": 2, "wsc-b200-8x8": 2}
    for hw, part in rows.groupby("hardware"):  # each front's best rows, best first
        mine = front[front["hardware"] == hw]
        assert list(part.index) == list(mine.index[:len(part)])


def test_an_explicit_sort_keeps_one_global_order(runner, folder):
    rows = _shown(runner, folder, "--limit", "3", "--sort", "-tokens_per_s")
    front = pd.read_csv(folder / "pareto.csv", index_col=0)
    assert list(rows.index) == list(front.sort_values("tokens_per_s", ascending=False, kind="stable").index[:3])


def test_the_table_says_how_the_rows_were_chosen(runner, folder):
    out = " ".join(runner.invoke(app, ["show", str(folder), "--limit", "4"], env={"COLUMNS": "200"}).output.split())
    assert "4 of " in out and "the best of each of the 2 fronts in turn (--limit 0 shows all)" in out, out
