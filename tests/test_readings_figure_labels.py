"""The readings and crossover figures stay legible: the crossover figure's ratio axis is labelled beyond 1×
(base-2 decades alone left a 1–1.6× range with one tick); groups named by the same settings show their values as tick labels (the
names once, in the axis label), and no two tick labels overlap; a run undefined at the headline group is said
on its row instead of leaving it blank."""

from __future__ import annotations

from matplotlib.backends.backend_agg import FigureCanvasAgg

from wsemoe.analysis.uncertainty import readings as rd
from wsemoe.report.figures import plots
from wsemoe.sweep.run import run_sweep

CFG = {"name": "x", "hardware": "wsc-b200-8x8", "model": "qwen3-30b-a3b",
       "workload": {"mode": "decode", "seq_len": 4096},
       "zip": [{"hardware": ["wsc-b200-8x8", "nvl72"]}],
       "axes": {"workload.tokens_per_device": [1, 2, 4, 8, 16]},
       "compare": {"name": "nvl72", "baseline": {"hardware": "nvl72"}, "candidate": {"hardware": "wsc-b200-8x8"},
                   "metric": "per_device_tokens_per_s"}}


def test_group_ticks_are_values_that_do_not_overlap(tmp_path):
    path = run_sweep(CFG, out_root=tmp_path).path
    rd.run(path)
    fig = dict(plots.figures(path, only=["readings_robustness"]))["readings_robustness"]
    right = fig.axes[1]
    renderer = FigureCanvasAgg(fig).get_renderer()
    labels = [t for t in right.get_xticklabels() if t.get_text()]
    assert [t.get_text() for t in labels] == ["1", "2", "4", "8", "16"] and right.get_xlabel() == "tokens/device"
    boxes = [t.get_window_extent(renderer) for t in labels]
    assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])
    left = fig.axes[0]
    undefined = [t.get_text() for t in left.texts if "undefined" in t.get_text()]
    rows = [t.get_text() for t in left.get_yticklabels()]
    assert len(rows) >= 3 and (not undefined or undefined == ["undefined: a side cannot run"] * len(undefined))


def test_the_crossover_figure_labels_its_ratio_axis_beyond_one(tmp_path):
    path = run_sweep(CFG, out_root=tmp_path).path
    fig = dict(plots.figures(path, only=["crossover"]))["crossover"]
    ax = fig.axes[0]
    lo, hi = ax.get_ylim()
    shown = [t.get_text() for t in ax.get_yticklabels() if t.get_text() and lo <= t.get_position()[1] <= hi]
    assert "1×" in shown and len(shown) >= 2, shown


def test_many_groups_each_keep_their_label(tmp_path):
    """Eighteen groups (two models × nine token counts, as moentwine_vs_nvl72): every group's mark has its own
    tick label, none overlapping, the models named once under their runs (slanted 'model · tokens' labels ran
    into one another and all but three were dropped)."""
    from wsemoe.report.figures.style import figure_bytes

    cfg = {**CFG, "axes": {"model": ["qwen3-30b-a3b", "qwen3-235b-a22b"],
                           "workload.tokens_per_device": [1, 2, 4, 8, 16, 32, 64, 128, 256]}}
    path = run_sweep(cfg, out_root=tmp_path).path
    rd.run(path)
    fig = dict(plots.figures(path, only=["readings_robustness"]))["readings_robustness"]
    figure_bytes(fig, "png")
    right = fig.axes[1]
    renderer = fig._get_renderer()
    labels = [t for t in right.get_xticklabels() if t.get_visible() and t.get_text()]
    assert [t.get_text() for t in labels] == ["1", "2", "4", "8", "16", "32", "64", "128", "256"] * 2
    boxes = [t.get_window_extent(renderer) for t in labels]
    assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])
    outer = [t for t in right.get_xticklabels(minor=True) if t.get_text()]
    assert [t.get_text() for t in outer] == ["qwen3-30b-a3b", "qwen3-235b-a22b"]
    assert not any(o.get_window_extent(renderer).overlaps(b) for o in outer for b in boxes)


def test_a_negligible_spread_is_said_and_read_on_two_ticks(tmp_path):
    """bta_experts at E 8: every run within 1.000×–1.002× was drawn on an axis with one tick, '1×'; the panel
    shows two labelled ticks at least, and both the panel and the caption say the spread is negligible."""
    from wsemoe.report.figures.claims import caption_of

    cfg = {"name": "bta", "hardware": "cs2", "model": "qwen3-30b-a3b",
           "workload": {"mode": "train", "seq_len": 8192, "attn_kernel": "per_head", "recompute": "full"},
           "sparsity": {"vary": "num_experts", "values": [8, 16], "hold": "active"},
           "axes": {"workload.B": {"range": [1, 128]}, "workload.G": {"range": [1, 64]}},
           "objectives": {"mfu": "max", "mem_peak_node_bytes": "min"},
           "compare": {"name": "uniform", "baseline": {"workload.G": 1}, "metric": "tokens_per_s"}}
    path = run_sweep(cfg, out_root=tmp_path).path
    rd.run(path)
    fig = dict(plots.figures(path, only=["readings_robustness"]))["readings_robustness"]
    left = fig.axes[0]
    lo, hi = left.get_xlim()
    shown = {t.get_text() for t in left.get_xticklabels() if t.get_text() and lo <= t.get_position()[0] <= hi}
    assert len(shown) >= 2, shown
    assert "negligible" in left.get_title()
    assert "negligible" in caption_of(fig)


def test_the_title_leads_with_whether_the_comparison_survives_the_readings(tmp_path):
    """The title asked 'is the nvl72 comparison robust to the readings?' and left the answer to the lines below:
    its first line now says it, from the summary: at the headline group, how many of the combinations flip the
    verdict (or that none does) and the range of the ratio over them."""
    from wsemoe.analysis.uncertainty import robustness
    from wsemoe.wording import span

    path = run_sweep(CFG, out_root=tmp_path).path
    result, _ = rd.run(path)
    row = robustness.headline(robustness.summarize(result), result.meta["comparison"]["quantity"])
    fig = dict(plots.figures(path, only=["readings_robustness"]))["readings_robustness"]
    first = fig._suptitle.get_text().split("\n")[0]
    held = (f"flips in {row['flipped']} of {robustness.runs_word(result, row['combinations'])}" if row["flipped"]
            else "holds in every combination of the readings")
    assert first.startswith("x: the nvl72 comparison at ") and held in first and "?" not in first, first
    assert first.endswith(f"({span(robustness.ratio(row['low']), robustness.ratio(row['high']))})"), first
