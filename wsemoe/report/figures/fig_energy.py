"""Energy figures: the frontier of energy per token against tokens/s per user of every system side by side
(wafers against NVL72 and DGX; one front per system through the one Pareto definition, sweep/pareto.py), and
the energy split by tier of each system at its lowest energy per token (cost/energy, docs/energy.md). The frontier's
title names, per model, the system reaching the most tokens/s per user and the one reaching the fewest J/token."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import NullFormatter

from wsemoe.cost.energy.columns import TIERS
from wsemoe.report.figures.claims import caption, where
from wsemoe.report.figures.style import DOUBLE, PALETTE, cue, heading, label, outside_legend
from wsemoe.report.figures.view import ResultsView
from wsemoe.sweep.compare import best_rows
from wsemoe.sweep.pareto import front_rows

PER_USER, ENERGY = "tokens_per_s_per_user", "energy_per_token_j"
SPLIT = [f"energy_{t}_per_token_j" for t in TIERS]
# the legend's names: the tiers' column names read 'sram', 'hbm' beside 'SRAM' and 'HBM' in every caption and doc
TIER_NAMES = {"sram": "SRAM", "hbm": "HBM"}
STEMS = ("energy_frontier", "energy_split")
COLUMNS = (PER_USER, ENERGY, *SPLIT, "hardware.*", "workload.*", "mapping.*")
FREE = ("model", "hardware", "workload.B", "workload.tokens_per_device")   # never held: a front spans them
PANELS = 3
YLABEL = "energy per token (J/token)"
CLAIMS = {"energy_frontier": "Wafers buy tokens/s per user that GPU systems cannot reach, at a price in joules per "
                             "token: the frontier that decides serving hardware",
          "energy_split": "Where a token's energy goes differs by system: static power over the time a token takes "
                          "on wafers pipelined over many systems, memory reads and static power on GPUs"}


def figures(view: ResultsView) -> Iterator[tuple[str, Figure | None]]:
    """(stem, figure) pairs; None where the results have no energy per token or per-user speed."""
    rows, said = _rows(view)
    yield "energy_frontier", None if rows is None else frontier(view, rows, said)
    yield "energy_split", None if rows is None else split(view, rows, said)


def _rows(view: ResultsView) -> tuple[pd.DataFrame | None, str]:
    """Feasible points with energy and per-user speed, every axis a system is not tuned over held."""
    if not view.has(PER_USER, ENERGY) or "hardware" not in view.points:
        return None, ""
    keep = (*FREE, *view.tuned_axes(FREE), *_with_model(view))
    df, said = view.slice(keep)
    df = df[df["feasible"].to_numpy(dtype=bool)] if "feasible" in df else df
    ok = np.isfinite(df[ENERGY].to_numpy(dtype=float)) & np.isfinite(df[PER_USER].to_numpy(dtype=float))
    df = df[ok]
    return (df if len(df) else None), said


def _with_model(view: ResultsView) -> list[str]:
    """Axes zipped with the model (its weight formats): one value per model, so never held apart from it."""
    pts = view.points
    if "model" not in pts:
        return []
    return [a for a in view.axes if a != "model" and (pts.groupby("model", observed=True)[a].nunique() <= 1).all()]


def _models(rows: pd.DataFrame) -> list:
    return list(pd.unique(rows["model"]))[:PANELS] if "model" in rows else [None]


def frontier(view: ResultsView, rows: pd.DataFrame, said: str) -> Figure:
    """Per model: every system's points faint, its front (max tokens/s per user, min J/token) as a line."""
    models, systems = _models(rows), list(pd.unique(rows["hardware"]))
    fig = Figure(figsize=(DOUBLE[0], 4.6), layout="constrained")
    axes = fig.subplots(1, len(models), squeeze=False)[0]
    fronts = {}
    for ax, model in zip(axes, models):
        at = rows if model is None else rows[rows["model"] == model]
        for i, hw in enumerate(systems):
            pts = at[at["hardware"] == hw]
            if not len(pts):
                continue
            style = cue(i)
            colour, marker = style["color"], style["marker"]
            ax.scatter(pts[PER_USER], pts[ENERGY], s=9, color=colour, alpha=0.25, marker=marker, linewidths=0)
            front = pts.iloc[front_rows(pts, {PER_USER: "max", ENERGY: "min"})].sort_values(PER_USER)
            ax.step(front[PER_USER], front[ENERGY], where="pre", color=colour, marker=marker, markersize=4,
                    label=str(hw))
            fronts[(model, hw)] = front
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.xaxis.set_minor_formatter(NullFormatter())   # labelled minor ticks collide on a short log range
        ax.set_xlabel(label(PER_USER))
        ax.set_title(model or view.name)
        ax.grid(True, which="major", alpha=0.3)
    axes[0].set_ylabel(YLABEL)
    handles, labels = axes[0].get_legend_handles_labels()
    outside_legend(fig, handles, labels)
    heading(fig, f"{view.name}: {_frontier_headline(fronts, models)}",
            view.subtitle(said, view.tuned_axes(FREE), "lines: Pareto fronts; dots: feasible points"))
    return caption(fig, CLAIMS["energy_frontier"], _frontier_verdict(fronts, models))


