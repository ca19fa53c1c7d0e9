"""The one rule for numbers and counts in text (`wsemoe.wording`), by hand cases, and its users agreeing with it."""

from __future__ import annotations

import numpy as np
import pytest

from wsemoe.wording import count, noun, number


@pytest.mark.parametrize("value, text", [
    (0, "0"), (1, "1"), (2, "2"), (999, "999"), (1000, "1,000"), (1024, "1,024"), (8192, "8,192"),
    (32768, "32,768"), (131072, "131,072"), (-4096, "-4,096"),
    (0.0, "0"), (1.0, "1"), (8192.0, "8,192"), (32768.0, "32,768"),            # a whole float reads as its int
    (np.int64(32768), "32,768"), (np.float64(8192.0), "8,192"), (np.float32(2.0), "2"),
    (0.375, "0.375"), (1.5, "1.5"), (1234.5, "1,234.5"), (0.1 + 0.2, "0.3"),   # shortest form, 6 digits
    (1e-5, "1e-05"), (2.5e20, "2.5e+20"), (1e18, "1e+18"),
])
def test_number_groups_every_whole_number_from_a_thousand(value, text):
    assert number(value) == text


def test_number_keeps_fewer_digits_on_request_and_leaves_what_is_no_number_as_it_is():
    assert number(1234.5678, digits=3) == "1.23e+03" and number(3.14159, digits=3) == "3.14"
    assert number(float("nan")) == "nan" and number(float("inf")) == "inf"
    assert number(True) == "True" and number(np.bool_(False)) == "False"   # a flag is no count
    assert number("fp8") == "fp8" and number(None) == "None"


@pytest.mark.parametrize("n, text", [
    (0, "0 runs"), (1, "1 run"), (2, "2 runs"), (1000, "1,000 runs"), (32768, "32,768 runs"),
    (1.0, "1 run"), (2.0, "2 runs"), (0.5, "0.5 runs"), (np.int64(1), "1 run"),
])
def test_count_puts_its_noun_in_the_number_it_takes(n, text):
    assert count(n, "run") == text


def test_an_irregular_plural_is_given_and_the_noun_stands_alone():
    assert count(1, "entry", "entries") == "1 entry" and count(3, "entry", "entries") == "3 entries"
    assert noun(1, "front") == "front" and noun(0, "front") == "fronts" and noun(7, "reading") == "readings"


def test_figures_and_tables_read_whole_numbers_by_the_same_rule():
    from wsemoe.report.figures.style import amount, group_label, setting
    from wsemoe.report.terminal.formats import cell

    assert group_label(["workload.seq_len"], 32768) == "S = 32,768" and setting("workload.B", 1024.0) == "B 1,024"
    assert amount("workload.seq_len", 8192) == "8.19 k tokens"   # an amount keeps its prefix: 3 digits, then k, M
    assert [cell(v) for v in (8192, 32768, 8192.0)] == ["8,192", "32,768", "8,192"]


def test_a_default_tick_axis_groups_its_whole_numbers_and_keeps_the_rest():
    """serving_wafers' y axis read '1000 … 2000' under a caption's '1,883 tokens/s per user'."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from wsemoe.report.figures.textfit import grouped_ticks

    fig = Figure()
    ax, small = fig.add_subplot(121), fig.add_subplot(122)
    ax.plot([400, 2000], [-3000, 12000])
    small.plot([0, 1], [0, 0.5])
    FigureCanvasAgg(fig)
    grouped_ticks(fig)
    fig.canvas.draw()
    ticks = lambda axis: [t.get_text() for t in axis.get_ticklabels()]  # noqa: E731
    assert "1,000" in ticks(ax.xaxis) and "2,000" in ticks(ax.xaxis) and "500" in ticks(ax.xaxis)
    assert "\u22122,000" in ticks(ax.yaxis) and "10,000" in ticks(ax.yaxis)
    assert {"0.0", "0.1", "0.2"} <= set(ticks(small.yaxis))   # decimals as matplotlib writes them
