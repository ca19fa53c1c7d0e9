"""Link-load heat-map figures: per-link bytes of one all-reduce and one dispatch, and links hot in each; the title
names the phase with the busiest link."""

from __future__ import annotations

import textwrap
from collections.abc import Iterator

import numpy as np
import pandas as pd
from matplotlib.colors import ListedColormap, Normalize
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from wsemoe.cost.fabric import mesh
from wsemoe.cost import structure
from wsemoe.report.figures.meshdraw import (HEAT, HOT_BOTH_C, IDLE_C, draw_ftd, draw_links, draw_nodes, draw_wafers,
                                            label_dies, mesh_axes)
from wsemoe.report.figures.claims import caption
from wsemoe.report.figures.style import DOUBLE, PHASE_C, PHASE_NAMES, heading, plt_size
from wsemoe.report.figures.view import ResultsView
from wsemoe.wording import number

MAX_TP = 3  # more TP sizes than this would flood the plots folder with near-identical maps
DYNAMIC = ("link_heatmap_*",)  # stems that carry a value: the orchestrator cleans them by pattern
STEMS = DYNAMIC
CLAIMS = {"link_heatmap_*": "Where each phase's traffic runs on the mesh under this mapping, and whether the "
                            "links hot in the all-reduce are also hot in the dispatch"}
COLUMNS = ("*_max_link_bytes",)
NEEDS_AXES = (("mapping.strategy",),)  # without it swept it draws nothing


