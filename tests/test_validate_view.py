"""`wsemoe validate` as people and tools read it: a summary line with the yes / no / property counts, tables that
fit 80 and 120 columns with every explanation as a numbered note below them (never inside a cell), CSV, JSON
and Markdown of the same rows, and `--only` by family."""

from __future__ import annotations

import io
import json

import pandas as pd
import pytest
from rich.cells import cell_len
from rich.console import Console

from wsemoe.cli import app
from wsemoe.report.terminal import validation
from wsemoe.validate import families
from wsemoe.validate.common import row

WHY = "because the two losses multiply and no constant in range reconciles the published factor with the rest"
ROWS = [
    {**row("qwen3-235b-a22b total parameters (published count vs the model's count)", "235 B", "235.09 B", "+0.04%",
           "±1.0%", True), "family": "params"},
    {**row("BTA speedup in tokens/s at E 128, top-k 1", "up to 5×", "18.95× (G=46, B=2)", "+279% vs 5×", "4×–8×",
           False, reason=WHY), "family": "bta"},
    {**row("uniform batching is G = 1", "G = 1", "G = 1", "", "exact", True, kind="property"), "family": "bta"},
    {**row("a regression", "1", "2", "+100%", "±1%", False), "family": "bta"},  # no reason: FAILS
    {**row("headline with hop latency 500 ns instead of 200 ns", "+39%", "+26% where NVL72 is HBM-bound", "",
           "informational: how far the headline moves", None), "family": "scale"},
    {**row("headline with hop latency 100 ns", "+39%", "+183%", "", "informational: how far the headline moves",
           None), "family": "scale"},
]


def _render(width: int) -> str:
    out = io.StringIO()
    Console(file=out, width=width, soft_wrap=False, highlight=False, color_system=None).print(validation.tables(ROWS))
    return out.getvalue()


def test_summary_counts_every_status():
    assert validation.summary(ROWS) == ("4 claims (params, bta, scale): 1 yes, 1 no (why: the notes), 1 property, "
                                        "1 FAIL without a known reason; 2 context rows (no pass/fail)")


@pytest.mark.parametrize("width", [80, 120])
def test_tables_fit_the_width_with_explanations_as_notes(width):
    text = _render(width)
    assert max(cell_len(line.rstrip()) for line in text.splitlines()) <= width
    flat = " ".join(text.split())
    assert "no [1]" in flat and f"[1] {WHY}" in flat  # the reason once, as a note below the table
    assert flat.count("two losses multiply") == 1
    assert "FAILS" in flat and "[c1–c2] how far the headline moves" in flat and "informational" not in flat
    assert "qwen3-235b-a22b" in text  # a name is never folded inside a word at these widths


def test_formats_for_tools():
    frame = validation.frame(ROWS)
    assert list(frame["status"]) == ["yes", "no", "property", "FAILS", "info", "info"]
    assert frame.loc[1, "reason"] == WHY and list(frame["family"]) == ["params", "bta", "bta", "bta", "scale", "scale"]
    md = validation.markdown(ROWS)
    assert md.startswith("**4 claims") and "| 2 | BTA speedup in tokens/s at E 128, top-k 1 |" in md
    assert f"\n[1] {WHY}" in md and "| c2 | headline with hop latency 100 ns |" in md


def test_only_names_families_with_a_did_you_mean():
    assert families(["moentwine"]) == ["mapping", "balance", "scale"]
    assert families(["bta", "params"]) == ["bta", "params"]
    from wsemoe.errors import ConfigError

    with pytest.raises(ConfigError, match="did you mean 'balance'"):
        families(["balanse"])


@pytest.mark.parametrize("fmt", ["csv", "json", "markdown"])
def test_command_formats_and_only(runner, fmt):
    r = runner.invoke(app, ["validate", "--only", "params", "--format", fmt])
    assert r.exit_code == 0, r.output
    if fmt == "csv":
        df = pd.read_csv(io.StringIO(r.output))
        assert set(df["family"]) == {"params"} and (df["status"] == "yes").all() and len(df) >= 6
    elif fmt == "json":
        data = json.loads(r.output)
        assert {d["family"] for d in data} == {"params"} and all(d["status"] == "yes" for d in data)
    else:
        assert r.output.startswith("**") and "params" in r.output.splitlines()[0]
