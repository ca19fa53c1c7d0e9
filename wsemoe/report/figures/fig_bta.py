"""Batch-tiling (BTA) figures: BTA vs uniform batching across sparsity, and speedup over the tiling factor G."""

from __future__ import annotations

from collections.abc import Iterator

from fractions import Fraction

import numpy as np
import pandas as pd
from matplotlib import ticker, transforms
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from wsemoe.analysis.uncertainty.robustness import side
from wsemoe.report.figures.claims import caption, listing
from wsemoe.report.figures.style import (BTA_C, DOUBLE, MARKERS, NAMES, PALETTE, SYMBOLS, UNIFORM_C, group_label,
                                         heading, log2_ticks, outside_legend, setting, single)
from wsemoe.report.figures.view import OVER, ResultsView
from wsemoe.sweep.compare import best_rows
from wsemoe.wording import number

SPARSITY_KEYS = ("model.num_experts", "model.num_experts_per_tok")
STEMS = ("throughput_vs_sparsity", "speedup_vs_G")
MAX_NOTES = 4   # changes of B labelled along one line; past it, its first and last only
MAX_LINES = 8   # designs drawn each in its own colour; beyond, the best and the worst in colour, the rest in grey
CLAIMS = {"throughput_vs_sparsity": "Batch tiling (BTA) keeps throughput nearly flat as sparsity grows, while "
                                    "uniform batching loses throughput",
          "speedup_vs_G": "Tiling attention (G > 1) raises throughput over G = 1 for every design"}
FLAT = 1.2  # "nearly flat": max/min across sparsity at most this (the tolerance of `wsemoe validate`)
COLUMNS = ()  # the axes, feasibility and the comparison metric every view holds; the rest is comparison.csv


def figures(view: ResultsView) -> Iterator[tuple[str, Figure | None]]:
    """(stem, figure) pairs, each built when asked for; None where the data does not support the figure."""
    yield "throughput_vs_sparsity", sparsity(view)
    yield "speedup_vs_G", speedup_vs_g(view)


# ---------------------------------------------------------------- BTA vs uniform across sparsity

def sparsity(r: ResultsView) -> Figure | None:
    """MFU and throughput of the uniform baseline and the best BTA point, one point per sparsity."""
    cmp = r.comparison
    need = ("baseline_tokens_per_s", "best_tokens_per_s", "baseline_mfu", "best_mfu")
    if cmp is None or any(c not in cmp for c in need):
        return None
    key = next((k for k in SPARSITY_KEYS if k in cmp and cmp[k].nunique() > 1), None)
    if key is None or not cmp[key].is_unique:  # other varying keys would mix designs on one line
        return None
    topk = key == "model.num_experts_per_tok"
    cmp = cmp.sort_values(key, ascending=not topk)  # sparsity grows left to right
    x = cmp[key].to_numpy()
    fig = Figure(figsize=DOUBLE, layout="constrained")
    others = [c for c in cmp.columns if ("." in c or c in ("model", "hardware")) and c != key and cmp[c].nunique() == 1]
    fixed = ", ".join(setting(c, cmp[c].iloc[0]) for c in others if c != "model.moe_intermediate_size")
    heading(fig, f"{r.name}: {_sparsity_headline(cmp, key, x)}",
            r.subtitle(fixed, drawn="each point: the best feasible point of its sparsity (best G, B for BTA, "
                                    "best B at G = 1 for uniform)"))
    left, right = fig.subplots(1, 2)
    ticks, xlabel = _sparsity_ticks(r, key, x)
    banded = False
    for ax, col, f in ((left, "mfu", 1.0), (right, "tokens_per_s", 1.0)):
        top = np.nanmax(cmp[[f"baseline_{col}", f"best_{col}"]].to_numpy() * f)
        # uniform batching's squares are larger and hollow: where BTA equals it they ring BTA's dots, not hide
        # under them
        for which, style, color, name, mark in (("baseline", "s--", UNIFORM_C, "uniform batching (G = 1)",
                                                 {"ms": 11, "mfc": "none", "mew": 1.6}),
                                                ("best", "o-", BTA_C, "BTA (best G, B)", {"ms": 6})):
            band = r.band(f"{which}_{col}", key, x)
            if band is not None:  # 5–95% over the calibration unknowns (wsemoe sensitivity)
                ax.fill_between(x, band[0] * f, band[1] * f, color=color, alpha=0.12, lw=0)
                for edge in band:  # edges in the series' colour: overlapping bands stay readable
                    ax.plot(x, edge * f, ":", color=color, lw=1.0)
                top, banded = max(top, np.nanmax(band[1]) * f), True
            ax.plot(x, cmp[f"{which}_{col}"] * f, style, color=color, label=name, **mark)
        log2_ticks(ax, x, ticks)
        ax.set_xlim(x.min() / 1.4, x.max() * 1.4)  # room for the end points' annotations
        if topk:
            ax.invert_xaxis()
        ax.set_xlabel(xlabel)
        ax.set_ylim(0, 1.22 * top)
    left.set_ylabel(NAMES["mfu"])
    right.set_ylabel("throughput (tokens/s)")
    right.yaxis.set_major_formatter(ticker.EngFormatter(sep=""))
    _annotate_bta(left, right, cmp, x)
    # Below the panels: a legend above them collides with the figure title under constrained layout.
    handles, names = left.get_legend_handles_labels()
    if banded:
        n = r.sensitivity.meta["samples"]
        handles += [Patch(facecolor=c, alpha=0.25, edgecolor=c, ls=":") for c in (UNIFORM_C, BTA_C)]
        names += [f"5–95%, uniform (over {n:,} samples of the calibration unknowns)", "5–95%, BTA"]
    outside_legend(fig, handles, names, most=4, frameon=False)
    return caption(fig, CLAIMS["throughput_vs_sparsity"], _sparsity_verdict(cmp, key, x))


