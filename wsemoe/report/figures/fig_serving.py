"""SRAM serving figures: tokens per second per user against the wafers of the pipeline and the batch (per model),
and a region heat map of one MoE layer's dispatch link loads under each placement (blocked, interleaved)."""

from __future__ import annotations

from collections.abc import Iterator

import textwrap
from types import SimpleNamespace

import numpy as np
import pandas as pd
from matplotlib.colors import Normalize
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from wsemoe.cost.wafer import serving
from wsemoe.report.figures.claims import caption, changes, where
from wsemoe.report.figures.meshdraw import HEAT, draw_cells, draw_links, mesh_axes
from wsemoe.report.figures.style import DOUBLE, PALETTE, cue, heading, label, log2_ticks, setting
from wsemoe.report.figures.view import ResultsView
from wsemoe.sweep.compare import best_rows
from wsemoe.wording import number

PER_USER, WAFERS, BATCH = "tokens_per_s_per_user", "wafers", "workload.B"
STEMS = ("serving_wafers", "serving_heatmap_*")
DYNAMIC = ("serving_heatmap_*",)
COLUMNS = (PER_USER, WAFERS, "sram_bytes_per_pe", "attention_share", "hardware.*", "mapping.*", "workload.*")
KIND_C = {"attention": PALETTE[0], "expert": "0.86", "shared": PALETTE[5], "empty": "white"}
KIND_WORDS = {"attention": "attention", "expert": "routed expert", "shared": "shared expert", "empty": "unused tile"}
PANELS = 3   # models side by side
SAME = 0.005   # paths or links within ±0.5% count as unchanged in the heat map's title
CLAIMS = {"serving_wafers": "More wafers than the fewest that fit buy per-user speed (more PEs per region), until the "
                            "hops between wafers and longer reductions take it back; with many sequences the busiest "
                            "region's share of the stream binds instead",
          "serving_heatmap_*": "Interleaving attention among the experts shortens router-to-expert paths, at the price "
                               "of attention collectives across tiles that now lie apart"}


def figures(view: ResultsView) -> Iterator[tuple[str, Figure | None]]:
    """(stem, figure) pairs, each built when asked for; None where the data does not support the figure (no
    SRAM-serving point)."""
    rows = _serving_rows(view)
    if rows is None:
        yield "serving_wafers", None
        return
    yield "serving_wafers", per_user(view, rows)
    yield from heatmaps(view, rows)


def _serving_rows(view: ResultsView) -> pd.DataFrame | None:
    """The feasible SRAM-serving points, or None."""
    if not view.has(PER_USER, WAFERS):
        return None
    f = view.feasible
    f = f[np.isfinite(f[WAFERS].to_numpy(dtype=float))]
    return f if len(f) else None


