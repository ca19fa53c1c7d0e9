"""Figure titles lead with what the data show, computed from them (never a fixed phrase): the roofline's span of the
best designs' shares of their roofs, BTA's speedup over uniform batching and over G = 1, and the unknown the
sensitivity tornado's speedup depends on most (whose legend names its indices in mathtext, not as 'S_T')."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd

from wsemoe.report.figures import fig_bta, fig_roofline, fig_sensitivity, fig_serving, fig_versus
from wsemoe.report.figures.style import figure_bytes

NB = "\u00a0"   # the no-break space that keeps 'k = 1' on one line when a title wraps


def _flat(text: str) -> str:
    return " ".join(text.replace(NB, " ").split())


# ---------------------------------------------------------------- roofline

def test_the_roofline_title_states_the_span_of_the_best_designs_shares():
    """cerebras_serving's best designs: nvl72's attention at 8% of its roof, dgx-b200-x32's output head at 83%:
    the span is 8-83% and the nearest stage is dgx's output head; a share above 100% is counted."""
    said = [("nvl72", ("attention 8% (node-memory slope, weight-path-bound)", 0.08)),
            ("nvl72", ("MoE 13% (node-memory slope, weight-path-bound)", 0.13)),
            ("dgx-b200-x32", ("output head 83% (node-memory slope, weight-path-bound)", 0.83))]
    assert fig_roofline._headline(said) == ("the best designs' stages reach 8–83% of their roofs "
                                            "(highest: output head, dgx-b200-x32)")
    above = [*said, ("cs2", ("dense FFN 104% (compute roof, compute-bound)", 1.04))]
    assert fig_roofline._headline(above).endswith("(highest: dense FFN, cs2); 1 above it")


# ---------------------------------------------------------------- BTA

def test_the_sparsity_title_states_btas_largest_speedup_and_uniforms_fall():
    """Uniform batching 100k, 90k, 50k tokens/s at k = 8, 4, 1 against BTA's 100k throughout: BTA is 100/50 =
    2.00× faster at k = 1 and uniform batching falls 100/50 = 2.00×; flat data say BTA gains nothing."""
    x = np.array([8, 4, 1])
    cmp = pd.DataFrame({"best_tokens_per_s": [1e5, 1e5, 1e5], "baseline_tokens_per_s": [1e5, 9e4, 5e4]})
    assert _flat(fig_bta._sparsity_headline(cmp, "model.num_experts_per_tok", x)) == (
        "BTA 2.00× faster than uniform batching at k = 1; uniform falls 2.00× from k = 8 to 1")
    flat = pd.DataFrame({"best_tokens_per_s": [1e5, 1e5, 1e5], "baseline_tokens_per_s": [1e5, 1e5, 0.998e5]})
    assert _flat(fig_bta._sparsity_headline(flat, "model.num_experts_per_tok", x)) == (
        "BTA no faster than uniform batching at any k; uniform batching varies 1.002× (max/min)")


def test_the_speedup_title_names_the_best_g_its_gain_and_the_designs_that_gain_nothing():
    """k = 1 peaks at 1.30× at G = 2 (its best point's G); k = 8 never leaves 1 by more than 0.5%."""
    gs = np.array([1, 2, 4, 8])
    lines = [("k = 8", np.array([1.0, 1.001, 1.0, 1.0]), None, 8),
             ("k = 1", np.array([1.0, 1.3, 1.2, np.nan]), None, 4)]
    assert _flat(fig_bta._g_headline(lines, gs, [0, 1])) == (
        "batch tiling G = 2 is 1.30× faster than G = 1 at k = 1; 1 of 2 designs gain nothing")
    assert NB + "=" + NB in fig_bta._g_headline(lines, gs, [0, 1])   # 'k = 1' never parted by the wrap
    assert _flat(fig_bta._g_headline(lines[:1], gs, [0])) == (
        "batch tiling is no faster than G = 1 (within 0.5%) for any design")


# ---------------------------------------------------------------- memory

def test_the_memory_title_states_how_full_the_fullest_bar_is_and_which_stage_sets_the_peaks():
    """Three bars against 162 GB: attention 104 GB over MoE 103 (attention sets it), MoE 120 over attention 80 and
    MoE 150 over 90 (MoE sets two of three); the fullest, 150 / 162 = 93%."""
    from wsemoe.report.figures import fig_memory

    rows = [pd.Series({"mem_attn_peak_node_bytes": a, "mem_moe_peak_node_bytes": m, "mem_capacity_node_bytes": 162e9})
            for a, m in ((104e9, 103e9), (80e9, 120e9), (90e9, 150e9))]
    bars = [(f"#{i}", row, i) for i, row in enumerate(rows)]
    assert fig_memory._headline(bars) == ("the fullest point uses 93% of the node's memory; the MoE stage sets the "
                                          "peak at 2 of 3 bars")


# ---------------------------------------------------------------- serving and crossover

