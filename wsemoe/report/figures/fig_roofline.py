"""Roofline per stage: each design's attention, MoE, dense-FFN and head stages placed by arithmetic intensity
(FLOP per byte on their weight path) and attained FLOP/s under the hardware's roof (peak compute, and the
bandwidth of the weight path: the wafer I/O when weights stream, node memory when they are resident).

A stage's compute roof is its own `<stage>_roof_flops`: the 16-bit peak, or higher where its matmuls run in
fp8/fp4 at their formats' peaks (the FLOP-weighted harmonic mean of the peaks its matmuls run at)."""

from __future__ import annotations

import numbers
import textwrap
from collections.abc import Iterator
from types import SimpleNamespace

import numpy as np
import pandas as pd
from matplotlib import patheffects, ticker
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from wsemoe.report.figures.claims import caption
from wsemoe.report.figures.style import (PALETTE, SINGLE, SUB_COLOUR, SUB_SIZE, SYMBOLS, heading, name,
                                         outside_legend, setting, share_text)
from wsemoe.report.figures.textfit import keep_clear, marker_label
from wsemoe.report.figures.view import ResultsView
from wsemoe.specs.hardware import mac_rate
from wsemoe.sweep.compare import best_rows
from wsemoe.wording import number

STEMS = ("roofline",)
STAGES = {"attention": "attention", "moe": "MoE (router + experts)", "dense_ffn": "dense FFN", "head": "output head"}
# a stage's own roofline terms (communication comes after them); at PE level (hardware.pe_fabric) also the weights'
# stream through the fabric's edge (a weight path) and the stage on its PE regions (its compute, as placed)
TERMS = ("compute", "weights", "hbm", "memory", "edge", "regions")
COMPUTE_TERMS = ("compute", "regions")
STAGE_COLUMNS = tuple(f"{s}_{c}" for s in STAGES for c in ("hw_flops", "traffic_bytes", "roof_flops", "time_s"))
# a stage's own terms and kernel launches (the best design's hollow marker)
TERM_COLUMNS = tuple(f"{s}_{t}_s" for s in STAGES for t in (*TERMS, "launch"))
# The view holds only what every figure uses: the stage columns are read for the drawn designs alone
# (`ResultsView.rows`), a few hundred per system, not for every point (16 columns of 1.2 M points took 0.9 s).
COLUMNS = ()
CLAIMS = {"roofline": "Every stage sits under its hardware's roof: on the sloped part it is bound by its weight path "
                      "(wafer I/O or node memory), on the flat part by compute; how far below the roof it sits is what "
                      "it leaves unused"}
# a white outline under a stage label: readable where it lies on the roof line or a column of dots of its colour
HALO = [patheffects.withStroke(linewidth=2.5, foreground="white")]
MAX_POINTS = 300   # designs drawn per system (sampled with a fixed seed; the best always)
MAX_PANELS = 4
LABEL_NEAR = 0.6   # decades (both axes) within which a stage label would sit on an earlier marker
SAME = 0.02        # decades (both axes, about a marker's width) within which two best markers coincide


def figures(view: ResultsView) -> Iterator[tuple[str, Figure | None]]:
    """(stem, figure) pairs, each built when asked for; None where the data does not support the figure."""
    yield "roofline", roofline(view)


def roof(hw: dict) -> tuple[float, float, float, str]:
    """(16-bit peak FLOP/s of all nodes, matmul efficiency, weight-path bandwidth in bytes/s, its name) of a
    hardware."""
    wafers = hw.get("wafers") or (1, 1)
    nodes = hw["rows"] * hw["cols"] * wafers[0] * wafers[1]
    if hw.get("weight_source") == "streamed":
        return nodes * hw["node_peak_flops"], hw["matmul_efficiency"], hw["io_in_bw_bytes_per_s"], "wafer I/O in"
    return (nodes * hw["node_peak_flops"], hw["matmul_efficiency"], nodes * hw["node_memory_bw_bytes_per_s"],
            "node memory, all nodes")