def _sparsity_verdict(cmp: pd.DataFrame, key: str, x) -> str:
    """How flat BTA stays (max/min), how far uniform batching falls and whether at every step, the speedups."""
    bta, uni = cmp["best_tokens_per_s"].to_numpy(float), cmp["baseline_tokens_per_s"].to_numpy(float)
    sym = SYMBOLS.get(key, key)
    flat = np.nanmax(bta) / np.nanmin(bta)
    steps = uni[1:] / uni[:-1]
    rises = [f"{sym} {number(a)} → {number(b)}" for a, b, r in zip(x, x[1:], steps) if r > 1]
    text = (f"BTA's throughput varies {flat:.3f}× (max/min) across {sym} = {number(x[0])} … {number(x[-1])}: "
            + ("nearly flat (≤ 1.2×), as claimed" if flat <= FLAT else "not flat: the claim does not hold here")
            + f". Uniform batching falls {uni[0] / uni[-1]:.3f}× from {sym} = {number(x[0])} to {number(x[-1])}, "
            + ("falling at every step" if not rises else f"but rises at {listing(rises)}")
            # by the same ≤ 1.2× rule: a uniform batching as flat as BTA shows no loss for tiling to answer
            + (": nearly flat as well, so the loss the claim sets BTA against does not appear here"
               if uni[0] / uni[-1] <= FLAT else "") + ".")
    speed = [c for c in cmp if c.startswith("speedup_vs_")]
    if speed:
        v = cmp[speed[0]].to_numpy(float)
        text += f" BTA's speedup: {np.nanmin(v):.3f}× … {np.nanmax(v):.3f}×."
    return text


def _sparsity_headline(cmp: pd.DataFrame, key: str, x) -> str:
    """The title's finding: BTA's largest speedup over uniform batching and where, and how far uniform batching
    falls across the sparsities ('BTA 1.27× faster than uniform batching at k = 1; uniform falls 1.28× from
    k = 8 to 1'); 'no faster' where every speedup is within 0.5% of 1 (robustness.side, the one rule of even)."""
    bta, uni = cmp["best_tokens_per_s"].to_numpy(float), cmp["baseline_tokens_per_s"].to_numpy(float)
    sym = SYMBOLS.get(key, key)
    with np.errstate(divide="ignore", invalid="ignore"):
        speed = bta / uni
    if not np.isfinite(speed).any():
        return "BTA vs uniform batching across sparsity"
    i = int(np.nanargmax(speed))
    head = (f"BTA {speed[i]:.2f}× faster than uniform batching at {sym} = {number(x[i])}"
            if side(float(speed[i])) == "ahead" else f"BTA no faster than uniform batching at any {sym}")
    fall = uni[0] / uni[-1]
    tail = (f"; uniform falls {fall:.2f}× from {sym} = {number(x[0])} to {number(x[-1])}" if side(float(fall)) == "ahead"
            else f"; uniform batching varies {np.nanmax(uni) / np.nanmin(uni):.3f}× (max/min)")
    return _unbroken(head + tail)