def figures(view: ResultsView) -> Iterator[tuple[str, Figure]]:
    """(stem, figure) of each heat map the sweep supports, built when asked for (none without a mapping axis or
    the saved config); colour scales shared across strategies at one TP."""
    if "mapping.strategy" not in view.axes or not view.cfg or not view.has("dispatch_max_link_bytes"):
        return
    rows, _ = view.slice(keep=("mapping.strategy", "mapping.tp"))
    tps = sorted(pd.unique(rows["mapping.tp"])) if "mapping.tp" in rows else [None]
    if len(tps) > MAX_TP:  # smallest, middle and largest
        tps = [tps[0], tps[len(tps) // 2], tps[-1]]
    for tp in tps:
        at = rows if tp is None else rows[rows["mapping.tp"] == tp]
        firsts = (view.first_row(g) for _, g in at.groupby("mapping.strategy", sort=False))
        maps = [m for m in (link_loads(view, row) for row in firsts) if m is not None]
        vmax = max((float(v.max()) for m in maps for v in m["values"].values()), default=0.0)
        for m in maps:
            yield f"link_heatmap_{m['strategy']}_tp{m['tp']}", _heatmap_figure(view, m, vmax)


def link_heatmaps(view: ResultsView) -> dict:
    """{stem: figure} of every heat map (`figures`, all built)."""
    return dict(figures(view))


def link_loads(view: ResultsView, row: dict) -> dict | None:
    """Per-link bytes of one all-reduce and one dispatch at a point (unit loads × the point's bytes)."""
    s = view.build(row)
    if s.phases["dispatch"].loads is None:  # a switch has no links to draw
        return None
    values = {}
    for phase in ("allreduce", "dispatch"):
        values[phase] = s.phases[phase].loads.all_links() * phase_scale(s, row, phase)
    return {"row": row, "structure": s, "values": values, "strategy": s.placement.strategy, "tp": s.placement.tp}


def phase_scale(s: structure.Structure, row: dict, phase: str) -> float:
    """Bytes per unit of a phase at a point, recovered from its columns (no cost formula repeated). A dispatch's
    busiest-link bytes are a step's expected maximum over its routing, above the expected loads drawn here
    (comm.CommModel._links), so its scale comes from the bytes it moves, once a layer: its hop and crossing bytes
    over its unit loads' total; another phase's from its busiest-link bytes."""
    moved = row.get(f"{phase}_hop_bytes"), row.get(f"{phase}_cross_bytes")
    total = s.phases[phase].loads.total() if s.phases[phase].loads is not None else 0.0
    if phase in ("dispatch", "combine") and None not in moved and total > 0:
        return (float(moved[0]) + float(moved[1])) / float(total)
    unit = s.phases[phase].max_link
    return float(row[f"{phase}_max_link_bytes"]) / unit if unit > 0 else 0.0


def _byte_unit(vmax: float) -> tuple[float, str]:
    for factor, unit in ((1e9, "GB"), (1e6, "MB"), (1e3, "kB")):
        if vmax >= factor:
            return factor, unit
    return 1.0, "bytes"


def _heatmap_figure(view: ResultsView, m: dict, vmax: float) -> Figure:
    s, vals, row = m["structure"], m["values"], m["row"]
    pl = s.placement
    factor, unit = _byte_unit(vmax)
    # Loaded links map onto the heat colours from just above zero; exactly idle links fall 'under' (grey).
    norm = Normalize(vmin=vmax / factor * 1e-9, vmax=vmax / factor or 1.0)
    # A grid, not colorbar(ax=...): constrained layout misaligns equal-aspect panels that share a colourbar.
    fig = Figure(figsize=(DOUBLE[0], 5.0), layout="constrained")
    fig.get_layout_engine().set(h_pad=0.06)  # air between the figure title and the two-line panel titles
    grid = fig.add_gridspec(2, 3, height_ratios=[1, 0.19])
    axes = [fig.add_subplot(grid[0, i]) for i in range(3)]
    idle = {p: mesh.idle_share(s.phases[p].loads) for p in vals}
    for ax, phase in zip(axes, vals):
        mesh_axes(ax, pl.rows, pl.cols)
        draw_wafers(ax, s.layout)
        draw_ftd(ax, pl)
        draw_nodes(ax, pl)
        q = draw_links(ax, pl.rows, pl.cols, vals[phase] / factor, HEAT, norm, f"links-{phase}")
        name = PHASE_NAMES[phase]
        if phase == "allreduce":   # under HER it also carries the cross-wafer all-gather (at TP 1, nothing else)
            name = "TP all-reduce + HER's\ncross-wafer all-gather" if pl.strategy == "her" else "all-reduce (attention TP)"
        ax.set_title(f"{name}\n{100 * idle[phase]:.0f}% of links idle")
    legend, bar = fig.add_subplot(grid[1, 2]), fig.add_subplot(grid[1, :2])
    legend.axis("off")
    bar.axis("off")
    _hot_panel(axes[2], s, legend)
    # A thin bar inside a blank cell: its ticks and label stay within the cell the layout reserved.
    cb = fig.colorbar(q, cax=bar.inset_axes([0.1, 0.72, 0.8, 0.2]), orientation="horizontal", extend="min")
    cb.set_label(f"bytes per link in one all-reduce / one dispatch ({unit}); grey: idle; "
                 "same scale for every mapping at this TP")
    _, said = view.slice(keep=("mapping.strategy", "mapping.tp"))
    on = f"{pl.rows}×{pl.cols} dies" if s.layout.wafers == (1, 1) else \
        f"{pl.rows}×{pl.cols} dies ({s.layout.wafers[0]}×{s.layout.wafers[1]} wafers)"
    busiest = {p: float(vals[p].max()) / factor for p in vals}
    title = f"{view.name}: {pl.strategy} mapping, TP {pl.tp} on {on}: {_headline(busiest, idle, unit)}"
    heading(fig, title, view.subtitle(", ".join(p for p in (view.context(row, skip=("mapping.strategy",)), said) if p)))
    # the figure grows by each line the title wraps to past one: a two-line finding took the panels' height and
    # moentwine_mapping's 8×8 die numbers fell under 6 pt
    size = plt_size("figure.titlesize")
    lines = len(textwrap.wrap(title, int(fig.get_figwidth() * 72 / (size * 0.56))))
    fig.set_figheight(fig.get_figheight() + max(0, lines - 1) * size * 1.3 / 72)
    fig.get_layout_engine().execute(fig)   # the canvases' laid-out size decides how their dies are labelled
    numbered = all([label_dies(ax, pl) for ax in axes])
    note = ("squares: dies, number = TP group" if numbered else "squares: dies, colour = TP group (colours repeat; "
            "group numbers would print under 6 pt at this mesh size, so rows and columns are numbered)") + \
        (", dashed: FTD tiles" if pl.ftd_shape else "") + \
        (", solid: wafer boundaries" if s.layout.wafers != (1, 1) else "")
    fig.supxlabel(note + "; each link drawn as two arrows, one per direction (XY routing); hot: load at or above "
                  "the 90th percentile of the phase's loaded links, ties included", fontsize=8.5, wrap=True)
    verdict = (f"{pl.strategy}, TP {pl.tp}: busiest link {busiest['allreduce']:.3g} {unit} in the all-reduce, "
               f"{busiest['dispatch']:.3g} {unit} in the dispatch; idle links {100 * idle['allreduce']:.0f}% and "
               f"{100 * idle['dispatch']:.0f}%; the two phases' hot links overlap {s.hot_overlap:.2f} (Jaccard: 0 "
               "disjoint, 1 the same links)")
    return caption(fig, CLAIMS["link_heatmap_*"], verdict + ".")


SHORT = {"allreduce": "all-reduce", "dispatch": "dispatch", "combine": "combine", "reduce": "reduction"}


def _headline(busiest: dict, idle: dict, unit: str) -> str:
    """The title's finding, from the panels drawn: the phase with the busiest link, its load against the other
    phase's busiest, and the share of links it leaves idle ('the dispatch's busiest link carries 4.2 MB, 3.0× the
    all-reduce's; 38% of links idle in it')."""
    if not busiest:
        return "bytes per link"
    top = max(busiest, key=busiest.get)
    text = f"the {SHORT.get(top, top)}'s busiest link carries {busiest[top]:.3g} {unit}"
    rest = {p: v for p, v in busiest.items() if p != top}
    if rest:
        nxt = max(rest, key=rest.get)
        text += f", {busiest[top] / rest[nxt]:.1f}× the {SHORT.get(nxt, nxt)}'s" if rest[nxt] > 0 else \
            f", the {SHORT.get(nxt, nxt)} none"
    return text + f"; {100 * idle[top]:.0f}% of links idle in it"


def _hot_panel(ax, s: structure.Structure, legend_ax) -> None:
    """Links hot (at or above the 90th percentile of loaded links, ties included) in one phase only, in both, or
    in neither."""
    pl, a, d = s.placement, s.phases["allreduce"].loads, s.phases["dispatch"].loads
    hot_a, hot_d = mesh.hot_links(a), mesh.hot_links(d)
    code = np.where(hot_a & hot_d, 3, np.where(hot_d, 2, np.where(hot_a, 1, 0)))
    colours = ListedColormap([IDLE_C, PHASE_C["allreduce"], PHASE_C["dispatch"], HOT_BOTH_C])
    mesh_axes(ax, pl.rows, pl.cols)
    draw_wafers(ax, s.layout)
    draw_ftd(ax, pl)
    draw_nodes(ax, pl)
    draw_links(ax, pl.rows, pl.cols, code, colours, Normalize(-0.5, 3.5), "hot-links")
    # ≥ the 90th percentile of each phase's loaded links, ties included: on a symmetric mapping many links tie
    # at the top load, so far more than a tenth can be hot (the counts are in the legend)
    ax.set_title(f"hot links (load ≥ the phase's p90)\noverlap (Jaccard) {s.hot_overlap:.2f}")   # the panel's width:
    # the whole rule ran off the figure; it is written out below the panels
    labels = [f"hot in all-reduce only ({number((code == 1).sum())})",
              f"hot in dispatch only ({number((code == 2).sum())})", f"hot in both ({number((code == 3).sum())})",
              "neither"]
    handles = [Line2D([], [], color=c, lw=3) for c in colours.colors[1:] + [IDLE_C]]
    legend_ax.legend(handles, labels, loc="center", ncol=2, frameon=False, fontsize=8, handlelength=1.5,
                     columnspacing=1.0)
