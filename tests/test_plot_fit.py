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


SMALL = {   # one sweep per figure kind: training on a wafer, GPU against wafer decode, SRAM serving
    "train": {"name": "train", "hardware": "cs2", "model": "qwen3-30b-a3b",
              "workload": {"mode": "train", "seq_len": 8192}, "sparsity": {"vary": "num_experts", "values": [64, 128]},
              "axes": {"workload.B": [1, 4], "workload.G": [1, 4, 16]},
              "compare": {"name": "uniform", "baseline": {"workload.G": 1}}},
    "mesh": {"name": "mesh", "hardware": "wsc-b200-8x8", "model": "deepseek-v3",
             "workload": {"mode": "decode", "seq_len": 4096, "tokens_per_device": 16},
             "axes": {"mapping.strategy": ["block", "er"], "mapping.tp": [4, 16]}},
    "serve": {"name": "serve", "hardware": {"preset": "cs3", "weight_source": "sram"}, "model": "qwen3-30b-a3b",
              "workload": {"mode": "decode", "seq_len": 8192},
              "axes": {"workload.B": [1, 64], "hardware.pipeline_wafers": [2, 4],
                       "mapping.pe_placement": ["blocked", "interleaved"]}},
}


def test_every_text_of_every_figure_stays_on_the_page(tmp_path):
    """Titles, panel titles, labels, notes and legends lie inside the figure as it is saved (the hot-links
    panel title and a wide subtitle ran off it). Tick labels are left to matplotlib: it draws only those
    inside the view."""
    from matplotlib.text import Text

    from wsemoe.report.figures import plots
    from wsemoe.sweep.run import run_sweep

    checked = 0
    for cfg in SMALL.values():
        path = run_sweep(cfg, out_root=tmp_path).path
        for stem, fig in plots.figures(path):
            if fig is None:
                continue
            figure_bytes(fig, "png")
            canvas = FigureCanvasAgg(fig)
            canvas.draw()
            renderer = canvas.get_renderer()
            ticks = {id(t) for ax in fig.axes for t in (*ax.get_xticklabels(which="both"),
                                                        *ax.get_yticklabels(which="both"))}
            for text in fig.findobj(Text):
                if not text.get_visible() or not text.get_text().strip() or id(text) in ticks:
                    continue
                box = text.get_window_extent(renderer)
                assert box.x0 >= -2 and box.x1 <= fig.bbox.width + 2 and box.y0 >= -2 and \
                    box.y1 <= fig.bbox.height + 2, (stem, text.get_text())
                checked += 1
    assert checked > 100
