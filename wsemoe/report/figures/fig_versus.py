"""Systems compared per device across the decode regime: where one overtakes the other (crossover plot)."""

from __future__ import annotations

from collections.abc import Iterator


import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from wsemoe.report.figures.claims import caption
from wsemoe.report.figures.style import LINESTYLES, MARKERS, PALETTE, log2_ticks, pct, ratio_ticks, single
from wsemoe.report.figures.view import ResultsView
from wsemoe.sweep.compare import best_rows
from wsemoe.sweep import crossing
from wsemoe.wording import number

TAU = "workload.tokens_per_device"
STEMS = ("crossover",)
CLAIMS = {"crossover": "The wafer-scale system beats the GPU baseline per device wherever the baseline's MoE "
                       "stage is bound by HBM reads, each system at its best configuration"}
METRICS = {"per_device_tokens_per_s": "whole decode step",
           "per_device_moe_block_tokens_per_s": "MoE block (experts, dispatch, combine, reduction)",
           "per_device_moe_tokens_per_s": "MoE layer (attention and MoE block)"}
COLUMNS = (*METRICS, "moe_hbm_s", "moe_compute_s")  # with the axes, feasibility and objectives every view holds
NEEDS_AXES = (("hardware", TAU),)  # without both swept it draws nothing


def figures(view: ResultsView) -> Iterator[tuple[str, Figure | None]]:
    """(stem, figure) pairs, each built when asked for; None where the data does not support the figure."""
    yield "crossover", crossover(view)


def best_ratios(view: ResultsView, metric: str, base: str) -> pd.DataFrame:
    """Best feasible `metric` of every hardware over that of `base`, per tokens per device (each tuned on its own)."""
    best = view.feasible.groupby([TAU, "hardware"], observed=True)[metric].max().unstack().sort_index()
    first = (view.compare.get("candidate") or {}).get("hardware")
    order = sorted((h for h in best.columns if h != base), key=lambda h: (h != first, h))
    return best.div(best[base], axis=0)[order]


def _base(view: ResultsView) -> str | None:
    """The hardware everything is divided by: the comparison's baseline, else the last hardware swept."""
    hws = list(pd.unique(view.points["hardware"]))
    named = view.baseline.get("hardware") if view.baseline else None
    return named if named in hws else hws[-1]


def _memory_bound(view: ResultsView, base: str) -> np.ndarray:
    """Tokens per device at which the baseline's best MoE-block point is bound by HBM rather than compute."""
    feas = view.feasible[view.feasible["hardware"] == base]
    if not {"moe_hbm_s", "moe_compute_s"} <= set(feas.columns) or feas.empty:
        return np.array([])
    best = best_rows(feas, [TAU], "per_device_moe_block_tokens_per_s")
    return np.sort(best.loc[best["moe_hbm_s"] >= best["moe_compute_s"], TAU].to_numpy(dtype=float))


def one_model(view: ResultsView) -> ResultsView:
    """The view restricted to its first model when it sweeps several (systems are compared per model)."""
    if "model" not in view.points or view.points["model"].nunique() < 2:
        return view
    first = view.points["model"].iloc[0]
    return view.with_points(view.points[view.points["model"] == first])