def _frontier_headline(fronts: dict, models: list) -> str:
    """The title's finding, from the fronts drawn: per model, the system whose front reaches the most tokens/s per
    user and the one reaching the fewest J/token ('fastest per user: nvl72 in both models (143, 216 tokens/s);
    fewest J/token: wsc-b200-4x8x8 in both models (0.125, 0.107)'), each model's value in panel order."""
    def best(col: str, top: bool) -> list[tuple]:   # (model, system, value) per model
        out = []
        for model in models:
            here = {hw: f[col].max() if top else f[col].min() for (m, hw), f in fronts.items() if m == model and len(f)}
            if here:
                hw = (max if top else min)(here, key=here.get)
                out.append((model, hw, here[hw]))
        return out

    def said(wins: list[tuple], unit: str) -> str:
        if len({hw for _, hw, _ in wins}) == 1:
            hw, many = wins[0][1], len(wins) > 1
            where = f" in {'both' if len(wins) == 2 else f'all {len(wins)}'} models" if many else ""
            return f"{hw}{where} ({', '.join(f'{v:.3g}' for _, _, v in wins)}{unit})"
        return ", ".join(f"{hw} for {model} ({v:.3g}{unit})" for model, hw, v in wins)

    fast, cheap = best(PER_USER, True), best(ENERGY, False)
    if not fast:
        return "energy per token against tokens/s per user, one frontier per system"
    if len(fronts) == len(fast):   # one system per model: nothing to rank
        return "; ".join(f"{hw}{' (' + str(m) + ')' if len(fast) > 1 else ''} reaches {v:.3g} tokens/s per user, "
                         f"{j:.3g} J/token at its most frugal" for (m, hw, v), (_, _, j) in zip(fast, cheap))
    return f"fastest per user: {said(fast, ' tokens/s')}; fewest J/token: {said(cheap, ' J')}"


def _is_wafer(hw: str) -> bool:
    return not any(k in str(hw).lower() for k in ("nvl", "dgx", "a100", "h100", "h200", "b200-x", "gb"))


def _frontier_verdict(fronts: dict, models: list) -> str:
    """Per model: the fastest per-user speed of wafers and of GPUs, and what the wafers' fastest point costs."""
    labels, holds, values = [], [], []
    for model in models:
        wafer = [f for (m, hw), f in fronts.items() if m == model and _is_wafer(hw)]
        gpu = [f for (m, hw), f in fronts.items() if m == model and not _is_wafer(hw)]
        if not wafer or not gpu:
            continue
        w, g = pd.concat(wafer), pd.concat(gpu)
        wtop, gtop = best_rows(w, [], PER_USER).iloc[0], best_rows(g, [], PER_USER).iloc[0]
        faster = wtop[PER_USER] > gtop[PER_USER]
        dearer = wtop[ENERGY] > g[ENERGY].min()
        labels.append(f"model {model}")   # 'at every model', not 'at every setting'
        holds.append(bool(faster and dearer))
        values.append(f"wafers up to {wtop[PER_USER]:,.0f} tokens/s per user at {wtop[ENERGY]:.3g} J/token, GPUs up "
                      f"to {gtop[PER_USER]:,.0f} from {g[ENERGY].min():.3g} J/token")  # models parted by '; '
    if not labels:
        return "The results hold no wafer and GPU system side by side, so the claim is not tested."
    # what is compared: the wafers' fastest point against the GPUs' cheapest (where both reach a speed, the
    # wafers may well be the cheaper: the frontiers show it)
    text = where(labels, holds, "wafers reach speeds GPUs do not, their fastest point at more J/token than the GPUs' "
                 "cheapest", "the wafers' frontier does not trade speed for energy as claimed", values)
    return text[:1].upper() + text[1:] + "."   # a sentence, as the other captions are