def _slice(view: ResultsView, rows: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """Every axis but the model, batch, wafers and placement at one value: the shortest context."""
    said = []
    for col in view.axes:
        if col in ("model", BATCH) or col.startswith(("hardware", "mapping")) or rows[col].nunique() < 2:
            continue
        if "model" in rows and (rows.groupby("model", observed=True)[col].nunique() <= 1).all():
            continue   # zipped with the model (its weight formats): one value per model
        pick = rows[col].min() if col == "workload.seq_len" else rows[col].iloc[0]
        rows = rows[rows[col] == pick]
        said.append(setting(col, pick))
    return rows, ", ".join(said)


def per_user(view: ResultsView, rows: pd.DataFrame) -> Figure:
    """Per model: best tokens/s per user (over placement) against the wafers used, one line per batch."""
    rows, said = _slice(view, rows)
    models = list(pd.unique(rows["model"]))[:PANELS] if "model" in rows else [None]
    fig = Figure(figsize=(DOUBLE[0], 4.3), layout="constrained")
    axes = fig.subplots(1, len(models), squeeze=False)[0]
    batches = sorted(pd.unique(rows[BATCH]))
    hidden: dict = {}   # {batch drawn on top: {panel: [batches it hides]}}: equal speeds hide a line
    for ax, model in zip(axes, models):
        at = rows if model is None else rows[rows["model"] == model]
        best = at.groupby([BATCH, WAFERS], observed=True)[PER_USER].max().reset_index()
        for b, top in covered(best, batches):
            hidden.setdefault(top, {}).setdefault(model or "", []).append(b)
        for i, b in enumerate(batches):
            line = best[best[BATCH] == b].sort_values(WAFERS)
            ax.plot(line[WAFERS], line[PER_USER], **cue(i), label=f"B {number(b)}")
        log2_ticks(ax, _spaced(sorted(pd.unique(best[WAFERS]))))
        ax.set_xlabel("wafers in the pipeline")
        ax.set_title(model or _model_name(view, view.first_row(at)))
    axes[0].set_ylabel(label(PER_USER))
    # right of the panels: inside the last one, "best" still sat over a line (deepseek-v3's B 256), and below
    # them the claim line sits
    fig.legend(*axes[-1].get_legend_handles_labels(), loc="outside right center", title="sequences\nserved",
               frameon=False)
    heading(fig, f"{view.name}: {_wafers_headline(rows, models)}",
            view.subtitle(said, ("mapping.pe_placement",), "missing points do not fit" + _hidden_text(hidden)))
    fig.supxlabel(_claim_lines("serving_wafers"), fontsize=8.5)
    return caption(fig, CLAIMS["serving_wafers"], _wafers_verdict(rows, models))


def covered(best: pd.DataFrame, batches: list) -> list[tuple]:
    """(batch, the last-drawn batch whose line lies on all of its points) for each line another hides: per-user
    speed never rises with B, so small batches often run exactly as fast as a larger one."""
    lines = {b: best[best[BATCH] == b].set_index(WAFERS)[PER_USER] for b in batches}
    out = []
    for i, b in enumerate(batches):
        mine = lines[b]
        for top in reversed(batches[i + 1:]):
            over = lines[top].reindex(mine.index)
            if len(mine) and np.allclose(over.to_numpy(float), mine.to_numpy(float), rtol=1e-6):
                out.append((b, top))
                break
    return out


def _hidden_text(hidden: dict) -> str:
    """'; equal speeds: B 1, B 4 lie under B 16 (qwen3-235b-a22b, deepseek-v3)' for the lines drawn over."""
    parts = []
    for top, panels in hidden.items():
        below = sorted({b for bs in panels.values() for b in bs})
        where = ", ".join(p for p in panels if p)
        verb = "lie" if len(below) > 1 else "lies"
        parts.append(f"{', '.join(f'B {number(b)}' for b in below)} {verb} under B {number(top)}"
                     + (f" ({where})" if where else ""))
    return ("; equal speeds: " + "; ".join(parts)) if parts else ""


def _model_name(view: ResultsView, row: dict) -> str:
    """The model of a point: its model axis, else the model section's name (a sweep of one model)."""
    return row.get("model") or view.sections(row)["model"].get("name") or view.name


def _claim_lines(stem: str) -> str:
    """The figure's claim under it, on two lines of about equal length."""
    text = f"claim: {CLAIMS[stem]}"
    return "\n".join(textwrap.wrap(text, len(text) // 2 + 12))


def _wafers_verdict(rows: pd.DataFrame, models: list) -> str:
    """Per model and batch: the wafers of the best per-user speed, its gain over the fewest wafers that fit,
    and what the most wafers drawn keep of it."""
    labels, holds, values = [], [], []
    for model in models:
        at = rows if model is None else rows[rows["model"] == model]
        for b, line in at.groupby(BATCH, observed=True):
            best = line.groupby(WAFERS, observed=True)[PER_USER].max().sort_index()
            if len(best) < 2:
                continue
            top = best.idxmax()
            labels.append(f"{model + ', ' if model else ''}B {number(b)}")
            holds.append(top > best.index[0])
            gain = (f"best at {number(top)} wafers, {changes([best.max() / best.iloc[0] - 1])} over "
                    f"{number(best.index[0])}"
                    if top > best.index[0] else f"best at the fewest, {number(top)}")
            values.append(gain + (f", {changes([best.iloc[-1] / best.max() - 1])} at {number(best.index[-1])}"
                                  if best.index[-1] != top else ""))
    if not labels:
        return "Each model fits only one pipeline length here, so the claim is not tested."
    text = where(labels, holds, "more wafers buy per-user speed", "the fewest wafers are fastest", values)
    return text[:1].upper() + text[1:] + "."


def _wafers_headline(rows: pd.DataFrame, models: list) -> str:
    """The title's finding: in how many model-and-batch lines more wafers than the fewest that fit raise tokens/s
    per user, and the largest gain ('more wafers than the fewest raise tokens/s per user in 15 of 15 lines, at
    most +127% (deepseek-v3, B 1: 48 wafers against 19)'); a line: one model at one batch. A line's best, not its
    last, is set against its fewest: a line may peak and fall (the hops between wafers take the gain back)."""
    lines = []   # (gain of the best over the fewest wafers, its label, best wafers, fewest)
    for model in models:
        at = rows if model is None else rows[rows["model"] == model]
        for b, line in at.groupby(BATCH, observed=True):
            best = line.groupby(WAFERS, observed=True)[PER_USER].max().sort_index()
            if len(best) > 1:
                lines.append((best.max() / best.iloc[0], f"{model + ', ' if model else ''}B {number(b)}",
                              best.idxmax(), best.index[0]))
    if not lines:
        return "tokens/s per user against the pipeline's wafers (SRAM serving)"
    more = [ln for ln in lines if ln[2] > ln[3]]
    if not more:
        return "the fewest wafers that fit are fastest per user" + (f" in all {len(lines)} lines" if len(lines) > 1 else "")
    gain, label, top, fewest = max(more, key=lambda ln: ln[0])
    return (f"more wafers than the fewest raise tokens/s per user in {len(more)} of {len(lines)} lines, at most {changes([gain - 1])} "
            f"({label}: {number(top)} wafers against {number(fewest)})")


def _spaced(values: list) -> list:
    """Tick values at least 8% apart on a log scale (a pipeline of 31 wafers does not print over 32)."""
    out = []
    for v in values:
        if not out or v / out[-1] >= 1.08:
            out.append(v)
    return out


def heatmaps(view: ResultsView, rows: pd.DataFrame) -> Iterator[tuple[str, Figure]]:
    """(serving_heatmap_<model>, figure) at each model's best per-user point, blocked beside interleaved."""
    if not view.cfg:
        return
    for model, at in rows.groupby("model", sort=False, observed=True) if "model" in rows else [(None, rows)]:
        row = view.first_row(best_rows(at, [], PER_USER))
        maps = [m for m in (_placed(view, row, p) for p in ("blocked", "interleaved")) if m is not None]
        if maps:
            yield f"serving_heatmap_{model or view.name}", _heatmap(view, row, maps)


def _placed(view: ResultsView, row: dict, strategy: str) -> dict | None:
    """One MoE layer of the point's layout under `strategy`: tiles, PE-link wavelets per token of dispatch."""
    s = view.sections(row)
    s["mapping"]["pe_placement"] = strategy
    ns = {k: SimpleNamespace(**v) for k, v in s.items()}
    got = serving.placed_layer(ns["hardware"], ns["model"], ns["workload"], ns["mapping"],
                               float(row["sram_bytes_per_pe"]), float(row["attention_share"]), ns["balance"])
    if got is None:
        return None
    t, side = got
    return {"traffic": t, "side": side, "values": t.dispatch.all_links() * s["model"]["hidden_size"] / side}


def _kinds(p) -> np.ndarray:
    kind = np.full(p.tiles, "empty", dtype=object)
    kind[p.experts], kind[p.shared], kind[p.attention.ravel()] = "expert", "shared", "attention"
    return kind


def legend_kinds(maps: list) -> list:
    """The tile kinds the drawn placements hold, in KIND_C's order: a model without shared experts lists none,
    a fabric its tiles fill has no unused tile."""
    drawn = {k for m in maps for k in _kinds(m["traffic"].placement)}
    return [k for k in KIND_C if k in drawn]


def _heatmap(view: ResultsView, row: dict, maps: list) -> Figure:
    vmax = max(float(m["values"].max()) for m in maps) or 1.0
    norm = Normalize(vmin=vmax * 1e-9, vmax=vmax)
    fig = Figure(figsize=(DOUBLE[0], 5.2), layout="constrained")
    grid = fig.add_gridspec(2, len(maps), height_ratios=[1, 0.16])
    for i, m in enumerate(maps):
        ax, t = fig.add_subplot(grid[0, i]), m["traffic"]
        p = t.placement
        mesh_axes(ax, p.rows, p.cols)
        draw_cells(ax, p.rows, p.cols, [KIND_C[k] for k in _kinds(p)])
        q = draw_links(ax, p.rows, p.cols, m["values"], HEAT, norm, f"links-{p.strategy}")
        ax.set_title(f"{p.strategy}: longest dispatch path {t.hops * m['side']:.0f} PE hops\nbusiest PE link "
                     f"{m['values'].max():,.0f} wavelets/token; attention spans ×{p.stretch:.2g}", fontsize=9)
    bar = fig.add_subplot(grid[1, :])
    bar.axis("off")
    cb = fig.colorbar(q, cax=bar.inset_axes([0.05, 0.7, 0.55, 0.22]), orientation="horizontal", extend="min")
    cb.set_label("wavelets per PE link per token, dispatch (one layer); grey: idle")
    kinds = legend_kinds(maps)
    bar.legend([Patch(color=KIND_C[k], ec="0.4") for k in kinds], [KIND_WORDS[k] for k in kinds],
               loc="center right", ncol=2 if len(kinds) > 3 else len(kinds), frameon=False, fontsize=8)
    side = maps[0]["side"]
    heading(fig, f"{view.name}: {_heatmap_headline(_summary(maps))}",
            f"one MoE layer of {_model_name(view, row)} on the PE fabric (tiles of {side:.0f}×{side:.0f} PEs) at the "
            f"best per-user point: {setting(BATCH, row[BATCH])}, {number(row[WAFERS])} wafers, dispatch "
            f"{view.sections(row)['mapping'].get('pe_dispatch', 'multicast')}")
    fig.supxlabel(_claim_lines("serving_heatmap_*"), fontsize=8.5)
    return caption(fig, CLAIMS["serving_heatmap_*"], _paths_verdict(maps))


def _summary(maps: list) -> dict:
    """{placement: (longest dispatch path in PE hops, busiest PE link in wavelets/token, attention's stretch)}: the
    numbers each panel's title states."""
    return {m["traffic"].placement.strategy: (m["traffic"].hops * m["side"], float(m["values"].max()),
                                              float(m["traffic"].placement.stretch)) for m in maps}


def _heatmap_headline(summary: dict) -> str:
    """The title's finding, from the panels drawn ({placement: (path, busiest link, stretch)}, as `_summary`): what
    interleaving does to the longest dispatch path, to the busiest link, and the stretch of attention's collectives
    it costs ('interleaving attention shortens the longest dispatch path 880 → 495 PE hops (−44%); busiest PE link
    74 wavelets/token in both; attention's row collectives stretched ×2.5'); one placement alone is stated as is."""
    if not {"blocked", "interleaved"} <= set(summary):
        strategy, (path, link, _) = next(iter(summary.items()))
        return (f"only {strategy} placement fits: longest dispatch path {path:,.0f} PE hops, busiest PE link "
                f"{link:,.0f} wavelets/token")
    (bp, bl, _), (ip, il, stretch) = summary["blocked"], summary["interleaved"]

    def moved(before: float, after: float, unit: str) -> str:   # '880 → 495 PE hops (−44%)', or '74 … in both'
        if np.isclose(after, before, rtol=SAME):
            return f"{after:,.0f} {unit} in both"
        return f"{before:,.0f} → {after:,.0f} {unit} ({changes([after / before - 1])})"

    path = (f"shortens the longest dispatch path {moved(bp, ip, 'PE hops')}" if ip < bp * (1 - SAME) else
            f"does not shorten the longest dispatch path ({moved(bp, ip, 'PE hops')})")
    return (f"interleaving attention {path}; busiest PE link "
            f"{moved(bl, il, 'wavelets/token')}; attention's row collectives stretched ×{stretch:.2g}")


def _paths_verdict(maps: list) -> str:
    """The longest dispatch path (PE hops) of each placement drawn, and whether interleaving shortens it."""
    paths = {m["traffic"].placement.strategy: m["traffic"].hops * m["side"] for m in maps}
    text = ", ".join(f"{k} {v:,.0f}" for k, v in paths.items())
    if not {"blocked", "interleaved"} <= set(paths):
        return f"Longest dispatch path in PE hops: {text}; only one placement fits, so the claim is not tested."
    shorter = paths["interleaved"] < paths["blocked"]
    change = changes([paths["interleaved"] / paths["blocked"] - 1])
    return (f"Longest dispatch path in PE hops: {text} ({change} interleaved)"
            + ("." if shorter else ": not shorter, so here the data do not bear the claim out."))
