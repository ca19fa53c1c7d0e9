"""Pareto-front figure: feasible points coloured by the design choice that differs (model, hardware, mapping,
balancer, ...), infeasible ones in grey, the fronts of pareto.csv (one per group of the sweep's front groups:
each hardware, model and scenario by default; a panel per scenario), the memory capacity. Huge clouds are sampled and huge fronts drawn as a
line, and the figure says so. The title states the best value of the first objective and the least of the other
that comes within 1% of it."""

from __future__ import annotations

import textwrap
from collections.abc import Iterator

import numpy as np
import pandas as pd
from matplotlib import ticker
from matplotlib.figure import Figure

from wsemoe.report.figures.claims import caption, listing
from wsemoe.config.schema import SCENARIO_AXES
from wsemoe.report.figures.style import (BETTER, DOUBLE, LINESTYLES, MARKERS, PALETTE, SINGLE, SUB_SIZE, amount,
                                         group_label, heading, label, name, outside_legend, plt_size, scale, single,
                                         style_axis)
from wsemoe.report.figures.view import ResultsView
from wsemoe.sweep.compare import best_rows
from wsemoe.sweep.columns import describe
from wsemoe.wording import count

STEMS = ("pareto",)
CLAIMS = {"pareto": "The Pareto front: the feasible designs no other feasible design of the same front group "
                    "beats on every objective"}
COLUMNS = ("mem_capacity_node_bytes",)  # with the axes, feasibility and objectives every view holds
MAX_FRONT_LABELS = 6  # fronts named one by one in the legend; more share one entry
MAX_PANELS = 8  # scenarios drawn apart, PANEL_COLUMNS to a row; more share one panel (their fronts still apart)
PANEL_COLUMNS, PANEL_ROW_HEIGHT = 4, 3.2   # a row of panels more adds this many inches
COLOUR_FIRST = ("hardware", "model", "mapping.strategy", "balance.balancer", "workload.mode", "mapping.token_source")
MAX_CLOUD = 20_000   # points drawn per cloud; more are sampled evenly (the counts stay in the legend)
MAX_MARKED = 40      # front points drawn as rings; a longer front is a line with every n-th point ringed
SIZE = (SINGLE[0], 5.4)  # taller than one panel: the legend sits below the plot, not beside it
NEAR = 0.01   # the title's "within 1% of the best": a difference no reader of a plotted front can see
LEGEND_ROWS, LEGEND_ROW_IN = 6, 0.21  # legend rows SIZE holds; inches a row takes (8.5 pt text, markers ×1.3)


def figures(view: ResultsView) -> Iterator[tuple[str, Figure | None]]:
    """(stem, figure) pairs, each built when asked for; None where the data does not support the figure."""
    yield "pareto", pareto(view)


def _numeric(df: pd.DataFrame, col: str) -> bool:
    return col in df and pd.api.types.is_numeric_dtype(df[col]) and not pd.api.types.is_bool_dtype(df[col])


