"""The one look of every plot: palette, sizes, matplotlib style, rendering to bytes (text fitted by `textfit`),
label/unit helpers (numbers in text by `wsemoe.wording.number`, as in every table and caption)."""

from __future__ import annotations

import io
import textwrap
import numpy as np
from cycler import cycler
from matplotlib import rc_context, ticker
from matplotlib.figure import Figure
from matplotlib.font_manager import FontProperties
from matplotlib.textpath import TextToPath

from wsemoe.arguments import choice
from wsemoe.report.figures.textfit import (fit_axis_labels, grouped_ticks, literal, literal_text,
                                           separate_marker_labels, thin_tick_labels)
from wsemoe.sweep.columns import describe
from wsemoe.wording import number

# Okabe-Ito: stays distinguishable under common colour-vision deficiencies and in greyscale print.
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000"]
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*"]  # second cue where lines of several designs coincide
LINESTYLES = ["-", "--", "-.", ":"]  # series whose lines coincide stay distinguishable
UNIFORM_C, BTA_C = PALETTE[3], PALETTE[0]
SINGLE, DOUBLE = (7.0, 4.5), (11.0, 4.5)
DPI = 200


def cue(i: int) -> dict:
    """Colour and marker of the i-th series: a pair no other of the first 64 shares (the marker steps on once per
    turn of the palette, so series 0 and 8 differ)."""
    return {"color": PALETTE[i % len(PALETTE)], "marker": MARKERS[(i + i // len(PALETTE)) % len(MARKERS)]}


STYLE = {
    "font.size": 10, "axes.titlesize": 11, "axes.labelsize": 10, "xtick.labelsize": 9, "ytick.labelsize": 9,
    "legend.fontsize": 8.5, "legend.title_fontsize": 8.5, "figure.titlesize": 11.5,
    "axes.grid": True, "grid.alpha": 0.3, "grid.linewidth": 0.6,
    "axes.spines.top": False, "axes.spines.right": False, "axes.prop_cycle": cycler(color=PALETTE),
    "svg.fonttype": "none",  # text stays text: SVGs remain editable and searchable
    "svg.hashsalt": "wsemoe",  # fixed element ids, so replotting the same results gives the same SVG
    "pdf.fonttype": 42,  # TrueType in PDFs: text stays text in journals' tools
}
FORMATS = ("png", "svg")  # what `wsemoe plot` writes by default
ALL_FORMATS = ("png", "svg", "pdf")
SUB_SIZE, SUB_COLOUR = 8.5, "0.3"  # subtitles: what a figure holds fixed and what it optimizes

SYMBOLS = {"model.num_experts": "E", "model.num_experts_per_tok": "k", "workload.B": "B", "workload.G": "G",
           "model.moe_intermediate_size": "F", "workload.seq_len": "S"}
NAMES = {"mfu": "MFU (fraction of peak)", "tokens_per_s": "throughput", "step_time_s": "step time",
         "mem_peak_node_bytes": "peak memory per node", "model.num_experts": "experts E",
         "model.num_experts_per_tok": "top-k k", "workload.G": "batch-tiling factor G",
         "workload.B": "attention batch B", "per_device_moe_tokens_per_s": "MoE-layer throughput per device",
         "moe_comm_s": "MoE communication per layer", "sequences_per_s": "sequences per second",
         "moe_layer_time_s": "MoE layer time", "expert_imbalance": "expert imbalance (busiest / mean)",
         "migration_exposed_s": "exposed migration per step", "workload.seq_len": "sequence length S",
         "mapping.tp": "TP group size", "balance.zipf_s": "Zipf exponent s", "model.moe_intermediate_size":
         "expert width F", "speedup_vs_uniform": "speedup over uniform batching",
         "tokens_per_s_per_user": "tokens per second per user", "wafers": "wafers in the pipeline"}
WORDS = {"moe": "MoE", "mem": "memory", "attn": "attention", "tp": "TP", "bta": "BTA", "kv": "KV", "mfu": "MFU",
         "flops": "FLOPs", "g": "constraint"}
# Short names of swept settings in titles and tick labels ("TP 4, B 256").
SLICE_SYMBOLS = {"model.num_experts_per_tok": "top-k", "workload.B": "B", "mapping.tp": "TP",
                 "mapping.strategy": "mapping", "workload.G": "G", "model.num_experts": "E",
                 "workload.tokens_per_device": "tokens/device", "mapping.token_source": "token source",
                 "mapping.ring_directions": "ring directions", "balance.balancer": "balancer",
                 "workload.comm_overlap": "overlap", "balance.replica_policy": "replicas",
                 "balance.migration_windows": "migration windows", "balance.skew_devices": "skew read on",
                 # the symbols the legends use ('k = 8, F = 768'): bta_topk_pe's bars read 'moe_intermediate_size 768'
                 "model.moe_intermediate_size": "F", "workload.seq_len": "S", "hardware.pe_fabric": "PE fabric",
                 "mapping.pe_dispatch": "PE dispatch", "mapping.pe_placement": "PE placement"}
BETTER = {"max": ", higher is better", "min": ", lower is better"}
ENG_UNITS = ("tokens/s", "sequences/s", "tokens", "FLOP", "FLOP/s")

# Communication phases: names, per-layer time columns and colours, shared by the mesh and comm figures.
PHASE_NAMES = {"allreduce": "all-reduce (attention TP; HER: + cross-wafer all-gather)", "dispatch": "dispatch (tokens to experts)",
               "combine": "combine (results back)", "reduce": "output reduction (partial outputs summed)"}
PHASE_COLS = {"allreduce": "attention_allreduce_s", "dispatch": "moe_dispatch_s", "combine": "moe_combine_s",
              "reduce": "moe_reduce_s"}
PHASE_C = {"allreduce": PALETTE[0], "dispatch": PALETTE[3], "combine": PALETTE[1], "reduce": PALETTE[5]}


def figure_bytes(fig: Figure, fmt: str) -> bytes:
    """A figure rendered to PNG, SVG or PDF bytes, in the plot style (no timestamps: the same results give
    the same bytes). Its text is made literal first (`literal_text`)."""
    choice(fmt, ALL_FORMATS, "--format")
    meta = {"svg": {"Date": None}, "pdf": {"CreationDate": None}, "png": None}[fmt]
    # zlib level 1, not 6: PNG encoding was half of rendering a heat map (0.13 of 0.29 s) and level 1 costs
    # a third of it, for files 5-13% larger (measured on a 16×16 heat map, a Pareto cloud and a roofline).
    extra = {"pil_kwargs": {"compress_level": 1}} if fmt == "png" else {}
    buf = io.BytesIO()
    with rc_context(STYLE):
        literal_text(fig)
        grouped_ticks(fig)
        fit_axis_labels(fig)
        thin_tick_labels(fig)
        separate_marker_labels(fig)
        fig.savefig(buf, format=fmt, dpi=DPI, metadata=meta, **extra)
    freeze_layout(fig)
    return buf.getvalue()


def freeze_layout(fig: Figure) -> None:
    """Keep the layout a figure was just drawn with: the layout engine is switched off (axes stay where it put
    them) and each legend placed at 'best' stays where that search put it. A figure is drawn once per format,
    and both took a quarter of each draw after the first (a 80-line legend's search alone 0.2 s); the layout is
    in figure fractions and text sizes in points, so it holds at any dpi."""
    from matplotlib.legend import Legend

    if fig.get_layout_engine() is not None:
        fig.set_layout_engine("none")
    for legend in fig.findobj(Legend):
        if legend._loc == 0 and legend.axes is not None:  # 'best': fixed at the lower-left corner it found
            box = legend.get_window_extent()
            legend._loc = tuple(legend.axes.transAxes.inverted().transform((box.x0, box.y0)))


def heading(fig: Figure, title: str, subtitle: str = "", ax=None) -> None:
    """The figure's title and, below it in smaller grey type, what it holds fixed and what it optimizes.

    With `ax` (one panel) both sit on the axes, so legends outside the axes cannot collide with them; the
    subtitle wraps to the narrowest plot a y label leaves. Without, both go in the figure title.
    """
    if ax is None:
        width = int(fig.get_figwidth() * 72 / (plt_size("figure.titlesize") * 0.56))   # at the suptitle's size
        # a title stating a finding can outrun the figure: each of its lines wrapped
        title = "\n".join(w for line in title.split("\n") for w in (textwrap.wrap(line, width) or [""]))
        fig.suptitle(f"{title}\n" + "\n".join(textwrap.wrap(subtitle, width)) if subtitle else title)
        return
    width = int(0.6 * fig.get_figwidth() * 72 / (SUB_SIZE * 0.56))  # characters per line
    sub = "\n".join(textwrap.wrap(subtitle, width)) if subtitle else ""
    lines = sub.count("\n") + 1 if sub else 0
    size = plt_size("axes.titlesize")
    title = "\n".join(textwrap.wrap(title, int(0.75 * fig.get_figwidth() * 72 / (size * 0.56))))
    ax.set_title(title, pad=6 + lines * SUB_SIZE * 1.25 + (4 if sub else 0))
    if sub:
        ax.annotate(sub, (0.5, 1.0), xycoords="axes fraction", xytext=(0, 5), textcoords="offset points",
                    ha="center", va="bottom", fontsize=SUB_SIZE, color=SUB_COLOUR)


def outside_legend(fig: Figure, handles=None, labels=None, most: int = 4, **kw):
    """The figure's legend below its panels, in as many columns (at most `most`) as fit across the figure:
    long labels in a fixed number of columns ran off the page (the Pareto legend of a 1.2 M-point sweep).
    Without `handles` and `labels`, those of every panel."""
    import math

    from matplotlib import rcParams

    if handles is None and labels is None:
        handles, labels = [], []
        for ax in fig.axes:
            h, lab = ax.get_legend_handles_labels()
            handles, labels = handles + h, labels + lab
    elif labels is None:
        labels = [h.get_label() for h in handles]
    size = plt_size("legend.fontsize")
    measure, font = TextToPath(), FontProperties(size=size)
    # measured as drawn: literal_text later shows a control character as its escape (the raw one has no glyph)
    widths = [measure.get_text_width_height_descent(literal(t), font, ismath=False)[0] for t in labels]
    entry = (rcParams["legend.handlelength"] + rcParams["legend.handletextpad"]) * size  # handle and gap, points
    gap = rcParams["legend.columnspacing"] * size
    room = fig.get_figwidth() * 72 - 2 * rcParams["legend.borderpad"] * size
    ncol = 1
    for n in range(max(1, min(most, len(labels))), 0, -1):
        rows = math.ceil(len(labels) / n)  # entries fill the columns one after another
        cols = [widths[k:k + rows] for k in range(0, len(widths), rows)]
        if sum(max(c) + entry for c in cols) + gap * (len(cols) - 1) <= room:
            ncol = n
            break
    return fig.legend(handles, labels, loc="outside lower center", ncols=ncol, **kw)


def plt_size(key: str) -> float:
    """A font size of the current style, in points."""
    from matplotlib import font_manager, rcParams

    return font_manager.FontProperties(size=rcParams[key]).get_size_in_points()


# ---------------------------------------------------------------- labels, units and scales

def scale(col: str, values=None) -> tuple[float, str]:
    """(factor, display unit): bytes as GB, seconds as s, ms or µs by the values' size; fractions (MFU) as
    fractions, as in every table and filter."""
    unit = describe(col)[0]
    if unit == "bytes":
        return 1e-9, "GB"
    if unit == "s" and values is not None:
        v = np.abs(np.asarray(values, dtype=float))
        v = v[np.isfinite(v) & (v > 0)]
        top = float(np.median(v)) if len(v) else 1.0
        return next(((1 / f, u) for f, u in ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs")) if top >= f), (1e9, "ns"))
    return 1.0, "" if unit in ("1", "bool") else unit


def name(col: str) -> str:
    """The readable name of a column: a written one, else its words with the unit suffix dropped."""
    if col in NAMES:
        return NAMES[col]
    base = col.split(".")[-1]
    for suffix in ("_node_bytes", "_bytes", "_per_s", "_s"):
        if base.endswith(suffix) and len(base) > len(suffix):
            base = base[: -len(suffix)] + (" per second" if suffix == "_per_s" else "")
            break
    return " ".join(WORDS.get(w, w) for w in base.split("_"))


def label(col: str, values=None) -> str:
    """Axis label of a column: its readable name and display unit."""
    unit = scale(col, values)[1]
    return f"{name(col)} ({unit})" if unit else name(col)


def amount(col: str, value: float) -> str:
    """A value of a column in words with its unit: '1.11 M tokens/s', '0.3748', '410 MB' → '0.41 GB', '12.3 µs'."""
    f, unit = scale(col, [value])
    x = float(value) * f
    if unit in ENG_UNITS:
        p, x = next(((p, x / d) for d, p in ((1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))
                     if abs(x) >= d), ("", x))
        return f"{number(x, 3)} " + (f"{p}{unit}" if unit[:1].isupper() else f"{p} {unit}" if p else unit)  # TFLOP
    return number(x, 4) + ("×" if unit == "×" else f" {unit}" if unit else "")


def pct(x: float) -> str:
    """Signed percentage with a typographic minus."""
    return f"{100 * x:+.0f}%".replace("-", "\u2212")


def share_text(x: float) -> str:
    """An unsigned share as a percentage; a positive one that rounds to 0 reads '<1%', never '0%'."""
    return "<1%" if x > 0 and f"{100 * x:.0f}" == "0" else f"{100 * x:.0f}%"


def group_label(cols, key) -> str:
    """'E = 8, k = 2': a design's values of `cols`, by symbol."""
    key = key if isinstance(key, tuple) else (key,)
    return ", ".join(f"{SYMBOLS.get(c, c.split('.')[-1])} = {number(v)}" for c, v in zip(cols, key))


def setting(col: str, value) -> str:
    """'TP 4': one swept setting for titles and tick labels (preset names stand alone)."""
    name = SLICE_SYMBOLS.get(col, col.split(".")[-1])
    return str(value) if col in ("model", "hardware") else f"{name} {number(value)}"


def wrap_label(text: str, width: int) -> str:
    """A label on lines of about `width` characters, broken after the comma between two settings before anywhere
    else, so a setting never leaves its value ('TP' at a line's end, '4' on the next) and a bracket stays whole
    ('uniform (G=1, B=62)'); a setting longer than a line breaks at its spaces, never at a hyphen ('non-invasive'
    read 'non- invasive')."""
    lines: list[str] = []
    for chunk in _settings(text):
        if lines and len(lines[-1]) + 2 + len(chunk) <= width:
            lines[-1] += f", {chunk}"
            continue
        if lines:
            lines[-1] += ","
        lines += textwrap.wrap(chunk, width, break_on_hyphens=False) or [chunk]
    return "\n".join(lines)


def _settings(text: str) -> list[str]:
    """The parts of a label between its top-level ', ' (a comma inside brackets joins, not separates)."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += (ch == "(") - (ch == ")")
        if depth == 0 and text.startswith(", ", i):
            parts.append(text[start:i])
            start = i + 2
    return [*parts, text[start:]]


def style_axis(ax, which: str, col: str, values) -> tuple[float, float]:
    """Limits from `values` (log when they span over two decades) and readable tick labels; returns the limits."""
    axis = ax.xaxis if which == "x" else ax.yaxis
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    lo, hi = (v.min(), v.max()) if len(v) else (0.0, 1.0)
    if lo > 0 and hi / lo > 100:
        (ax.set_xscale if which == "x" else ax.set_yscale)("log")
        axis.set_major_formatter(ticker.FuncFormatter(lambda x, _: number(x)))
        axis.set_minor_formatter(ticker.NullFormatter())
        lim = (lo / 1.4, hi * 1.4)
    else:
        pad = 0.06 * (hi - lo) or 0.05 * abs(hi) or 1.0
        lim = (lo - pad, hi + pad)
    (ax.set_xlim if which == "x" else ax.set_ylim)(*lim)
    if scale(col)[1] in ENG_UNITS:
        axis.set_major_formatter(ticker.EngFormatter(sep=""))
    return lim


def log2_ticks(ax, values, labels=None) -> None:
    """log2 x axis with ticks exactly at the swept values (no 2^n tick clutter between them)."""
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(ticker.FixedLocator(list(values)))
    ax.xaxis.set_major_formatter(ticker.FixedFormatter(labels or [number(v) for v in values]))
    ax.xaxis.set_minor_locator(ticker.NullLocator())


def single(title: str, height: float = SINGLE[1], subtitle: str = ""):
    """A one-panel figure; the title (and subtitle) sits on the axes so legends outside them cannot collide."""
    fig = Figure(figsize=(SINGLE[0], height), layout="constrained")
    ax = fig.add_subplot()
    heading(fig, title, subtitle, ax)
    return fig, ax


def ratio_ticks(ax, which: str, values) -> None:
    """Ticks 0.2×, 0.5×, 1×, 2×, 5×, 10×, ... over the drawn range of a log ratio axis (1× always shown; 0.98×,
    1.02×, ... where the range is narrow)."""
    v = np.asarray([x for x in values if np.isfinite(x) and x > 0] + [1.0])
    ticks = [t for t in (0.01, 0.02, 0.03, 0.05, 0.1, 0.2, 0.3, 0.5, 1, 1.5, 2, 3, 5, 10, 15, 20, 30, 50, 100, 200, 500)
             if v.min() / 1.5 <= t <= v.max() * 1.5]
    if v.max() / v.min() < 1.5:   # a narrow range (1.00×–1.04×): ticks a few percent apart, or 1× alone reads nothing
        ticks = [t for t in (0.8, 0.9, 0.95, 0.98, 0.99, 1, 1.01, 1.02, 1.05, 1.1, 1.2, 1.3)
                 if v.min() / 1.02 <= t <= v.max() * 1.02]
    while len(ticks) > 8:  # a wide range: every other tick, 1× kept
        ticks = [t for i, t in enumerate(ticks) if i % 2 == ticks.index(1) % 2]
    ticks = _spaced(ticks, np.log(v.max() / v.min()) / 10)
    lo, hi = getattr(ax, f"get_{which}lim")()
    if sum(lo <= t <= hi for t in ticks) < 2:   # 1.000×–1.002× read '1×' alone: fixed limits, the ticks either side
        lo = max([t for t in ticks if t < v.min()] or ticks[:1])
        hi = min([t for t in ticks if t > v.max()] or ticks[-1:])
        getattr(ax, f"set_{which}lim")(lo / 1.002, hi * 1.002)
    getattr(ax, f"set_{which}ticks")(ticks, [f"{t:g}×" for t in ticks])
    getattr(ax, f"set_{which}ticks")([], minor=True)


def _spaced(ticks: list, gap: float) -> list:
    """The ticks at least `gap` apart in log, kept outward from 1×: a range of 1.00×–1.45× took the narrow list's
    0.99×, 1×, 1.01×, 1.02× within 3% of one another, and their labels ran into one another (quickstart's readings
    figure, right panel). A tenth of the data's log span: every label at least a tenth of the axis from the next."""
    up, down = [1], [1]
    for t in sorted(t for t in ticks if t > 1):
        if np.log(t / up[-1]) >= gap:
            up.append(t)
    for t in sorted((t for t in ticks if t < 1), reverse=True):
        if np.log(down[-1] / t) >= gap:
            down.append(t)
    return [*reversed(down[1:]), *up]   # 1× is always among the ticks (the values hold 1)
