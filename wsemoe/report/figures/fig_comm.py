"""Communication figures: per-phase time per mapping and TP, and the wafer against NVL72 per device."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib import ticker
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from wsemoe.report.figures.style import PALETTE, PHASE_C, PHASE_COLS, PHASE_NAMES, num, pct, setting, single
from wsemoe.report.figures.view import ResultsView

STEMS = ("comm_breakdown", "wsc_vs_nvl72")
COLUMNS = (*PHASE_COLS.values(), "per_device_moe_tokens_per_s")
NEEDS_AXES = (("mapping.strategy",), ("hardware",))  # without one of these swept it draws nothing
INFEASIBLE = "////"  # hatch of a bar whose point is infeasible (drawn, since its time still answers a question)


def figures(view: ResultsView) -> dict[str, Figure | None]:
    """{stem: figure}; None where the data does not support the figure."""
    return {"comm_breakdown": comm_breakdown(view), "wsc_vs_nvl72": wsc_vs_nvl72(view)}


# ---------------------------------------------------------------- communication breakdown

def comm_breakdown(view: ResultsView) -> Figure | None:
    """Stacked per-layer all-reduce, dispatch and combine time per mapping, grouped by TP."""
    if "mapping.strategy" not in view.axes or not view.has(*list(PHASE_COLS.values())[:3]):
        return None
    df, said = view.slice(keep=("mapping.strategy", "mapping.tp"))
    if df.empty:
        return None
    tps = sorted(pd.unique(df["mapping.tp"])) if "mapping.tp" in df else [None]
    strategies = list(pd.unique(df["mapping.strategy"]))
    setup = view.context(view.first_row(df), ("mapping.strategy",))
    fig, ax = single(f"{view.name}: communication per layer", subtitle=view.subtitle(
        ", ".join(p for p in (setup, said) if p), drawn="each bar: one point"
        + ("; hatched: infeasible" if not df["feasible"].all() else "")))
    width, centres, ticks, labels = 0.8, [], [], []
    for i, tp in enumerate(tps):
        at = df if tp is None else df[df["mapping.tp"] == tp]
        x0 = i * (len(strategies) + 0.8)
        first = None
        for j, strat in enumerate(strategies):
            sub = at[at["mapping.strategy"] == strat]
            if sub.empty:
                continue
            total = _stack(ax, x0 + j, sub.iloc[0], width)
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
        sec.set_xticks(centres, [f"\nTP {num(t)}" for t in tps])
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
    fig.legend(handles, labels, loc="outside lower center", ncol=2 if len(labels) > 3 else 3, frameon=False,
               title="bar labels: total µs and change vs the first mapping at the same TP")
    return fig


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
    """Per-device MoE throughput of each hardware side by side, per batch and TP."""
    col = "per_device_moe_tokens_per_s"
    if "hardware" not in view.axes or not view.has(col) or view.points["hardware"].nunique() < 2:
        return None
    over = [c for c in ("workload.B", "mapping.tp") if c in view.axes]
    df, said = view.slice(keep=("hardware", *over))
    hws = list(pd.unique(df["hardware"]))
    if len(hws) < 2:   # the slice holds one system only (e.g. fields zipped with the hardware differ)
        return None
    keys = [tuple(k) for k in df[over].drop_duplicates().sort_values(over).to_numpy()] if over else [()]
    fig, ax = single(f"{view.name}: per-device MoE throughput, {hws[0]} vs {hws[1]}", subtitle=view.subtitle(
        ", ".join(p for p in (view.context(view.first_row(df)), said) if p),
        drawn="each bar: one point" + ("; hatched: infeasible" if not df["feasible"].all() else "")))
    width = 0.8 / len(hws)
    for i, key in enumerate(keys):
        at = df[np.logical_and.reduce([df[c] == v for c, v in zip(over, key)])] if over else df
        rows = [at[at["hardware"] == hw].iloc[0] if (at["hardware"] == hw).any() else None for hw in hws]
        vals = [float(r[col]) if r is not None else np.nan for r in rows]
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
    ax.set_ylabel("MoE throughput per device (tokens/s)")
    fig.legend(loc="outside lower center", ncol=len(hws), frameon=False,
               title=f"labels: gain of {hws[0]} over {hws[1]}")
    return fig
