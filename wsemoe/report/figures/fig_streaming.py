"""Weight streaming at PE level (hardware.pe_fabric) beside the wafer as one group: what binds each point of the
B × G plane at every sparsity, and what the PE fabric's terms cost the best point."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pandas as pd
from matplotlib import ticker
from matplotlib.colors import BoundaryNorm, ListedColormap
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from wsemoe.report.figures.claims import caption
from wsemoe.report.figures.style import PALETTE, heading, log2_ticks, outside_legend, setting
from wsemoe.report.figures.view import ResultsView
from wsemoe.sweep.compare import best_rows
from wsemoe.wording import number

PE, DISPATCH, B, G = "hardware.pe_fabric", "mapping.pe_dispatch", "workload.B", "workload.G"
SPARSITY = ("model.num_experts_per_tok", "model.num_experts")
STEMS = ("pe_binding", "pe_cost")
CLAIMS = {"pe_binding": "Modelling the PE fabric changes what binds weight streaming: its own terms (the edge's I/O "
                        "channels, the expert regions' pipelines, the token all-to-all) bind points that the wafer as "
                        "one group calls compute- or I/O-bound",
          "pe_cost": "The PE fabric costs the best point throughput against the wafer as one group: the token "
                     "all-to-all and the expert regions' pipelines add to its MoE layer"}
COLUMNS = ("bound", "step_time_s", "moe_layer_time_s", "moe_dispatch_s", "moe_combine_s", "moe_compute_s",
           "moe_regions_s", "attention_compute_s", "tokens_per_s", "hardware.*", "mapping.*", "model.*", "workload.*")
NEEDS_AXES = ((PE,),)
# What a point's bound term says, coloured: the node-level terms, then the PE fabric's.
KINDS = {"compute": ("compute (node level)", PALETTE[0]), "weights": ("wafer I/O (weights streamed)", PALETTE[1]),
         "memory": ("node memory", PALETTE[6]), "launch": ("kernel launches", PALETTE[7]),
         "edge": ("fabric edge (I/O channels)", PALETTE[4]), "regions": ("expert regions (PE pipelines)", PALETTE[3]),
         "comm": ("PE all-to-all (dispatch + combine)", PALETTE[2]), "infeasible": ("infeasible", "0.85")}


def figures(view: ResultsView) -> Iterator[tuple[str, Figure | None]]:
    """(stem, figure) pairs, each built when asked for; None where the results hold no PE-level point beside a
    one-group one over B and G."""
    rows = _rows(view)
    if rows is None:
        yield from ((s, None) for s in STEMS)
        return
    yield "pe_binding", binding(view, *rows)
    yield "pe_cost", cost(view, *rows)


def _rows(view: ResultsView):
    """(points, sparsity column, the views in order), or None."""
    p = view.points
    if not view.has(PE, B, G, "bound") or p[PE].nunique() < 2 or p[B].nunique() < 2 or p[G].nunique() < 2:
        return None
    key = next((k for k in SPARSITY if k in p and p[k].nunique() > 1), None)
    p = p.assign(_view=[_view_name(on, d) for on, d in zip(p[PE], p[DISPATCH] if DISPATCH in p else [None] * len(p))])
    views = sorted(p["_view"].unique(), key=lambda v: (v != "wafer as one group", v))
    return p, key, views


def _view_name(on, dispatch) -> str:
    return f"PE level, {dispatch} dispatch" if bool(on) else "wafer as one group"


def _kind(bound: pd.Series, feasible: pd.Series) -> np.ndarray:
    """The category index of each point's bound (`layer:term` or `comm:phase`); infeasible points apart."""
    term = bound.astype(str).str.partition(":")[2].where(~bound.astype(str).str.startswith("comm:"), "comm")
    names = list(KINDS)
    idx = np.array([names.index(t) if t in KINDS else names.index("compute") for t in term])
    return np.where(feasible.astype(bool).to_numpy(), idx, names.index("infeasible"))


