"""Roofline per stage: the FLOPs and bytes columns are the numerators of the stage's own terms and the roof column is
its FLOPs' rate at their formats' peaks, so every stage of every point sits under its own roof; the figure draws
that, labelled, for each hardware of the results."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import wsemoe
from wsemoe.cost.node import compute
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
            "axes": {"workload.B": [1, 16, 256], "mapping.tp": [4, 8], "hardware": ["wsc-b200-8x8", "nvl72"],
                     "workload.expert_weight_format": ["bf16", "fp4"]}}


@pytest.fixture(scope="module")
def frames():
    return {"streamed": wsemoe.evaluate(STREAMED), "resident": wsemoe.evaluate(RESIDENT)}


def _nodes(hw: str) -> int:
    h = wsemoe.load_hardware(hw)
    return h.rows * h.cols * (h.wafers or (1, 1))[0] * (h.wafers or (1, 1))[1]


def test_flops_and_bytes_are_what_the_terms_charge(frames):
    """compute term = hw FLOPs / (roof · efficiency), the roof nodes · peak (16-bit: cs2 has no other); the
    weight-path term = bytes / bandwidth."""
    df = frames["streamed"]
    hw = wsemoe.load_hardware("cs2")
    n = _nodes("cs2")
    for stage in STAGES:
        assert np.allclose(df[f"{stage}_roof_flops"], n * hw.node_peak_flops, rtol=1e-15)
        if stage == "moe":   # qwen3: no shared experts; the router's GEMM over every token at eff, experts at eff_exp
            router = df["moe_hw_flops"] * df["router_flops"] / (df["router_flops"] + df["expert_flops"])
            want = router / hw.matmul_efficiency + (df["moe_hw_flops"] - router) / df["expert_efficiency"]
        else:
            want = df[f"{stage}_hw_flops"] / hw.matmul_efficiency
        assert np.allclose(df[f"{stage}_compute_s"], want / df[f"{stage}_roof_flops"], rtol=1e-12)
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


def test_mixed_formats_by_hand():
    """nvl72 (per GPU: bf16 2.5e15, fp8 5e15, fp4 1e16 (GB200) FLOP/s; 72 GPUs), decode, fp8 attention weights, fp4
    experts. Attention runs its projections at fp8 and its core at bf16: compute = proj/(72·5e15·eff) +
    core/(72·2.5e15·eff), and its roof is the rate of those FLOPs at the two peaks, 72·(proj + core) /
    (proj/5e15 + core/2.5e15), strictly between the two peaks. MoE: router bf16 and routed experts fp4 at the
    expert efficiency, the shared expert fp8 at the matmul efficiency. One-format stages sit at their format's peak:
    dense FFN 72·5e15, head 72·2.5e15."""
    cfg = {"name": "mix", "hardware": "nvl72", "model": "deepseek-v3", "mapping": {"tp": 8},
           "workload": {"mode": "decode", "seq_len": 4096, "B": 64, "attn_weight_format": "fp8",
                        "expert_weight_format": "fp4"}}
    r = wsemoe.evaluate(cfg).iloc[0]
    n, p16, p8, p4, eff = 72, 2.5e15, 5e15, 1e16, wsemoe.load_hardware("nvl72").matmul_efficiency
    m = wsemoe.load_model("deepseek-v3")
    # every TP rank runs MLA's down-projections whole (docs/cost-model.md, What TP cannot split)
    down = m.hidden_size * (m.q_lora_rank + m.kv_lora_rank + m.qk_rope_head_dim)
    attn = r["attn_proj_flops"] / (2 * r["tokens_per_microbatch"])
    proj, core = r["attn_proj_flops"] * 8 * ((attn - down) / 8 + down) / attn, r["attn_core_flops"]
    assert r["attention_hw_flops"] == pytest.approx(proj + core, rel=1e-13)
    assert r["attention_roof_flops"] == pytest.approx(n * (proj + core) / (proj / p8 + core / p16), rel=1e-13)
    assert r["attention_compute_s"] == pytest.approx(proj / (n * p8 * eff) + core / (n * p16 * eff), rel=1e-13)
    assert n * p16 < r["attention_roof_flops"] < n * p8
    shared = compute.shared_expert_flops(wsemoe.load_model("deepseek-v3"), r["tokens_per_microbatch"])
    routed = (r["expert_flops"] - shared) * r["expert_imbalance"]
    router, eff_exp = r["router_flops"], r["expert_efficiency"]
    assert r["moe_hw_flops"] == pytest.approx(router + routed + shared, rel=1e-13)
    assert r["moe_roof_flops"] == pytest.approx(n * (router + routed + shared) / (router / p16 + routed / p4
                                                                                   + shared / p8), rel=1e-13)
    assert r["moe_compute_s"] == pytest.approx((router / p16 + routed / p4) / (n * eff_exp) + shared / (n * p8 * eff),
                                               rel=1e-13)
    assert r["dense_ffn_roof_flops"] == pytest.approx(n * p8, rel=1e-15)
    assert r["head_roof_flops"] == pytest.approx(n * p16, rel=1e-15)
    for stage in STAGES:   # the compute term never beats the roof: every efficiency is at most 1
        assert r[f"{stage}_compute_s"] >= r[f"{stage}_hw_flops"] / r[f"{stage}_roof_flops"]


@pytest.mark.parametrize("space", ["streamed", "resident"])
def test_every_stage_sits_under_its_roof(frames, space):
    df = frames[space]
    groups = df.groupby("hardware") if "hardware" in df else [(STREAMED["hardware"], df)]
    for hw_name, sub in groups:
        spec = wsemoe.load_hardware(hw_name)
        peak, eff, bw, _ = fig_roofline.roof(spec.model_dump())
        top = _nodes(hw_name) * max(spec.node_peak_flops, spec.node_peak_flops_fp8 or 0, spec.node_peak_flops_fp4 or 0)
        for stage in STAGES:
            ai, run, core, roof = (x[sub[f"{stage}_hw_flops"].to_numpy() > 0] for x in fig_roofline.placed(sub, stage))
            if stage != "dense_ffn":   # qwen3-30b-a3b (the streamed space) has no dense FFN: 0 FLOPs there
                assert len(ai) == len(sub)
            ceiling = np.minimum(roof, ai * bw)
            assert (run <= ceiling * (1 + 1e-9)).all() and (core <= ceiling * (1 + 1e-9)).all(), (hw_name, stage)
            assert (core >= run * (1 - 1e-12)).all()   # communication only ever lowers what a stage attains
            # a stage's roof lies between the 16-bit peak and the hardware's fastest format; its compute term is at
            # most efficiency × roof (matmul efficiency is the largest any part runs at)
            assert (roof >= peak * (1 - 1e-12)).all() and (roof <= top * (1 + 1e-12)).all()
            assert (run <= roof * eff * (1 + 1e-9)).all()
    if space == "resident":   # fp4 experts raise the MoE roof above the 16-bit peak
        fp4 = df[df["workload.expert_weight_format"] == "fp4"]
        assert (fp4["moe_roof_flops"] > fp4["attention_roof_flops"] * 1.5).all()


def test_columns_are_documented(frames):
    for stage in STAGES:
        for col, unit in ((f"{stage}_hw_flops", "FLOP"), (f"{stage}_traffic_bytes", "bytes"),
                          (f"{stage}_roof_flops", "FLOP/s")):
            assert col in frames["resident"] and documented(col) and describe(col)[0] == unit


@pytest.fixture(scope="module")
def plotted(tmp_path_factory):
    res = run_sweep(RESIDENT, out_root=tmp_path_factory.mktemp("roof"))
    return res.path, plot_results(res.path, only=["roofline"], formats=["svg"])   # PNG: test_plot.py


def test_figure_registered_and_written(plotted):
    path, written = plotted
    assert fig_roofline in FAMILIES and "roofline" in fig_roofline.STEMS
    assert [p.name for p in written] == ["roofline.svg", "roofline.txt"]
    caption = (path / "plots" / "roofline.txt").read_text()  # the claim, then what the best designs show
    assert caption.rstrip().endswith("Claim tested: " + fig_roofline.CLAIMS["roofline"].rstrip(".") + ".") and "every stage drawn is under its roof" in caption
    svg = (path / "plots" / "roofline.svg").read_text()
    for text in ("arithmetic intensity (FLOP per byte on the weight path)", "attained (FLOP/s, all nodes)",
                 "wsc-b200-8x8: peak", "nvl72: peak", "of its roof", "MoE (router + experts)",
                 "best design, without its communication", "ridge", "(16-bit)",
                 "16-bit peak (fp8/fp4 matmuls raise their stage"):
        assert text in svg, text


def test_figure_claims_follow_the_data(plotted):
    """The share of the roof the subtitle states for the best point is that point's attained over its ceiling."""
    path, _ = plotted
    view = ResultsView.load(path, fig_roofline.STAGE_COLUMNS)
    feas = view.feasible[view.feasible["hardware"] == "nvl72"]
    best = feas.loc[feas[view.metric].idxmax()]
    _, _, bw, _ = fig_roofline.roof(view.sections(best.to_dict())["hardware"])
    ai, run, _, roof = (float(x[0]) for x in fig_roofline.placed(best.to_frame().T, "moe"))
    share = f"MoE {100 * run / min(roof, ai * bw):.0f}%"
    assert share in (path / "plots" / "roofline.svg").read_text()