def placed(df: pd.DataFrame, stage: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(arithmetic intensity in FLOP/byte, attained FLOP/s as run, attained over the stage's own roofline time and
    kernel launches without communication, the stage's compute roof in FLOP/s) of one stage at every row."""
    flops = df[f"{stage}_hw_flops"].to_numpy(dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        ai = flops / df[f"{stage}_traffic_bytes"].to_numpy(dtype=float)
        terms = [df[f"{stage}_{t}_s"].to_numpy(dtype=float) for t in TERMS if f"{stage}_{t}_s" in df]
        core = np.nanmax(np.stack(terms), axis=0) if terms else np.full(len(df), np.nan)
        if f"{stage}_launch_s" in df:
            core = core + df[f"{stage}_launch_s"].to_numpy(dtype=float)
        return (ai, flops / df[f"{stage}_time_s"].to_numpy(dtype=float), flops / core,
                df[f"{stage}_roof_flops"].to_numpy(dtype=float))


def sram_bound(hw: dict) -> bool:
    """Whether the hardware's compute peak is its PEs' SRAM bandwidth feeding their MACs, not their SIMD width
    (CS-3 under the pe_mac_rate reading sram_bound): a stage on its compute roof is then read as SRAM-bound."""
    pe = hw.get("pe") or {}
    return "fmac_width" in pe and bool(mac_rate(SimpleNamespace(**pe)) < pe["fmac_width"])


def _reading(b_ai: float, bw: float, b_top: float, path: str, bound: str, sram: bool) -> str:
    """'node-memory slope, compute-bound': which roof a stage's share is of (the weight-path slope left of its
    ridge, the compute roof right of it) and what binds it as timed. A stage left of the ridge read
    '40% (compute)', a share of the sloped roof named after the flat one."""
    roof = f"{path.split(',')[0].removesuffix(' in').replace(' ', '-')} slope" if b_ai * bw < b_top else "compute roof"
    bound = "SRAM-bound" if bound == "compute" and sram else f"{bound.replace(' ', '-')}-bound"
    return f"{roof}, {bound}"


def _binds(best: pd.Series, stage: str, ideal: str) -> str:
    """What bounds a stage of the best design as the model times it: its compute term or the longest of its
    weight-path terms (the matmul efficiency lowers the compute roof, so a stage left of the ideal ridge can still
    be compute-bound); `ideal`, the side of the ideal ridge, where the terms are not recorded."""
    def side(names):
        return [float(best[c]) for c in (f"{stage}_{t}_s" for t in names) if c in best and pd.notna(best[c])]

    path, compute = side(t for t in TERMS if t not in COMPUTE_TERMS), side(COMPUTE_TERMS)
    if not path or not compute:
        return ideal
    return "compute" if max(compute) >= max(path) else "weight path"


def roofline(r: ResultsView) -> Figure | None:
    """One panel per hardware: sampled feasible designs' stages, the best design's stages marked and named."""
    if not all(c in r.points or c in r.manifest.get("columns", {}) for c in STAGE_COLUMNS):
        return None
    every = _systems(r)
    systems = every[:MAX_PANELS]
    if not systems:
        return None
    fig = Figure(figsize=(max(SINGLE[0], 5.2 * len(systems)), SINGLE[1] + 1.4), layout="constrained")
    axes = fig.subplots(1, len(systems), squeeze=False)[0]
    drawn, raised, said, hollow = set(), False, [], False
    for ax, (label, df, hw) in zip(axes, systems):
        stages, above, parts, any_hollow = _panel(ax, r, label, df, hw)
        drawn, raised, hollow = drawn | stages, raised or above, hollow or any_hollow
        said += [(label, p) for p in parts]
    handles = [Line2D([], [], ls="", marker="o", color=PALETTE[i], label=STAGES[s]) for i, s in enumerate(STAGES)
               if s in drawn]
    handles += [Line2D([], [], color="0.15", lw=1.6, label="roof: weight-path bandwidth, then peak compute"),
                Line2D([], [], color="0.15", lw=1, ls="--", label="16-bit peak × matmul efficiency")]
    if raised:
        handles.append(Line2D([], [], color="0.45", lw=1, ls="-.",
                              label="16-bit peak (fp8/fp4 matmuls raise their stage's roof above it)"))
    handles.append(Line2D([], [], ls="", marker="o", ms=9, color="0.3", mec="k", label="best design, as run"))
    if hollow:   # an entry for a marker no panel draws sends the reader looking for it
        handles.append(Line2D([], [], ls="", marker="o", ms=9, mfc="none", mec="0.3",
                              label="best design, without its communication"))
    outside_legend(fig, handles, most=2 if len(systems) == 1 else 3, frameon=False)
    title = (f"one layer, one micro-batch; small dots: designs, large: the best by {name(r.metric)}"
             + (f"; the first {MAX_PANELS} of {len(every)} hardware" if len(every) > MAX_PANELS else ""))
    left = _left_out(r)
    if left:  # said on the figure too, not only in its caption: a reader of the image alone sees why
        title += f"; {left.split('. ')[0].strip().replace('Not drawn', 'not drawn')}, the caption says why"
    heading(fig, f"{r.name}: {_headline(said)}", title)
    return caption(fig, CLAIMS["roofline"], _verdict(said) + _left_out(r))


def _headline(said: list) -> str:
    """The title's finding: the span of the best designs' stages' shares of their roofs, and which stage of which
    system reaches the highest share ('the best designs' stages reach 2–83% of their roofs (highest: output head,
    dgx-b200-x32)')."""
    if not said:
        return "each stage under its hardware's roof"
    shares = [share for _, (_, share) in said]
    label, (text, top) = max(said, key=lambda p: p[1][1])
    span = share_text(min(shares)).removesuffix("%") + "–" + share_text(top) if len(said) > 1 else share_text(top)
    above = sum(share > 1.005 for share in shares)   # the verdict's rule of 'above the roof'
    stage = next(n for n in (v.split(" (")[0] for v in STAGES.values()) if text.startswith(n))  # as _panel words it
    return (f"the best designs' stages reach {span} of their roofs (highest: {stage}, {label})"
            + (f"; {above} above it" if above else ""))


def _left_out(r: ResultsView) -> str:
    """' Not drawn: cs3 (SRAM serving ...).': hardware a sweep is about but the figure has no roof for is named,
    never silently missing (cerebras_serving's roofline showed only its GPU baselines)."""
    pts = r.feasible if len(r.feasible) else r.points
    if "hardware.weight_source" not in pts or "hardware" not in pts:
        return ""
    sram = pts["hardware.weight_source"].astype(str) == "sram"
    names = [str(h) for h in pd.unique(pts.loc[sram, "hardware"])]
    return (f" Not drawn: {', '.join(names)} serving from SRAM. Its weights never move: every MAC reads its "
            "operands from its own PE's SRAM, so every stage has one and the same intensity and the PEs' MAC rate as "
            "its roof, and what bounds a token there is the fabric (hop latency, link bandwidth; the serving_wafers "
            "figure and `wsemoe eval` break it down), which a FLOP-per-byte roofline cannot place." if names else "")


OF_ROOF = ("of its roof (the attainable rate at its intensity: the weight-path slope left of the ridge, the compute "
           "roof right of it)")


def _verdict(said: list) -> str:
    """What the best design of each system shows: each stage's share of its roof and what bounds it, and whether
    every stage is under its roof (a share above 100% would contradict the claim, and says so)."""
    above = [f"{label} {text}" for label, (text, share) in said if share > 1.005]
    by = {}
    for label, (text, _) in said:
        by.setdefault(label, []).append(text)
    shares = "; ".join(f"{label}: {', '.join(parts)}" for label, parts in by.items())
    if above:
        return (f"The best design of each system reaches, {OF_ROOF}: {shares}. Above the roof: {', '.join(above)}: "
                "here the data do not bear the claim out.")
    return f"The best design of each system reaches, {OF_ROOF}: {shares}; every stage drawn is under its roof."


def _systems(r: ResultsView) -> list[tuple[str, pd.DataFrame, dict]]:
    """(label, rows, hardware fields) per hardware of the results: feasible rows, or every row when none is."""
    pts = r.feasible if len(r.feasible) else r.points
    if "hardware.weight_source" in pts:   # SRAM serving has no node-level stages to place under a roof
        pts = pts[pts["hardware.weight_source"].astype(str) != "sram"]
    groups = pts.groupby("hardware", observed=True, sort=False) if "hardware" in r.axes else [(None, pts)]
    out = []
    for key, df in groups:
        hw = r.sections(ResultsView.first_row(df))["hardware"] if len(df) else {}
        if {"rows", "cols", "node_peak_flops"} <= set(hw):   # without the config there is no roof to draw
            out.append((str(key if key is not None else hw.get("name", "hardware")), df, hw))
    return out


def _stages(r: ResultsView, df: pd.DataFrame) -> list[str]:
    """Stages that run: the dense FFN only when some model of the rows has dense layers."""
    models = pd.unique(df["model"]) if "model" in df else [None]
    dense = any(r.sections({"model": m} if m is not None else {})["model"].get("first_k_dense_replace", 0)
                for m in models)
    return [s for s in STAGES if s != "dense_ffn" or dense]


def _panel(ax, r: ResultsView, label: str, df: pd.DataFrame, hw: dict) -> tuple[set, bool, list, bool]:
    """Draw one system's roof and stages, titled with what its best design shows; return the stages drawn,
    whether a stage's roof rises above the 16-bit peak (fp8/fp4 matmuls), (text, share of its roof) of each
    stage of the best design, and whether a hollow marker (the stage without its communication) is drawn."""
    peak, eff, bw, path = roof(hw)
    at = best_rows(df, [], r.metric).index[0] if r.metric in df else df.index[0]
    picked = df.sample(MAX_POINTS, random_state=0).index if len(df) > MAX_POINTS else df.index
    extra = r.rows([*picked, at], [*STAGE_COLUMNS, *TERM_COLUMNS])
    best = pd.concat([df.loc[at], extra.loc[at]])
    shown = df.loc[picked].join(extra[[c for c in STAGE_COLUMNS if c in extra]])
    ais, roofs, parts, drawn, lows, marks, labels, hollow, stacked = [], [peak], [], set(), [], [], [], False, []
    owners = []   # the stage whose label names each entry of marks
    for i, stage in enumerate(STAGES):
        if stage not in _stages(r, df):
            continue
        ai, run, _, top = placed(shown, stage)
        ok = np.isfinite(ai) & (ai > 0) & (run > 0)
        ax.scatter(ai[ok], run[ok], s=9, color=PALETTE[i], alpha=0.35, lw=0, rasterized=True)
        drawn, lows = (drawn | {stage}, [*lows, *run[ok]]) if ok.any() else (drawn, lows)   # in the legend if shown
        b_ai, b_run, b_core, b_top = (float(x[0]) for x in placed(best.to_frame().T, stage))
        if not (np.isfinite(b_ai) and b_ai > 0):
            continue
        ais, roofs, drawn, lows = [*ais, *ai[ok], b_ai], [*roofs, *top[ok], b_top], drawn | {stage}, [*lows, b_run]
        if b_core > b_run * 1.01:  # communication slows the stage: the hollow marker is its roofline alone
            ax.plot([b_ai, b_ai], [b_run, b_core], color=PALETTE[i], lw=1)
            ax.scatter([b_ai], [b_core], s=60, facecolor="none", edgecolor=PALETTE[i], lw=1.4, zorder=4)
            keep_clear(ax, b_ai, b_core, 60 ** 0.5 + 1.4, stage)   # no stage label on it (textfit places them)
            hollow = True
        # On an earlier best marker (dense FFN and output head often share a point): smaller, so the earlier one
        # stays a ring around it, and named after that one's label on its line (drawn the same size, it hid the
        # dense FFN's marker, whose label floated beside nothing)
        on = next((k for k, (x, y) in enumerate(marks) if abs(np.log10(b_ai / x)) < SAME and
                   abs(np.log10(b_run / y)) < SAME), None)
        # each further stage on the same point smaller again (60, 24, 8 pt²), drawn above the last: at TP 1
        # attention, dense FFN and output head coincide, and two markers of one size hid the dense FFN's
        inner = 0 if on is None else sum(1 for k in stacked if k == on) + 1
        stacked += [] if on is None else [on]
        ax.scatter([b_ai], [b_run], s=(60, 24, 8)[min(inner, 2)], color=PALETTE[i], edgecolor="k", lw=0.6,
                   zorder=5 + 0.5 * inner)
        # the outermost marker on the point: labels stay off it; on an earlier marker, it is named by that one's label
        keep_clear(ax, b_ai, b_run, 60 ** 0.5 + 0.6, stage if on is None else owners[on])
        if on is not None:
            labels[on] = ax.annotate(f" = {STAGES[stage].split(' (')[0]}", (1, 0), xycoords=labels[on], va="bottom",
                                     fontsize=8, color=PALETTE[i], path_effects=HALO)
            labels[on].wsemoe_chained = True   # textfit.separate_marker_labels keeps other labels off it
        else:
            # a label near an earlier one (within LABEL_NEAR decades both ways) goes up and left of its marker:
            # all to the lower right, the output head's label sat on the attention marker (cerebras_serving)
            near = sum(abs(np.log10(b_ai / x)) < LABEL_NEAR and abs(np.log10(b_run / y)) < LABEL_NEAR for x, y in marks)
            marks.append((b_ai, b_run))
            owners.append(stage)
            labels.append(marker_label(ax.annotate(
                STAGES[stage].split(" (")[0], (b_ai, b_run), xytext=(-7, 11 * near - 5) if near else (7, -9),
                textcoords="offset points", ha="right" if near else "left", fontsize=8, color=PALETTE[i],
                path_effects=HALO), stage))   # textfit.separate_marker_labels moves it off markers and labels
        side = _binds(best, stage, "weight path" if b_ai * bw < b_top else "compute")
        share = b_run / min(b_top, b_ai * bw)   # of the attainable rate at its intensity: the roof above it
        parts.append((f"{STAGES[stage].split(' (')[0]} {share_text(share)} "
                      f"({_reading(b_ai, bw, b_top, path, side, sram_bound(hw))})", share))
    if not ais:
        return drawn, False, [], False
    # A stage's roof is its FLOPs over Σ FLOPs/peak: at one format that is the peak up to round-off, which read
    # as "raised above the 16-bit peak" (a second, equal peak in the title and a legend line for nothing)
    top = max(roofs) if max(roofs) > peak * (1 + 1e-9) else peak
    _roof_lines(ax, peak, top, eff, bw, ais, min(lows, default=np.inf))
    ax.set_xlabel("arithmetic intensity (FLOP per byte on the weight path)")
    ax.set_ylabel("attained (FLOP/s, all nodes)")
    settings = ", ".join(_short(a, best[a]) for a in r.axes if a in best and a != "hardware" and pd.notna(best[a])
                         and (df[a] if a in df else r.points[a]).nunique() > 1)   # what varies on this panel
    claim = (f"best ({settings or 'the only design'}) reaches, of its roof: " + ", ".join(t for t, _ in parts)
             + f"; {len(shown):,} of {len(df):,} designs drawn")
    width = int(ax.get_position().width * ax.figure.get_figwidth() * 72 / (SUB_SIZE * 0.56))
    peaks = f"peak {_eng(peak)}FLOP/s" + (f" (16-bit), {_eng(top)}FLOP/s (a stage at its formats)"
                                          if top > peak else "")
    if sram_bound(hw):   # what 'SRAM-bound' in the shares below means
        peaks += ": the PEs' SRAM-bound MAC rate (pe_mac_rate reading)"
    rate = f"{_eng(bw)}B/s" if np.isfinite(bw) else "unbounded"
    nb = "\u00a0"   # no break between the bandwidth and what it is of: "all nodes / 576 TB/s" split them
    bound = f"{path.rsplit(' ', 1)[-1]} {rate}".replace(" ", nb)
    title = textwrap.wrap(f"{label}: {peaks}, {' '.join(path.split(' ')[:-1] + [bound])}",
                          int(width * SUB_SIZE / 9.5))
    claim = textwrap.wrap(claim, width, break_on_hyphens=False)   # 'compute-bound' read 'compute- bound'
    ax.set_title("\n".join(title), fontsize=9.5, pad=8 + SUB_SIZE * 1.3 * len(claim))
    ax.annotate("\n".join(claim), (0.5, 1.0), xycoords="axes fraction", xytext=(0, 5),
                textcoords="offset points", ha="center", va="bottom", fontsize=SUB_SIZE, color=SUB_COLOUR)
    return drawn, top > peak, parts, hollow


def _short(col: str, value) -> str:
    """'F 768': a setting by its symbol when it has one."""
    return (f"{SYMBOLS[col]} {number(value)}" if col in SYMBOLS and isinstance(value, numbers.Real)
            else setting(col, value))


def _roof_lines(ax, peak: float, top: float, eff: float, bw: float, ais: list, low: float) -> None:
    """The roof (bandwidth slope up to the ridge, then flat at the highest stage roof `top`), the 16-bit peak
    below it when formats raise `top`, and the 16-bit efficiency ceiling, on log axes reaching down to `low`
    (the lowest attained point drawn)."""
    ridge = top / bw   # 0 where the bandwidth is unbounded (an I/O left at its default): a flat roof
    lo = min([a for a in (*ais, peak / bw) if a > 0], default=1.0) / 4
    hi = max(max(ais, default=lo), ridge) * 4
    x = np.geomspace(lo, hi, 200)
    ax.plot(x, np.minimum(top, bw * x), color="0.15", lw=1.6, zorder=2)
    if top > peak:
        ax.plot(x, np.minimum(peak, bw * x), color="0.45", lw=1, ls="-.", zorder=2)
    ax.plot(x, np.minimum(peak * eff, bw * x), color="0.15", lw=1, ls="--", zorder=2)
    if ridge > 0:
        ax.axvline(ridge, color="0.6", lw=0.6, ls=":")
        ax.annotate(f"ridge {_eng(ridge)}FLOP/B", (ridge, top), xytext=(3, 4), textcoords="offset points",
                    fontsize=7.5, color="0.4")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(min(bw * lo, low / 2, top / 10), top * 2)
    eng = ticker.EngFormatter(sep="")
    ax.yaxis.set_major_formatter(eng)
    # intensity below 1 FLOP/B as a decimal: '100m' on a FLOP-per-byte axis read as 100 million, not 0.1
    ax.xaxis.set_major_formatter(ticker.FuncFormatter(lambda v, pos: number(v) if 0 < v < 1 else eng(v, pos)))
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_minor_locator(ticker.NullLocator())   # minor ticks over many decades cost seconds to lay out


PREFIXES = {-3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P", 18: "E", 21: "Z"}


def _eng(x: float) -> str:
    """'7.48 P': three significant digits, a no-break space and an SI prefix (the unit follows without a space)."""
    if not x or not np.isfinite(x):
        return f"{x:g} "
    e = int(np.clip(np.floor(np.log10(abs(x)) / 3) * 3, -3, 21))
    return f"{x / 10.0 ** e:.3g}\u00a0{PREFIXES[e]}"   # no break between a number and its unit
