"""Robustness figure: a comparison's ratio under the readings (the modelling choices no source pins).

Drawn from results/<name>/readings/ (`wsemoe readings`, or `wsemoe sweep` of a sweep with a comparison). Left: at
the group the claim is read at (the largest ratio as configured), the ratio as configured, at the default
readings, with each reading moved alone, and over every combination (dots), on a log axis with a line at 1.
Right: every group's range over the combinations, with the configured and default values marked.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterator

import numpy as np
from matplotlib.figure import Figure

from wsemoe.analysis.uncertainty import robustness
from wsemoe.report.figures.claims import caption
from wsemoe.report.figures.style import DOUBLE, PALETTE, SLICE_SYMBOLS, outside_legend, ratio_ticks
from wsemoe.report.figures.view import ResultsView
from wsemoe.wording import span

STEMS = ("readings_robustness",)
CLAIMS = {"readings_robustness": "The comparison's verdict (its ratio on one side of 1) does not depend on the "
                                 "modelling choices no source pins (the readings)"}
COLUMNS = ()  # drawn from the readings folder, not from the points
AHEAD, EVEN, BEHIND = PALETTE[2], PALETTE[7], PALETTE[3]


def figures(view: ResultsView) -> Iterator[tuple[str, Figure | None]]:
    """(stem, figure) pairs, each built when asked for; None without a readings analysis of a comparison."""
    yield "readings_robustness", robustness_figure(view)


def _short(group: str) -> str:
    """'top-k 8' for 'num_experts_per_tok=8' (the symbols other figures use)."""
    names = {k.split(".")[-1]: v for k, v in SLICE_SYMBOLS.items()}
    return ", ".join(f"{names.get(k, k)} {v}" if v else k for k, _, v in (p.partition("=") for p in str(group).split(", ")))


def _keys(group: str) -> list[str]:
    """The names of a group's settings ('model', 'tokens/device'), as `_short` shows them."""
    names = {k.split(".")[-1]: v for k, v in SLICE_SYMBOLS.items()}
    return [names.get(k, k) for k, _, _ in (p.partition("=") for p in str(group).split(", "))]


def _values(group: str) -> list[str]:
    """The values of a group's settings ('deepseek-v3', '256')."""
    return [v or k for k, _, v in (p.partition("=") for p in str(group).split(", "))]


def _axis_label(cmp: dict) -> str:
    return f"{cmp['metric']}: best ÷ best {cmp['name']} (ratio, log scale)"


def _colour(x: float) -> str:
    return {"ahead": AHEAD, "even": EVEN, "behind": BEHIND}.get(robustness.side(x), "0.6")


def _rows(result, group: str, quantity: str) -> list[tuple[str, list[float]]]:
    """(label, values) from top to bottom: configured, default readings, each reading moved alone, all."""
    d = result.values[(result.values["quantity"] == quantity) & (result.values["group"] == group)].merge(
        result.runs, on="run")
    defaults = {s["name"]: s["default"] for s in result.meta["readings"]}
    fact = d[robustness.population(d).to_numpy()]
    dflt = fact
    for n in result.varied:
        dflt = dflt[dflt[n].astype(str) == str(defaults[n])]
    rows = [("as configured", d.loc[d["role"] == "configured", "value"].tolist()),
            ("default readings", dflt["value"].tolist())]
    rows += [(lab, [v]) for lab, v in zip(d.loc[d["role"] == "alone", "label"], d.loc[d["role"] == "alone", "value"])]
    rows.append((f"all {robustness.runs_word(result, len(fact))}", fact["value"].tolist()))
    return rows


SIDE_WORDS = {"ahead": "candidate ahead", "behind": "baseline ahead", "even": "within 0.5% of 1"}   # as the legend