def _facets(p: pd.DataFrame, key):
    values = sorted(p[key].unique(), reverse=key == SPARSITY[0]) if key else [None]
    return [(v, p if key is None else p[p[key] == v]) for v in values]


def binding(view: ResultsView, p: pd.DataFrame, key, views) -> Figure:
    """One heat map of the bound term over B × G per view (rows) and sparsity (columns)."""
    facets = _facets(p, key)
    fig = Figure(figsize=(2.7 * len(facets) + 1.5, 2.2 * len(views) + 1.6), layout="constrained")
    axes = fig.subplots(len(views), len(facets), squeeze=False, sharex=True, sharey=True)
    cmap = ListedColormap([c for _, c in KINDS.values()])
    norm = BoundaryNorm(np.arange(len(KINDS) + 1) - 0.5, len(KINDS))
    used = set()
    for i, v in enumerate(views):
        for j, (s, sub) in enumerate(facets):
            ax, here = axes[i, j], sub[sub["_view"] == v]
            grid = here.assign(_k=_kind(here["bound"], here["feasible"])).pivot_table(
                index=G, columns=B, values="_k", aggfunc="first")
            used |= set(np.unique(grid.to_numpy()[np.isfinite(grid.to_numpy())]).astype(int))
            ax.pcolormesh(_edges(grid.columns), _edges(grid.index), grid.to_numpy(), cmap=cmap, norm=norm)
            ax.set_xscale("log", base=2)
            ax.set_yscale("log", base=2)
            log2_ticks(ax, _powers(grid.columns))
            ax.yaxis.set_major_locator(ticker.FixedLocator(_powers(grid.index)))
            ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda y, _: number(y)))
            ax.yaxis.set_minor_locator(ticker.NullLocator())
            ax.grid(False)
            if i == 0:
                ax.set_title(setting(key, s) if key else "")
            if j == 0:
                ax.set_ylabel(f"{v}\nG (attention tiles)", fontsize=8.5)
            if i == len(views) - 1:
                ax.set_xlabel("B (sequences per tile)")
    outside_legend(fig, [Patch(color=c, label=n) for k, (n, c) in enumerate(KINDS.values()) if k in used], most=4,
                   frameon=False)
    said, bound = _binding_claim(p)
    heading(fig, f"{view.name}: {said}",
            "colour: the bound column (the dominant layer's largest term); grey: infeasible (node memory or SRAM per PE)")
    verdict = said[:1].upper() + said[1:] + ("." if bound else ": no fabric term binds a point here, so the data "
                                              "do not bear the claim out.")
    return caption(fig, CLAIMS["pe_binding"], verdict)


def _binding_claim(p: pd.DataFrame) -> tuple[str, int]:
    """What the PE fabric's terms bind, counted over the feasible PE-level points; how many they bind."""
    on = p[p[PE].astype(bool) & p["feasible"].astype(bool)]
    kinds = pd.Series(_kind(on["bound"], on["feasible"]))
    names = list(KINDS)
    count = {k: int((kinds == names.index(k)).sum()) for k in ("edge", "regions", "comm")}
    return (f"at PE level the fabric edge binds {number(count['edge'])}, the expert regions "
            f"{number(count['regions'])} and the all-to-all {number(count['comm'])} of {number(len(on))} feasible "
            "points", sum(count.values()))


def _powers(values) -> list[float]:
    """Powers of two within the values' range: the ticks of a log2 axis."""
    lo, hi = float(np.min(values)), float(np.max(values))
    return [2.0 ** e for e in range(int(np.ceil(np.log2(lo))), int(np.floor(np.log2(hi))) + 1)]


def _edges(values) -> np.ndarray:
    """Cell edges around positive values on a log axis: geometric midpoints, half a step beyond the ends."""
    v = np.log(np.asarray(values, dtype=float))
    step = (v[1] - v[0]) if len(v) > 1 else 1.0
    mid = (v[1:] + v[:-1]) / 2
    return np.exp(np.concatenate([[v[0] - step / 2], mid, [v[-1] + (v[-1] - v[-2] if len(v) > 1 else 1.0) / 2]]))