def pareto(r: ResultsView) -> Figure | None:
    """The first two objectives against each other (or the only one over the first numeric axis): a panel per
    scenario (context, expert skew, ...: SCENARIO_AXES among the front groups) when there are a few, on shared
    scales, so the fronts a reader compares in one panel serve the same workload."""
    objs = [c for c in r.objectives if _numeric(r.points, c)]
    numeric_axes = [a for a in r.axes if _numeric(r.points, a)]
    if not objs or r.feasible.empty or (len(objs) == 1 and not numeric_axes):
        return None
    xcol, ycol = (objs[0], objs[1]) if len(objs) > 1 else (numeric_axes[0], objs[0])
    (fx, _), (fy, _) = scale(xcol, r.feasible[xcol]), scale(ycol, r.feasible[ycol])
    colour, shape = _colour_axes(r)
    systems = [a for a in r.front_groups if r.pareto[a].nunique() > 1]
    facets = [a for a in systems if a in SCENARIO_AXES]
    panels = sorted(r.points[facets].drop_duplicates().itertuples(index=False, name=None)) if facets else [()]
    if len(panels) > MAX_PANELS:   # too many to draw apart: one panel, the fronts still one per scenario
        facets, panels = [], [()]
    in_panel = [a for a in systems if a not in facets]
    feas, infeasible = r.feasible, r.infeasible
    drawn = f"{len(r.points):,} points, {len(feas):,} feasible"
    how = (f"colour: {name(colour)}" if colour else "") + (f", marker: {name(shape)}" if shape else "")
    fronts = (f"one front per {' and '.join(name(a) for a in systems)}" if systems else "one front over all points") + \
        (f", a panel per {' and '.join(name(a) for a in facets)}" if facets else "") + \
        ("; rings: front rows (exact ties drawn once)" if "ties" in r.pareto and (r.pareto["ties"] > 1).any() else "")
    title = _headline(r.pareto, systems, objs[0], ycol if objs[0] == xcol else xcol, r.objectives)
    subtitle = "; ".join(p for p in (drawn, how, fronts) if p)
    cols = min(len(panels), PANEL_COLUMNS)
    rows = -(-len(panels) // cols)
    if facets:
        fig = Figure(figsize=(DOUBLE[0], SIZE[1] + (rows - 1) * PANEL_ROW_HEIGHT), layout="constrained")
        grid = fig.subplots(rows, cols, sharex=True, sharey=True, squeeze=False)
        for ax in grid.flat[len(panels):]:
            ax.remove()   # a row the panels do not fill
        axes = list(grid.flat[:len(panels)])
        heading(fig, f"{r.name}: {title}", subtitle)
    else:
        fig, ax = single(f"{r.name}: {title}", height=SIZE[1], subtitle=subtitle)
        axes = [ax]
    colours = {v: PALETTE[i % len(PALETTE)] for i, v in enumerate(pd.unique(feas[colour]))} if colour else {None: PALETTE[0]}
    for i, (ax, key) in enumerate(zip(axes, panels)):
        here = (lambda df: df[(df[facets] == pd.Series(key, index=facets)).all(axis=1)]) if facets else (lambda df: df)
        bottom = i + cols >= len(panels)   # no panel below it: its x ticks show, and the middle one takes the label
        lims = _axes(ax, r, xcol, ycol, fx, fy, xlabel=i == min((rows - 1) * cols + (cols - 1) // 2, len(panels) - 1), ylabel=i % cols == 0)
        if not bottom:
            ax.tick_params(labelbottom=False)
        if facets:
            ax.set_title(_key_text(facets, key), fontsize=SUB_SIZE + 0.5)
        _draw_infeasible(ax, here, infeasible, xcol, ycol, fx, fy, lims)
        _draw_cloud(ax, r, here, feas, (colour, shape), colours, xcol, ycol, fx, fy)
        _draw_fronts(ax, here(r.pareto), feas, in_panel, (colour, shape), colours, xcol, ycol, fx, fy, len(panels) > 1)
    # Below the axes, off the data, and not eating the plot's width as a column on the right would; an entry drawn
    # in several panels once.
    entries: dict = {}
    for ax in axes:
        for handle, text in zip(*ax.get_legend_handles_labels()):
            entries.setdefault(text, handle)
    handles, labels = list(entries.values()), list(entries)
    legend = outside_legend(fig, handles, labels, most=2 if len(labels) > 3 else len(labels), markerscale=1.3,
                            frameon=False)
    # the figure grows by each legend row past LEGEND_ROWS: at a fixed height moentwine_vs_nvl72's 13 rows left the
    # plot 1.34 of 5.4 inches, its y label wrapped to four lines
    rows = -(-len(labels) // legend._ncols)
    # and by each title line past three: a title stating the finding wraps to four or five lines with long front
    # names (moentwine_vs_nvl72's 'deepseek-v3, wsc-b200-4x8x8'), and left that figure's plot 2.3 inches tall
    lines = axes[0].get_title().count("\n") + 1
    if facets:   # the suptitle holds the subtitle's lines too, wrapped as heading wraps them
        width = int(fig.get_figwidth() * 72 / (plt_size("figure.titlesize") * 0.56))
        lines = fig._suptitle.get_text().count("\n") + 1 - len(textwrap.wrap(subtitle, width))
    extra = max(0, lines - 3)
    fig.set_figheight(fig.get_figheight() + max(0, rows - LEGEND_ROWS) * LEGEND_ROW_IN
                      + extra * plt_size("axes.titlesize") * 1.3 / 72)
    return caption(fig, CLAIMS["pareto"], _verdict(r, systems, xcol, ycol))


def _draw_infeasible(ax, rows, infeasible: pd.DataFrame, xcol, ycol, fx, fy, lims) -> None:
    """This panel's share (`rows`: a filter) of the infeasible points' sample, in grey; the legend entry counts all
    of them (off-scale ones apart), the same in every panel."""
    if not len(infeasible):
        return
    ix, iy = infeasible[xcol] * fx, infeasible[ycol] * fy
    off = int((~(ix.between(*lims["x"]) & iy.between(*lims["y"]))).sum())
    sample = _sample(infeasible)
    note = f"infeasible ({len(infeasible):,}" + (f"; {off:,} off-scale" if off else "") + \
        (f"; {len(sample):,} drawn" if len(sample) < len(infeasible) else "") + ")"
    sample = rows(sample)
    ax.scatter(sample[xcol] * fx, sample[ycol] * fy, s=5, c="0.7", alpha=0.3, lw=0,
               rasterized=len(sample) > 1000, label=note)


def axis_label(r: ResultsView, col: str) -> str:
    """An objective's or axis's name, unit and direction."""
    return label(col, r.feasible[col]) + BETTER.get(r.objectives.get(col), "")


def _verdict(r: ResultsView, systems: list, xcol: str, ycol: str) -> str:
    """How many fronts, their sizes, and each front's best point on the first objective."""
    front = r.pareto
    if not len(front):
        return "No feasible point: there is no front."
    first = next(iter(r.objectives))
    best = []
    groups = list(front.groupby(systems, sort=False)) if systems else [((), front)]
    for key, sub in groups[:6]:
        key = key if isinstance(key, tuple) else (key,)
        top = best_rows(sub, [], first).iloc[0] if r.objectives[first] == "max" else sub.loc[sub[first].idxmin()]
        best.append(f"{_key_text(systems, key) if systems else 'all points'}: {count(len(sub), 'row')}, best "
                    f"{name(first)} {amount(first, top[first])} (point {top.name})")
    per = f"one per {listing([name(a) for a in systems])}" if systems else "one over all points"
    more = f"; {len(groups) - 6} more fronts in pareto.csv" if len(groups) > 6 else ""
    ties = int(front["ties"].sum()) if "ties" in front else len(front)
    return (f"{count(len(groups), 'front')}, {per}, {count(len(front), 'row')} for {count(ties, 'point')} (exact "
            "ties in one row): "
            + "; ".join(best) + more + ".")


def _headline(front: pd.DataFrame, systems: list, first: str, other: str, senses: dict) -> str:
    """The title's finding, from the fronts drawn: the best value of the first objective, and the least of the other
    column that comes within NEAR of it, on the front that gets there best and on the next ('throughput tops out
    at 74.7 k tokens/s (E = 32); within 1% of it, peak memory per node at best 0.034 GB, E = 128's 0.101 GB'), or,
    when no other front comes that near, the next front's own top. Not the best point's own cost: a front rising one column (quickstart's) buys its last 0.1% of
    throughput with 12× the memory, and the title would quote the 12×."""
    if not len(front):
        return "no feasible point: no front"
    if first not in front or other not in front:   # a front file without the columns drawn: say what is drawn
        return f"Pareto front of {name(first)} and {name(other)}"
    up = {c: senses.get(c, "max") == "max" for c in (first, other)}
    x = front[first].to_numpy(dtype=float)
    best = np.nanmax(x) if up[first] else np.nanmin(x)
    near = front[(x >= best * (1 - NEAR)) if up[first] else (x <= best * (1 + NEAR))]
    cheap = near.sort_values(other, ascending=not up[other], kind="stable")
    cheap = cheap.drop_duplicates(systems) if systems else cheap.iloc[:1]   # each front's cheapest, cheapest first

    def who(row) -> str:   # 'E = 128' kept on one line when the title wraps (it read 'E =' / '128's')
        return _key_text(systems, tuple(row[systems])).replace(" = ", "\u00a0=\u00a0") if systems else ""

    top = front.iloc[int(np.nanargmax(x) if up[first] else np.nanargmin(x))]
    text = f"{name(first)} tops out at {amount(first, best)}" + (f" ({who(top)})" if systems else "")
    c = cheap.iloc[0]
    text += f"; within {NEAR:.0%} of it, {name(other)} at best {amount(other, c[other])}" + \
        (f" ({who(c)})" if systems and who(c) != who(top) else "")
    if len(cheap) > 1:   # another front comes as near: its best there
        text += f", {who(cheap.iloc[1])}'s {amount(other, cheap.iloc[1][other])}"
    elif systems and front[systems].drop_duplicates().shape[0] > 1:   # none does: the next front's own top
        rest = front[~front[systems].apply(tuple, axis=1).isin([tuple(top[systems])])]
        nxt = rest.sort_values(first, ascending=not up[first], kind="stable").iloc[0]
        text += f"; the next front's top: {amount(first, nxt[first])} ({who(nxt)})"
    return text


def _axes(ax, r: ResultsView, xcol: str, ycol: str, fx: float, fy: float, xlabel: bool = True,
          ylabel: bool = True) -> dict:
    """Limits that fit every feasible point (and the capacity line: the same in every panel), labels with names,
    units and direction (panels share their scales: the bottom row's middle one takes the x label, each row's first
    the y label; a figure's own x label would sit below the legend).

    Infeasible points can need 100× the memory and would squash the region that matters into a corner;
    off-scale ones are counted in the legend instead."""
    lims = {}
    for which, col, f in (("x", xcol, fx), ("y", ycol, fy)):
        cap = _capacity(col, r.points)
        values = r.feasible[col].to_numpy(dtype=float) * f
        lims[which] = style_axis(ax, which, col, np.append(values, cap) if cap else values)
        axis = ax.xaxis if which == "x" else ax.yaxis
        if pd.api.types.is_integer_dtype(r.points[col]) and axis.get_scale() == "linear":  # no 1.2 B ticks
            axis.set_major_locator(ticker.MaxNLocator(integer=True))
        if cap:
            (ax.axvline if which == "x" else ax.axhline)(cap, ls="--", lw=1, color="0.3",
                                                          label=f"capacity per node ({cap:.3g} GB)")
        if (xlabel if which == "x" else ylabel):
            getattr(ax, f"set_{which}label")(axis_label(r, col))
    return lims


def _colour_axes(r: ResultsView) -> tuple[str | None, str | None]:
    """(axis coloured, axis shown by marker): categorical design choices first, then a numeric axis with
    few values (E, top-k); None when nothing differs or too many values would share the palette."""
    few = [a for a in r.varying if r.points[a].nunique() <= len(PALETTE)]
    ranked = list(dict.fromkeys([*(a for a in COLOUR_FIRST if a in few), *(a for a in few if not _numeric(r.points, a)),
                                 *few]))
    colour = ranked[0] if ranked else None
    shape = next((a for a in ranked[1:] if not _numeric(r.points, a)
                  and r.points[a].nunique() <= len(MARKERS)), None)
    return colour, shape


def _sample(df: pd.DataFrame) -> pd.DataFrame:
    """At most MAX_CLOUD rows, every n-th (deterministic: the same results draw the same figure)."""
    return df if len(df) <= MAX_CLOUD else df.iloc[:: -(-len(df) // MAX_CLOUD)]


def _draw_cloud(ax, r, rows, feas, cues, colours, xcol, ycol, fx, fy) -> None:
    """This panel's share (`rows`: a filter) of the feasible points, one colour per value of the colour axis
    (marker per value of the marker axis); each legend entry counts all of that design's points."""
    colour, shape = cues
    groups = feas.groupby([c for c in (colour, shape) if c], sort=False) if colour else [((), feas)]
    shapes = {v: MARKERS[i % len(MARKERS)] for i, v in enumerate(pd.unique(feas[shape]))} if shape else {}
    for key, sub in groups:
        key = key if isinstance(key, tuple) else (key,)
        sample = _sample(sub)
        text = ", ".join(group_label([c], v) if _numeric(r.points, c) else str(v)
                         for c, v in zip([c for c in (colour, shape) if c], key)) or "feasible"
        n = f"{len(sub):,}" + (f"; {len(sample):,} drawn" if len(sample) < len(sub) else "")
        sample = rows(sample)
        ax.scatter(sample[xcol] * fx, sample[ycol] * fy, s=18, color=colours[key[0] if colour else None], alpha=0.85,
                   lw=0, marker=shapes.get(key[-1], "o") if shape else "o", label=f"{text} ({n})",
                   rasterized=len(sample) > 1000, zorder=3)


def _draw_fronts(ax, front, feas, systems, cues, colours, xcol, ycol, fx, fy, panels: bool = False) -> None:
    """The fronts of pareto.csv in this panel (`front`), one per group: in its points' colour when the colour axis
    is one of the front groups, in the line style of its marker axis's value when that is one too (so each front
    reads as its points do, however many share the legend's one entry); long fronts as a line with every n-th
    point ringed. With `panels` the legend names a front without this panel's counts, so one entry serves all."""
    colour, shape = cues
    front = front if xcol in front and ycol in front else front.iloc[:0]
    fronts = list(front.groupby(systems, sort=False)) if systems else [((), front)]
    many = len(fronts) > MAX_FRONT_LABELS
    styled = shape in systems if shape else False
    styles = {v: LINESTYLES[i % len(LINESTYLES)] for i, v in enumerate(pd.unique(feas[shape]))} if styled else {}
    shared: dict = {}  # fronts drawn in one colour so far: each next one gets its own line style
    for i, (key, front) in enumerate(fronts):
        if not len(front):
            continue
        key = key if isinstance(key, tuple) else (key,)
        c = colours.get(key[systems.index(colour)], "black") if colour in systems else "black"
        ls = styles.get(key[systems.index(shape)], "-") if styled else LINESTYLES[shared.get(c, 0) % len(LINESTYLES)]
        shared[c] = shared.get(c, 0) + 1
        front = front.sort_values(xcol)
        x, y = front[xcol].to_numpy(dtype=float) * fx, front[ycol].to_numpy(dtype=float) * fy
        step = max(1, -(-len(front) // MAX_MARKED))
        ties = int(front["ties"].sum()) if "ties" in front else len(front)
        # named in the points' order (colour, then marker): 'wsc-b200-4x8x8, deepseek-v3 (1,608)' above
        # 'Pareto front of deepseek-v3, wsc-b200-4x8x8' named one design two ways in one legend
        first = [c for c in (colour, shape) if c in systems]
        order = [*first, *(c for c in systems if c not in first)]
        what = "Pareto front" + (f" of {_key_text(order, tuple(key[systems.index(c)] for c in order))}"
                                 if systems else "")
        if not panels:
            what += f" ({count(len(front), 'row')}" + \
                (f" for {ties:,} points" if ties != len(front) else "") + \
                (f", every {_nth(step)} ringed)" if step > 1 else ")")
        if many:
            cue = ", ".join(f"{what}: {name(a)}" for what, a in (("colour", colour), ("line", shape if styled else None))
                            if a is not None and a in systems)
            what = (f"Pareto fronts ({'' if panels else f'{len(fronts)}, '}one per "
                    f"{' and '.join(name(a) for a in systems)}" + (f"; {cue}" if cue else "") + ")") if i == 0 else None
            if what:   # the shared entry in neutral black: no one front's colour stands for all of them
                ax.plot([], [], marker="o", ls="-", color="black", ms=7, mfc="none", mew=1.2, lw=1.0, label=what)
                what = None
        # The line on top of every ring and point: fronts climbing one column (bta_experts at its best MFU) were
        # hidden under the rings and halos of the fronts drawn after them, only the last one reading.
        ax.plot(x, y, ls=ls, color=c, lw=1.4 if step > 1 else 1.2, zorder=6)
        if c != "black":   # a ring in its points' colour is lost in their cloud: a thin black halo under it
            ax.plot(x[::step], y[::step], "o", color="black", ms=7, mfc="none", mew=1.2, zorder=4.5)
        # hollow rings, small: the design colour of each front point stays visible inside, the lines between them
        ax.plot(x[::step], y[::step], marker="o", ls=ls, color=c, ms=6, mfc="none", mew=1.1, zorder=5, label=what,
                lw=0 if step > 1 else 1.0)
        if step > 1 and (len(x) - 1) % step:
            ax.plot(x[-1:], y[-1:], "o", color=c, ms=6, mfc="none", mew=1.1, zorder=5)


def _key_text(cols: list, key: tuple) -> str:
    """'nvl72' for a preset, 'k = 8, F = 768' for numbers: one front's group."""
    return ", ".join(str(v) if c in ("hardware", "model") else group_label([c], (v,)) for c, v in zip(cols, key))


def _nth(n: int) -> str:
    """'2nd', '3rd', '11th'."""
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def _capacity(col: str, points: pd.DataFrame) -> float | None:
    """Per-node memory capacity in GB when `col` is a per-node memory column and the capacity is one value."""
    cap = points.get("mem_capacity_node_bytes")
    if not (col.startswith("mem_") and describe(col)[0] == "bytes") or cap is None or cap.nunique() != 1:
        return None
    return float(cap.iloc[0]) * 1e-9

