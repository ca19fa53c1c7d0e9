"""Tick labels at given values never run into one another: a label that would overlap the one before it is
blanked when the figure is drawn (the serving figure's wafer counts 12, 13, 15 on a narrow panel)."""

from __future__ import annotations

from matplotlib.figure import Figure

from wsemoe.report.figures.style import figure_bytes, log2_ticks


VALUES = [12, 13, 15, 24, 32, 48, 64]   # the serving figure's wafer counts on a narrow panel


def _crowded():
    """A 2-inch figure whose log2 axis holds VALUES, drawn (labels are thinned when it is drawn)."""
    fig = Figure(figsize=(2.0, 2.0), layout="constrained")
    ax = fig.subplots()
    ax.plot(VALUES, VALUES)
    log2_ticks(ax, VALUES)
    figure_bytes(fig, "png")
    return fig, ax, VALUES


def test_crowded_ticks_keep_the_ones_that_fit():
    fig, ax, values = _crowded()
    renderer = fig._get_renderer()
    shown = [t for t in ax.get_xticklabels() if t.get_visible() and t.get_text()]
    boxes = [t.get_window_extent(renderer) for t in shown]
    assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])
    assert shown[0].get_text() == "12" and shown[-1].get_text() == "64" and len(shown) < len(values)


def test_an_inverted_axis_keeps_every_label_that_fits():
    """Top-k falls to the right (the BTA sparsity figure inverts its axis): labels are thinned in their order on
    the page, so well-spaced ones all stay. Thinned in value order, every label but the rightmost was blanked."""
    fig = Figure(figsize=(6.0, 2.0), layout="constrained")
    ax = fig.subplots()
    values = [8, 4, 2, 1]
    ax.plot(values, values)
    log2_ticks(ax, values, ["8\n1/16", "4\n1/32", "2\n1/64", "1\n1/128"])
    ax.invert_xaxis()
    figure_bytes(fig, "png")
    assert [t.get_text() for t in ax.get_xticklabels() if t.get_visible()] == ["8\n1/16", "4\n1/32", "2\n1/64",
                                                                                "1\n1/128"]


def test_marker_labels_move_off_one_another():
    """Labels of markers that sit close together (the roofline's stage labels) are moved apart when drawn; an
    annotation not marked as one stays where it was put; the SVG carries no id the labels share."""
    from wsemoe.report.figures.textfit import marker_label

    fig = Figure(figsize=(3.0, 2.0), layout="constrained")
    ax = fig.subplots()
    ax.plot([1, 2], [1, 2])
    labels = [marker_label(ax.annotate(t, (1.5, 1.5), xytext=(7, -9), textcoords="offset points"))
              for t in ("attention", "MoE", "dense FFN")]
    other = ax.annotate("caption", (1.5, 1.5), xytext=(7, -9), textcoords="offset points")
    figure_bytes(fig, "png")
    renderer = fig._get_renderer()
    boxes = [t.get_window_extent(renderer) for t in labels]
    assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])
    assert labels[0].xyann == (7, -9) and other.xyann == (7, -9)   # the first stays; others are not marker labels
    import re

    ids = re.findall(r'id="([^"]+)"', figure_bytes(fig, "svg").decode())
    assert len(ids) == len(set(ids))


def test_a_narrow_ratio_range_gets_ticks_a_few_percent_apart():
    """Ratios of 1.00× to 1.04× on a log axis: '1×' alone read nothing (quickstart's readings figure)."""
    from matplotlib.figure import Figure

    from wsemoe.report.figures.style import ratio_ticks

    ax = Figure().subplots()
    ax.set_xscale("log")
    ax.scatter([1.0, 1.003, 1.04], [0, 1, 2])
    ratio_ticks(ax, "x", [1.0, 1.003, 1.04])
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert "1×" in labels and "1.02×" in labels and len(labels) >= 3
    ax.set_yscale("log")
    ratio_ticks(ax, "y", [0.5, 4.0])   # a wide range keeps the coarse ticks
    assert {"0.5×", "1×", "2×"} <= {t.get_text() for t in ax.get_yticklabels()}


def test_a_blanked_tick_label_takes_its_tick_along():
    """Every tick drawn carries its label: the serving figure's wafer axis kept a bare tick at 13 where the
    label, which ran into 12, was blanked."""
    fig, ax, values = _crowded()
    lo, hi = sorted(ax.get_xlim())
    ticks = [x for x in ax.xaxis.get_majorticklocs() if lo <= x <= hi]
    shown = [t for t in ax.get_xticklabels() if t.get_visible() and t.get_text()]
    assert len(ticks) == len(shown) < len(values)
    assert sorted(t.get_position()[0] for t in shown) == sorted(ticks)


