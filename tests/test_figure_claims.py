"""Figures state and show their claim: every family declares the claim of each figure, every figure carries a
caption that starts with it and says what the data show, a figure whose data contradict its claim says so,
systems are compared at their best configuration (the documented rule), and `plot` writes the caption."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from wsemoe.report.figures import claims, fig_comm, plots
from wsemoe.report.figures.view import ResultsView
from wsemoe.sweep.run import run_sweep


def _view(points: pd.DataFrame, compare=None) -> ResultsView:
    axes = [c for c in points if "." in c or c in ("model", "hardware")]
    return ResultsView("v", {"axes": axes, "objectives": {}}, points, points.iloc[:0], None,
                       {"compare": compare} if compare else {})


def _comm(er_factor: float) -> pd.DataFrame:
    """Block and ER at TP 4 and 8, two token flows each; ER's flows cost er_factor × block's (per phase)."""
    rows = []
    for tp in (4, 8):
        for strat, f in (("block", 1.0), ("er", er_factor)):
            for src, extra in (("auto", 2.0), ("slice", 1.0)):  # slice is each mapping's best flow
                t = 1e-6 * tp * f * extra
                rows.append({"mapping.tp": tp, "mapping.strategy": strat, "mapping.token_source": src,
                             "attention_allreduce_s": t, "moe_dispatch_s": t, "moe_combine_s": t, "moe_reduce_s": 0.0,
                             "feasible": True})
    return pd.DataFrame(rows)


def test_every_family_declares_the_claim_of_each_figure():
    for family in plots.FAMILIES:
        for stem in getattr(family, "STEMS", ()):
            assert claims.claim_of(family, stem.replace("*", "x")), (family.__name__, stem)


@pytest.mark.parametrize("factor, holds", [(0.5, True), (1.4, False)])
def test_comm_caption_says_where_the_claim_holds_or_that_it_does_not(factor, holds):
    fig = fig_comm.comm_breakdown(_view(_comm(factor)))
    text = claims.caption_of(fig)
    assert text.endswith(f"Claim tested: {fig_comm.CLAIMS['comm_breakdown']}.")  # the finding leads
    change = f"{100 * (factor - 1):+.0f}%".replace("-", "\u2212")
    if holds:
        assert f"lower at every TP (TP 4: {change}, TP 8: {change})" in text and "not bear" not in text
    else:
        assert f"not lower at every TP (TP 4: {change}, TP 8: {change})" in text and "do not bear the claim out" in text


def test_each_bar_is_its_system_at_its_best_configuration():
    """The rule: ER's bars are its least communication over the token flow (slice), not the first value (auto)."""
    df = _comm(0.5)
    fig = fig_comm.comm_breakdown(_view(df))
    ax = fig.axes[0]
    heights = sorted({round(sum(p.get_height() for p in ax.patches if abs(p.get_x() + p.get_width() / 2 - x) < 1e-9), 6)
                      for x in {p.get_x() + p.get_width() / 2 for p in ax.patches}})
    best = df[df["mapping.token_source"] == "slice"]
    want = sorted({round(3 * t * 1e6, 6) for t in best["attention_allreduce_s"]})
    assert heights == want
    assert "least communication over token source" in " ".join(" ".join(t.get_text() for t in ax.texts).split())


def test_wsc_vs_gpu_compares_best_against_best_and_says_where_it_loses():
    rows = []
    for hw, base in (("wafer", 100.0), ("gpu", 120.0)):
        for tp in (1, 4):
            for bal, f in (("none", 1.0), ("non-invasive", 1.5 if hw == "wafer" else 1.1)):
                v = base * f * (1.0 if tp == 1 else (0.5 if hw == "wafer" else 1.0))
                rows.append({"hardware": hw, "mapping.tp": tp, "balance.balancer": bal,
                             "per_device_moe_tokens_per_s": v, "feasible": True})
    view = _view(pd.DataFrame(rows), compare={"baseline": {"hardware": "gpu"}, "candidate": {"hardware": "wafer"}})
    text = claims.caption_of(fig_comm.wsc_vs_nvl72(view))
    # TP 1: 150 vs 132 → +14%; TP 4: 75 vs 132 → −43%
    assert "wafer against gpu ahead at TP 1 (+14%); not ahead at TP 4 (\u221243%)" in text


