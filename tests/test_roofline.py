"""Roofline per stage: the FLOPs and bytes columns are the numerators of the stage's own terms, so every stage of
every point sits under its hardware's roof; the figure draws that, labelled, for each hardware of the results."""

from __future__ import annotations

import numpy as np
import pytest

import wsemoe
from wsemoe.report.figures import fig_roofline
from wsemoe.report.figures.plots import FAMILIES, plot_results
from wsemoe.report.figures.view import ResultsView
from wsemoe.sweep.columns import describe, documented
from wsemoe.sweep.run import run_sweep

STAGES = ("attention", "moe", "dense_ffn", "head")
STREAMED = {"name": "rs", "hardware": "cs2", "model": "qwen3-30b-a3b",
            "workload": {"mode": "train", "seq_len": 4096, "recompute": "selective"},
            "axes": {"workload.B": [1, 2, 4], "workload.G": [1, 8, 32], "workload.mode": ["train", "prefill"]}}
RESIDENT = {"name": "rr", "hardware": "wsc-b200-8x8", "model": "deepseek-v3",
            "workload": {"mode": "decode", "seq_len": 4096},
            "balance": {"distribution": "zipf", "zipf_s": 0.8, "balancer": "replicate", "spare_slots": 1},
            "axes": {"workload.B": [1, 16, 256], "mapping.tp": [4, 8], "hardware": ["wsc-b200-8x8", "nvl72"]}}


@pytest.fixture(scope="module")
def frames():
    return {"streamed": wsemoe.evaluate(STREAMED), "resident": wsemoe.evaluate(RESIDENT)}


def _nodes(hw: str) -> int:
    h = wsemoe.load_hardware(hw)
    return h.rows * h.cols * (h.wafers or (1, 1))[0] * (h.wafers or (1, 1))[1]


def test_flops_and_bytes_are_what_the_terms_charge(frames):
    """compute term = hw FLOPs / (nodes · peak · efficiency); the weight-path term = bytes / bandwidth."""
    df = frames["streamed"]
    hw = wsemoe.load_hardware("cs2")
    n = _nodes("cs2")
    for stage in STAGES:
        eff = df["expert_efficiency"] if stage == "moe" else hw.matmul_efficiency
        assert np.allclose(df[f"{stage}_compute_s"], df[f"{stage}_hw_flops"] / (n * hw.node_peak_flops * eff),
                           rtol=1e-12)
    prefill = df[df["workload.mode"] == "prefill"]   # inference streams each stage's weights in once
    for stage in STAGES:
        assert np.allclose(prefill[f"{stage}_weights_s"], prefill[f"{stage}_traffic_bytes"] / hw.io_in_bw_bytes_per_s,
                           rtol=1e-12)
    res = frames["resident"]
    for h in ("wsc-b200-8x8", "nvl72"):
        sub, spec = res[res["hardware"] == h], wsemoe.load_hardware(h)
        for stage in STAGES:   # resident: the busiest node's HBM reads × nodes
            assert np.allclose(sub[f"{stage}_hbm_s"] * spec.node_memory_bw_bytes_per_s * _nodes(h),
                               sub[f"{stage}_traffic_bytes"], rtol=1e-12)


def test_hw_flops_by_hand():
    """Training, selective recompute: attention runs 3× its forward FLOPs plus its core again; the head 3×; the
    experts 3× their forward FLOPs at the busiest node's load (uniform here: imbalance 1)."""
    df = wsemoe.evaluate(STREAMED)
    train = df[df["workload.mode"] == "train"]
    assert np.allclose(train["attention_hw_flops"], 3 * (train["attn_proj_flops"] + train["attn_core_flops"])
                       + train["attn_core_flops"], rtol=1e-13)
    assert np.allclose(train["moe_hw_flops"], 3 * (train["router_flops"] + train["expert_flops"]), rtol=1e-13)
    pre = df[df["workload.mode"] == "prefill"]
    assert np.allclose(pre["moe_hw_flops"], pre["router_flops"] + pre["expert_flops"], rtol=1e-13)


@pytest.mark.parametrize("space", ["streamed", "resident"])
def test_every_stage_sits_under_its_roof(frames, space):
    df = frames[space]
    groups = df.groupby("hardware") if "hardware" in df else [(STREAMED["hardware"], df)]
    for hw_name, sub in groups:
        peak, eff, bw, _ = fig_roofline.roof(wsemoe.load_hardware(hw_name).model_dump())
        for stage in STAGES:
            ai, run, core = (x[sub[f"{stage}_hw_flops"].to_numpy() > 0] for x in fig_roofline.placed(sub, stage))
            if stage != "dense_ffn":   # qwen3-30b-a3b (the streamed space) has no dense FFN: 0 FLOPs there
                assert len(ai) == len(sub)
            ceiling = np.minimum(peak, ai * bw)
            assert (run <= ceiling * (1 + 1e-9)).all() and (core <= ceiling * (1 + 1e-9)).all(), (hw_name, stage)
            assert (core >= run * (1 - 1e-12)).all()   # communication only ever lowers what a stage attains
            # compute-side stages never beat peak × efficiency (their compute term is at that rate)
            assert (run <= peak * eff * (1 + 1e-9)).all()


def test_columns_are_documented(frames):
    for stage in STAGES:
        for col, unit in ((f"{stage}_hw_flops", "FLOP"), (f"{stage}_traffic_bytes", "bytes")):
            assert col in frames["resident"] and documented(col) and describe(col)[0] == unit


@pytest.fixture(scope="module")
def plotted(tmp_path_factory):
    res = run_sweep(RESIDENT, out_root=tmp_path_factory.mktemp("roof"))
    return res.path, plot_results(res.path, only=["roofline"], formats=["svg"])   # PNG: test_plot.py


def test_figure_registered_and_written(plotted):
    path, written = plotted
    assert fig_roofline in FAMILIES and "roofline" in fig_roofline.STEMS
    assert [p.name for p in written] == ["roofline.svg"]
    svg = (path / "plots" / "roofline.svg").read_text()
    for text in ("arithmetic intensity (FLOP per byte on the weight path)", "attained (FLOP/s, all nodes)",
                 "wsc-b200-8x8: peak", "nvl72: peak", "of its roof", "MoE (router + experts)",
                 "best design, without its communication", "ridge"):
        assert text in svg, text


def test_figure_claims_follow_the_data(plotted):
    """The share of the roof the subtitle states for the best point is that point's attained over its ceiling."""
    path, _ = plotted
    view = ResultsView.load(path, fig_roofline.COLUMNS)
    feas = view.feasible[view.feasible["hardware"] == "nvl72"]
    best = feas.loc[feas[view.metric].idxmax()]
    peak, _, bw, _ = fig_roofline.roof(view.sections(best.to_dict())["hardware"])
    ai, run, _ = (float(x[0]) for x in fig_roofline.placed(best.to_frame().T, "moe"))
    share = f"MoE {100 * run / min(peak, ai * bw):.0f}%"
    assert share in (path / "plots" / "roofline.svg").read_text()
