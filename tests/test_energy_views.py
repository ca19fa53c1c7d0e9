"""Energy in the views: the frontier figure's fronts come from the one Pareto definition and its caption says
where the claim holds and where not; the split figure adds up; comparisons carry the energy of the points they
compare."""

from __future__ import annotations

import pandas as pd

from wsemoe.report.figures import fig_energy
from wsemoe.report.figures.claims import finding_of
from wsemoe.report.figures.view import ResultsView
from wsemoe.sweep.compare import comparison_table

TIERS = {f"energy_{t}_per_token_j": 0.0 for t in ("compute", "sram", "fabric", "hbm", "network", "static")}


def _rows():
    """Model m: a wafer (cs3) at 500 and 1,000 tokens/s per user for 2 and 20 J; a GPU (nvl72) at 100 and 200 for
    0.1 and 0.5 J, and one dominated GPU point (150 tokens/s at 1 J)."""
    pts = [("cs3", 1, 500.0, 2.0), ("cs3", 4, 1000.0, 20.0), ("nvl72", 1, 100.0, 0.1), ("nvl72", 4, 200.0, 0.5),
           ("nvl72", 16, 150.0, 1.0)]
    rows = [{"model": "m", "hardware": hw, "workload.B": b, "tokens_per_s_per_user": s, "energy_per_token_j": e,
             "feasible": True, **TIERS, "energy_static_per_token_j": 0.75 * e, "energy_compute_per_token_j": 0.25 * e}
            for hw, b, s, e in pts]
    return pd.DataFrame(rows)


def _view(points):
    axes = ["model", "hardware", "workload.B"]
    return ResultsView("v", {"axes": axes, "objectives": {}}, points, points.iloc[:0], None, {})


def test_frontier_verdict_reads_the_fronts():
    """Wafers reach 1,000 tokens/s per user (GPUs 200) at 20 J/token, dearer than the GPUs' 0.1 J: the claim holds."""
    view = _view(_rows())
    rows, _ = fig_energy._rows(view)
    fig = fig_energy.frontier(view, rows, "")
    # it says what it compares (the wafers' fastest point, the GPUs' cheapest), not 'pay in energy at every slice',
    # which a panel where the wafers' front lies below the GPUs' at a shared speed contradicted
    assert finding_of(fig) == ("Wafers reach speeds GPUs do not, their fastest point at more J/token than the "
                               "GPUs' cheapest at model m (wafers up to 1,000 tokens/s per user at 20 J/token, "
                               "GPUs up to 200 from 0.1 J/token).")


def test_the_dominated_point_is_off_the_front():
    from wsemoe.sweep.pareto import front_rows

    gpu = _rows()[lambda d: d["hardware"] == "nvl72"]
    front = gpu.iloc[front_rows(gpu, {"tokens_per_s_per_user": "max", "energy_per_token_j": "min"})]
    assert list(front["workload.B"]) == [1, 4]


def test_frontier_verdict_says_when_the_wafer_is_not_faster():
    rows = _rows()
    rows.loc[rows["hardware"] == "cs3", "tokens_per_s_per_user"] = 50.0
    view = _view(rows)
    fig = fig_energy.frontier(view, fig_energy._rows(view)[0], "")
    assert "the data do not bear the claim out" in fig.wsemoe_caption


def test_split_names_the_largest_tier():
    view = _view(_rows())
    fig = fig_energy.split(view, fig_energy._rows(view)[0], "")
    assert finding_of(fig).endswith("Largest tier: cs3, m: static 75%; nvl72, m: static 75%.")


def test_split_bars_are_shares_on_a_linear_axis_each_reaching_100():
    """Stacked on a log axis a segment's height is not its share; the bars are shares, each stacked to 100%, with
    the lowest J/token of each system written above its bar."""
    view = _view(_rows())
    ax = fig_energy.split(view, fig_energy._rows(view)[0], "").axes[0]
    assert ax.get_yscale() == "linear"
    tops = {}
    for bar in ax.patches:
        x = round(bar.get_x() + bar.get_width() / 2)
        tops[x] = max(tops.get(x, 0.0), bar.get_y() + bar.get_height())
    assert tops and all(abs(t - 100.0) < 1e-9 for t in tops.values())
    assert [t.get_text() for t in ax.texts] == ["2 J", "0.1 J"]


def test_comparison_table_puts_the_energy_of_the_compared_points_beside_the_speedup():
    from types import SimpleNamespace as NS

    df = _rows().assign(infeasible_reason=None)
    cfg = NS(compare=NS(name="gpu", metric="tokens_per_s_per_user", also=[], over=["workload.B"],
                        baseline={"hardware": "nvl72"}, candidate={"hardware": "cs3"}),
             axis_names=lambda: ["model", "hardware", "workload.B"], factors=lambda: [])
    table = comparison_table(df, cfg)
    assert float(table["speedup_vs_gpu"].iloc[0]) == 1000.0 / 200.0
    assert float(table["energy_vs_gpu"].iloc[0]) == 20.0 / 0.5


def test_a_tie_on_the_metric_goes_to_the_point_with_less_energy_per_token():
    """cerebras_serving: B 1, 4 and 16 reach the same tokens/s per user (680.8) at 486, 122 and 31 J/token; the
    best point was B 1 (the first), while the report's frontier quoted 31 J. One rule now: the largest metric,
    then the least energy, then the first; everywhere a best point is quoted."""
    from types import SimpleNamespace as NS

    df = pd.DataFrame({"model": "m", "hardware": ["cs3"] * 3 + ["nvl72"], "workload.B": [1, 4, 16, 1],
                       "tokens_per_s_per_user": [680.8, 680.8, 680.8, 100.0], "energy_per_token_j": [486, 122, 31, 1.0],
                       "feasible": True, "infeasible_reason": None})
    cfg = NS(compare=NS(name="gpu", metric="tokens_per_s_per_user", also=[], over=["workload.B"],
                        baseline={"hardware": "nvl72"}, candidate={"hardware": "cs3"}),
             axis_names=lambda: ["model", "hardware", "workload.B"], factors=lambda: [])
    table = comparison_table(df, cfg)
    assert int(table["best_B"].iloc[0]) == 16 and float(table["best_energy_per_token_j"].iloc[0]) == 31
    view = _view(df.assign(**{k: 0.0 for k in TIERS}))
    verdict = finding_of(fig_energy.frontier(view, fig_energy._rows(view)[0], ""))
    assert "680.8" not in verdict and "681 tokens/s per user at 31 J/token" in verdict, verdict


def test_split_legend_names_the_tiers_as_the_docs_do():
    """The legend read 'sram' and 'hbm' (the column names) where captions and docs/energy.md say SRAM and HBM."""
    view = _view(_rows())
    fig = fig_energy.split(view, fig_energy._rows(view)[0], "")
    names = {t.get_text() for t in fig.legends[0].get_texts()} if fig.legends else \
        set(fig.axes[0].get_legend_handles_labels()[1])
    assert {"SRAM", "HBM", "compute", "static"} <= names and not {"sram", "hbm"} & names