def test_wsc_vs_gpu_names_the_model_its_verdict_holds_at():
    """Two models; the figure is drawn at one (the slice's) and its verdict held at 'tokens/device 16' alone, read
    as true of every model though another was behind. Wafer ahead at m1 (+100%), behind at m2 (−50%)."""
    rows = [{"model": m, "hardware": hw, "mapping.tp": 1, "per_device_moe_tokens_per_s": v, "feasible": True}
            for m, vals in (("m1", (200.0, 100.0)), ("m2", (50.0, 100.0))) for hw, v in zip(("wafer", "gpu"), vals)]
    view = _view(pd.DataFrame(rows), compare={"baseline": {"hardware": "gpu"}, "candidate": {"hardware": "wafer"}})
    text = claims.caption_of(fig_comm.wsc_vs_nvl72(view))
    assert "Each system at its best (at model m1): wafer against gpu ahead at TP 1 (+100%)" in text, text


def test_plot_writes_each_caption_beside_its_image(tmp_path):
    cfg = {"name": "cap", "hardware": "cs2", "model": "qwen3-30b-a3b", "workload": {"mode": "train", "seq_len": 8192},
           "axes": {"model.num_experts": [32, 128], "workload.B": [1, 2], "workload.G": [1, 4, 16]},
           "objectives": {"tokens_per_s": "max", "mem_peak_node_bytes": "min"},
           "compare": {"name": "uniform", "baseline": {"workload.G": 1}}}
    res = run_sweep(cfg, out_root=tmp_path)
    written = plots.plot_results(res.path)
    pngs = [p for p in written if p.suffix == ".png"]
    assert pngs
    for png in pngs:
        family = next(f for f in plots.FAMILIES if any(
            __import__("fnmatch").fnmatchcase(png.stem, s) for s in getattr(f, "STEMS", ())))
        text = png.with_suffix(".txt").read_text()
        claim = claims.claim_of(family, png.stem)
        assert text.rstrip().endswith(f"Claim tested: {claim.rstrip('.')}.") and not text.startswith(claim)
        assert len(text) > len(claim) + 20
    assert np.all([p.with_suffix(".txt") in written for p in pngs])


def test_serving_wafers_caption_says_where_more_wafers_pay():
    """Per-user tokens/s of model m. B 1: 100, 150, 120 on 1, 2, 4 wafers: best at 2, 150/100 − 1 = +50% over the
    fewest, 120/150 − 1 = −20% at 4 (the claim holds). B 8: 50, 40 on 1, 2: the fewest is best and 2 wafers keep
    40/50 − 1 = −20% (it does not)."""
    from wsemoe.report.figures import fig_serving

    rows = pd.DataFrame({"model": "m", "workload.B": [1, 1, 1, 8, 8], "wafers": [1, 2, 4, 1, 2],
                         "tokens_per_s_per_user": [100.0, 150.0, 120.0, 50.0, 40.0]})
    text = fig_serving._wafers_verdict(rows, ["m"])
    assert text == ("More wafers buy per-user speed at m, B 1 (best at 2 wafers, +50% over 1, \u221220% at 4); "
                    "the fewest wafers are fastest at m, B 8 (best at the fewest, 1, \u221220% at 2).")
    one = fig_serving._wafers_verdict(rows[rows["wafers"] == 1], ["m"])
    assert "not tested" in one


