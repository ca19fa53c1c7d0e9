"""How the figures draw the points they are given, on hand-made views (no sweep): Pareto fronts, their colours,
line styles, rings and legends; memory bars drawn once when alike; slices at values with feasible points; the
sparsity caption's verdict; and the style's helpers (bar labels broken between settings, an outside legend that
fits, a layout kept across formats). The plots of a sweep's folder: tests/test_plot.py."""

import pytest


def _view(points, objectives, name="v"):
    import pandas as pd

    from wsemoe.config.schema import SCENARIO_AXES
    from wsemoe.report.figures.view import ResultsView
    from wsemoe.sweep.pareto import pareto_front

    axes = [c for c in points if "." in c or c in ("model", "hardware")]
    groups = [a for a in axes if a.split(".")[0] in ("model", "hardware") or a in SCENARIO_AXES]  # as front_groups
    man = {"axes": axes, "objectives": objectives, "pareto_groups": groups}
    return ResultsView(name, man, points, pareto_front(points, objectives, groups), None, {})


def test_pareto_colours_by_system_with_a_front_each_and_thins_huge_fronts():
    import numpy as np
    import pandas as pd

    from wsemoe.report.figures import fig_pareto

    n = 3000
    x = np.linspace(1, 2, n)
    pts = pd.DataFrame({"model": ["a"] * n + ["b"] * n, "mapping.strategy": (["er", "block"] * n),
                        "tokens_per_s": np.concatenate([x, x * 1.1]),
                        "mem_peak_node_bytes": np.concatenate([x * 1e9, x * 1e9]), "feasible": True})
    fig = fig_pareto.pareto(_view(pts, {"tokens_per_s": "max", "mem_peak_node_bytes": "min"}))
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert any(lab.startswith("Pareto front of a (3,000 rows, every") for lab in labels)
    assert any(lab.startswith("Pareto front of b (") for lab in labels)
    assert any(lab.startswith("a, er") for lab in labels) and any(lab.startswith("b, block") for lab in labels)
    rings = [ln for ln in fig.axes[0].lines if ln.get_marker() == "o"]
    assert all(len(ln.get_xdata()) <= fig_pareto.MAX_MARKED + 1 for ln in rings)
    clouds = [c for c in fig.axes[0].collections if len(c.get_offsets())]
    assert all(len(c.get_offsets()) <= fig_pareto.MAX_CLOUD for c in clouds)


def test_many_fronts_take_their_points_colour_and_marker_axis_line_style():
    """Nine fronts (model × hardware, the model first among the front groups, the hardware the colour axis): each
    front is drawn in its hardware's colour and its model's line style, not all in black."""
    import itertools

    import numpy as np
    import pandas as pd
    from matplotlib.colors import to_hex

    from wsemoe.report.figures import fig_pareto

    x = np.linspace(1, 2, 20)
    rows = [pd.DataFrame({"model": m, "hardware": h, "tokens_per_s": x * (1 + i), "mem_peak_node_bytes": x * 1e9,
                          "feasible": True}) for i, (m, h) in enumerate(itertools.product("abc", ("cs3", "nvl72", "gb200")))]
    fig = fig_pareto.pareto(_view(pd.concat(rows, ignore_index=True), {"tokens_per_s": "max", "mem_peak_node_bytes": "min"}))
    ax = fig.axes[0]
    cloud = {c.get_label().split(",")[0]: to_hex(c.get_facecolor()[0]) for c in ax.collections if len(c.get_offsets())}
    fronts = [ln for ln in ax.lines if len(ln.get_xdata()) > 1 and ln.get_marker() != "o"]
    assert len(fronts) == 9 and {to_hex(ln.get_color()) for ln in fronts} == set(cloud.values()) and \
        "#000000" not in {to_hex(ln.get_color()) for ln in fronts}
    combos = list(itertools.product("abc", ("cs3", "nvl72", "gb200")))
    for rank, ln in enumerate(sorted(fronts, key=lambda ln: max(ln.get_xdata()))):   # the i-th front is combos[i]
        assert to_hex(ln.get_color()) == cloud[combos[rank][1]], (combos[rank], cloud)
    styles = {to_hex(ln.get_color()): set() for ln in fronts}
    for ln in fronts:
        styles[to_hex(ln.get_color())].add(ln.get_linestyle())
    assert all(len(v) == 3 for v in styles.values())   # the three models of one hardware: three line styles
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert any("Pareto fronts (9" in lab and "colour: hardware" in lab and "line: model" in lab for lab in labels)
    # a ring in its points' colour would be lost in their cloud: each front's rings sit on a black halo
    halos = [ln for ln in ax.lines if ln.get_marker() == "o" and to_hex(ln.get_color()) == "#000000" and len(ln.get_xdata())]
    assert len(halos) == 9