def crossover(view: ResultsView) -> Figure | None:
    """Per-device throughput of each system over the baseline's, best against best, across tokens per device
    (the first model of a sweep of several)."""
    metrics = {m: text for m, text in METRICS.items() if view.has(m)}
    if not {"hardware", TAU} <= set(view.axes) or view.points["hardware"].nunique() < 2 or \
            "per_device_moe_block_tokens_per_s" not in metrics or view.feasible.empty:
        return None
    view = one_model(view)
    base = _base(view)
    fig, ax = single(f"{view.name}: {_headline(view, base)}", height=4.9,
                     subtitle=f"best against best (each system tuned for each metric); "
                              f"{view.context(view.first_row(view.points), ('mapping.strategy',))}")
    taus = np.sort(pd.unique(view.points[TAU])).astype(float)
    _shade(ax, _memory_bound(view, base), taus, base)
    ax.axhline(1.0, color="0.25", lw=1.0, zorder=1)
    seen, crossed = [], []   # crossed: (tokens per device, colour) of every crossing, labelled at the foot
    for m, (metric, _) in enumerate(metrics.items()):
        ratios = best_ratios(view, metric, base)
        seen += list(ratios.to_numpy(dtype=float).ravel())
        for h, hw in enumerate(ratios.columns):
            r = ratios[hw]
            ax.plot(r.index, r.to_numpy(), ls=LINESTYLES[m], marker=MARKERS[h], ms=5, mfc="none" if m else None,
                    lw=1.6, color=PALETTE[h])
            for c in crossing.crossings(r):  # every crossing: a system can be behind, ahead, then behind again
                ax.axvline(c.at, color=PALETTE[h], lw=0.8, ls=LINESTYLES[m], zorder=1, alpha=0.7)
                crossed.append((c.at, PALETTE[h]))
    log2_ticks(ax, taus)
    ax.set_yscale("log", base=2)
    ratio_ticks(ax, "y", seen)  # 1×, 1.5×, 2×, ...: base-2 decades alone left a narrow range with 1× only
    texts = [f" {at:.3g} " for at, _ in crossed]
    places = _label_places(ax, [at for at, _ in crossed], texts)
    rows = [row for row, _ in places]
    for (at, colour), text, (row, side) in zip(crossed, texts, places):
        # on white, above the lines: where verticals crowd, one that runs through a label no longer strikes it out
        ax.text(at, LABEL_FOOT + LABEL_STEP * row, text, transform=ax.get_xaxis_transform(), fontsize=LABEL_SIZE,
                color=colour, ha="left" if side == "right" else "right", va="bottom", zorder=5,
                bbox={"facecolor": "white", "edgecolor": "none", "pad": 1.0})
    if rows:
        _clear_foot(ax, seen, LABEL_FOOT + LABEL_STEP * max(rows) + LABEL_HEIGHT)
    ax.set_xlabel("tokens per device per decode step (equal on every system)")
    ax.set_ylabel(f"per-device throughput / {base}'s")
    hws = list(best_ratios(view, next(iter(metrics)), base).columns)
    handles = [Line2D([], [], color=PALETTE[h], marker=MARKERS[h], lw=1.6, label=hw) for h, hw in enumerate(hws)]
    handles += [Line2D([], [], color="0.3", ls=LINESTYLES[m], lw=1.6, label=text) for m, text in enumerate(metrics.values())]
    fig.legend(handles=handles, loc="outside lower center", ncol=2, frameon=False,
               title=f"verticals: where a system crosses {base} (tokens per device, at the foot)")
    return caption(fig, CLAIMS["crossover"], _verdict(view, base))


LABEL_FOOT, LABEL_STEP, LABEL_HEIGHT = 0.03, 0.06, 0.06  # crossing labels: rows at the foot (axes fractions)
LABEL_SIZE = 8


def _label_places(ax, xs, texts) -> list[tuple[int, str]]:
    """Where each crossing label sits at the foot, (row, side): right of its vertical unless another crossing's
    vertical would run through it there and not on the left; in the lowest row where it clears the labels already
    placed, taken left to right. One row per metric put crossings a little apart on top of each other
    (moentwine_vs_nvl72: 1.37 and 1.49, 1.56 and 1.64)."""
    char = 0.6 * LABEL_SIZE * ax.figure.dpi / 72   # a digit's width in pixels, about
    px = [ax.transData.transform((x, 1.0))[0] for x in xs]
    ends, places = [], [(0, "right")] * len(xs)   # ends: right end (pixels) of the last label in each row
    for i in sorted(range(len(xs)), key=px.__getitem__):
        width = char * len(texts[i])
        crossed = lambda lo, hi: any(lo < p < hi for j, p in enumerate(px) if j != i)  # noqa: E731
        side = "left" if crossed(px[i], px[i] + width) and not crossed(px[i] - width, px[i]) else "right"
        left, right = (px[i] - width, px[i]) if side == "left" else (px[i], px[i] + width)
        row = next((r for r, end in enumerate(ends) if left >= end), len(ends))
        ends[row:row + 1] = [right]
        places[i] = (row, side)
    return places


def _clear_foot(ax, values, band: float) -> None:
    """Lower the (log) y axis so every ratio drawn lies above the crossing labels' band at its foot (the
    lowest `band` of the axes): a label placed at the foot sat on a line that ran there (moentwine_vs_nvl72:
    '70.2' on DGX's MoE-block ratio of 0.17)."""
    v = [x for x in values if np.isfinite(x) and x > 0]
    lo, hi = ax.get_ylim()
    if not v or min(v) <= 0 or lo <= 0:
        return
    low = np.log(min(v)) - 0.02 * (np.log(hi) - np.log(min(v)))   # a marker's half-height below the lowest
    need = np.exp((low - band * np.log(hi)) / (1 - band))
    if need < lo:
        ax.set_ylim(need, hi)