def test_caption_says_when_a_stage_would_sit_above_its_roof():
    """The verdict is computed from the shares drawn: a share above 1 contradicts the claim, and says so."""
    ok = fig_roofline._verdict([("cs2", ("MoE 80% (weight path)", 0.8)), ("cs2", ("attention 45% (compute)", 0.45))])
    assert "cs2: MoE 80% (weight path), attention 45% (compute)" in ok and "under its roof" in ok
    bad = fig_roofline._verdict([("nvl72", ("MoE 120% (compute)", 1.2))])
    assert "Above the roof: nvl72 MoE 120% (compute)" in bad and "do not bear the claim out" in bad


def test_what_binds_a_stage_in_the_caption_is_what_the_model_times(frames):
    """Left of the ideal ridge a stage can still be compute-bound (the matmul efficiency lowers the compute roof):
    the caption's '(compute)' or '(weight path)' is the longer of the stage's own terms, as `eval` shows them."""
    df = frames["resident"]
    checked = 0
    for _, row in df[df["feasible"]].head(40).iterrows():
        for stage in STAGES:
            path = [row[c] for c in (f"{stage}_{t}_s" for t in fig_roofline.TERMS[1:]) if c in row and row[c] == row[c]]
            if not path or f"{stage}_compute_s" not in row:
                continue
            want = "compute" if row[f"{stage}_compute_s"] >= max(path) else "weight path"
            assert fig_roofline._binds(row, stage, "either") == want
            checked += want == "compute"
    assert checked > 0   # some stage is compute-bound: the case the ideal ridge got wrong
    assert fig_roofline._binds(df.iloc[0].drop([c for c in df.columns if c.startswith("moe_")]), "moe", "x") == "x"


