"""Tests of the mesh, communication and balancing plots: files, labels, and drawn data against the model."""

import json
import shutil

import numpy as np
import pandas as pd
import pytest
from matplotlib import image

from wsemoe.cost.fabric import mesh
from wsemoe.cost import structure
from wsemoe.report.figures import fig_balance, fig_mesh, meshdraw
from wsemoe.store import writer
from wsemoe.report.figures.plots import plot_results
from wsemoe.report.figures.view import ResultsView
from wsemoe.sweep.run import run_sweep

BASE = {"hardware": "wsc-b200-8x8", "model": "deepseek-v3",
        "workload": {"mode": "decode", "seq_len": 4096, "B": 256}}
MAPPING = {**BASE, "name": "map", "axes": {"mapping.strategy": ["block", "er"], "mapping.tp": [4, 16]}}
HARDWARE = {**BASE, "name": "hw", "mapping": {"strategy": "er"},
            "axes": {"hardware": ["wsc-b200-8x8", "nvl72"], "mapping.tp": [4, 8]}}
BALANCE = {**BASE, "name": "bal", "mapping": {"tp": 4, "strategy": "er"},
           "balance": {"distribution": "zipf", "zipf_s": 0.4, "seed": 1, "spare_slots": 2},
           "axes": {"balance.balancer": ["none", "replicate"], "balance.zipf_s": [0.0, 0.4]}}
HEATMAPS = [f"link_heatmap_{s}_tp{tp}" for s in ("block", "er") for tp in (4, 16)]
EXPECTED = {"map": HEATMAPS + ["comm_breakdown"], "hw": ["wsc_vs_nvl72"],
            "bal": ["node_load_replicate", "throughput_vs_skew"]}
MINE = {"comm_breakdown", "wsc_vs_nvl72", "throughput_vs_skew"}


@pytest.fixture(scope="module")
def sweeps(tmp_path_factory):
    """Each small sweep's results folder and the files plot_results wrote for it."""
    out = {}
    for cfg in (MAPPING, HARDWARE, BALANCE):
        path = run_sweep(cfg, out_root=tmp_path_factory.mktemp(cfg["name"])).path
        out[cfg["name"]] = (path, plot_results(path))
    return out


def _context(path):
    return ResultsView.load(path)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_expected_plots_written_and_decodable(sweeps, name):
    path, written = sweeps[name]
    for stem in EXPECTED[name]:
        for ext in ("png", "svg"):
            f = path / "plots" / f"{stem}.{ext}"
            assert f in written and f.stat().st_size > 1000, f
        h, w = image.imread(path / "plots" / f"{stem}.png").shape[:2]
        assert h > 500 and w > 1000  # 200 dpi, not a thumbnail
    mine = {p.stem for p in written if p.stem in MINE or p.stem.startswith(("link_heatmap_", "node_load_"))}
    assert mine == set(EXPECTED[name])  # nothing the data does not support
    assert not [p for p in (path / "plots").iterdir() if p.name.startswith(".") and p.name != ".wsemoe.json"]


@pytest.mark.parametrize("name,stem,texts", [
    ("map", "link_heatmap_er_tp4", ["all-reduce (attention TP)", "of links idle", "bytes per link", "(MB)",
                                    "hot in dispatch only", "overlap (Jaccard)", "er mapping, TP 4", "FTD tiles"]),
    ("map", "comm_breakdown", ["communication time per layer (µs)", "TP 16", "block", "er",
                               "dispatch (tokens to experts)"]),
    # the y label wraps where a title stating a finding leaves the axes short (textfit.fit_axis_labels)
    ("hw", "wsc_vs_nvl72", ["MoE-layer throughput per device", "(tokens/s)", "nvl72", "wsc-b200-8x8", "TP 8", "%"]),
    ("bal", "node_load_replicate", ["imbalance (busiest die / mean)", "× mean load", "Zipf s = 0.4",
                                    "no balancing", "replicate"]),
    ("bal", "throughput_vs_skew", ["Zipf exponent", "throughput (tokens/s)", "imbalance without balancing",
                                   "replicate", "none"]),
])
def test_svg_keeps_labels_as_text(sweeps, name, stem, texts):
    svg = (sweeps[name][0] / "plots" / f"{stem}.svg").read_text()
    for text in texts:
        assert text in svg, text