def _left(ax, result, row, quantity: str) -> None:
    rows = _rows(result, row["group"], quantity)
    y = np.arange(len(rows))[::-1]
    for yi, (label, vals) in zip(y, rows):
        vals = [v for v in vals if np.isfinite(v) and v > 0]
        if not vals:  # every run of the row undefined (a side cannot run): said on the row, no marker
            ax.annotate("undefined: a side cannot run", (0.02, yi), xycoords=("axes fraction", "data"),
                        va="center", fontsize=8, color="0.4", bbox={"fc": "white", "ec": "none", "pad": 1})
            continue
        jitter = np.linspace(-0.25, 0.25, len(vals)) if len(vals) > 1 else [0.0]
        ax.scatter(vals, yi + np.asarray(jitter), s=36 if len(vals) == 1 else 14, zorder=3,
                   color=[_colour(v) for v in vals], edgecolor="black" if len(vals) == 1 else "none", lw=0.6)
    ax.axvline(1.0, color="black", lw=1.0, ls="--", label="ratio 1 (no difference)")
    ax.set_yticks(y, [label for label, _ in rows])
    ax.set_xscale("log")
    ratio_ticks(ax, "x", [v for _, vals in rows for v in vals])
    ax.set_xlabel(_axis_label(result.meta["comparison"]))
    runs = [v for _, vals in rows for v in vals if np.isfinite(v) and v > 0]
    ax.set_title(f"at {_short(row['group'])}: each run" + (f" (all {_negligible(runs)})" if _negligible(runs) else ""),
                 fontsize=9)
    for colour, text in ((AHEAD, SIDE_WORDS["ahead"]), (EVEN, SIDE_WORDS["even"]), (BEHIND, SIDE_WORDS["behind"])):
        ax.scatter([], [], color=colour, s=20, label=text)


def _negligible(values) -> str:
    """'within 1.000×–1.002×: a negligible spread' when every value lies within the tie band of the others
    (the axis then spans a percent or two, and its points read as a spread they are not); '' otherwise."""
    lo, hi = (min(values), max(values)) if len(values) else (np.nan, np.nan)
    if not (np.isfinite(lo) and lo > 0 and hi / lo - 1 < robustness.TIE):
        return ""
    return (f"within {lo:.3f}×–{hi:.3f}×: a negligible spread, under the {100 * robustness.TIE:g}% read as no "
            "difference")


def _right(ax, summary, quantity: str, cmp: dict, over: str = "the combinations") -> None:
    d = summary[summary["quantity"] == quantity].reset_index(drop=True)
    x = np.arange(len(d))
    ax.vlines(x, d["low"], d["high"], color="0.5", lw=6, alpha=0.5, label=f"range over {over}")
    ax.scatter(x, d["configured"], marker="o", color=PALETTE[0], zorder=3, label="as configured")
    ax.scatter(x, d["default"], marker="D", facecolor="none", edgecolor=PALETTE[1], lw=1.5, zorder=4,
               label="default readings")
    ax.axhline(1.0, color="black", lw=1.0, ls="--")
    for xi in x[d["low"].isna().to_numpy()]:   # every run undefined (a side cannot run): said, not left blank
        ax.annotate("undefined", (xi, 1.0), ha="center", va="center", rotation=90, fontsize=7, color="0.4",
                    bbox={"fc": "white", "ec": "none", "pad": 1})
    ax.set_xlim(-0.6, len(d) - 0.4)   # every group's slot, an undefined last one too (data limits ended before it)
    ax.set_yscale("log")
    ratio_ticks(ax, "y", [*d["low"], *d["high"], *d["configured"], *d["default"]])
    # Few groups: each label in full on lines of its own. Many: the values only, on one slanted line each, the
    # names said once in the axis label (slanted multi-line labels of 18 groups overlapped one another, and full
    # names turned upright took most of the figure's height).
    # Groups named by the same settings show their values alone at any count (five 'tokens/device 1' … labels
    # ran into one another), the names said once in the axis label.
    keys = _keys(d["group"].iloc[0]) if len(d) else []
    same = bool(keys) and all(_keys(g) == keys for g in d["group"])
    many = len(d) > 5
    parts = [_values(g) for g in d["group"]]
    outer = [" · ".join(p[:-1]) for p in parts]
    runs = sum(1 for i in range(len(outer)) if i == 0 or outer[i] != outer[i - 1])
    if (many or same) and len(keys) > 1 and runs == len(set(outer)) < len(d):   # each outer value one run of groups
        _nested_ticks(ax, x, [p[-1] for p in parts], outer)
        ax.set_xlabel(f"{keys[-1]}, grouped by {' · '.join(keys[:-1])}")
    elif many or same:
        values = [" · ".join(p) for p in parts]
        slant = many or max(map(len, values)) * len(d) > 36
        ax.set_xticks(x, values, **({"rotation": 40, "ha": "right", "rotation_mode": "anchor"} if slant else {}))
        ax.set_xlabel(" · ".join(keys))
    else:
        ax.set_xticks(x, [_short(g).replace(", ", "\n") for g in d["group"]])
    ax.set_ylabel("ratio (log scale)")
    ax.set_title("every group: range, one reading at a time" if over != "the combinations"
                 else "every group: range over the combinations", fontsize=9)