def test_serving_heatmap_caption_compares_the_dispatch_paths():
    """Longest dispatch path = hops × tile side: blocked 6 × 10 = 60 PE hops, interleaved 3 × 10 = 30: −50%, the
    claim holds; swapped, interleaving is longer and the caption says the data do not bear the claim out."""
    from types import SimpleNamespace

    from wsemoe.report.figures import fig_serving

    def maps(blocked, interleaved):
        return [{"traffic": SimpleNamespace(placement=SimpleNamespace(strategy=s), hops=h), "side": 10}
                for s, h in (("blocked", blocked), ("interleaved", interleaved))]

    good = fig_serving._paths_verdict(maps(6, 3))
    assert good == "Longest dispatch path in PE hops: blocked 60, interleaved 30 (\u221250% interleaved)."
    bad = fig_serving._paths_verdict(maps(3, 6))
    assert "(+100% interleaved): not shorter" in bad and "do not bear the claim out" in bad


def test_serving_heatmap_legend_lists_the_tile_kinds_drawn():
    """qwen3-30b-a3b has no shared expert: its heat map listed one; unused tiles (white) were not listed."""
    from types import SimpleNamespace

    import numpy as np

    from wsemoe.report.figures import fig_serving

    def placed(shared):
        p = SimpleNamespace(tiles=6, experts=np.array([0, 1, 2]), shared=np.array(shared, dtype=int),
                            attention=np.array([[3]]))
        return {"traffic": SimpleNamespace(placement=p)}

    assert fig_serving.legend_kinds([placed([])]) == ["attention", "expert", "empty"]
    assert fig_serving.legend_kinds([placed([4]), placed([4, 5])]) == ["attention", "expert", "shared", "empty"]


@pytest.mark.parametrize("wafer, says", [
    ([150.0, 120.0, 90.0, 80.0], "wsc: ahead at 1–2 tokens/device, behind at 4–8; ahead at every HBM-bound point "
                                 "(1–2; +20% … +50%); ahead at 1–3.17, behind from 3.17 (between 2 and 4) "
                                 "tokens/device."),
    ([90.0, 80.0, 70.0, 60.0], "wsc: behind at every load (1–8 tokens/device); ahead at 0 of 2 HBM-bound points "
                               "(1–2): the claim does not hold everywhere it should."),
])
def test_crossover_caption_reads_the_claim_where_the_baseline_is_hbm_bound(wafer, says):
    """gpu's MoE block: 100 tokens/s per device at 1, 2, 4, 8 tokens/device, HBM-bound at 1 and 2 (HBM 2 s >
    compute 1 s), compute-bound at 4 and 8. Ratios wsc/gpu 1.5, 1.2, 0.9, 0.8 cross 1 between 2 and 4: on log2,
    2^(1 + (1.2 − 1)/(1.2 − 0.9)) = 2^1.67 ≈ 3.17, so it falls behind from 3.17; the claim holds at both HBM-bound loads."""
    from wsemoe.report.figures import fig_versus

    tau = [1, 2, 4, 8]
    gpu = pd.DataFrame({"hardware": "gpu", "workload.tokens_per_device": tau, "feasible": True,
                        "per_device_moe_block_tokens_per_s": 100.0, "moe_hbm_s": [2.0, 2.0, 1.0, 1.0],
                        "moe_compute_s": [1.0, 1.0, 2.0, 2.0]})
    wsc = gpu.assign(hardware="wsc", per_device_moe_block_tokens_per_s=wafer)
    view = _view(pd.concat([wsc, gpu], ignore_index=True), {"baseline": {"hardware": "gpu"}})
    text = fig_versus._verdict(view, "gpu")
    assert text.startswith("MoE block (experts, dispatch, combine, reduction) (per_device_moe_block_tokens_per_s, "
                           "the sweep's readings as configured): gpu's MoE stage is HBM-bound at 1–2 "
                           "tokens/device. ") and text.endswith(says), text


def test_wafer_vs_gpu_bars_need_the_candidate_beside_a_gpu():
    """The SRAM-serving wafer has no per-device MoE throughput (NaN): the bars would compare the two GPU systems,
    which is not the figure's claim, so there is no figure; with the wafer's values, it is drawn."""
    pts = pd.DataFrame({"hardware": ["cs3", "nvl72", "dgx"], "mapping.tp": [1, 1, 1], "feasible": True,
                        "per_device_moe_tokens_per_s": [np.nan, 300.0, 100.0]})
    compare = {"candidate": {"hardware": "cs3"}, "baseline": {"hardware": "nvl72"}}
    assert fig_comm.wsc_vs_nvl72(_view(pts, compare)) is None
    fig = fig_comm.wsc_vs_nvl72(_view(pts.assign(per_device_moe_tokens_per_s=[600.0, 300.0, 100.0]), compare))
    assert "cs3 against nvl72 ahead at TP 1 (+100%)" in claims.caption_of(fig)