def test_a_ratio_range_within_one_tick_still_shows_two():
    """Ratios of 1.000× to 1.002× (bta_experts' readings at E 8): the axis showed '1×' alone; it widens to the
    ticks either side, so at least two labelled ticks read the scale."""
    from wsemoe.report.figures.style import ratio_ticks

    ax = Figure().subplots()
    ax.set_xscale("log")
    values = [1.0, 1.0007, 1.001, 1.002]
    ax.scatter(values, range(4))
    ratio_ticks(ax, "x", values)
    ax.scatter([], [])   # an artist added later (a legend entry) autoscales the axis again: the limits must hold
    lo, hi = ax.get_xlim()
    shown = [t.get_text() for t in ax.get_xticklabels() if t.get_text() and lo <= t.get_position()[0] <= hi]
    assert len(set(shown)) >= 2 and "1×" in shown
    assert lo <= min(values) and max(values) <= hi


def test_ratio_ticks_over_a_few_tens_of_percent_do_not_run_into_one_another():
    """Ratios of 1.00× to 1.499× on a log y axis (quickstart's readings figure, right panel: E 128's range): the
    narrow list put 0.99×, 1×, 1.01×, 1.02× within 3% of one another and their labels overlapped."""
    from wsemoe.report.figures.style import ratio_ticks

    fig = Figure(figsize=(4.6, 3.6), layout="constrained")
    ax = fig.subplots()
    values = [1.0, 1.0, 1.001, 1.499]
    ax.vlines([0, 1], [1.0, 1.0], [1.001, 1.499], lw=6)
    ax.set_yscale("log")
    ratio_ticks(ax, "y", values)
    figure_bytes(fig, "png")
    renderer = fig._get_renderer()
    lo, hi = sorted(ax.get_ylim())
    shown = [t for t in ax.get_yticklabels() if t.get_text() and lo <= t.get_position()[1] <= hi]
    boxes = [t.get_window_extent(renderer) for t in shown]
    assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])
    assert "1×" in {t.get_text() for t in shown} and len(shown) >= 3


def test_a_setting_has_one_short_name_in_every_figure():
    """Legends name a design by symbol ('k = 8, F = 768', 'S = 8,192'); titles and bar labels by `setting`, which
    fell back to the raw key for two of them: bta_topk_pe's memory bars read 'top-k 8, moe_intermediate_size 768'
    beside a speedup legend's 'F = 1,536', cerebras_serving's subtitle 'seq_len 8,192' beside panels 'S = 8,192'."""
    from wsemoe.report.figures.style import SLICE_SYMBOLS, SYMBOLS, setting

    assert set(SYMBOLS) <= set(SLICE_SYMBOLS)
    assert setting("model.moe_intermediate_size", 768) == "F 768" and setting("workload.seq_len", 8192) == "S 8,192"


def test_marker_labels_keep_off_markers_out_of_the_tick_labels_and_beside_their_own():
    """cerebras_serving's roofline: 'MoE' lay on its own best marker, 'output head' (placed left of a marker at
    the axis's left edge) ran over the tick labels, and a label below its marker sat beside the next stage's.
    Drawn, every marker label is clear of every marked marker, inside its axes and nearer its own marker than
    any other; a label already clear where it was put stays there."""
    import numpy as np

    from wsemoe.report.figures.textfit import keep_clear, marker_label

    fig = Figure(figsize=(3.4, 2.6), layout="constrained")
    ax = fig.subplots()
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(0.5, 1000)
    ax.set_ylim(1e13, 1e17)
    stack = {"output head": 2.5e14, "MoE": 1.5e14, "attention": 9e13}   # one column, 0.22 decades apart
    labels = {}
    for name, y in stack.items():
        ax.scatter([1.0], [y], s=60)
        keep_clear(ax, 1.0, y, 8.5, name)
        labels[name] = marker_label(ax.annotate(name, (1.0, y), xytext=(-7, 6), textcoords="offset points",
                                                ha="right", fontsize=8), name)
    ax.scatter([300.0], [1e16], s=60)
    keep_clear(ax, 300.0, 1e16, 8.5, "alone")
    alone = marker_label(ax.annotate("alone", (300.0, 1e16), xytext=(7, -9), textcoords="offset points",
                                     fontsize=8), "alone")
    figure_bytes(fig, "png")
    renderer = fig._get_renderer()
    frame = ax.get_window_extent(renderer)
    r = 8.5 / 2 * fig.dpi / 72
    centres = {n: ax.transData.transform((1.0, y)) for n, y in stack.items()}
    for name, text in labels.items():
        box = text.get_window_extent(renderer)
        assert frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0 and box.y1 <= frame.y1, name
        for cx, cy in centres.values():
            assert not (box.x0 < cx + r and box.x1 > cx - r and box.y0 < cy + r and box.y1 > cy - r), name
        edge = np.array([box.x0 if text.get_horizontalalignment() == "left" else box.x1, (box.y0 + box.y1) / 2])
        dist = {n: np.hypot(*(edge - c)) for n, c in centres.items()}
        assert min(dist, key=dist.get) == name, (name, dist)
    assert alone.xyann == (7, -9)