def cost(view: ResultsView, p: pd.DataFrame, key, views) -> Figure:
    """Per sparsity: the best feasible point of each view (throughput), and how the best PE-level point's MoE
    layer splits into the node-level core, the expert regions' excess over it and the PE all-to-all."""
    facets, f = _facets(p, key), p[p["feasible"].astype(bool)]
    fig = Figure(figsize=(11.0, 4.6), layout="constrained")
    left, right = fig.subplots(1, 2)
    x = np.arange(len(facets))
    width = 0.8 / max(len(views), 1)
    base, rows = [], []
    for n, v in enumerate(views):
        best = [_best(f[(f["_view"] == v) & ((f[key] == s) if key else True)]) for s, _ in facets]
        tps = [b["tokens_per_s"] / 1e3 if b is not None else np.nan for b in best]
        base, rows = (tps, rows) if n == 0 else (base, rows + [tps])
        left.bar(x + (n - (len(views) - 1) / 2) * width, tps, width, color=PALETTE[n], label=v)
        if v == views[0]:
            continue
        for m, b in enumerate(best):
            if b is None:
                continue
            xs, bottom = x[m] + (n - (len(views) - 1) / 2) * width, 0.0
            for (part, share), c in zip(_split(b), PARTS_C):
                right.bar(xs, 100 * share, width * 0.9, bottom=bottom, color=c, label=part if m == 0 and n == 1 else None)
                bottom += 100 * share
            right.annotate(v.split(", ")[-1].removesuffix(" dispatch"), (xs, bottom), xytext=(0, 2),
                           textcoords="offset points", ha="center", va="bottom", fontsize=7, rotation=90)
    labels = [setting(key, s) if key else "" for s, _ in facets]
    for ax in (left, right):
        ax.set_xticks(x, labels)
        ax.set_xlabel("sparsity (" + (key.split(".")[-1] if key else "") + ")")
    left.set_ylabel("best throughput (k tokens/s)")
    right.set_ylabel("share of its MoE layer time (%)")
    right.set_ylim(0, right.get_ylim()[1] * 1.3)   # room for the views' names above the bars
    # One legend below both panels: inside them it covered bars (the throughput bars start at 0, lower left)
    (hl, ll), (hr, lr) = left.get_legend_handles_labels(), right.get_legend_handles_labels()
    outside_legend(fig, hl + hr, ll + [f"right: {t}" for t in lr], most=3, frameon=False)
    losses = [1 - b / a for row in rows for a, b in zip(base, row) if np.isfinite(a) and np.isfinite(b)]
    claim = (f"at PE level the best point loses {min(losses):.0%} to {max(losses):.0%} of its throughput"
             if losses else "what the PE fabric costs the best point")
    heading(fig, f"{view.name}: {claim}",
            "left: the best feasible point of each view (its own B, G); right: what the PE fabric adds to that "
            "PE-level point's MoE layer")
    verdict = (f"Against the best point of {views[0]} at each sparsity, the best PE-level point loses "
               f"{min(losses):.0%} to {max(losses):.0%} of its throughput" + ("." if min(losses) > 0 else
               ": not everywhere, so here the data do not bear the claim out.") if losses else
               "No sparsity has a feasible point in both views, so the claim is not tested.")
    return caption(fig, CLAIMS["pe_cost"], verdict)


def _best(rows: pd.DataFrame):
    return None if rows.empty else best_rows(rows, [], "tokens_per_s").iloc[0]


PARTS_C = (PALETTE[3], PALETTE[4])


def _split(b) -> list[tuple[str, float]]:
    """(part, share) of a point's MoE layer time the PE fabric adds: the token all-to-all, and the expert regions'
    pipelines beyond the node-level compute term."""
    total = float(b["moe_layer_time_s"])
    comm = float(b["moe_dispatch_s"] + b["moe_combine_s"])
    excess = max(float(b["moe_regions_s"] - b["moe_compute_s"]), 0.0)
    return [("PE all-to-all (dispatch + combine)", comm / total), ("expert regions beyond compute", excess / total)]