def test_hatched_is_said_only_of_a_drawn_bar():
    """moentwine_vs_nvl72's bars said "hatched: infeasible" with no bar hatched: an infeasible row at a setting only
    one system reaches (never drawn) made the whole frame look infeasible. Said only when a drawn bar is."""
    pts = pd.DataFrame({"hardware": ["cs3", "nvl72", "cs3"], "mapping.tp": [1, 1, 8], "feasible": [True, True, False],
                        "per_device_moe_tokens_per_s": [600.0, 300.0, 50.0]})
    compare = {"candidate": {"hardware": "cs3"}, "baseline": {"hardware": "nvl72"}}
    from matplotlib.text import Text

    def words(fig):
        return " ".join(t.get_text().replace("\n", " ") for t in fig.findobj(Text))

    assert "hatched" not in words(fig_comm.wsc_vs_nvl72(_view(pts, compare)))
    assert "hatched: infeasible" in words(fig_comm.wsc_vs_nvl72(_view(pts.assign(feasible=[False, True, True]),
                                                                        compare)))


def test_speedup_vs_g_with_many_designs_colours_the_highest_and_the_lowest_and_counts_the_rest():
    """Nine designs (E × top-k) exceed the figure's eight colours: the highest and the lowest peak speedup are
    drawn in colour and named, the other seven in grey, counted in the legend; the caption counts every design."""
    import wsemoe
    from wsemoe.report.figures import fig_bta

    pts = wsemoe.evaluate({"name": "many", "hardware": "cs2", "model": "qwen3-30b-a3b",
                           "workload": {"mode": "train", "seq_len": 8192, "attn_kernel": "materialized"},
                           "axes": {"model.num_experts": [8, 32, 128], "model.num_experts_per_tok": [1, 2, 8],
                                    "workload.B": [1, 2], "workload.G": [1, 2, 4]}})
    view = _view(pts.assign(feasible=pts["feasible"].astype(bool)))
    fig = fig_bta.speedup_vs_g(view)
    assert fig.axes[0].get_legend() is None  # the legend sits below the axes, clear of the B labels
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert len(labels) == 3 and labels[0].startswith(("highest: ", "lowest: ")) and labels[2] == "every other design (7)"
    assert {lab.split(":")[0] for lab in labels[:2]} == {"highest", "lowest"}
    assert "of 9 designs gain from G > 1" in claims.caption_of(fig)


def test_speedup_vs_g_labels_a_b_that_moves_at_every_g_only_at_its_ends():
    """The best B of each G is the one that keeps G·B at one batch (64): it changes at every G. Labelled at
    each change, bta_topk's figure carried ~60 'B=' labels; a line whose B changes more than MAX_NOTES times
    is labelled at its first and last G, and the subtitle says so."""
    from wsemoe.report.figures import fig_bta

    rows = [{"model.num_experts_per_tok": k, "workload.G": g, "workload.B": b, "feasible": True,
             "tokens_per_s": (1.0 + 0.01 * np.log2(g)) * (2.0 if g * b == 64 else 1.0)}
            for k in (1, 2) for g in (1, 2, 4, 8, 16, 32, 64) for b in (1, 2, 4, 8, 16, 32, 64)]
    fig = fig_bta.speedup_vs_g(_view(pd.DataFrame(rows)))
    texts = [t.get_text() for t in fig.axes[0].texts if t.get_text().startswith("B=")]
    assert sorted(set(texts)) == ["B=1", "B=64"], texts  # each line: its first and its last G
    assert "only at its first and last G" in " ".join(t.get_text() for t in fig.axes[0].texts)