def test_heatmap_draws_the_structures_link_loads(sweeps):
    """The colours encode the model's per-link expected bytes: unit loads × the point's bytes per unit, the
    all-reduce's from its busiest-link bytes, the dispatch's from the bytes it moves (hop and crossing bytes over
    its unit loads' total), its busiest-link column being a step's expected maximum over its routing, above the
    hottest link's expected bytes drawn."""
    ctx = _context(sweeps["map"][0])
    figs = fig_mesh.link_heatmaps(ctx)
    assert set(figs) == set(HEATMAPS)
    points = ctx.points
    for strategy in ("block", "er"):
        row = points[(points["mapping.strategy"] == strategy) & (points["mapping.tp"] == 4)].iloc[0]
        s = structure.build("mesh", 8, 8, 4, strategy, None, 0, None, "auto", 256, structure.UNIFORM)
        drawn = meshdraw.drawn_links(figs[f"link_heatmap_{strategy}_tp4"])
        for phase in ("allreduce", "dispatch"):
            unit = s.phases[phase].loads.all_links()
            per_unit = row[f"{phase}_max_link_bytes"] / s.phases[phase].max_link if phase == "allreduce" else \
                (row["dispatch_hop_bytes"] + row["dispatch_cross_bytes"]) / unit.sum()
            expected = unit * per_unit / 1e6  # MB
            np.testing.assert_allclose(drawn[f"links-{phase}"], expected, rtol=1e-12)
            if phase == "dispatch":   # the hottest link drawn at its expected bytes, below the step's maximum
                assert expected.max() * 1e6 < row["dispatch_max_link_bytes"]
            assert np.mean(drawn[f"links-{phase}"] == 0) == pytest.approx(row[f"{phase}_idle_link_share"])
        hot = drawn["hot-links"]  # 1 all-reduce only, 2 dispatch only, 3 both
        both, either = np.sum(hot == 3), np.sum(hot > 0)
        assert both / either == pytest.approx(row["hot_link_overlap"])
        assert np.array_equal(hot % 2 == 1, mesh.hot_links(s.phases["allreduce"].loads))


def test_heatmap_scale_is_shared_across_mappings_at_one_tp(sweeps):
    figs = fig_mesh.link_heatmaps(_context(sweeps["map"][0]))
    for tp in (4, 16):
        limits = {tuple(np.round(figs[f"link_heatmap_{s}_tp{tp}"].axes[0].collections[-1].norm.vmax, 9).ravel())
                  for s in ("block", "er")}
        assert len(limits) == 1


def test_link_geometry_matches_link_order():
    """Arrow k starts at the source node of all_links()[k] and points to its destination."""
    rows, cols = 3, 4
    x, y, u, v = meshdraw.link_geometry(rows, cols)
    t = np.zeros((12, 12))
    t[5, 6] = 1.0  # node (1,1) -> (1,2): one east link
    t[9, 5] = 2.0  # node (2,1) -> (1,1): one north link
    links = mesh.xy_link_loads(rows, cols, t).all_links()
    for k, node_from, node_to in ((np.flatnonzero(links == 1)[0], (1, 1), (1, 2)),
                                  (np.flatnonzero(links == 2)[0], (2, 1), (1, 1))):
        head = (x[k] + u[k], y[k] + v[k])
        assert abs(x[k] - node_from[1]) + abs(y[k] - node_from[0]) < 0.5
        assert abs(head[0] - node_to[1]) + abs(head[1] - node_to[0]) < 0.5


def test_node_load_panels_match_the_points(sweeps):
    """Before/after maps hold the per-die expected load over the mean; their maxima are the expected shares'
    imbalance factors."""
    ctx = _context(sweeps["bal"][0])
    fig = fig_balance.node_loads(ctx)["node_load_replicate"]
    shown = {im.get_gid(): im.get_array() for ax in fig.axes for im in ax.images}
    p = ctx.points[ctx.points["balance.zipf_s"] == 0.4].set_index("balance.balancer")
    # the maps show the expected shares; the swept columns the busiest die over a step's routing
    # (cost/balance/routing.py): at B = 256 (4,096 tokens) the hot die of the default placement stands 8σ clear of
    # the rest (within 1e-4 of its share), while replication's even dies leave the routing's noise (1.11×, not 1.01×)
    assert shown["node-load-before"].max() == pytest.approx(p.loc["none", "expert_imbalance"], rel=1e-4)
    assert shown["node-load-after"].max() < p.loc["replicate", "expert_imbalance"]
    assert shown["node-load-before"].mean() == pytest.approx(1.0)
    assert fig.axes[0].images[0].norm.vmax == fig.axes[1].images[0].norm.vmax  # one colour scale


def test_throughput_lines_follow_the_points(sweeps):
    ctx = _context(sweeps["bal"][0])
    fig = fig_balance.throughput_vs_skew(ctx)
    lines = {ln.get_label(): ln for ln in fig.axes[0].get_lines()}
    for b in ("none", "replicate"):
        sub = ctx.points[ctx.points["balance.balancer"] == b].sort_values("balance.zipf_s")
        np.testing.assert_allclose(lines[b].get_ydata(), sub["tokens_per_s"])


