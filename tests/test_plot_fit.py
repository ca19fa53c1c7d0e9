"""Figures keep their text on the page: an axis label longer than its axis wraps instead of running off the
figure (issue 27: the Pareto y label above a long legend was cut off)."""

from __future__ import annotations

from matplotlib.backends.backend_agg import FigureCanvasAgg

from wsemoe.report.figures.style import figure_bytes, outside_legend, single


def _long_legend_figure():
    """A one-panel figure whose legend below leaves the axes shorter than their y label, as in the Pareto
    figure of moentwine_vs_nvl72."""
    fig, ax = single("t")
    for i in range(9):
        ax.plot([1, 2], [i, i + 1], label=f"Pareto front of model {i}, hardware {i} (2 rows for 4 points)")
    outside_legend(fig, most=1)
    ax.set_ylabel("per device MoE block tokens per second (tokens/s), higher is better")
    ax.set_xlabel("per device tokens per second (tokens/s), higher is better")
    return fig, ax


def test_a_y_label_longer_than_its_axes_wraps_and_stays_on_the_figure():
    fig, ax = _long_legend_figure()
    figure_bytes(fig, "png")
    renderer = FigureCanvasAgg(fig).get_renderer()
    box, page = ax.yaxis.label.get_window_extent(renderer), fig.bbox
    assert box.y0 >= page.y0 - 1 and box.y1 <= page.y1 + 1, (box, page)
    assert box.height <= ax.get_window_extent(renderer).height * 1.02
    assert "higher is better" in ax.yaxis.label.get_text().replace("\n", " ")  # wrapped, not cut


def test_a_label_that_fits_is_left_as_written():
    fig, ax = single("t")
    ax.plot([1, 2], [1, 2])
    ax.set_ylabel("MFU")
    figure_bytes(fig, "svg")
    assert ax.yaxis.label.get_text() == "MFU"