def _nested_ticks(ax, x, inner: list[str], outer: list[str]) -> None:
    """Each group's last value as its tick label (turned upright when many), each run of groups sharing the other
    values named once below them, runs parted by light lines: 18 'model · tokens/device' labels slanted ran into
    one another, and all but 3 were dropped as overlapping."""
    turned = max(map(len, inner)) * len(inner) > 36
    ax.set_xticks(x, inner, fontsize=8, rotation=90 if turned else 0)
    starts = [i for i in range(len(outer)) if i == 0 or outer[i] != outer[i - 1]]
    ends = [*starts[1:], len(outer)]
    ax.set_xticks([(a + b - 1) / 2 for a, b in zip(starts, ends)], [outer[a] for a in starts], minor=True)
    ax.xaxis.remove_overlapping_locs = False   # a run's middle may sit on a group's tick: keep both labels
    depth = 8 * (0.62 * max(map(len, inner)) if turned else 1.2)   # points the inner labels reach down
    ax.tick_params(axis="x", which="minor", length=0, pad=depth + 8, labelsize=8.5)
    for a in starts[1:]:
        ax.axvline(a - 0.5, color="0.75", lw=0.8, zorder=0)


def robustness_figure(r: ResultsView) -> Figure | None:
    result = r.readings
    cmp = (result.meta.get("comparison") or {}) if result is not None else {}
    if not cmp or not result.varied:
        return None
    quantity = cmp["quantity"]
    summary = robustness.summarize(result)
    row = robustness.headline(summary, quantity)
    if row is None:
        return None
    fig = Figure(figsize=(DOUBLE[0], 2.6 + 0.32 * (len(result.runs[result.runs["role"] == "alone"]) + 3)),
                 layout="constrained")
    left, right = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1.25, 1]})
    _left(left, result, row, quantity)
    screen = robustness.screened(result)
    _right(right, summary, quantity, cmp, "the runs one reading at a time" if screen else "the combinations")
    outside_legend(fig, *_handles(left, right), most=4, frameon=False)
    side = SIDE_WORDS.get(robustness.side(row["configured"]), "undefined")
    claim = (f"As configured: {cmp['metric']} {robustness.ratio(row['configured'])} ({side}); default readings "
             f"{robustness.ratio(row['default'])}; readings varied: {', '.join(result.varied)}; hinges on "
             f"{row['hinge'] or 'none'}. Every run re-tunes both sides.")
    # the title leads with the finding (it asked 'is the comparison robust to the readings?' and left the answer
    # to the lines below)
    held = ("holds in every " + ("reading moved alone" if screen else "combination of the readings")) \
        if row["flipped"] == 0 else f"flips in {row['flipped']} of {robustness.runs_word(result, row['combinations'])}"
    head = (f"{r.name}: the {cmp['name']} comparison at {_short(row['group'])} {held} "
            f"({span(robustness.ratio(row['low']), robustness.ratio(row['high']))})")
    fig.suptitle(head + "\n" + "\n".join(textwrap.wrap(claim, 120)))
    said = robustness.statement(result, summary, quantity)[:2]  # the headline group, then every group
    if _negligible([row["low"], row["high"]]):   # '1.00×–1.00×' alone did not say the spread is nothing to read
        said.insert(1, f"At {_short(row['group'])} every run lies {_negligible([row['low'], row['high']])}")
    verdict = ". ".join(said)
    if row["flipped"]:
        verdict += (f". It flips in {row['flipped']} of {robustness.runs_word(result, row['combinations'])}: here the "
                    "data do not bear the claim out")
    return caption(fig, CLAIMS["readings_robustness"], verdict + ".")


def _handles(*axes):
    """Legend entries of every panel, once each."""
    seen: dict = {}
    for ax in axes:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            seen.setdefault(lab, h)
    return list(seen.values()), list(seen)
