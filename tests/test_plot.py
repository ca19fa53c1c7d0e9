"""Tests of the results plots: every expected file, decodable, right aspect, labelled, and skipped when unsupported."""

import matplotlib
import pytest
from matplotlib import image

from wsemoe.errors import ResultsError
from wsemoe.report.fig_pareto import SIZE as PARETO_SIZE
from wsemoe.report.plots import plot_results
from wsemoe.report.style import DOUBLE, SINGLE
from wsemoe.sweep.run import run_sweep

BASE = {"hardware": "cs2", "model": "qwen3-30b-a3b", "workload": {"mode": "train", "seq_len": 8192}}
BTA = {**BASE, "name": "t", "sparsity": {"vary": "num_experts", "values": [8, 128]},
       "axes": {"workload.B": [1, 2], "workload.G": [1, 2, 4, 8]},
       "compare": {"name": "uniform", "baseline": {"workload.G": 1}}}
NO_G = {**BASE, "name": "nog", "axes": {"workload.B": [1, 2, 4]}}
ALL = ("pareto", "throughput_vs_sparsity", "speedup_vs_G", "memory_breakdown")


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
    expected = {path / "plots" / f"{stem}.{ext}" for stem in ALL for ext in ("png", "svg")}
    assert set(written) == expected
    assert all(p.is_file() and p.stat().st_size > 1000 for p in expected)
    assert not [p for p in (path / "plots").iterdir() if p.name.startswith(".")]  # no temp files left


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
    assert stems == {"pareto", "memory_breakdown"}
    assert not (path / "plots" / "speedup_vs_G.png").exists()
    assert "#1" in (path / "plots" / "memory_breakdown.svg").read_text()  # top points by the first objective


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