def split(view: ResultsView, rows: pd.DataFrame, said: str) -> Figure:
    """Bars of shares stacked to 100%: each system's lowest-J/token point split by tier, its J/token written above
    it, one panel per model. Shares on a linear axis, since stacked on a log axis (the systems' totals differ
    by orders of magnitude) a segment's height is not its share: NVL72's static 65% drew smaller than its HBM's."""
    models, systems = _models(rows), list(pd.unique(rows["hardware"]))
    fig = Figure(figsize=(DOUBLE[0], 4.4), layout="constrained")
    axes = fig.subplots(1, len(models), squeeze=False)[0]
    shares = {}
    for ax, model in zip(axes, models):
        at = rows if model is None else rows[rows["model"] == model]
        best = at.loc[at.groupby("hardware", observed=True)[ENERGY].idxmin().dropna()]
        best = best.set_index("hardware").reindex([s for s in systems if s in set(best["hardware"])])
        bottom, total = np.zeros(len(best)), best[ENERGY].to_numpy(dtype=float)
        names = [str(s) for s in best.index]
        for i, (tier, col) in enumerate(zip(TIERS, SPLIT)):
            v = best[col].to_numpy(dtype=float) / total if col in best else np.zeros(len(best))
            ax.bar(names, 100 * v, bottom=100 * bottom, color=PALETTE[i % len(PALETTE)],
                   label=TIER_NAMES.get(tier, tier))
            bottom += v
        for x, t in enumerate(total):
            ax.annotate(f"{t:.3g} J", (x, 100 * bottom[x]), xytext=(0, 3), textcoords="offset points", ha="center",
                        va="bottom", fontsize=8)
        for hw, r in best.iterrows():
            shares[(model, hw)] = {t: float(r[c]) / float(r[ENERGY]) for t, c in zip(TIERS, SPLIT) if c in r}
        ax.set_ylim(0, 112)
        ax.set_title(model or view.name)
        ax.tick_params(axis="x", rotation=30)
    axes[0].set_ylabel("share of the energy per token (%); above: J/token")
    handles, labels = axes[0].get_legend_handles_labels()
    outside_legend(fig, handles, labels, most=6)
    heading(fig, f"{view.name}: {_split_headline(shares)}",
            view.subtitle(said, view.tuned_axes(FREE), "bars: each system at its lowest J/token, shares by tier stacked to 100%"))
    return caption(fig, CLAIMS["energy_split"], _split_verdict(shares))


def _split_headline(shares: dict) -> str:
    """The title's finding, from the bars drawn: the tier largest on most bars, on how many and its span there
    ('static power is the largest share of a token's energy on all 6 bars (44–84%)'), and the tiers largest on the
    rest."""
    tops = [max(s, key=s.get) for s in shares.values() if s]
    if not tops:
        return "where a token's energy goes, each system at its lowest J/token"
    tier = max(dict.fromkeys(tops), key=tops.count)   # the most frequent; a tie to the one drawn first
    v = [100 * s[tier] for s in shares.values() if s and max(s, key=s.get) == tier]
    on = f"all {len(tops)} bars" if len(v) == len(tops) > 1 else "its one bar" if len(tops) == 1 else \
        f"{len(v)} of {len(tops)} bars"
    span = f"{min(v):.0f}%" if f"{min(v):.0f}" == f"{max(v):.0f}" else f"{min(v):.0f}–{max(v):.0f}%"
    rest = sorted({t for t in tops if t != tier}, key=tops.index)
    said = {**TIER_NAMES, "static": "static power"}
    return (f"{said.get(tier, tier)} is the largest share of a token's energy on {on} ({span})"
            + (f"; elsewhere {', '.join(said.get(t, t) for t in rest)}" if rest else ""))


def _split_verdict(shares: dict) -> str:
    """Each system's largest tier and its share."""
    if not shares:
        return "No system has an energy split here."
    parts = []
    for (model, hw), s in shares.items():
        top = max(s, key=s.get)
        parts.append(f"{hw}{', ' + str(model) if model is not None else ''}: {top} {100 * s[top]:.0f}%")
    return "Largest tier: " + "; ".join(parts) + "."