def test_a_system_served_from_sram_is_named_as_not_drawn():
    """cerebras_serving is about CS-3 serving from SRAM, which has no node-level roof: its roofline showed
    only the GPU baselines without a word. The caption names what it leaves out; GPU-only results say nothing."""
    import pandas as pd

    pts = pd.DataFrame({"hardware": ["cs3", "nvl72"], "hardware.weight_source": ["sram", "hbm"],
                        "feasible": [True, True]})
    view = ResultsView("v", {"axes": ["hardware"], "objectives": {}}, pts, pts.iloc[:0], None, {})
    assert "Not drawn: cs3 serving from SRAM" in fig_roofline._left_out(view)
    assert fig_roofline._left_out(ResultsView("v", {"axes": ["hardware"], "objectives": {}}, pts.iloc[1:],
                                              pts.iloc[:0], None, {})) == ""


def test_stage_labels_do_not_overlap(plotted):
    """Each stage's label sits clear of every other stage's label (cerebras_serving drew 'output head' on the
    attention marker's label area): their rendered boxes do not intersect."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from wsemoe.report.figures import plots

    fig = dict(plots.figures(plotted[0], only=["roofline"]))["roofline"]
    renderer = FigureCanvasAgg(fig).get_renderer()
    for ax in fig.axes:
        names = {v.split(" (")[0] for v in fig_roofline.STAGES.values()}
        boxes = [t.get_window_extent(renderer) for t in ax.texts if t.get_text() in names]
        assert all(not a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])


def test_a_figure_without_its_sram_system_says_so_on_the_image_and_why_in_the_caption(tmp_path):
    """cerebras_serving's roofline had no CS-3 panel and said so only in the caption file: the image itself now
    names what it leaves out, and the caption gives the physics (weights never move; the fabric bounds a token)."""
    from wsemoe.report.figures import plots

    cfg = {"name": "sram_roof", "hardware": {"preset": "cs3", "weight_source": "sram"}, "model": "qwen3-30b-a3b",
           "workload": {"mode": "decode", "seq_len": 4096},
           "zip": [{"hardware": ["cs3", "nvl72"], "hardware.weight_source": ["sram", "resident"]}],
           "axes": {"workload.B": [1, 4]}, "objectives": {"tokens_per_s_per_user": "max"}}
    path = run_sweep(cfg, out_root=tmp_path).path
    fig = dict(plots.figures(path, only=["roofline"]))["roofline"]
    assert "not drawn: cs3 serving from SRAM, the caption says why" in " ".join(fig._suptitle.get_text().split())
    text = fig_roofline._left_out(ResultsView.load(path))
    assert "every MAC reads its operands from its own PE's SRAM" in text and "the fabric" in text


def test_coincident_best_markers_both_stay_visible(tmp_path):
    """DeepSeek-V3's dense FFN and output head share a point: the head's marker, drawn the same size on top,
    hid the dense FFN's, whose label floated beside nothing. A marker on an earlier one is smaller (the earlier
    stays a ring around it) and every stage drawn is named. At TP 1, where the dense FFN all-reduces nothing
    (at TP 4 or 8 its all-reduce sets it below the head)."""
    from wsemoe.report.figures import plots

    res = run_sweep({**RESIDENT, "axes": {**RESIDENT["axes"], "mapping.tp": [1]}}, out_root=tmp_path)
    fig = dict(plots.figures(res.path, only=["roofline"]))["roofline"]
    checked = 0
    for ax in fig.axes:
        best = [c for c in ax.collections if len(c.get_offsets()) == 1 and len(c.get_edgecolor())
                and tuple(c.get_edgecolor()[0][:3]) == (0.0, 0.0, 0.0)]
        for i, a in enumerate(best):
            for b in best[i + 1:]:
                if np.all(np.abs(np.log10(np.asarray(a.get_offsets()[0]) / b.get_offsets()[0])) < 0.02):
                    assert b.get_sizes()[0] < a.get_sizes()[0]
                    checked += 1
        text = " ".join(t.get_text() for t in ax.texts)
        assert "dense FFN" in text and "output head" in text
    assert checked   # the fixture's dense FFN and output head coincide


def test_each_share_says_which_roof_it_is_of(plotted):
    """A stage left of its ridge read '42% (compute)': a share of the sloped roof named after the flat one. Each
    share names its roof (the weight-path slope or the compute roof) and, apart, what binds the stage."""
    import re

    caption = (plotted[0] / "plots" / "roofline.txt").read_text()
    shares = re.findall(r"\d+% \(([^)]*)\)", caption.split("Claim tested")[0])
    assert shares and all(re.fullmatch(r"(node-memory slope|wafer-I/O slope|compute roof), "
                                       r"(compute|weight-path|SRAM)-bound", s) for s in shares), shares
    assert "node-memory slope, compute-bound" in caption   # the case that read '(compute)' alone


def test_a_cs3_compute_roof_is_read_as_sram_bound(tmp_path):
    """CS-3's peak is its PEs' SRAM bandwidth feeding the MACs (the pe_mac_rate reading): a stage on its compute
    roof is said to be SRAM-bound, and the panel says what that means; CS-2's SIMD rate is not."""
    from wsemoe.report.figures import plots
    from wsemoe.report.figures.claims import caption_of

    assert fig_roofline.sram_bound(wsemoe.load_hardware("cs3").model_dump())
    assert not fig_roofline.sram_bound(wsemoe.load_hardware("cs2").model_dump())
    path = run_sweep({**STREAMED, "hardware": "cs3"}, out_root=tmp_path).path
    fig = dict(plots.figures(path, only=["roofline"]))["roofline"]
    assert "SRAM-bound)" in caption_of(fig) and "SRAM-bound MAC rate" in fig.axes[0].get_title()


