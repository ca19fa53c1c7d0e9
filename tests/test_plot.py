"""Tests of the results plots of a sweep's folder: every expected file, decodable, right aspect, labelled, and
skipped when unsupported. How each figure draws the points it is given (a hand-made view) and the style's helpers:
tests/test_plot_drawing.py."""

import matplotlib
import pytest
from matplotlib import image

from wsemoe.errors import ResultsError
from wsemoe.report.figures.fig_pareto import SIZE as PARETO_SIZE
from wsemoe.report.figures.plots import plot_results
from wsemoe.report.figures.style import DOUBLE, SINGLE
from wsemoe.sweep.run import run_sweep

BASE = {"hardware": "cs2", "model": "qwen3-30b-a3b", "workload": {"mode": "train", "seq_len": 8192}}
BTA = {**BASE, "name": "t", "sparsity": {"vary": "num_experts", "values": [8, 128]},
       "axes": {"workload.B": [1, 2], "workload.G": [1, 2, 4, 8]},
       "compare": {"name": "uniform", "baseline": {"workload.G": 1}}}
NO_G = {**BASE, "name": "nog", "axes": {"workload.B": [1, 2, 4]}}
ALL = ("pareto", "throughput_vs_sparsity", "speedup_vs_G", "memory_breakdown", "roofline")


@pytest.fixture(scope="module")
def bta(tmp_path_factory):
    """A small BTA sweep (E in {8, 128}, B x G grid, uniform baseline) and its plots."""
    res = run_sweep(BTA, out_root=tmp_path_factory.mktemp("bta"))
    return res.path, plot_results(res.path)


@pytest.fixture(scope="module")
def nog(tmp_path_factory):
    res = run_sweep(NO_G, out_root=tmp_path_factory.mktemp("nog"))
    return res.path, plot_results(res.path)


def test_every_plot_written_as_png_and_svg(bta):
    path, written = bta
    expected = {path / "plots" / f"{stem}.{ext}" for stem in ALL for ext in ("png", "svg", "txt")}  # txt: caption
    assert set(written) == expected
    assert all(p.is_file() and p.stat().st_size > (100 if p.suffix == ".txt" else 1000) for p in expected)
    assert not [p for p in (path / "plots").iterdir() if p.name.startswith(".") and p.name != ".wsemoe.json"]  # no temp files


@pytest.mark.parametrize("stem,size", [("pareto", PARETO_SIZE), ("throughput_vs_sparsity", DOUBLE),
                                       ("speedup_vs_G", SINGLE)])
def test_png_decodes_with_expected_aspect(bta, stem, size):
    img = image.imread(bta[0] / "plots" / f"{stem}.png")
    h, w = img.shape[:2]
    assert w == pytest.approx(size[0] * 200, abs=2) and h == pytest.approx(size[1] * 200, abs=2)


def test_memory_chart_is_single_column_width(bta):
    h, w = image.imread(bta[0] / "plots" / "memory_breakdown.png").shape[:2]
    assert w == pytest.approx(SINGLE[0] * 200, abs=2) and h >= SINGLE[1] * 200 - 2


@pytest.mark.parametrize("stem,texts", [
    ("throughput_vs_sparsity", ["tokens/s", "MFU", "uniform batching (G = 1)", "BTA (best G, B)", "×"]),
    ("pareto", ["throughput (tokens/s)", "Pareto front", "GB"]),
    ("speedup_vs_G", ["batch-tiling factor G", "E = 8", "E = 128"]),
    ("memory_breakdown", ["memory per node (GB)", "capacity per node", "stage"]),
])
def test_svg_keeps_axis_labels_as_text(bta, stem, texts):
    svg = (bta[0] / "plots" / f"{stem}.svg").read_text()
    for text in texts:
        assert text in svg, text


def test_replot_is_byte_identical_svg(bta):
    path, _ = bta
    before = (path / "plots" / "pareto.svg").read_bytes()
    plot_results(path)
    assert (path / "plots" / "pareto.svg").read_bytes() == before


def test_no_g_axis_skips_speedup_and_sparsity(nog):
    path, written = nog
    stems = {p.stem for p in written}
    assert stems == {"pareto", "memory_breakdown", "roofline"}
    assert not (path / "plots" / "speedup_vs_G.png").exists()
    assert "#1" in (path / "plots" / "memory_breakdown.svg").read_text()  # top points by the first objective


def test_the_pareto_caption_counts_in_words_not_in_brackets(bta):
    """It read "2 front(s), … 5 row(s)": each count now takes its noun in the number it is."""
    text = (bta[0] / "plots" / "pareto.txt").read_text()
    assert "(s)" not in text and " fronts, " in text and " rows" in text, text


def test_one_memory_bar_is_not_counted_as_one_of_one(tmp_path):
    """A single bar read "at 1 of 1 bars; the largest term over the bars", and hung from the top of an axis three
    bars tall; it is said plainly and centred in a shorter figure."""
    res = run_sweep({**BASE, "name": "one", "axes": {"workload.B": [4]}}, out_root=tmp_path)
    plot_results(res.path, only=["memory_breakdown"])
    text = (res.path / "plots" / "memory_breakdown.txt").read_text()
    assert text.startswith("The peak is set by the ") and "of 1 bars" not in text and "over the bars" not in text
    assert image.imread(res.path / "plots" / "memory_breakdown.png").shape[0] < SINGLE[1] * 200


def test_missing_results_raise(tmp_path):
    with pytest.raises(ResultsError) as err:
        plot_results(tmp_path)
    assert err.value.loc == (str(tmp_path),)
    with pytest.raises(ResultsError):
        plot_results(tmp_path / "absent")