def test_pareto_front_lines_sit_on_top_of_rings_and_points():
    """Five fronts climbing one column (bta_experts at the best MFU): every front's rings and black halos were
    drawn over the front lines, so only the last front read. Lines lie above every ring, halo and point; rings are
    small enough that a 1-pt line is not lost under one."""
    import numpy as np
    import pandas as pd

    from wsemoe.report.figures import fig_pareto

    x = np.linspace(1, 2, 60)
    pts = pd.concat([pd.DataFrame({"model.num_experts": e, "tokens_per_s": np.minimum(x, 1.9) * (1 + 0.001 * i),
                                   "mem_peak_node_bytes": x * 1e9, "feasible": True})
                     for i, e in enumerate((8, 16, 32, 64, 128))], ignore_index=True)
    fig = fig_pareto.pareto(_view(pts, {"tokens_per_s": "max", "mem_peak_node_bytes": "min"}))
    ax = fig.axes[0]
    rings = [ln for ln in ax.lines if ln.get_marker() == "o" and len(ln.get_xdata())]
    fronts = [ln for ln in ax.lines if ln.get_marker() in ("None", "", None) and len(ln.get_xdata()) > 1]
    clouds = [c for c in ax.collections if len(c.get_offsets())]
    assert len(fronts) == 5 and rings and clouds
    assert min(ln.get_zorder() for ln in fronts) > max(a.get_zorder() for a in [*rings, *clouds])
    assert max(ln.get_markersize() for ln in rings) <= 7


def test_memory_bars_all_alike_are_drawn_once_and_names_keep_their_hyphens():
    """moentwine_balance: five best points differing only in balancer and churn drew five identical bars, and a
    label wrapped twice read 'non- invasive'. Identical bars are drawn once, the figure says so, and no name
    breaks at its hyphen."""
    import pandas as pd

    from wsemoe.report.figures import fig_memory
    from wsemoe.report.figures.claims import caption_of

    terms = {f"mem_{t}_node_bytes": v for t, v in (("weights", 29e9), ("kept_act", 0.0), ("kv", 74e9),
                                                    ("attn_transient", 0.7e9), ("bta_buffer", 4e6),
                                                    ("moe_transient", 0.2e9))}
    pts = pd.DataFrame({"balance.balancer": ["none", "replicate", "non-invasive", "stop-the-world", "stop-the-world"],
                        "balance.migration_windows": ["communication", "communication", "communication",
                                                      "communication", "all windows at once"],
                        "tokens_per_s": [5.0, 4.0, 3.0, 2.0, 1.0], "feasible": True, **terms,
                        "mem_attn_peak_node_bytes": 104e9, "mem_moe_peak_node_bytes": 103e9,
                        "mem_capacity_node_bytes": 162e9})
    fig = fig_memory.memory_breakdown(_view(pts, {"tokens_per_s": "max"}))
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert len(labels) == 1, labels
    assert "non-invasive" in labels[0] and "stop-the-world" in labels[0] and "#1–#5" in labels[0]
    assert not any(line.rstrip().endswith("-") for line in labels[0].splitlines())
    said = " ".join(t.get_text() for t in ax.texts) + caption_of(fig)
    assert "identical" in said


def test_slices_prefer_values_with_feasible_points():
    import pandas as pd

    pts = pd.DataFrame({"workload.B": [256, 256, 60000, 60000], "mapping.strategy": ["er", "block"] * 2,
                        "feasible": [True, True, False, False], "tokens_per_s": [1.0, 2.0, 3.0, 4.0]})
    view = _view(pts, {"tokens_per_s": "max"})
    df, said = view.slice(keep=("mapping.strategy",))
    assert said == "B 256" and view.slice_feasible  # not the largest B, where nothing fits
    bad = _view(pts.assign(feasible=False), {"tokens_per_s": "max"})
    bad.slice(keep=("mapping.strategy",))
    assert "every point shown is infeasible" in bad.subtitle("B 60000")


