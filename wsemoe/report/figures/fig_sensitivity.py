"""Sensitivity figures: a tornado of Sobol indices (or Morris μ*) of the calibration unknowns.

Drawn from results/<name>/sensitivity/ (wsemoe sensitivity): for the comparison's speedup and the best
metric at the group where the speedup is largest (the sparsest point of a BTA sweep), one bar per
unknown, longest first: total index (solid, with its 95% confidence) and first-order index (hatched).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
from matplotlib.figure import Figure

from wsemoe.report.figures.claims import caption
from wsemoe.report.figures.style import BTA_C, DOUBLE, PALETTE, amount, heading, outside_legend
from wsemoe.report.figures.textfit import math_text
from wsemoe.report.figures.view import ResultsView

STEMS = ("sensitivity_tornado",)
CLAIMS = {"sensitivity_tornado": "Which calibration unknowns the result depends on, and how much of its variance "
                                 "each explains"}
COLUMNS = ()  # drawn from the sensitivity folder, not from the points


def figures(view: ResultsView) -> Iterator[tuple[str, Figure | None]]:
    """(stem, figure) pairs, each built when asked for; None without a sensitivity analysis of these results."""
    yield "sensitivity_tornado", tornado(view)


def _focus(s) -> tuple[list[str], str]:
    """Quantities to draw and the group to draw them at (largest nominal speedup, else the first group)."""
    bands, qs = s.bands, list(dict.fromkeys(s.bands["quantity"]))
    speed = [q for q in qs if q.startswith("speedup_vs_")]
    if speed:
        b = bands[bands["quantity"] == speed[0]]
        group = b.loc[b["nominal"].idxmax(), "group"]
        best = [q for q in qs if q.startswith("best_") and "tokens" in q][:1]
        return speed + best, group
    return qs[:2], bands["group"].iloc[0]


def tornado(r: ResultsView) -> Figure | None:
    s = r.sensitivity
    if s is None or not len(s.indices):
        return None
    quantities, group = _focus(s)
    sobol = s.meta["method"] == "sobol"
    # + 0.4 in for the legend below the panels
    fig = Figure(figsize=(DOUBLE[0], 1.6 + 0.55 * len(s.meta["unknowns"])), layout="constrained")
    heading(fig, f"{r.name}: {_headline(s, quantities, group)}",
            f"{s.meta['method']}, {s.meta['samples']:,} samples of the calibration unknowns; at {group}")
    axes = fig.subplots(1, len(quantities), squeeze=False)[0]
    for ax, q in zip(axes, quantities):
        d = s.indices[(s.indices["quantity"] == q) & (s.indices["group"] == group)]
        if not len(d):
            ax.set_axis_off()
            continue
        key = "ST" if sobol else "mu_star"
        d = d.sort_values(key)
        y = np.arange(len(d))
        if sobol:
            ax.barh(y, d["ST"], xerr=d["ST_conf"], color=BTA_C, alpha=0.85, label="total-order Sobol index $S_T$", capsize=2)
            ax.barh(y, d["S1"].clip(lower=0), color="none", edgecolor=PALETTE[1], hatch="///", lw=1.2,
                    label="first-order Sobol index $S_1$")
            ax.set_xlim(0, max(1.0, float((d["ST"] + d["ST_conf"]).max()) * 1.05))
            ax.set_xlabel("Sobol index (share of output variance)")
        else:
            ax.barh(y, d["mu_star"], xerr=d["mu_star_conf"], color=BTA_C, alpha=0.85, label="Morris μ*", capsize=2)
            ax.set_xlabel("Morris μ* (mean absolute elementary effect)")
        ax.set_yticks(y, [n.replace("_", " ") for n in d["parameter"]])
        b = s.bands[(s.bands["quantity"] == q) & (s.bands["group"] == group)].iloc[0]
        ax.set_title(f"{q}\nnominal {_amount(q, b['nominal'])}\n5–95%: {_amount(q, b['q05'])} – {_amount(q, b['q95'])}")
        ax.grid(axis="y", alpha=0)
    # below the panels: inside, at its lower right, it sat over the shortest bars and their error bars
    handles, labels = axes[0].get_legend_handles_labels()
    legend = outside_legend(fig, handles, labels, most=2, frameon=False)
    for text in legend.get_texts():   # our own mathtext ($S_T$), not a name's '$': rendered as math
        math_text(text)
    return caption(fig, CLAIMS["sensitivity_tornado"], _verdict(s, quantities, group))


def _headline(s, quantities: list, group: str) -> str:
    """The title's finding: which unknown the first quantity drawn (the speedup) depends on most, and by how much
    ('speedup_vs_uniform depends most on matmul_efficiency (total-order index 0.96)')."""
    key = "ST" if s.meta["method"] == "sobol" else "mu_star"
    d = s.indices[(s.indices["quantity"] == quantities[0]) & (s.indices["group"] == group)]
    if not len(d):
        return "what the result depends on"
    top = d.loc[d[key].idxmax()]
    what = "total-order index" if key == "ST" else "Morris μ*"
    return f"{quantities[0]} depends most on {top['parameter']} ({what} {top[key]:.2f})"


def _amount(quantity: str, value: float) -> str:
    """A sampled quantity's value with the unit of the column it is the best or baseline of."""
    return amount(quantity.removeprefix("sweep_best_").removeprefix("best_").removeprefix("baseline_"), value)


def _verdict(s, quantities: list, group: str) -> str:
    """The two unknowns with the largest index for each quantity drawn, and its 5–95% band."""
    key = "ST" if s.meta["method"] == "sobol" else "mu_star"
    parts = []
    for q in quantities:
        d = s.indices[(s.indices["quantity"] == q) & (s.indices["group"] == group)].sort_values(key, ascending=False)
        b = s.bands[(s.bands["quantity"] == q) & (s.bands["group"] == group)]
        if not len(d) or not len(b):
            continue
        top = ", ".join(f"{r['parameter']} {r[key]:.2f}" for _, r in d.head(2).iterrows())
        parts.append(f"{q} (5–95%: {_amount(q, b['q05'].iloc[0])} – {_amount(q, b['q95'].iloc[0])}) depends most on {top}")
    what = "total Sobol index" if key == "ST" else "Morris μ*"
    return f"At {group} ({what}): " + "; ".join(parts) + "." if parts else "No index to show."