def test_the_serving_title_counts_the_lines_more_wafers_speed_up_and_the_largest_gain():
    """Model a at B 1: 100 tokens/s per user on 2 wafers, 161 on 16 (+61%); at B 4: 100 on 2, 90 on 16 (the fewest
    are fastest); model b at B 1: 150 on 19, 340 on 48 (+127%): 2 of 3 lines gain, most b's +127%."""
    rows = pd.DataFrame({"model": ["a", "a", "a", "a", "b", "b"], "workload.B": [1, 1, 4, 4, 1, 1],
                         "wafers": [2, 16, 2, 16, 19, 48], "tokens_per_s_per_user": [100, 161, 100, 90, 150, 340.5]})
    assert fig_serving._wafers_headline(rows, ["a", "b"]) == (
        "more wafers than the fewest raise tokens/s per user in 2 of 3 lines, at most +127% (b, B 1: 48 wafers against 19)")
    fewest = rows[(rows["model"] == "a") & (rows["workload.B"] == 4)]
    assert fig_serving._wafers_headline(fewest, ["a"]) == (
        "the fewest wafers that fit are fastest per user")


def test_the_crossover_title_says_where_the_candidates_moe_block_is_ahead_and_its_best_ratio():
    """The wafer's MoE block at 120, 110, 90 against the baseline's 100 at 1, 2, 4 tokens/device: ahead at 1-2,
    most 1.20× at 1, behind at 4."""
    pts = pd.DataFrame({"workload.tokens_per_device": [1, 2, 4] * 2, "hardware": ["w"] * 3 + ["g"] * 3,
                        "per_device_moe_block_tokens_per_s": [120, 110, 90, 100, 100, 100], "feasible": True})
    view = SimpleNamespace(feasible=pts, compare={"candidate": {"hardware": "w"}})
    assert fig_versus._headline(view, "g") == "w's MoE block ahead of g at 1–2 tokens/device (most 1.20× at 1), behind at 4"


# ---------------------------------------------------------------- sensitivity tornado

def _sensitivity() -> SimpleNamespace:
    """Sobol indices of two quantities at one group: io_bandwidth explains most of the speedup (S_T 0.70)."""
    rows = [("speedup_vs_uniform", "io_bandwidth", 0.70, 0.60), ("speedup_vs_uniform", "matmul_efficiency", 0.40, 0.20),
            ("best_tokens_per_s", "io_bandwidth", 0.10, 0.05), ("best_tokens_per_s", "matmul_efficiency", 0.90, 0.85)]
    indices = pd.DataFrame([{"quantity": q, "group": "k=1", "parameter": p, "ST": st, "ST_conf": 0.05, "S1": s1,
                             "S1_conf": 0.05} for q, p, st, s1 in rows])
    bands = pd.DataFrame([{"quantity": q, "group": "k=1", "nominal": n, "q05": lo, "q95": hi}
                          for q, n, lo, hi in (("speedup_vs_uniform", 1.27, 1.0, 1.4),
                                               ("best_tokens_per_s", 7.4e4, 4.8e4, 8e4))])
    meta = {"method": "sobol", "samples": 384, "unknowns": ["io_bandwidth", "matmul_efficiency"]}
    return SimpleNamespace(name="t", sensitivity=SimpleNamespace(indices=indices, bands=bands, meta=meta))


def test_the_tornado_title_names_the_unknown_the_speedup_depends_on_most():
    fig = fig_sensitivity.tornado(_sensitivity())
    assert _flat(fig._suptitle.get_text()).startswith(
        "t: speedup_vs_uniform depends most on io_bandwidth (total-order index 0.70)")


def test_the_tornado_legend_names_its_indices_in_mathtext_below_the_panels():
    """The legend read 'total index S_T' as literal text, inside the first panel over its shortest bars: drawn,
    it says 'total-order Sobol index $S_T$' rendered as math (the '$' not escaped, as a name's would be), and
    sits below the panels."""
    fig = fig_sensitivity.tornado(_sensitivity())
    figure_bytes(fig, "svg")   # where every other text is made literal
    assert all(ax.get_legend() is None for ax in fig.axes) and len(fig.legends) == 1
    texts = [t.get_text() for t in fig.legends[0].get_texts()]
    assert texts == ["total-order Sobol index $S_T$", "first-order Sobol index $S_1$"]


def test_a_long_figure_title_wraps_to_the_figure_width_keeping_its_own_line_breaks():
    """A title that states a finding runs longer than a name did: cerebras_serving's ran off both edges."""
    from matplotlib.figure import Figure

    from wsemoe.report.figures.style import heading

    fig = Figure(figsize=(7.0, 3.0))
    heading(fig, "finding " * 30 + "\nsecond line", "what is drawn")
    lines = fig._suptitle.get_text().split("\n")
    assert len(lines) >= 4 and lines[-2] == "second line" and lines[-1] == "what is drawn"
    assert max(map(len, lines)) <= int(7.0 * 72 / (fig._suptitle.get_fontsize() * 0.56))