def test_a_caption_leads_with_the_finding_and_then_names_the_claim_it_tests():
    """A caption that opened in bold with the claim and then said the data contradict it read as the claim
    (issue 27): the finding comes first, in the text file and in the report, and the claim follows, unbolded."""
    from matplotlib.figure import Figure

    from wsemoe.report.html.figures import caption as html_caption

    fig = claims.caption(Figure(), "Tiling raises throughput for every design", "no gain for k = 8: the claim "
                         "does not hold there.")
    text = claims.caption_of(fig)
    assert text == ("no gain for k = 8: the claim does not hold there. Claim tested: Tiling raises throughput for "
                    "every design.")
    html = html_caption("speedup_vs_G", fig)
    assert "<b>" not in html and html.index("no gain") < html.index("Claim tested")
    assert "Claim tested" not in html_caption("speedup_vs_G", fig, claim_shown=True)


def test_serving_figures_name_the_model_of_a_one_model_sweep():
    """A sweep of one model has no model column: its panels and heat map take the model section's name, not the
    sweep's (nor nothing)."""
    from wsemoe.report.figures import fig_serving

    view = ResultsView("sweep-name", {"axes": ["workload.B"], "objectives": {}}, pd.DataFrame({"workload.B": [1]}),
                       pd.DataFrame(), None, {"model": {"name": "qwen3-30b-a3b"}})
    assert fig_serving._model_name(view, {"workload.B": 1}) == "qwen3-30b-a3b"
    assert fig_serving._model_name(view, {"workload.B": 1, "model": "deepseek-v3"}) == "deepseek-v3"


def test_series_cues_differ_for_the_first_64_series():
    """Colour and marker together tell 64 series apart: series 0 and 8 (one turn of the 8-colour palette) differ."""
    from wsemoe.report.figures.style import cue

    pairs = {(cue(i)["color"], cue(i)["marker"]) for i in range(64)}
    assert len(pairs) == 64 and cue(0) != cue(8)


def test_serving_wafers_says_which_lines_lie_under_another():
    """Per-user speed never rises with B, so small batches often run exactly as fast as a larger one and their
    lines vanish under it: the figure says which, and where."""
    from wsemoe.report.figures import fig_serving

    best = pd.DataFrame({"workload.B": [1, 1, 4, 4, 16, 16, 16], "wafers": [2, 4, 2, 4, 2, 4, 8],
                         "tokens_per_s_per_user": [10.0, 12.0, 10.0, 12.0, 10.0, 11.0, 9.0]})
    assert fig_serving.covered(best, [1, 4, 16]) == [(1, 4)]   # B 16 differs at 4 wafers; B 4 lies on B 1
    same = best.assign(tokens_per_s_per_user=[10.0, 12.0, 10.0, 12.0, 10.0, 12.0, 9.0])
    assert fig_serving.covered(same, [1, 4, 16]) == [(1, 16), (4, 16)]   # the last-drawn line covers both
    text = fig_serving._hidden_text({16: {"m": [1, 4]}, 4: {"n": [1]}})
    assert text == "; equal speeds: B 1, B 4 lie under B 16 (m); B 1 lies under B 4 (n)"


def test_a_figure_title_wraps_inside_the_figure():
    """The subtitle of a multi-panel figure is set in the suptitle's type: wrapped for a smaller type, it ran
    off both edges of the figure."""
    from matplotlib.figure import Figure

    from wsemoe.report.figures.style import DOUBLE, heading

    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig = Figure(figsize=(DOUBLE[0], 4.3), layout="constrained")
    canvas = FigureCanvasAgg(fig)
    fig.subplots(1, 3)
    heading(fig, "a title", "word " * 80)
    canvas.draw()
    box = fig._suptitle.get_window_extent(canvas.get_renderer())
    assert box.x0 >= 0 and box.x1 <= fig.bbox.width


def test_a_share_that_rounds_to_zero_reads_below_one_percent():
    """The roofline caption said 'MoE 0% (weight path)' of a stage at 0.4% of its roof."""
    from wsemoe.report.figures.style import share_text

    assert [share_text(x) for x in (0.0, 0.004, 0.005, 0.006, 0.06, 1.0)] == ["0%", "<1%", "<1%", "1%", "6%", "100%"]