def test_a_stage_bound_by_its_pe_regions_reads_compute_bound_not_weight_path():
    """At PE level a stage's regions term (its matmuls as placed on their regions) and its edge term (the weights'
    stream through the fabric's edge) are roofline terms too: bta_topk_pe point 280's MoE stage takes 16.52 ms on
    its regions beside 16.11 ms of weights and 16.07 ms of compute (bound moe_layer:regions); the caption read it
    'weight-path-bound', the larger of weights and compute alone. (Since the busiest region takes a step's expected
    maximum of copies, point 280's compute outgrows its weights; point 268 is such a stage: 16.20 ms on its
    regions, 16.11 of weights, 15.76 of compute.)"""
    sweep = Path(__file__).resolve().parent.parent / "sweeps" / "bta_topk_pe.yaml"
    row = wsemoe.evaluate(str(sweep), start=268, stop=269).iloc[0]
    assert row["moe_regions_s"] > row["moe_weights_s"] > row["moe_compute_s"] and row["bound"] == "moe_layer:regions"
    assert fig_roofline._binds(row, "moe", "ideal") == "compute"
    ai, run, core, roof = fig_roofline.placed(row.to_frame().T, "moe")   # the hollow marker: its regions' time
    assert float(core[0]) == pytest.approx(float(row["moe_hw_flops"]) / (row["moe_regions_s"] + row["moe_launch_s"]))


