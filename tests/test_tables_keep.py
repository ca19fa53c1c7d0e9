"""Tables never drop what matters: the design axes, the objectives, `bound` and `feasible` of a `show` table, and
every column asked for with --columns, are in the table at any width (a narrow terminal continues the table
below, the same rows again); a column a filter makes constant is said once above the table."""

from __future__ import annotations

import pytest
from rich.console import Group
from rich.table import Table

from wsemoe.analysis.explain.query import select
from wsemoe.report.terminal import tables
from wsemoe.sweep.run import run_sweep

CFG = {"name": "keep", "hardware": "cs2", "model": "qwen3-30b-a3b", "workload": {"mode": "train", "seq_len": 8192},
       "axes": {"model.num_experts": [32, 128], "workload.B": [1, 2, 3], "workload.G": [1, 2, 4, 8]},
       "objectives": {"tokens_per_s": "max", "mem_peak_node_bytes": "min"}}


@pytest.fixture(scope="module")
def path(tmp_path_factory):
    return run_sweep(CFG, out_root=tmp_path_factory.mktemp("keep")).path


def _shown(renderable) -> list[str]:
    """Column names of every table in what `show` renders (headers joined back: names wrap at '.' and '_')."""
    items = renderable.renderables if isinstance(renderable, Group) else [renderable]
    names = []
    for t in items:
        if isinstance(t, Table):
            for col in t.columns:
                head = str(col.header).split("\n[")[0]
                names.append(head.replace("\n", ""))
    return names


@pytest.mark.parametrize("width", [40, 60, 80, 120])
@pytest.mark.parametrize("every_point", [False, True])
def test_axes_objectives_bound_and_feasible_are_never_dropped(path, width, every_point):
    sel = select(path, limit=5, every_point=every_point)
    shown = _shown(tables.selection(sel, width, "t"))
    must = ["model.num_experts", "workload.B", "workload.G", "tokens_per_s", "mem_peak_node_bytes", "bound"]
    must += ["feasible"] if every_point else []
    assert set(must) <= set(shown), (width, set(must) - set(shown))


@pytest.mark.parametrize("width", [40, 80])
def test_asked_columns_are_never_dropped(path, width):
    asked = ["workload.B", "workload.G", "mfu", "feasible", "tokens_per_s", "mem_peak_node_bytes", "step_time_s",
             "tokens_per_microbatch"]
    sel = select(path, columns=asked, every_point=True, limit=3)
    assert set(asked) <= set(_shown(tables.selection(sel, width, "t")))


def test_a_column_a_filter_makes_constant_is_said_once_above(path):
    sel = select(path, where="workload.G == 1 and model.num_experts == 32", every_point=True)
    out = tables.selection(sel, 200, "t")
    assert isinstance(out, Group) and "every row: model.num_experts = 32, workload.G = 1" in str(out.renderables[0])
    assert {"model.num_experts", "workload.G"}.isdisjoint(_shown(out)) and "workload.B" in _shown(out)


def test_a_constant_of_the_rows_shown_is_not_said_of_the_whole_selection(path):
    """--limit keeps a few rows of a larger selection: a value they share is said of the rows shown only."""
    sel = select(path, where="workload.G == 1", every_point=True, sort=["-tokens_per_s"], limit=2)
    text = str(tables.selection(sel, 200, "t").renderables[0])
    assert sel.matched > 1 and text.startswith("every row shown: ") and "workload.G = 1" in text