def test_a_gain_of_a_few_hundredths_of_a_percent_is_no_gain():
    """bta_topk_pe's verdict counted 1.000015x as a design that gains from G > 1 (9 of 12 'gain', six of them by
    under 0.07%); a gain within 0.5% of 1 reads 1.00x, even, as the readings' tables call it."""
    import numpy as np

    from wsemoe.report.figures.fig_bta import _g_verdict

    text = _g_verdict([("k = 8", np.array([1.0, 1.000015])), ("k = 1", np.array([1.0, 1.06]))], [1, 2])
    assert "k = 1: 1.06× at G = 2" in text and "no gain (within 0.5% of 1) for k = 8" in text, text


def test_the_speedup_verdict_names_the_best_point_the_other_figures_name():
    """G 3 and G 31 at B 31 and 3 tie on G·B: speedup_vs_G named the smallest G (3), memory_breakdown and
    throughput_vs_sparsity the point best_rows picks (G 31). The verdict names the one best_rows picks."""
    import numpy as np

    from wsemoe.report.figures.fig_bta import _g_verdict

    y = np.array([1.0, 1.06, 1.06])
    assert "1.06× at G = 3." in _g_verdict([("", y)], [1, 3, 31]) + "."
    assert "1.06× at G = 31" in _g_verdict([("", y)], [1, 3, 31], tops=[2])


def test_crossover_labels_at_the_foot_sit_on_no_line():
    """moentwine_vs_nvl72: the crossing '70.2' was written at the foot of the axes, over DGX's MoE-block ratio
    running there (0.17×). The axis now reaches low enough that no line passes through a crossing label."""
    from wsemoe.report.figures import fig_versus

    tau = [1, 2, 4, 8, 16, 32, 64, 128, 256]
    base = pd.DataFrame({"hardware": "gpu", "workload.tokens_per_device": tau, "feasible": True,
                         "per_device_tokens_per_s": 100.0, "per_device_moe_block_tokens_per_s": 100.0,
                         "moe_hbm_s": 2.0, "moe_compute_s": 1.0})
    wsc = base.assign(hardware="wsc", per_device_tokens_per_s=[90, 101, 105, 110, 115, 110, 102, 97, 80],
                      per_device_moe_block_tokens_per_s=[85, 84, 82, 80, 78, 70, 60, 70, 65])
    dgx = base.assign(hardware="dgx", per_device_tokens_per_s=[95, 99, 95, 88, 75, 55, 50, 52, 35],
                      per_device_moe_block_tokens_per_s=[90, 80, 70, 55, 40, 27, 18, 17, 20])
    view = _view(pd.concat([wsc, dgx, base], ignore_index=True),
                 {"baseline": {"hardware": "gpu"}, "candidate": {"hardware": "wsc"}})
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig = fig_versus.crossover(view)
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    ax = fig.axes[0]
    labels = [t for t in ax.texts if t.get_text().strip().replace(".", "").isdigit()]
    assert len(labels) == 2
    lines = [ln for ln in ax.get_lines() if len(ln.get_xdata()) > 2]
    renderer = canvas.get_renderer()
    for t in labels:
        box = t.get_window_extent(renderer)
        for ln in lines:
            assert not ln.get_path().transformed(ln.get_transform()).intersects_bbox(box, filled=False), t.get_text()


def test_a_verdict_of_no_gain_alone_starts_a_sentence():
    """quickstart's speedup caption began 'no gain (within 0.5% of 1) for E = 32 ...': lower case, the first word
    of the figure's caption in the report and in plots/speedup_vs_G.txt."""
    import numpy as np

    from wsemoe.report.figures.fig_bta import _g_verdict

    text = _g_verdict([("E = 32", np.array([1.0, 1.0])), ("E = 128", np.array([1.0, 1.0]))], [1, 2])
    assert text.startswith("No gain (within 0.5% of 1) for E = 32"), text