def test_marker_axis_is_never_the_colour_axis():
    import pandas as pd

    from wsemoe.report.figures import fig_pareto

    pts = pd.DataFrame({"balance.balancer": ["none", "replicate"] * 4, "balance.zipf_s": [0.0, 0.0, 0.2, 0.2] * 2,
                        "tokens_per_s": range(8), "mem_peak_node_bytes": range(8), "feasible": True})
    colour, shape = fig_pareto._colour_axes(_view(pts, {"tokens_per_s": "max"}))
    assert colour == "balance.balancer" and shape != colour


def test_a_bar_label_breaks_between_settings_never_inside_one():
    """The memory figure's bar labels wrapped at any space: 'TP' ended a line with its '4' on the next. Every
    setting that fits a line stays whole on one; a longer one breaks at spaces, never at its hyphens."""
    from wsemoe.report.figures.style import wrap_label

    text = ("#3: qwen3-235b-a22b, tokens/device 64, ring directions 1, balancer non-invasive, overlap microbatch, "
            "nvl72, TP 2, mapping block, token source auto, balancer replicate / non-invasive / stop-the-world")
    lines = wrap_label(text, 30).split("\n")
    chunks = text.split(", ")
    for chunk in chunks[:-1]:   # none has a bracket here
        assert any(chunk in line for line in lines), (chunk, lines)
    assert all(len(line) <= 31 for line in lines) and " ".join(lines).replace(", ", ",").replace(",", ", ") == text
    assert "non-invasive" in lines[-1] or "non-invasive" in lines[-2]
    assert wrap_label("k = 1, F = 6144, uniform (G=1, B=62)", 30) == "k = 1, F = 6144,\nuniform (G=1, B=62)"


@pytest.mark.parametrize("words, most, expected", [(1, 4, 4), (6, 4, 1)])
def test_outside_legend_fits_across_the_figure(words, most, expected):
    """Short labels take every column asked for; long ones fewer, and the legend stays inside the figure."""
    from matplotlib import rc_context
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    from wsemoe.report.figures.style import STYLE, figure_bytes, outside_legend

    with rc_context(STYLE):
        fig = Figure(figsize=(7, 4), layout="constrained")
        fig.add_subplot().plot([0, 1])
        labels = [" ".join(["throughput"] * words) + f" {k}" for k in range(6)]
        legend = outside_legend(fig, [Line2D([], []) for _ in labels], labels, most=most, frameon=False)
        figure_bytes(fig, "png")
        box, page = legend.get_window_extent(), fig.bbox
    assert legend._ncols == expected
    assert page.x0 - 1 <= box.x0 and box.x1 <= page.x1 + 1


def test_the_second_format_keeps_the_layout_the_first_found():
    """After a figure's first render its layout is frozen: the next format draws the panels and a 'best' legend
    where the first put them, which is where a fresh render of that format puts them too (to a hair)."""
    import numpy as np
    from matplotlib import rc_context
    from matplotlib.figure import Figure

    from wsemoe.report.figures.style import STYLE, figure_bytes

    def build():
        with rc_context(STYLE):
            fig = Figure(figsize=(6, 4), layout="constrained")
            ax = fig.add_subplot()
            for k in range(12):
                ax.plot(np.arange(10), np.arange(10) * (k + 1) / 12, label=f"line {k}")
            ax.legend(loc="best")
            ax.set_title("a title\nof two lines")
            fig.suptitle("suptitle")
        return fig, ax

    def where(fig, ax):
        box = ax.get_legend().get_window_extent()
        return np.array([*ax.get_position().bounds, *ax.transAxes.inverted().transform((box.x0, box.y0))])

    frozen, ax = build()
    figure_bytes(frozen, "png")
    after_png = where(frozen, ax)
    assert frozen.get_layout_engine() is None or type(frozen.get_layout_engine()).__name__ == "PlaceHolderLayoutEngine"
    figure_bytes(frozen, "svg")
    np.testing.assert_allclose(where(frozen, ax), after_png, atol=1e-9)
    fresh, ax2 = build()
    figure_bytes(fresh, "svg")
    np.testing.assert_allclose(where(fresh, ax2), after_png, atol=0.01)


