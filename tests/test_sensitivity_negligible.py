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


def test_many_groups_split_into_tables_that_fit_and_lose_no_unknown_or_index():
    """cerebras_serving's 9 groups did not fit 120 columns: the unknowns' names vanished (the first column folded
    to nothing) and indices were cut to 'negligi…'. The groups now go into as many tables as fit the width."""
    from wsemoe.report.terminal.console import console

    groups = [f"seq_len={s}, model={m}" for s in (8192, 32768, 131072) for m in ("qwen3-235b-a22b", "deepseek-v3")]
    names = [f"static_power_unknown_{i}" for i in range(8)]
    bands = pd.DataFrame({"quantity": "speedup_vs_u", "group": groups, "nominal": 1.0, "q05": 0.5, "q95": 2.0})
    indices = pd.DataFrame([{"quantity": "speedup_vs_u", "group": g, "parameter": n, "mu_star": 0.000123 * (i + 1),
                             "mu_star_conf": 0.0000456} for i, g in enumerate(groups) for n in names])
    meta = {"method": "morris", "samples": 90, "points": 10, "unknowns": [{"name": n} for n in names]}
    out = console()
    out.width = 120
    with out.capture() as cap:
        out.print(view.sensitivity(SimpleNamespace(bands=bands, indices=indices, meta=meta), width=120))
    text = cap.get()
    assert max(len(line) for line in text.splitlines()) <= 120
    tables = text.count("Morris μ* ± 95% CI of each unknown")
    assert tables > 1 and all(text.count(n) == tables for n in names)
    for i in range(len(groups)):
        assert text.count(f"{0.000123 * (i + 1):.3g}±4.6e-05") == len(names)
    assert "…" not in text


def test_the_energy_ratio_of_the_compared_points_is_a_headline_quantity():
    """docs/energy.md read the energy ratio's Morris ranking from a run whose terminal output never showed it:
    `energy_vs_<comparison>` is now printed beside the speedups."""
    from wsemoe.analysis.uncertainty.sensitivity import headline_quantities

    qs = ["sweep_best_mfu", "best_tokens_per_s", "speedup_vs_nvl72", "energy_vs_nvl72", "best_mfu", "best_B"]
    result = SimpleNamespace(bands=pd.DataFrame({"quantity": qs}))
    assert headline_quantities(result) == ["best_tokens_per_s", "speedup_vs_nvl72", "energy_vs_nvl72"]
