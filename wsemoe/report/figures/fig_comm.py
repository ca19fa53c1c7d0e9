"""Communication figures: per-phase time per mapping and TP, and the wafer against NVL72 per device.

Both compare systems, so both follow the rule of `ResultsView.best`: each bar is its system (mapping, or
hardware) at its best configuration over the tuned axes (token flow, ring directions, balancer, overlap,
...), the workload held at a representative value; the captions say where the claim holds and where not, and
the per-phase figure's title names the mapping that communicates least, the wafer-against-GPU title at how many
settings the candidate wins and the span of its gain.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pandas as pd
from matplotlib import ticker
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from wsemoe.report.figures.claims import caption, listing, where
from wsemoe.report.figures.style import (PALETTE, PHASE_C, PHASE_COLS, PHASE_NAMES, SLICE_SYMBOLS, outside_legend,
                                         pct, setting, single)
from wsemoe.report.figures.view import ResultsView
from wsemoe.wording import number

STEMS = ("comm_breakdown", "wsc_vs_nvl72")
COLUMNS = (*PHASE_COLS.values(), "moe_comm_s", "per_device_moe_tokens_per_s", "*_bound")
NEEDS_AXES = (("mapping.strategy",), ("hardware",))  # without one of these swept it draws nothing
CLAIMS = {"comm_breakdown": "Entwined mappings (ER, HER) cut MoE communication per layer against block placement",
          "wsc_vs_nvl72": "The wafer-scale system beats the GPU system per device (MoE-layer throughput per "
                          "device), each at its best configuration"}
SAME = 0.005  # changes within ±0.5% count as no change in the captions
INFEASIBLE = "////"  # hatch of a bar whose point is infeasible (drawn, since its time still answers a question)


def figures(view: ResultsView) -> Iterator[tuple[str, Figure | None]]:
    """(stem, figure) pairs, each built when asked for; None where the data does not support the figure."""
    yield "comm_breakdown", comm_breakdown(view)
    yield "wsc_vs_nvl72", wsc_vs_nvl72(view)


# ---------------------------------------------------------------- communication breakdown

def comm_breakdown(view: ResultsView) -> Figure | None:
    """Stacked per-layer all-reduce, dispatch, combine and reduction time per mapping, grouped by TP; each bar
    the mapping at its least communication over the tuned axes."""
    if "mapping.strategy" not in view.axes or not view.has(*list(PHASE_COLS.values())[:3]):
        return None
    keep = tuple(c for c in ("mapping.strategy", "mapping.tp") if c in view.axes)
    df = view.points.assign(_comm=sum(view.points[c] for c in PHASE_COLS.values() if c in view.points))
    view = _with_points(view, df)
    df, said, tuned = view.best(keep, "_comm", "min")
    if df.empty:
        return None
    tps = sorted(pd.unique(df["mapping.tp"])) if "mapping.tp" in df else [None]
    strategies = list(pd.unique(view.points["mapping.strategy"]))
    setup = view.context(view.first_row(df), ("mapping.strategy",))
    over = ", ".join(SLICE_SYMBOLS.get(c, c) for c in tuned)
    fig, ax = single(f"{view.name}: {_comm_headline(df, tps, strategies)}", subtitle=view.subtitle(
        ", ".join(p for p in (setup, said) if p), drawn="each bar: the mapping at its least communication"
        + (f" over {over}" if over else "") + ("; hatched: infeasible" if not df["feasible"].all() else "")))
    width, centres, ticks, labels, totals = 0.8, [], [], [], {}
    for i, tp in enumerate(tps):
        at = df if tp is None else df[df["mapping.tp"] == tp]
        x0 = i * (len(strategies) + 0.8)
        first = None
        for j, strat in enumerate(strategies):
            sub = at[at["mapping.strategy"] == strat]
            if sub.empty:
                continue
            total = _stack(ax, x0 + j, sub.iloc[0], width)
            totals[(tp, strat)] = total
            if not bool(sub["feasible"].iloc[0]):
                ax.bar(x0 + j, total, width, fill=False, hatch=INFEASIBLE, edgecolor="0.25", lw=0)
            change = "" if first is None else f"\n{pct(total / first - 1)}"
            first = total if first is None else first
            ax.annotate(f"{total:.3g}{change}", (x0 + j, total), xytext=(0, 2), textcoords="offset points",
                        ha="center", va="bottom", fontsize=8)
            ticks.append(x0 + j)
            labels.append(strat)
        centres.append(x0 + (len(strategies) - 1) / 2)
    ax.set_xticks(ticks, labels)
    ax.tick_params(axis="x", length=0)
    if tps != [None]:
        sec = ax.secondary_xaxis("bottom")
        sec.set_xticks(centres, [f"\nTP {number(t)}" for t in tps])
        sec.tick_params(length=0)
        sec.spines["bottom"].set_visible(False)
    ax.grid(axis="x", visible=False)
    ax.set_ylim(0, ax.get_ylim()[1] * 1.15)  # room for the two-line totals
    ax.set_ylabel("communication time per layer (µs)")
    handles = [Rectangle((0, 0), 1, 1, color=PHASE_C[p]) for p in PHASE_COLS]
    labels = [f"{PHASE_NAMES[p]}" for p in PHASE_COLS]
    if _wafers(df):
        handles.append(Rectangle((0, 0), 1, 1, facecolor="white", edgecolor="0.2", hatch="////"))
        labels.append("hatched: bound by an inter-wafer link")
    outside_legend(fig, handles, labels, most=2 if len(labels) > 3 else 3, frameon=False,
               title="bar labels: total µs and change vs the first mapping at the same TP")
    return caption(fig, CLAIMS["comm_breakdown"], _comm_verdict(totals, tps, strategies, said)
                   + _comm_elsewhere(view, keep, strategies))


def _comm_headline(df: pd.DataFrame, tps: list, strategies: list) -> str:
    """The title's finding, from the bars drawn (each mapping at its least communication): the mapping least at
    the most TPs, at how many, and its largest cut against the first mapping ('er communicates least per layer at
    all 3 TPs, at most −38% against block (TP 4)'); a tie of wins to the mapping listed first."""
    comm = {(tp, s): float(r["_comm"]) for tp in tps for s in strategies
            for _, r in df[(df["mapping.strategy"] == s) & ((df["mapping.tp"] == tp) if tp is not None
                                                             else True)].head(1).iterrows()}
    wins = [min((s for s in strategies if (tp, s) in comm), key=lambda s: comm[(tp, s)])
            for tp in tps if any((tp, s) in comm for s in strategies)]
    if not wins:
        return "communication per layer"
    top = max(strategies, key=wins.count)
    n, base = wins.count(top), strategies[0]
    at = "" if len(wins) == 1 else f" at all {len(wins)} TPs" if n == len(wins) else f" at {n} of {len(wins)} TPs"
    cuts = [(comm[(tp, top)] / comm[(tp, base)] - 1, tp) for tp in tps
            if top != base and (tp, top) in comm and (tp, base) in comm and comm[(tp, base)] > 0]
    cut, tp = min(cuts, key=lambda c: c[0]) if cuts else (None, None)
    return (f"{top} communicates least per layer{at}" + (
        f", at most {pct(cut)} against {base}" + (f" (TP {number(tp)})" if tp is not None else "") if cuts else ""))


def _comm_elsewhere(view: ResultsView, keep: tuple, strategies: list) -> str:
    """Beyond the drawn slice: over every value of the held workload axes (tokens per device, B, ...), where
    each entwined mapping (at its best) has less communication than the first mapping at the same TP."""
    held = [a for a in view.axes if a.startswith("workload.") and a not in keep and a not in view.tuned_axes(keep)
            and view.points[a].nunique() > 1]
    if not held:
        return ""
    rows, _, _ = view.best((*keep, *held), "_comm", "min")
    by = [c for c in (*held, "mapping.tp") if c in rows]
    wide = rows.pivot_table(index=by, columns="mapping.strategy", values="_comm", aggfunc="first")
    parts = []
    for strat in strategies[1:]:
        if strat not in wide or strategies[0] not in wide:
            continue
        change = (wide[strat] / wide[strategies[0]] - 1).dropna()
        lower = change[change < -SAME]
        text = ", ".join(setting(c, v) for c, v in zip(by, lower.idxmin() if len(by) > 1 else (lower.idxmin(),))) \
            if len(lower) else ""
        parts.append(f"{strat} is lower at {number(len(lower))} of {number(len(change))}"
                     + (f", at most {pct(lower.min())} ({text})" if len(lower) else ""))
    what = " and ".join(SLICE_SYMBOLS.get(a, a) for a in held)
    return f" Over every {what} and TP (each at its best): " + "; ".join(parts) + "." if parts else ""


def _with_points(view: ResultsView, points: pd.DataFrame) -> ResultsView:
    """The view with extra per-point columns (the same points)."""
    return view.with_points(points)


def _comm_verdict(totals: dict, tps: list, strategies: list, said: str) -> str:
    """Per entwined mapping: its change against the first (block) at each TP, and where it is lower."""
    base, parts = strategies[0], []
    for strat in strategies[1:]:
        at = [(tp, totals[(tp, strat)] / totals[(tp, base)] - 1) for tp in tps
              if (tp, strat) in totals and (tp, base) in totals and totals[(tp, base)] > 0]
        if not at:
            continue
        labels = [f"TP {number(tp)}" if tp is not None else "this slice" for tp, _ in at]
        parts.append(f"{strat} against {base}: " + where(labels, [c < -SAME for _, c in at], "lower", "not lower",
                                                           [pct(c) for _, c in at]))
    fixed = f" (at {said})" if said else ""
    return f"Each mapping at its least communication{fixed}. " + ". ".join(parts) + "." if parts else ""


def _wafers(df) -> bool:
    """True when any phase of these points is bound by a link across a wafer boundary."""
    return any((df[c].astype(str) == "wafer-link").any() for c in (f"{p}_bound" for p in PHASE_COLS) if c in df)


def _stack(ax, x: float, row, width: float) -> float:
    """One stacked bar of the per-layer phase times in µs (hatched where a wafer link binds); returns its total."""
    bottom = 0.0
    for phase, col in PHASE_COLS.items():
        h = float(row.get(col, 0.0)) * 1e6
        across = str(row.get(f"{phase}_bound", "")) == "wafer-link"
        ax.bar(x, h, width, bottom=bottom, color=PHASE_C[phase], edgecolor="white", linewidth=0.5,
               hatch="////" if across else None)
        bottom += h
    return bottom


# ---------------------------------------------------------------- wafer vs NVL72

def wsc_vs_nvl72(view: ResultsView) -> Figure | None:
    """Per-device MoE-layer throughput (attention and MoE block) of each hardware side by side per TP (and B), each
    at its best configuration: the crossover figure's MoE block alone can tell the other way, so the label says
    which."""
    col = "per_device_moe_tokens_per_s"
    if "hardware" not in view.axes or not view.has(col) or view.points["hardware"].nunique() < 2:
        return None
    over = [c for c in ("workload.B", "mapping.tp") if c in view.axes]
    df, said, tuned = view.best(("hardware", *over), col, "max")
    df = df[np.isfinite(df[col].to_numpy(dtype=float))]  # a system without the metric (SRAM serving) has no bar
    hws = _order(view, list(pd.unique(df["hardware"])))
    cand = (view.compare.get("candidate") or {}).get("hardware")
    if len(hws) < 2 or cand and hws[0] != cand:  # one system only, or not the comparison's candidate: no claim
        return None
    def at(key) -> np.ndarray:   # the rows of one setting of the `over` axes (every row without them)
        return np.logical_and.reduce([(df[c] == v).to_numpy() for c, v in zip(over, key)] or [np.ones(len(df), bool)])

    keys = [tuple(k) for k in df[over].drop_duplicates().sort_values(over).to_numpy()] if over else [()]
    keys = [k for k in keys if all(((df["hardware"] == hw).to_numpy() & at(k)).any() for hw in hws[:2])]
    if not keys:   # the two systems never meet at one setting: nothing to compare side by side
        return None
    best_over = ", ".join(SLICE_SYMBOLS.get(c, c) for c in tuned)
    # "hatched: infeasible" only where a drawn bar is: rows of settings or systems not drawn said it of no bar
    drawn = df["hardware"].isin(hws).to_numpy() & np.logical_or.reduce([at(k) for k in keys])
    bars = []   # per setting: (its rows per system, their throughputs)
    for key in keys:
        here = df[at(key)]
        rows = [here[here["hardware"] == hw].iloc[0] if (here["hardware"] == hw).any() else None for hw in hws]
        bars.append((rows, [float(r[col]) if r is not None else np.nan for r in rows]))
    gains = [(", ".join(setting(c, v) for c, v in zip(over, key)) or "here", vals[0] / vals[1] - 1)
             for key, (_, vals) in zip(keys, bars) if np.isfinite(vals[0]) and np.isfinite(vals[1])]
    fig, ax = single(f"{view.name}: {_versus_headline(gains, hws, over)}", subtitle=view.subtitle(
        ", ".join(p for p in (view.context(view.first_row(df), ("mapping.strategy",)), said) if p),
        drawn="each bar: the system's MoE layer (attention + MoE block) at its best" + (f" over {best_over}" if
                                                                                       best_over else "")
        + ("; hatched: infeasible" if not df.loc[drawn, "feasible"].all() else "")))
    width = 0.8 / len(hws)
    for i, (rows, vals) in enumerate(bars):
        for j, (v, r) in enumerate(zip(vals, rows)):
            x = i + (j - (len(hws) - 1) / 2) * width
            ax.bar(x, v, width, color=PALETTE[j], label=hws[j] if i == 0 else None)
            if r is not None and not bool(r["feasible"]):
                ax.bar(x, v, width, fill=False, hatch=INFEASIBLE, edgecolor="0.25", lw=0)
        if np.isfinite(vals[0]) and np.isfinite(vals[1]):
            ax.annotate(pct(vals[0] / vals[1] - 1), (i, np.nanmax(vals)), xytext=(0, 3),
                        textcoords="offset points", ha="center", va="bottom", fontsize=8.5, weight="bold")
    ax.set_xticks(range(len(keys)), [", ".join(setting(c, v) for c, v in zip(over, k)) for k in keys])
    ax.grid(axis="x", visible=False)
    ax.set_ylim(0, ax.get_ylim()[1] * 1.1)
    ax.yaxis.set_major_formatter(ticker.EngFormatter(sep=""))
    ax.set_ylabel("MoE-layer throughput per device (tokens/s)")
    outside_legend(fig, most=len(hws), frameon=False, title=f"labels: gain of {hws[0]} over {hws[1]}")
    # The slice's model is named in the verdict too: it holds there only (another model may be behind).
    held = ", ".join(p for p in (f"model {df['model'].iloc[0]}" if "model" in view.axes and
                                 view.points["model"].nunique() > 1 else "", said) if p)
    verdict = (f"Each system at its best{f' (at {held})' if held else ''}: {hws[0]} against {hws[1]} "
               + where([k for k, _ in gains], [g > SAME for _, g in gains], "ahead", "not ahead",
                       [pct(g) for _, g in gains]) + ".") if gains else \
        f"No {listing(hws[:2])} pair to compare at one setting."
    return caption(fig, CLAIMS["wsc_vs_nvl72"], verdict)


def _versus_headline(gains: list, hws: list, over: list) -> str:
    """The title's finding, from the labelled pairs ([(setting, gain of hws[0] over hws[1])]): at how many settings
    the candidate is ahead per device, and the span of its gain ('wsc beats nvl72 in MoE-layer throughput per device
    at all 4 TPs: +23% (TP 8) to +31% (TP 4)'); a gain within ±0.5% is no win. The subtitle says the layer
    holds attention as well (the crossover figure's MoE block alone can tell the other way)."""
    a, b, metric = hws[0], hws[1], "in MoE-layer throughput per device"
    if not gains:
        return f"{a} against {b} {metric}"
    lo, hi = min(gains, key=lambda g: g[1]), max(gains, key=lambda g: g[1])
    if len(gains) == 1:
        return f"{a} against {b} {metric}: {pct(hi[1])}" + (f" ({hi[0]})" if hi[0] != "here" else "")
    noun = {("mapping.tp",): "TPs", ("workload.B",): "batches"}.get(tuple(over), "settings")
    ahead = sum(g > SAME for _, g in gains)
    count = (f"at all {len(gains)}" if ahead == len(gains) else f"at any of {len(gains)}" if not ahead
             else f"at {ahead} of {len(gains)}")

    def at(g) -> str:   # '+23% (TP 8)', unbroken: a wrapped title split '(TP' from '4)'
        return f"{pct(g[1])} ({g[0]})".replace(" ", "\u00a0")

    return f"{a} {'does not beat' if not ahead else 'beats'} {b} {metric} {count} {noun}: {at(lo)} to {at(hi)}"


def _order(view: ResultsView, hws: list) -> list:
    """The comparison's candidate first and its baseline second (else the order swept)."""
    cand = (view.compare.get("candidate") or {}).get("hardware")
    base = (view.baseline or {}).get("hardware")
    return sorted(hws, key=lambda h: (h != cand, h != base))