def test_the_sparsity_caption_says_when_uniform_batching_does_not_fall_either():
    """Both curves flat (quickstart at the default readings: 1.002× each): the caption gives the fall in three
    decimals, not '1×', and says the loss the claim sets BTA against does not appear; a real fall is not flagged."""
    import pandas as pd

    from wsemoe.report.figures.fig_bta import _sparsity_verdict

    flat = pd.DataFrame({"best_tokens_per_s": [100.0, 99.8], "baseline_tokens_per_s": [100.0, 99.8],
                         "speedup_vs_uniform": [1.0, 1.0]})
    text = _sparsity_verdict(flat, "model.num_experts", [32, 128])
    assert "falls 1.002×" in text and "does not appear here" in text and "1.000× … 1.000×" in text
    falls = flat.assign(baseline_tokens_per_s=[100.0, 40.0], speedup_vs_uniform=[1.0, 2.5])
    assert "does not appear" not in _sparsity_verdict(falls, "model.num_experts", [32, 128])


def test_more_fronts_than_the_legend_names_without_a_marker_axis():
    """Seven fronts (one per B; no axis for markers) share one legend entry. Naming the line
    cue read the name of the absent marker axis: an internal error (moentwine_balance's eight fronts met it)."""
    import numpy as np
    import pandas as pd

    from wsemoe.report.figures import fig_pareto
    from wsemoe.sweep.pareto import pareto_front

    x = np.linspace(1, 2, 5)
    points = pd.concat([pd.DataFrame({"workload.B": b, "workload.G": [1, 2, 4, 8, 16], "tokens_per_s": x * b,
                                      "mem_peak_node_bytes": x * 1e9, "feasible": True}) for b in range(1, 8)],
                       ignore_index=True)
    view = _view(points, {"tokens_per_s": "max", "mem_peak_node_bytes": "min"})
    view.front_groups = ["workload.B"]
    view.pareto = pareto_front(points, view.objectives, ["workload.B"])
    fig = fig_pareto.pareto(view)
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "Pareto fronts (7, one per attention batch B)" in labels, labels


def test_a_front_is_named_as_its_points_are():
    """moentwine_vs_nvl72's legend named the points 'wsc-b200-4x8x8, deepseek-v3' (colour, then marker) and their
    front 'deepseek-v3, wsc-b200-4x8x8' (the manifest's group order): one design named two ways."""
    import numpy as np
    import pandas as pd

    from wsemoe.report.figures import fig_pareto

    x = np.linspace(1, 2, 8)
    pts = pd.DataFrame({"model": np.repeat(["m1", "m2"], 16), "hardware": np.tile(np.repeat(["hA", "hB", "hC"], 8)[:16], 2),
                        "tokens_per_s": np.tile(x, 4), "mem_peak_node_bytes": np.tile(x * 1e9, 4), "feasible": True})
    fig = fig_pareto.pareto(_view(pts, {"tokens_per_s": "max", "mem_peak_node_bytes": "min"}))
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    fronts = {lab[len("Pareto front of "):].split(" (")[0] for lab in labels if lab.startswith("Pareto front of ")}
    points = {lab.split(" (")[0] for lab in labels if not lab.startswith(("Pareto", "infeasible", "capacity"))}
    assert len(fronts) == 4 and fronts == points, (fronts, points)


def test_a_long_pareto_legend_leaves_the_plot_its_height():
    """Three systems by two models (moentwine_vs_nvl72): 12 legend rows under a fixed 5.4-inch figure left the
    plot 1.34 inches tall and its y label wrapped to four lines; the figure grows by each row past six."""
    import numpy as np
    import pandas as pd

    from wsemoe.report.figures import fig_pareto
    from wsemoe.report.figures.style import figure_bytes

    x = np.linspace(1, 2, 8)
    pts = pd.DataFrame({"model": np.repeat(["deepseek-v3", "qwen3-235b-a22b"], 24),
                        "hardware": np.tile(np.repeat(["wsc-b200-4x8x8", "nvl72", "dgx-b200-x32"], 8), 2),
                        "tokens_per_s": np.tile(x, 6), "mem_peak_node_bytes": np.tile(x * 1e9, 6), "feasible": True})
    fig = fig_pareto.pareto(_view(pts, {"tokens_per_s": "max", "mem_peak_node_bytes": "min"}))
    figure_bytes(fig, "png")
    assert len(fig.legends[0].get_texts()) == 12
    assert fig.axes[0].get_position().height * fig.get_figheight() >= 2.5