def _sparsity_ticks(r: ResultsView, key: str, x) -> tuple[list, str]:
    """Tick labels with the density k/E underneath, so both sparsity readings are on the axis."""
    other = r.model.get("num_experts" if key == "model.num_experts_per_tok" else "num_experts_per_tok")
    if not other:
        return [number(v) for v in x], NAMES[key]
    dens = [Fraction(int(v), int(other)) if key.endswith("per_tok") else Fraction(int(other), int(v)) for v in x]
    labels = [f"{number(v)}\n{d}" for v, d in zip(x, dens)]
    fixed = f"E = {other}" if key.endswith("per_tok") else f"k = {other}"
    return labels, f"{NAMES[key]}  (below: density k/E, {fixed})"


def _annotate_bta(left, right, cmp: pd.DataFrame, x) -> None:
    """Each BTA point carries its tuned G and B (MFU panel) and its speedup over uniform (throughput panel)."""
    speed = [c for c in cmp if c.startswith("speedup_vs_")]
    for i, xi in enumerate(x):
        row = cmp.iloc[i]
        if "best_G" in cmp:
            gb = f"G={number(row['best_G'])}" + (f", B={number(row['best_B'])}" if "best_B" in cmp else "")
            left.annotate(gb, (xi, row["best_mfu"]), xytext=(0, 7), textcoords="offset points",
                          ha="center", fontsize=8, color=BTA_C)
        if speed and np.isfinite(row[speed[0]]):
            right.annotate(f"{row[speed[0]]:.2f}×", (xi, row["best_tokens_per_s"]), xytext=(0, 7),
                           textcoords="offset points", ha="center", fontsize=8, color=BTA_C, weight="bold")


# ---------------------------------------------------------------- speedup over G