def test_stale_plots_removed_and_config_optional(sweeps, tmp_path):
    src, _ = sweeps["map"]
    path = tmp_path / "copy"
    shutil.copytree(src, path)
    for stale in ("link_heatmap_snake_tp2.png", "wsc_vs_nvl72.svg"):  # plots an earlier run wrote
        writer.write_file(path / "plots" / stale, b"old", "plot")
    (path / "plots" / "link_heatmap_mine_tp2.png").write_bytes(b"mine")  # not wsemoe's: never removed
    # Results without config.yaml (as an older wsemoe wrote them, so the manifest records no checksum
    # for it): no structure can be built, heat maps are skipped.
    man = json.loads((path / "manifest.json").read_text())
    del man["files"]["config.yaml"]
    data = json.dumps(man).encode()
    (path / "manifest.json").write_bytes(data)
    writer.record_files(path, {"manifest.json": data}, "sweep")   # as that wsemoe recorded its manifest
    (path / "config.yaml").unlink()
    written = plot_results(path)
    mine = {p.name for p in written if p.stem in MINE or p.stem.startswith(("link_heatmap_", "node_load_"))}
    assert mine == {"comm_breakdown.png", "comm_breakdown.svg", "comm_breakdown.txt"}  # txt: its caption
    left = {p.name for p in (path / "plots").iterdir()}
    assert not any(n.startswith("link_heatmap_") or n.startswith("wsc_vs_nvl72") for n in left - {"link_heatmap_mine_tp2.png"})
    assert (path / "plots" / "link_heatmap_mine_tp2.png").read_bytes() == b"mine"


def test_slice_prefers_top_k_8_and_largest_batch():
    points = pd.DataFrame({"model.num_experts_per_tok": [2, 8, 2, 8], "workload.B": [1, 1, 4, 4], "x": range(4)})
    ctx = ResultsView.__new__(ResultsView)
    ctx.points, ctx.axes, ctx.cfg = points, ["model.num_experts_per_tok", "workload.B"], {}
    df, said = ctx.slice()
    assert list(df["x"]) == [3] and said == "top-k 8, B 4"


def test_only_a_family_pattern_draws_its_figures_and_an_unsupported_one_says_so(sweeps, runner, tmp_path):
    """--only 'link_heatmap_*' (a name `plot` lists as known) wrote nothing and exited 0: the stems were compared
    with the pattern as text. It draws every heat map now; asked of results that support none, it says so."""
    import shutil

    from wsemoe.cli import app

    path = tmp_path / "copy"
    shutil.copytree(sweeps["map"][0], path)
    written = plot_results(path, only=["link_heatmap_*"], formats=["svg"])
    assert {p.stem for p in written if p.suffix == ".svg"} >= set(HEATMAPS)
    assert all(p.stem.startswith("link_heatmap_") for p in written)
    r = runner.invoke(app, ["plot", str(path), "--only", "node_load_*", "--only", "serving_heatmap_*"])
    assert r.exit_code == 0 and "no figure written: these results support none of" in r.output


def test_heatmap_panel_titles_stay_inside_the_figure(sweeps):
    """The hot-links panel's title, with its whole rule, ran off the figure's right edge."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    for name, fig in fig_mesh.link_heatmaps(_context(sweeps["map"][0])).items():
        canvas = FigureCanvasAgg(fig)
        canvas.draw()
        for ax in fig.axes:
            box = ax.title.get_window_extent(canvas.get_renderer())
            assert box.x0 >= 0 and box.x1 <= fig.bbox.width, (name, ax.get_title())


def _die_type(fig):
    """{panel: (what its numbers label, their smallest type size in pt)} once drawn: the dies' TP groups
    ('die-numbers') or the rows and columns ('row-col-numbers')."""
    from wsemoe.report.figures.style import figure_bytes

    figure_bytes(fig, "png")
    renderer = fig._get_renderer()
    out = {}
    for ax in fig.axes:
        if ax.get_aspect() != 1.0:
            continue   # the mesh canvases only (equal aspect)
        x0, x1 = ax.get_xlim()
        pitch = ax.get_window_extent(renderer).width / (x1 - x0) * 72 / fig.dpi   # points per node pitch
        numbers = [p for p in ax.artists + ax.patches if p.get_gid() in ("die-numbers", "row-col-numbers")]
        assert len(numbers) == 1
        out[ax] = (numbers[0].get_gid(), numbers[0].number_em * pitch)
    return out


def test_die_labels_of_a_16_by_16_mesh_are_legible(tmp_path):
    """moentwine_scale's 16×16 dies carried TP-group numbers under 3 pt, unreadable: where the numbers would be
    smaller than 6 pt, the rows and columns are numbered instead, at 6 pt or more (one per row and column: a
    pitch leaves room for a number), and the note under the figure says so."""
    cfg = {**BASE, "name": "big", "hardware": "wsc-b200-4x8x8", "mapping": {"tp": 4},
           "axes": {"mapping.strategy": ["block", "er"]}}
    path = run_sweep(cfg, out_root=tmp_path).path
    figs = fig_mesh.link_heatmaps(_context(path))
    assert figs
    for name, fig in figs.items():
        panels = _die_type(fig)
        assert len(panels) == 3, name
        for what, size in panels.values():
            assert what == "row-col-numbers" and size >= 6, (name, what, size)
        assert "rows and columns are numbered" in fig._supxlabel.get_text()


def test_die_numbers_of_an_8_by_8_mesh_stay_and_are_legible(sweeps):
    for name, fig in fig_mesh.link_heatmaps(_context(sweeps["map"][0])).items():
        for what, size in _die_type(fig).values():
            assert what == "die-numbers" and size >= 6, (name, what, size)
