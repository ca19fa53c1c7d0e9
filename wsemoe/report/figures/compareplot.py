"""The figure of `wsemoe compare`: per common group, each folder's best metric as a bar, labelled with its
ratio to the first folder and with what binds it; the title states the span of those ratios and in how many groups
each later folder is the better."""

from __future__ import annotations

import numpy as np
from matplotlib import rc_context, ticker
from matplotlib.figure import Figure

from wsemoe.report.figures.style import (ENG_UNITS, PALETTE, SINGLE, STYLE, group_label, label, name, outside_legend,
                                         scale, setting, single)
from wsemoe.wording import count

MAX_GROUPS = 24  # more groups than this are listed in the table; the figure shows the first ones


def figure(cmp) -> Figure:
    """Grouped bars of the metric (best feasible point per group and folder)."""
    with rc_context(STYLE):
        return _figure(cmp)


def _figure(cmp) -> Figure:
    table = cmp.table.head(MAX_GROUPS)
    n, k = len(table), len(cmp.labels)
    cols = [f"{lab}:{cmp.metric}" for lab in cmp.labels]
    values = table[cols].to_numpy(dtype=float) if n else np.zeros((0, k))
    factor, _ = scale(cmp.metric, values.ravel())
    shown = f"{n} of {len(cmp.table)} groups" if len(cmp.table) > n else count(n, "group")
    fixed = ", ".join(setting(c, v) for c, v in cmp.fixed.items())
    sub = (f"best feasible point per group ({', '.join(name(g) for g in cmp.varying) or 'the whole sweep'}), "
           f"{cmp.sense}imizing {name(cmp.metric)}; {shown}" + (f"; fixed: {fixed}" if fixed else "")
           + f"; labels: ratio to {cmp.labels[0]}, and what binds")
    fig, ax = single(f"compare: {_headline(table, cmp.labels, cmp.metric, cmp.sense)}",
                     height=max(SINGLE[1], 3.2 + 0.22 * n * k ** 0.5), subtitle=sub)
    width = 0.8 / k
    for j, lab in enumerate(cmp.labels):
        x = np.arange(n) + (j - (k - 1) / 2) * width
        y = values[:, j] * factor
        ax.bar(x, y, width, color=PALETTE[j % len(PALETTE)], label=lab)
        bound = table.get(f"{lab}:bound")
        for i in range(n):
            if not np.isfinite(y[i]):
                continue
            ratio = "" if j == 0 else f"{values[i, j] / values[i, 0]:.2f}×\n"
            what = str(bound.iloc[i]).split(":")[-1] if bound is not None else ""
            ax.annotate(f"{ratio}{what}", (x[i], y[i]), xytext=(0, 2), textcoords="offset points", ha="center",
                        va="bottom", fontsize=7 if n * k > 12 else 8)
    keys = [tuple(r) for r in table[cmp.varying].to_numpy()] if cmp.varying else [()] * n
    ax.set_xticks(range(n), [group_label(cmp.varying, key) or "all" for key in keys],
                  rotation=30 if n > 4 else 0, ha="right" if n > 4 else "center")
    ax.grid(axis="x", visible=False)
    ax.set_ylim(0, np.nanmax(values * factor) * 1.25 if n and np.isfinite(values).any() else 1)
    ax.set_ylabel(label(cmp.metric, values.ravel()))
    if scale(cmp.metric)[1] in ENG_UNITS:
        ax.yaxis.set_major_formatter(ticker.EngFormatter(sep=""))
    outside_legend(fig, most=min(k, 4), frameon=False)
    return fig


def _headline(table, labels: list[str], metric: str, sense: str) -> str:
    """The title's finding, from the bars drawn: each later folder's best against the first's, the span of the ratios
    over the groups and in how many it is the better ('on_cs3's best MFU is 1.10–1.35× on_cs2's, better in all 2
    groups'); better by `sense` (a step time 0.8× the first's is the better)."""
    parts = []
    for lab in labels[1:]:
        col = f"{lab}/{labels[0]}:{metric}"
        r = table[col].to_numpy(dtype=float) if col in table else (
            table[f"{lab}:{metric}"].to_numpy(dtype=float) / table[f"{labels[0]}:{metric}"].to_numpy(dtype=float))
        r = r[np.isfinite(r)]
        if not len(r):
            parts.append(f"{lab} and {labels[0]} share no group with a best {name(metric)}")
            continue
        lo, hi = f"{r.min():.2f}×", f"{r.max():.2f}×"
        better = int(((r > 1) if sense == "max" else (r < 1)).sum())
        parts.append(f"{lab}'s best {name(metric)} is {lo if lo == hi else f'{lo[:-1]}–{hi}'} {labels[0]}'s"
                     + (f", better in {'all' if better == len(r) else 'none of the' if not better else f'{better} of'} "
                        f"{count(len(r), 'group')}" if len(r) > 1 else ""))
    return "; ".join(parts) or f"best {name(metric)} of {labels[0]}"