def speedup_vs_g(r: ResultsView) -> Figure | None:
    """Best metric per G over the best at the smallest G, one line per design."""
    if "workload.G" not in r.axes or r.metric not in r.points or r.feasible.empty:
        return None
    gs = np.sort(r.points["workload.G"].unique())
    # in the sweep's order, as the Pareto figure colours them (sorted, k = 1 took k = 8's colour there and back)
    groups = r.feasible.groupby(r.group_cols, sort=False) if r.group_cols else [((), r.feasible)]
    tuned = [c for c in r.axes if c in OVER and c != "workload.G" and r.points[c].nunique() > 1]
    over = ", ".join(SYMBOLS.get(c, c) for c in tuned)
    drawn = (f"each line: the best feasible point at each G{f' (over {over})' if tuned else ''} against the best "
             f"at G = {number(gs[0])}" + (f"; along the bottom: its {over} where it changes" if tuned else ""))
    lines = []   # (label, speedup per G, its notes, last feasible G) per design with a feasible smallest G
    tops = []    # the G of each line's best point by best_rows (G 3 and G 31 at B 31 and 3 tie on G·B: the other
    for key, sub in groups:   # figures name the point best_rows picks, so the verdict names it too)
        at = best_rows(sub, ["workload.G"], r.metric).set_index("workload.G").reindex(gs)
        best = at[r.metric]  # infeasible G -> NaN -> a gap
        if len(gs) < 2 or not np.isfinite(best.iloc[0]):
            continue  # no feasible smallest-G point: nothing to compare against
        key = dict(zip(r.group_cols, key if isinstance(key, tuple) else (key,)))
        y = (best / best.iloc[0]).to_numpy()
        lines.append((group_label(r.varying, tuple(key[c] for c in r.varying)), y, at, best.last_valid_index()))
        tops.append(list(gs).index(best_rows(sub, [], r.metric).iloc[0]["workload.G"]))
    many = len(lines) > MAX_LINES
    if many:  # the rule for many designs: every line in grey, the best and the worst by peak speedup in colour
        drawn += (f"; {len(lines)} designs: each in grey, the one with the highest and the one with the lowest "
                  "peak speedup in colour")
    if tuned and any(len(_changes(gs, y, at, tuned, None)) > MAX_NOTES for _, y, at, _ in lines):
        drawn += f" (only at its first and last G on a line where it changes more than {MAX_NOTES} times)"
    fig, ax = single(f"{r.name}: {_g_headline(lines, gs, tops)}", subtitle=r.subtitle(drawn=drawn))
    peaks = [float(np.nanmax(y)) for _, y, _, _ in lines]
    shown = {int(np.argmax(peaks)), int(np.argmin(peaks))} if many and lines else set(range(len(lines)))
    notes = []
    for i, (label, y, at, _) in enumerate(lines):
        if i not in shown:
            ax.plot(gs, y, lw=0.7, color="0.75", alpha=0.6, zorder=1)
            continue
        colour = PALETTE[(i == int(np.argmin(peaks))) if many else i % len(PALETTE)]
        ax.plot(gs, y, marker=MARKERS[i % len(MARKERS)], ms=4, lw=1.5, mfc="none", color=colour, zorder=3,
                label=(("highest: " if i == int(np.argmax(peaks)) else "lowest: ") + label) if many else label)
        changed = _changes(gs, y, at, tuned, colour)
        # a B that moves at nearly every G (G·B held near one batch) labelled at each step filled the figure
        # with ~60 labels: past MAX_NOTES a line is labelled at its first and last G only
        notes += changed if len(changed) <= MAX_NOTES else [changed[0], changed[-1]]
    if many:
        ax.plot([], [], lw=0.7, color="0.75", label=f"every other design ({len(lines) - len(shown)})")
    last = [g for *_, g in lines]
    if not last:
        return None
    _label(ax, notes, log=True)
    ax.axhline(1, color="0.4", lw=0.8, ls=":")
    hi = max(last)  # no empty decade of infeasible G: the axis ends at the largest feasible G, said in the label
    log2_ticks(ax, [g for g in gs if g <= hi and np.log2(g) % 1 == 0] + ([hi] if np.log2(hi) % 1 else []))
    ax.set_xlim(gs[0] / 1.12, hi * 1.12)
    # headroom above the highest line: lines that never leave 1 (quickstart) sat on the axes' top edge, hidden
    ax.set_ylim(0, 1.06 * max(1.0, max(peaks)))
    note = f"; no feasible point for G > {number(hi)}" if hi < gs[-1] else ""
    ax.set_xlabel(f"{NAMES['workload.G']} (log2{note})")
    ax.set_ylabel(f"{NAMES.get(r.metric, r.metric)} over best G = {number(gs[0])} (×)")
    title = ", ".join(NAMES.get(c, c) for c in r.varying)
    if r.varying:  # below the axes (one line needs none): inside, it covered the B labels along the bottom or
        # the lines' start at G = 1, where every line is 1
        outside_legend(fig, most=3 if many else 4, title=title, frameon=False)
    return caption(fig, CLAIMS["speedup_vs_G"], _g_verdict([(label, y) for label, y, *_ in lines], gs, tops))


def _g_headline(lines: list, gs, tops: list) -> str:
    """The title's finding: the highest speedup of any design over the smallest G, at which G and for which design
    ('batch tiling G = 36 is 1.27× faster than G = 1 at k = 1, F = 6,144; 3 of 4 designs gain nothing')."""
    peaks = []
    for k, (label, y, _, _) in enumerate(lines):
        if np.isfinite(y).any():
            i = int(np.nanargmax(y))
            i = tops[k] if y[tops[k]] == y[i] else i   # the G the other figures name at a tie
            peaks.append((float(y[i]), gs[i], label))
    if not peaks:
        return f"speedup of batch tiling over G = {number(gs[0])}"
    even = sum(side(p) != "ahead" for p, _, _ in peaks)
    y, g, label = max(peaks, key=lambda p: p[0])
    if side(y) != "ahead":
        return f"batch tiling is no faster than G = {number(gs[0])} (within 0.5%) for any design"
    text = f"batch tiling G = {number(g)} is {y:.2f}× faster than G = {number(gs[0])}" + (f" at {label}" if label else "")
    text += f"; {even} of {len(peaks)} designs gain nothing" if even else ""
    return _unbroken(text)