def test_intensity_below_one_is_a_decimal_not_a_milli_prefix():
    """cerebras_serving's DGX panel reaches 0.1 FLOP/B: its tick read '100m', on a FLOP-per-byte axis a reader's
    100 million. Below 1 the intensity ticks are decimals (0.1), from 1 k on an SI prefix; the FLOP/s axis keeps
    its prefixes."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    fig_roofline._roof_lines(ax, peak=1e15, top=1e15, eff=0.4, bw=2e12, ais=[0.3, 2.0, 50.0], low=1e10)
    fig.canvas.draw()
    labels = [t.get_text() for t in ax.get_xticklabels() if ax.get_xlim()[0] <= t.get_position()[0] <= ax.get_xlim()[1]]
    ys = [t.get_text() for t in ax.get_yticklabels()]
    plt.close(fig)
    assert "0.1" in labels and "1k" in labels and not any(lab.endswith("m") for lab in labels), labels
    assert any(lab.endswith("T") for lab in ys), ys


def test_a_one_format_figure_without_communication_names_only_what_it_draws(tmp_path):
    """bta_topk on a CS-2, every matmul 16-bit and no fabric phases: its title read 'peak 7.48 PFLOP/s (16-bit),
    7.48 PFLOP/s (a stage at its formats)' (a stage's roof above the peak by round-off) and the legend named a
    raised 16-bit peak and a hollow 'without its communication' marker that no panel draws."""
    res = run_sweep(STREAMED, out_root=tmp_path)
    plot_results(res.path, only=["roofline"], formats=["svg"])
    svg = (res.path / "plots" / "roofline.svg").read_text()
    assert "cs2: peak" in svg and "(a stage at its formats)" not in svg
    assert "16-bit peak (fp8/fp4 matmuls raise their stage" not in svg
    assert "best design, without its communication" not in svg and "best design, as run" in svg
