"""Plots of the multi-wafer reproduction: the crossover against a baseline system, communication with wafer-bound
phases hatched, heat maps and node loads of a 16×16 system with its wafer boundaries drawn."""

from __future__ import annotations

import numpy as np
import pytest

from wsemoe.report.figures import fig_comm, fig_mesh, fig_versus
from wsemoe.report.figures.plots import plot_results
from wsemoe.report.figures.view import ResultsView
from wsemoe.sweep.run import run_sweep

DECODE = {"mode": "decode", "seq_len": 4096, "overlap": "stage"}
VERSUS = {"name": "vs", "hardware": "wsc-b200-4x8x8", "model": "deepseek-v3", "workload": DECODE,
          "zip": [{"hardware": ["wsc-b200-4x8x8", "wsc-b200-4x8x8", "nvl72", "nvl72"], "mapping.tp": [1, 4, 1, 4]}],
          "axes": {"workload.tokens_per_device": [1, 16, 256]},
          "compare": {"name": "nvl72", "baseline": {"hardware": "nvl72"}, "candidate": {"hardware": "wsc-b200-4x8x8"},
                      "metric": "per_device_moe_block_tokens_per_s", "also": ["per_device_moe_tokens_per_s"],
                      "over": ["mapping.tp"]}}
SCALE = {"name": "sc", "hardware": {"preset": "wsc-b200-4x8x8", "inter_wafer_link_bw_bytes_per_s": 5.0e10},
         "model": "deepseek-v3", "workload": {**DECODE, "tokens_per_device": 16}, "mapping": {"tp": 4},
         "balance": {"distribution": "zipf", "skew_target": 2.0, "seed": 1, "spare_slots": 1},
         "axes": {"mapping.strategy": ["block", "her"], "balance.balancer": ["none", "replicate"]}}


@pytest.fixture(scope="module")
def views(tmp_path_factory):
    out = {}
    for cfg in (VERSUS, SCALE):
        path = run_sweep(cfg, out_root=tmp_path_factory.mktemp(cfg["name"])).path
        out[cfg["name"]] = (ResultsView.load(path), plot_results(path))
    return out


def test_crossover_draws_best_against_best_ratios(views):
    view, written = views["vs"]
    assert any(p.name == "crossover.png" for p in written)
    fig = fig_versus.crossover(view)
    drawn = [ln for ln in fig.axes[0].get_lines() if len(ln.get_xdata()) == 3]
    feas = view.feasible
    for metric, line in zip(fig_versus.METRICS, drawn):
        best = feas.groupby(["workload.tokens_per_device", "hardware"], observed=True)[metric].max().unstack()
        np.testing.assert_allclose(line.get_ydata(), best["wsc-b200-4x8x8"] / best["nvl72"], rtol=1e-12)
    texts = " ".join(" ".join(t.get_text().split()) for t in fig.findobj(lambda a: hasattr(a, "get_text")))
    assert "best against best" in texts and "tokens per device" in texts and "nvl72" in texts


def test_crossing_is_interpolated_on_log_tokens():
    import pandas as pd

    from wsemoe.sweep import crossing

    assert crossing.first_behind(pd.Series([2.0, 0.5], index=[4, 16])) == pytest.approx(2 ** (2 + 2 * (1 / 1.5)))
    assert crossing.first_behind(pd.Series([2.0, 1.5], index=[4, 16])) is None


def test_wafer_bound_phases_are_hatched_and_wafers_drawn(views):
    view, written = views["sc"]
    names = {p.stem for p in written}
    assert {"comm_breakdown", "link_heatmap_block_tp4", "link_heatmap_her_tp4", "node_load_replicate"} <= names
    fig = fig_comm.comm_breakdown(view)
    hatched = [b for b in fig.axes[0].patches if b.get_hatch()]
    assert hatched and any("inter-wafer" in t.get_text() for t in fig.legends[0].get_texts())
    heat = fig_mesh.link_heatmaps(view)["link_heatmap_block_tp4"]
    walls = [ln for ax in heat.axes for ln in ax.get_lines() if ln.get_linewidth() == pytest.approx(2.2)]
    assert len(walls) == 3 * 2   # one horizontal and one vertical boundary in each of the three mesh panels