def test_global_matplotlib_style_untouched(bta):
    before = dict(matplotlib.rcParams)
    plot_results(bta[0])
    assert dict(matplotlib.rcParams) == before


# ---------------------------------------------------------------- plots that say what they show (issue 12)

def test_every_figure_states_what_it_shows(bta):
    path, _ = bta
    for stem, needle in (("pareto", "feasible; colour: experts E"), ("speedup_vs_G", "along the bottom: its B where it changes"),
                         ("throughput_vs_sparsity", "each point: the best feasible point of its sparsity"),
                         ("memory_breakdown", "each bar: the terms of the stage")):
        svg = " ".join((path / "plots" / f"{stem}.svg").read_text().split())
        assert needle in svg.replace("</text> <text", ""), stem


def test_speedup_labels_the_best_b_where_it_changes(bta):
    import re

    svg = (bta[0] / "plots" / "speedup_vs_G.svg").read_text()
    assert re.findall(r">B=(\d+)<", svg), "B of the best point is written on the plot"


def test_speedup_legend_sits_below_the_axes(bta):
    """Inside the axes the legend hid the lines' start at G = 1 (every line is 1 there) or the B labels."""
    from wsemoe.report.figures import fig_bta
    from wsemoe.report.figures.view import ResultsView

    fig = fig_bta.speedup_vs_g(ResultsView.load(bta[0]))
    assert fig.axes[0].get_legend() is None and len(fig.legends) == 1


def test_only_and_pdf(bta, tmp_path):
    import shutil

    path = tmp_path / "copy"
    shutil.copytree(bta[0], path)
    before = {p.name: p.stat().st_mtime_ns for p in (path / "plots").iterdir() if p.name != ".wsemoe.json"}
    written = plot_results(path, only=["speedup_vs_G", "memory"], formats=["pdf"])
    assert sorted(p.name for p in written) == ["memory_breakdown.pdf", "memory_breakdown.txt", "speedup_vs_G.pdf",
                                               "speedup_vs_G.txt"]
    assert all(p.read_bytes().startswith(b"%PDF") for p in written if p.suffix == ".pdf")
    asked = ("memory_breakdown", "speedup_vs_G")
    after = {p.name: p.stat().st_mtime_ns for p in (path / "plots").iterdir() if p.suffix != ".pdf" and p.name != ".wsemoe.json"}
    assert {k: v for k, v in after.items() if not k.startswith(asked)} == \
        {k: v for k, v in before.items() if not k.startswith(asked)}  # --only leaves the other plots alone
    with pytest.raises(Exception, match="did you mean 'pareto'"):
        plot_results(path, only=["paretto"])
    with pytest.raises(Exception, match="'jpg' is not one of png, svg, pdf"):
        plot_results(path, formats=["jpg"])


def test_figures_read_only_the_columns_they_declare(bta, monkeypatch):
    from wsemoe.report.figures import fig_pareto, plots
    from wsemoe.store import store

    asked = []
    real = store.read_points
    monkeypatch.setattr(store, "read_points", lambda p, m, columns=None: asked.append(columns) or real(p, m, columns))
    list(plots.figures(bta[0], only=["pareto"]))
    # the columns every view holds, read once for every family, then the family's own
    assert len(asked) == 2 and None not in asked
    assert {c for cols in asked for c in cols} <= {*fig_pareto.COLUMNS, "workload.B", "workload.G", "model.num_experts",
                             "model.moe_intermediate_size", "feasible", "tokens_per_s", "mem_peak_node_bytes",
                             "energy_per_token_j"}   # every view holds it: best_rows breaks ties on it


def test_the_roofline_draws_an_unbounded_wafer_io_as_a_flat_roof(tmp_path):
    # io_in_bw_bytes_per_s defaults to inf (no I/O limit): the ridge is at 0, which once crashed the figure's
    # log axis ("Geometric sequence cannot include zero") in plot and report.
    cfg = {**NO_G, "name": "open", "hardware": {"preset": "cs2", "io_in_bw_bytes_per_s": float("inf")}}
    res = run_sweep(cfg, out_root=tmp_path)
    written = plot_results(res.path, only=["roofline"])
    assert any(p.name == "roofline.png" for p in written)
    assert "unbounded" in (res.path / "plots" / "roofline.svg").read_text()


def test_speedup_lines_keep_their_pareto_colour_and_clear_the_top_edge(tmp_path):
    """A sweep listing E = 16 before E = 8 (as bta_topk lists k = 8 before k = 1): the speedup figure coloured its
    lines in sorted order and the Pareto figure in the sweep's, so one design changed colour between figures of
    one sweep. Lines within 0.2% of 1 (quickstart) sat on the axes' top edge (top 1.0021 for a peak of 1.0020)."""
    from matplotlib.colors import to_hex

    from wsemoe.report.figures import fig_bta, fig_pareto
    from wsemoe.report.figures.view import ResultsView

    cfg = {**BTA, "name": "order", "sparsity": {"vary": "num_experts", "values": [16, 8]}}
    r = ResultsView.load(run_sweep(cfg, out_root=tmp_path).path)
    ax = fig_bta.speedup_vs_g(r).axes[0]
    lines = {ln.get_label(): ln for ln in ax.lines if not ln.get_label().startswith("_")}
    legend = fig_pareto.pareto(r).legends[0]
    points = {t.get_text().split(" (")[0]: to_hex(h.get_facecolor()[0])
              for h, t in zip(legend.legend_handles, legend.get_texts()) if t.get_text().startswith("E = ")}
    assert points and {k: to_hex(lines[k].get_color()) for k in points} == points
    assert ax.get_ylim()[1] >= 1.03 * max(max(ln.get_ydata()) for ln in lines.values())
