"""Sensitivity reports no noise: where a quantity's 5–95% band is within NEGLIGIBLE of its nominal value, the
Sobol indices of that group (ratios of tiny variances, often above 1) are replaced by 'negligible' and a note says
why; groups that do vary keep their indices."""

from __future__ import annotations

from types import SimpleNamespace

import pandas as pd
from rich.console import Console

from wsemoe.report.terminal import sensitivity as view


def _result(spread_b: float):
    bands = pd.DataFrame({"quantity": ["speedup_vs_u"] * 2, "group": ["a", "b"], "nominal": [2.0, 1.0],
                          "q05": [1.5, 1.0 - spread_b / 2], "q95": [2.5, 1.0 + spread_b / 2]})
    indices = pd.DataFrame({"quantity": ["speedup_vs_u"] * 2, "group": ["a", "b"], "parameter": ["io", "io"],
                            "ST": [0.8, 2.52], "S1": [0.7, 0.35]})
    meta = {"method": "sobol", "samples": 64, "points": 10, "unknowns": [{"name": "io"}]}
    return SimpleNamespace(bands=bands, indices=indices, meta=meta)


def _text(result) -> str:
    console = Console(width=200, record=True)
    console.print(view.sensitivity(result))
    return console.export_text()


def test_a_group_that_barely_varies_shows_negligible_not_an_index_above_one():
    text = _text(_result(1e-5))
    assert "negligible" in text and "2.52" not in text and "0.80 (0.70)" in text
    assert "variance negligible in b" in " ".join(text.split())


def test_a_group_that_varies_keeps_its_indices():
    text = _text(_result(0.2))
    assert "2.52 (0.35)" in text and "negligible" not in text


def test_the_threshold_is_relative_to_the_nominal_value():
    row = {"nominal": 1000.0, "q05": 999.6, "q95": 1000.4}
    assert view.negligible(row)
    assert not view.negligible({**row, "q05": 990.0})


def test_the_notes_read_at_the_terminals_width_not_the_tables():
    """As the table's caption the notes wrapped to its width (60 characters on a 140-column terminal)."""
    text = _text(_result(1e-5))
    line = next(ln for ln in text.splitlines() if "variance negligible in b" in ln)
    assert "indices there are noise, not shown" in line