def _headline(view: ResultsView, base: str) -> str:
    """The title's finding for the comparison's candidate (the first system drawn), MoE block against the baseline:
    where it is ahead, where behind and its best ratio ('wsc-b200-8x8's MoE block ahead of nvl72 at 1–32
    tokens/device, most 2.45× at 4; behind at 64–256')."""
    ratios = best_ratios(view, "per_device_moe_block_tokens_per_s", base)
    if not len(ratios.columns) or ratios.iloc[:, 0].dropna().empty:
        return f"per-device throughput against {base}"
    hw, r = ratios.columns[0], ratios.iloc[:, 0].dropna()
    ahead = [t for t, v in r.items() if v > 1]   # as _verdict counts them
    behind = [t for t in r.index if t not in ahead]
    top = f"most {r.max():.2f}× at {number(r.idxmax())}"
    head = f"{hw}'s MoE block "
    if not ahead:
        return head + f"behind {base} at every load ({_span(behind)} tokens/device; at best {r.max():.2f}×)"
    if not behind:
        return head + f"ahead of {base} at every load ({_span(ahead)} tokens/device; {top})"
    return head + f"ahead of {base} at {_span(ahead)} tokens/device ({top}), behind at {_span(behind)}"


def _verdict(view: ResultsView, base: str) -> str:
    """For the MoE block: each system against the baseline where the baseline is HBM-bound (does it win at
    every such point?), where it is ahead and behind, and where it falls behind."""
    metric = "per_device_moe_block_tokens_per_s"  # the stage the claim is about
    ratios, bound = best_ratios(view, metric, base), set(_memory_bound(view, base))
    parts = []
    for hw in ratios.columns:
        r = ratios[hw].dropna()
        ahead = [t for t, v in r.items() if v > 1]
        in_bound = [t for t in r.index if float(t) in bound]
        wins = [t for t in in_bound if r[t] > 1]
        behind = [t for t in r.index if t not in ahead]
        text = (f"{hw}: behind at every load ({_span(behind)} tokens/device)" if not ahead else
                f"{hw}: ahead at every load ({_span(ahead)} tokens/device)" if not behind else
                f"{hw}: ahead at {_span(ahead)} tokens/device, behind at {_span(behind)}")
        if in_bound:
            text += (f"; ahead at every HBM-bound point ({_span(in_bound)}; {_pcts(r, in_bound)})" if len(wins) ==
                     len(in_bound) else f"; ahead at {len(wins)} of {len(in_bound)} HBM-bound points ({_span(in_bound)}): "
                     "the claim does not hold everywhere it should")
        parts.append(text + (f"; {crossing.sides(r)}" if crossing.crossings(r) else ""))
    scope = (f"{base}'s MoE stage is HBM-bound at {_span(sorted(bound))} tokens/device" if bound
             else f"{base}'s MoE stage is never HBM-bound here, so the claim is not tested")
    return f"{METRICS[metric]} ({metric}, the sweep's readings as configured): {scope}. " + ". ".join(parts) + "."


def _span(taus) -> str:
    """'1–32' for consecutive swept values, 'none' for none, else the values listed."""
    taus = [float(t) for t in taus]
    if not taus:
        return "none"
    return f"{number(min(taus))}–{number(max(taus))}" if len(taus) > 1 else number(taus[0])


def _pcts(r: pd.Series, taus) -> str:
    """'+16% … +145%': the gains over the baseline at `taus`."""
    v = [float(r[t]) - 1 for t in taus]
    return f"{pct(min(v))} … {pct(max(v))}" if len(v) > 1 else pct(v[0])


def _shade(ax, bound: np.ndarray, taus: np.ndarray, base: str) -> None:
    """Shade the tokens-per-device range where the baseline's MoE stage is HBM-bound (memory-access bound)."""
    if not len(bound):
        return
    lo, hi = bound.min(), bound.max()   # half a step (on log2) beyond the first and last bound point
    ax.axvspan(lo / 2 ** 0.5, min(hi * 2 ** 0.5, taus.max() * 2 ** 0.5), color="0.92", zorder=0, lw=0)
    ax.text(np.sqrt(lo * hi), 0.98, f"{base} MoE stage bound by HBM", transform=ax.get_xaxis_transform(),
            ha="center", va="top", fontsize=8, color="0.35")