def _unbroken(text: str) -> str:
    """'k = 1' kept on one line when a title wraps (no-break spaces around '='): wrapped, 'k' and '= 1' parted."""
    return text.replace(" = ", "\u00a0=\u00a0")


def _g_verdict(lines: list, gs, tops=None) -> str:
    """Each design's best speedup and its G (counted when there are many); the designs that never rise more than
    0.5% above 1 say the claim fails for them. `tops`: each line's G index of the best point by `best_rows`,
    named where it ties the line's peak (else the first G at the peak)."""
    parts, fails = [], []
    for k, (label, y) in enumerate(lines):
        if not np.isfinite(y).any():
            continue
        i = int(np.nanargmax(y))
        if tops is not None and y[tops[k]] == y[i]:
            i = tops[k]
        # a gain within 0.5% of 1 reads 1.00×: even, not a gain (robustness.side, the one rule of ahead/even)
        (parts if side(float(y[i])) == "ahead" else fails).append(f"{label}: {y[i]:.3g}× at G = {number(gs[i])}"
                                                     if label else f"{y[i]:.3g}× at G = {number(gs[i])}")
    if len(parts) + len(fails) > MAX_LINES:
        best = max(((float(np.nanmax(y)), label) for label, y in lines if np.isfinite(y).any()), default=None)
        text = (f"{len(parts)} of {len(parts) + len(fails)} designs gain from G > 1" + (
            f", most {best[0]:.3g}× ({best[1]})" if best and parts else ""))
        return text + (f"; {len(fails)} gain nothing (within 0.5% of 1): the claim does not hold for them."
                       if fails else ".")
    text = "Best speedup over G = 1: " + "; ".join(parts) if parts else ""
    if fails:
        text += ("; no" if text else "No") + f" gain (within 0.5% of 1) for {listing(fails)}: the claim does not hold there"
    return text + "." if text else "No line to compare."


def _changes(gs, y, at: pd.DataFrame, tuned: list, colour) -> list:
    """(G, y, text, colour) of the tuned values (B) of a line's best point, at its first G and wherever they
    change: a line that bends because the best B moved says so on the plot."""
    out, last = [], None
    for g, yi, (_, row) in zip(gs, y, at.iterrows()):
        if not np.isfinite(yi):
            continue
        now = tuple(row[c] for c in tuned)
        if now != last:
            out.append((g, yi, ", ".join(f"{SYMBOLS.get(c, c)}={number(v)}" for c, v in zip(tuned, now)), colour))
        last = now
    return out


def _label(ax, notes: list, log: bool) -> None:
    """The changes as a row of labels along the bottom, under their G: clear of every line, one label where
    several lines share a value (in the text colour), stacked where they differ."""
    row = transforms.blended_transform_factory(ax.transData, ax.transAxes)
    places: dict = {}
    for g, _, text, colour in notes:
        places.setdefault(g, {}).setdefault(text, []).append(colour)
    xs = np.asarray(sorted(places), dtype=float)
    scale = np.log if log else (lambda v: v)  # where labels sit on the axis the figure ends with
    lo, hi = (scale(xs.min()), scale(xs.max())) if len(xs) else (0.0, 1.0)
    ends: list = []  # per row of labels: where its last label ends (fraction of the G range)
    for g in xs:
        for text, colours in sorted(places[g].items()):
            at = (scale(g) - lo) / (hi - lo) if hi > lo else 0.5
            k = next((i for i, end in enumerate(ends) if end < at - 0.06), len(ends))  # labels ~6% wide
            if k == len(ends):
                ends.append(at)
            ends[k] = at
            ax.text(g, 0.03 + 0.05 * k, text, transform=row, ha="center", va="bottom", fontsize=7.5,
                    color=colours[0] if len(colours) == 1 else "0.2")
