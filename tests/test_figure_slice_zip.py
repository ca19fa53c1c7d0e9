"""A figure's representative slice never holds a column zipped with one it keeps free: cerebras_serving's energy
figures held `weight_source = sram` and so drew CS-3 alone ("one frontier per system" with one system), because
NVL72's `resident` beside the wafer's `sram` was read as an axis of its own."""

from __future__ import annotations

import pandas as pd

from wsemoe.report.figures.view import ResultsView


def _view() -> ResultsView:
    pts = pd.DataFrame({"hardware": ["cs3", "cs3", "nvl72", "nvl72"],
                        "hardware.weight_source": ["sram", "sram", "resident", "resident"],
                        "workload.seq_len": [8192, 32768, 8192, 32768], "feasible": [True] * 4})
    return ResultsView("v", {"axes": list(pts.columns[:3]), "objectives": {}}, pts, pts.iloc[:0], None, {})


def test_a_zip_partner_of_a_kept_axis_moves_with_it():
    df, said = _view().slice(keep=("hardware",))
    assert set(df["hardware"]) == {"cs3", "nvl72"} and "weight_source" not in said
    assert set(df["workload.seq_len"]) == {8192} and "8,192" in said  # an independent axis is still held


def test_without_the_kept_axis_the_partner_is_held_as_before():
    df, said = _view().slice(keep=())
    assert len(set(df["hardware"])) == 1 and len(set(df["hardware.weight_source"])) == 1
