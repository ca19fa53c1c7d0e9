"""Memory-breakdown figure: per-node memory terms of the stage that sets each point's peak."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from wsemoe.report.figures.claims import caption, listing
from wsemoe.report.figures.style import (PALETTE, SINGLE, SYMBOLS, group_label, name, outside_legend, setting,
                                         single, wrap_label)
from wsemoe.report.figures.view import ResultsView
from wsemoe.sweep.compare import best_rows
from wsemoe.wording import number

STEMS = ("memory_breakdown",)
CLAIMS = {"memory_breakdown": "Every point drawn fits the node's memory, and the bars show which stage and which "
                              "terms set its peak"}
COLUMNS = ("mem_*_node_bytes",)

# "gradients + optimizer" also draws, at the attention stage's peak, the gradients of the attention weights a
# streaming wafer holds across its tiles (mem_attn_grads_node_bytes: `_live`), and "MoE transient + deltas" the MoE
# backward's deltas (mem_moe_deltas_node_bytes, 0 in inference; the palette has a colour for eight terms).
MEM_TERMS = (("weights", "weights"), ("train_state", "gradients + optimizer"), ("kept_act", "kept activations"),
             ("kv", "KV cache"),
             ("attn_transient", "attention transient"), ("bta_buffer", "BTA buffer"),
             ("moe_transient", "MoE transient + deltas"), ("prefetch", "prefetched weights"))
STAGE_TERMS = {"attention": ("weights", "train_state", "kept_act", "kv", "attn_transient", "bta_buffer", "prefetch"),
               "MoE": ("weights", "train_state", "kept_act", "kv", "moe_transient")}
# A results folder written before training state (or the prefetched weights) was counted has no such column, and
# its peaks hold none.
LATER_TERMS = ("train_state", "prefetch")
LABEL_WIDTH = 30  # characters per line of a bar's label
MAX_BAR_GROUPS = 8  # more designs than this make the memory chart unreadable: show the top points instead


def figures(view: ResultsView) -> Iterator[tuple[str, Figure | None]]:
    """(stem, figure) pairs, each built when asked for; None where the data does not support the figure."""
    yield "memory_breakdown", memory_breakdown(view)


def memory_breakdown(r: ResultsView) -> Figure | None:
    """Stacked per-node memory of the stage that sets the peak, baseline and best point per design."""
    cols = [f"mem_{t}_node_bytes" for t, _ in MEM_TERMS if t not in LATER_TERMS] + ["mem_attn_peak_node_bytes",
                                                                                   "mem_moe_peak_node_bytes"]
    if any(c not in r.points for c in cols) or r.feasible.empty:
        return None
    bars = _memory_rows(r)
    if not bars:
        return None
    drawn = _drawn(r, bars)
    bars, alike = _once(r, bars)
    names = [wrap_label(b[0], LABEL_WIDTH) for b in bars]
    lines = max(n.count("\n") + 1 for n in names)
    # Rows as tall as their labels (a line about 0.17 in, a row 0.5 in); a half-row gap between designs, so each
    # design's pair of bars reads as one block.
    step = max(1.0, 0.35 * lines)
    ypos = np.cumsum([0.0] + [(1.5 if a[2] != b[2] else 1.0) * step for a, b in zip(bars, bars[1:])])
    # The axis spans at least 1.5 rows, the bars centred in it, so a few bars stay bar-thin, not slabs. The figure
    # is a column figure's height, or as tall as its rows; one or two bars take a shorter one rather than hang
    # atop a column of empty rows.
    span = max(ypos[-1], 1.5)
    fig, ax = single(f"{r.name}: {_headline(bars)}",
                     max(SINGLE[1] if len(bars) > 2 else 3.4, 2.1 + 0.5 * (span + 1.2 + step - 1.0)),
                     subtitle=drawn + alike)
    for (_, row, _), y in zip(bars, ypos):
        _stacked_bar(ax, y, row)
    ax.set_yticks(ypos, names)  # narrow labels, wide bars
    pad = (span - ypos[-1] + step - 1.0) / 2   # room for the first and last label's lines beyond their bars
    ax.set_ylim(ypos[-1] + 0.6 + pad, -0.6 - pad)   # first design on top
    ax.set_xlabel("memory per node (GB)")
    ax.grid(axis="y", visible=False)
    ends = [max(_peak(row)[1], row.get("mem_capacity_node_bytes", 0)) * 1e-9 for _, row, _ in bars]
    for (_, row, _), y in zip(bars, ypos):
        ax.text(max(ends) * 1.02, y, f"{_peak(row)[0]} stage", va="center", fontsize=8, color="0.25")
    ax.set_xlim(0, max(ends) * 1.22)
    cap = _capacity_marks(ax, [b[1] for b in bars], ypos)
    # Only terms some bar draws: a legend entry for, say, a zero KV cache would send readers looking for it.
    # Too-thin terms carry their size, so a reader knows they are present but small.
    top = {t: max((_live(row, t) * 1e-9 for _, row, _ in bars
                   if t in STAGE_TERMS[_peak(row)[0]]), default=0.0) for t, _ in MEM_TERMS}
    drawn = [(i, name, top[t]) for i, (t, name) in enumerate(MEM_TERMS) if top[t] > 0]
    handles = [Line2D([], [], lw=8, color=PALETTE[i]) for i, _, _ in drawn] + [Line2D([], [], ls="--", color="0.2")]
    labels = [name + (f" (≤ {v:.1g} GB)" if v < 0.01 * max(ends) else "") for _, name, v in drawn]
    outside_legend(fig, handles, labels + [f"capacity per node{cap}"], most=3, frameon=False)
    return caption(fig, CLAIMS["memory_breakdown"], _verdict(bars) + (f" {alike[2:].capitalize()}." if alike else ""))


def _once(r: ResultsView, bars: list) -> tuple[list, str]:
    """The top points' bars with identical ones drawn once, labelled with every point they stand for ('#1–#5')
    and the values of what differs between them; and '; ...' saying so for the subtitle ('' when none merge).
    Five identical bars (moentwine_balance: memory per node does not depend on the balancer) read as a finding
    five times over."""
    if not bars or not bars[0][0].startswith("#"):
        return bars, ""
    same: dict = {}
    for i, (_, row, _) in enumerate(bars):
        key = (_peak(row)[0], *(round(_live(row, t) / 1e3) for t, _ in MEM_TERMS),   # to the kB
               round(float(row.get("mem_capacity_node_bytes", np.nan)) / 1e3))
        same.setdefault(key, []).append(i)
    if len(same) == len(bars):
        return bars, ""
    shown = [a for a in r.axes if a in r.feasible and r.points[a].nunique() > 1]
    out = []
    for members in same.values():
        rows = [bars[i][1] for i in members]
        ranks = ", ".join(f"#{i + 1}" for i in members) if members != list(range(members[0], members[-1] + 1)) \
            else f"#{members[0] + 1}–#{members[-1] + 1}" if len(members) > 1 else f"#{members[0] + 1}"
        text = ", ".join(setting(a, " / ".join(dict.fromkeys(number(row[a]) for row in rows))) for a in shown)
        out.append((f"{ranks}: {text}" if shown else ranks, rows[0], members[0]))
    merged = [o[0].split(":")[0] for o, m in zip(out, same.values()) if len(m) > 1]
    return out, f"; identical bars drawn once ({', '.join(merged)}: the same memory per node)"


def _headline(bars: list) -> str:
    """The title's finding: how full the fullest bar is and which stage sets most peaks ('the fullest point uses
    100% of the node's memory; the MoE stage sets the peak at 6 of 8 bars')."""
    peaks = [_peak(row) for _, row, _ in bars]
    use = [p[1] / float(row.get("mem_capacity_node_bytes", np.nan)) for p, (_, row, _) in zip(peaks, bars)]
    stages = {st: sum(p[0] == st for p in peaks) for st in ("attention", "MoE")}
    stage = max(stages, key=stages.get)
    tail = f"the {stage} stage sets the peak" + ("" if len(bars) == 1 else f" at {stages[stage]} of {len(bars)} bars")
    if not np.isfinite(use).any():
        return f"memory per node at the peak stage: {tail}"
    return f"the fullest point uses {100 * np.nanmax(use):.0f}% of the node's memory; {tail}"


def _verdict(bars: list) -> str:
    """Which stage sets the peaks, the largest term, and how close the fullest point comes to capacity."""
    peaks = [_peak(row) for _, row, _ in bars]
    stages = {st: sum(p[0] == st for p in peaks) for st in ("attention", "MoE")}
    use = [(p[1] / float(row.get("mem_capacity_node_bytes", np.nan)), label) for p, (label, row, _) in zip(peaks, bars)]
    fullest, at = max(use, key=lambda u: u[0] if np.isfinite(u[0]) else -1)
    terms = {name: sum(_live(row, t) for _, row, _ in bars if t in STAGE_TERMS[_peak(row)[0]])
             for t, name in MEM_TERMS}
    over = [label.replace("\n", " ") for u, label in use if u > 1]
    one = len(bars) == 1   # a single bar: no "1 of 1 bars", no "over the bars"
    where = [f"{k} stage" + ("" if one else f" at {v} of {len(bars)} bars") for k, v in stages.items() if v]
    return (f"The peak is set by the {listing(where)}; the largest term {'' if one else 'over the bars '}is "
            f"{max(terms, key=terms.get)}. The fullest point uses {100 * fullest:.0f}% of the node's memory "
            f"({at.replace(chr(10), ' ')})"
            + (f"; over capacity: {listing(over)} (the claim does not hold there)" if over else "") + ".")


def _memory_rows(r: ResultsView) -> list:
    """(label, row, group index): baseline and best point of each design, or the top 5 by the first objective."""
    feas = r.feasible
    base_mask = np.ones(len(feas), dtype=bool)
    for col, val in r.baseline.items():
        base_mask &= (feas[col] == val).to_numpy() if col in feas else False
    groups = feas.groupby(r.varying) if r.varying else [((), feas)]
    if r.baseline and r.metric in feas and base_mask.any() and len(groups) <= MAX_BAR_GROUPS:
        base_name = r.compare.get("name", "uniform")
        best_name = "BTA" if "workload.G" in r.axes else "best"
        rows = []
        for gi, (key, sub) in enumerate(groups):
            glabel = group_label(r.varying, key)
            sub_base = sub[base_mask[feas.index.get_indexer(sub.index)]]
            best = best_rows(sub, [], r.metric).iloc[0]
            base = best_rows(sub_base, [], r.metric).iloc[0] if len(sub_base) else None
            if base is not None and base.name == best.name:  # one bar, not the same point twice
                picks = [(f"{base_name} = best", best)]
            else:
                picks = ([(base_name, base)] if base is not None else []) + [(best_name, best)]
            for pick, row in picks:
                rows.append((", ".join(filter(None, [glabel, f"{pick} ({_over_label(row)})"])), row, gi))
        return rows
    objs = [c for c in r.objectives if c in feas]
    if not objs:
        return []
    top = feas.sort_values(objs[0], ascending=r.objectives[objs[0]] == "min").head(5)
    shown = [a for a in r.axes if a in feas and r.points[a].nunique() > 1]
    # Many swept axes make long labels: short names, wrapped, so the bars keep their width.
    text = lambda row: ", ".join(setting(a, row[a]) for a in shown)  # noqa: E731   (wrapped where drawn)
    return [(f"#{i + 1}: {text(row)}" if shown else f"#{i + 1}", row, i) for i, (_, row) in enumerate(top.iterrows())]


def _drawn(r: ResultsView, bars: list) -> str:
    """What the bars are: baseline and best point per design, or the top points by the first objective."""
    if bars and bars[0][0].startswith("#"):
        first = next(iter(r.objectives))
        return f"the {len(bars)} best feasible points by {name(first)}; each bar: the terms of the stage that sets its peak"
    base = ", ".join(f"{SYMBOLS.get(c, c)} = {number(v)}" for c, v in r.baseline.items())
    return (f"per design: the best feasible point by {name(r.metric)}, and the best with {base}; each bar: the "
            "terms of the stage that sets its peak")


def _over_label(row) -> str:
    return ", ".join(f"{SYMBOLS[c]}={number(row[c])}" for c in ("workload.G", "workload.B") if c in row)


def _term(row, term: str) -> float:
    """A memory term's bytes (0 for a term the folder's results predate: `LATER_TERMS`)."""
    return float(row.get(f"mem_{term}_node_bytes", 0.0))


def _live(row, term: str) -> float:
    """A term's bytes at the peak stage's moment: the training state with, at the attention stage, the attention
    weights' gradients a streaming wafer holds there, and the MoE transient with the MoE backward's deltas (each 0
    in a folder that predates them)."""
    grads = _term(row, "attn_grads") if term == "train_state" and _peak(row)[0] == "attention" else 0.0
    deltas = _term(row, "moe_deltas") if term == "moe_transient" else 0.0
    return _term(row, term) + grads + deltas


def _peak(row) -> tuple[str, float]:
    """The stage that sets the peak and its bytes: attention (with the BTA buffer) or MoE."""
    attn, moe = row["mem_attn_peak_node_bytes"], row["mem_moe_peak_node_bytes"]
    return ("attention", attn) if attn >= moe else ("MoE", moe)


def _stacked_bar(ax, y: float, row) -> None:
    """The terms of the stage that sets the peak only: the other stage's terms are not live at that moment."""
    left = 0.0
    for i, (term, _) in enumerate(MEM_TERMS):
        if term in STAGE_TERMS[_peak(row)[0]]:
            w = _live(row, term) * 1e-9
            ax.barh(y, w, left=left, height=0.8, color=PALETTE[i], edgecolor="white", linewidth=0.5)
            left += w


def _capacity_marks(ax, rows, ypos) -> str:
    """One dashed line when all bars share a capacity, else a dashed tick per bar; returns a legend suffix."""
    caps = [float(row.get("mem_capacity_node_bytes", np.nan)) * 1e-9 for row in rows]
    if len(set(caps)) == 1 and np.isfinite(caps[0]):
        ax.axvline(caps[0], ls="--", color="0.2", lw=1.2)
        return f" ({caps[0]:.3g} GB)"
    ax.vlines(caps, np.array(ypos) - 0.45, np.array(ypos) + 0.45, linestyles="--", color="0.2", lw=1.2)
    return ""
