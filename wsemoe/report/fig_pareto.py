"""Pareto-front figure: feasible points per design, infeasible ones in grey, the front, the memory capacity."""

from __future__ import annotations

import pandas as pd
from matplotlib import ticker
from matplotlib.figure import Figure

from wsemoe.report.style import BETTER, NAMES, PALETTE, group_label, label, scale, single, style_axis
from wsemoe.report.view import ResultsView
from wsemoe.sweep.columns import describe


def figures(view: ResultsView) -> dict[str, Figure | None]:
    """{stem: figure}; None where the data does not support the figure."""
    return {"pareto": pareto(view)}


def pareto(r: ResultsView) -> Figure | None:
    """The first two objectives against each other (or the only one over the first numeric axis)."""
    objs = [c for c in r.objectives if c in r.points and pd.api.types.is_numeric_dtype(r.points[c])]
    numeric_axes = [a for a in r.axes if a in r.points and pd.api.types.is_numeric_dtype(r.points[a])]
    if not objs or r.feasible.empty or (len(objs) == 1 and not numeric_axes):
        return None
    xcol, ycol = (objs[0], objs[1]) if len(objs) > 1 else (numeric_axes[0], objs[0])
    (fx, _), (fy, _) = scale(xcol), scale(ycol)
    title = "Pareto front" if len(objs) > 1 else f"{NAMES.get(ycol, ycol)} over {NAMES.get(xcol, xcol)}"
    fig, ax = single(f"{r.name}: {title}")
    feas, infeasible = r.feasible, r.points.drop(r.feasible.index)
    # The view fits the feasible points (and the capacity line): infeasible points can need 100x the
    # memory and would squash the region that matters into a corner; off-scale ones are counted instead.
    lims = {}
    for which, col, f in (("x", xcol, fx), ("y", ycol, fy)):
        cap = _capacity(col, r.points)
        lims[which] = style_axis(ax, which, col, list(feas[col] * f) + ([cap] if cap else []))
        axis = ax.xaxis if which == "x" else ax.yaxis
        if pd.api.types.is_integer_dtype(r.points[col]) and axis.get_scale() == "linear":  # no 1.2 B ticks
            axis.set_major_locator(ticker.MaxNLocator(integer=True))
        if cap:
            (ax.axvline if which == "x" else ax.axhline)(cap, ls="--", lw=1, color="0.3",
                                                          label=f"capacity per node ({cap:.3g} GB)")
        getattr(ax, f"set_{which}label")(label(col) + BETTER.get(r.objectives.get(col), ""))
    if len(infeasible):
        ix, iy = infeasible[xcol] * fx, infeasible[ycol] * fy
        off = int((~(ix.between(*lims["x"]) & iy.between(*lims["y"]))).sum())
        note = f"infeasible ({len(infeasible):,}" + (f"; {off:,} off-scale)" if off else ")")
        ax.scatter(ix, iy, s=5, c="0.7", alpha=0.3, lw=0, rasterized=len(infeasible) > 1000, label=note)
    for i, (series, sub) in enumerate(_colour_groups(r, feas)):
        ax.scatter(sub[xcol] * fx, sub[ycol] * fy, s=18, color=PALETTE[i % len(PALETTE)], alpha=0.9, lw=0,
                   label=series, rasterized=len(sub) > 1000, zorder=3)
    front = r.pareto.sort_values(xcol) if xcol in r.pareto else r.pareto.iloc[:0]
    if len(front):  # hollow rings: the design colour of each front point stays visible inside
        ax.plot(front[xcol] * fx, front[ycol] * fy, "-o", color="black", lw=1, ms=7, mfc="none", mew=1.2,
                zorder=4, label="Pareto front")
    fig.legend(loc="outside right upper", markerscale=1.3, frameon=False)  # off the axes: never covers data
    return fig


def _colour_groups(r: ResultsView, df: pd.DataFrame):
    """One colour per design (e.g. per E) when there are few, else a single 'feasible' series."""
    keys = r.varying
    if keys and df.groupby(keys).ngroups <= len(PALETTE):
        return [(group_label(keys, k), sub) for k, sub in df.groupby(keys)]
    return [(f"feasible ({len(df):,})", df)]


def _capacity(col: str, points: pd.DataFrame) -> float | None:
    """Per-node memory capacity in GB when `col` is a per-node memory column and the capacity is one value."""
    cap = points.get("mem_capacity_node_bytes")
    if not (col.startswith("mem_") and describe(col)[0] == "bytes") or cap is None or cap.nunique() != 1:
        return None
    return float(cap.iloc[0]) * 1e-9
