"""Paper-ready PNG and SVG plots of a results folder: Pareto front, BTA vs uniform batching, speedup over G, memory."""

from __future__ import annotations

import os
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
from cycler import cycler
from matplotlib import rc_context, ticker
from matplotlib.figure import Figure

from wsemoe.sweep import store

from wsemoe.config import yamlio
from wsemoe.sweep.columns import describe
from wsemoe.errors import ResultsError

# Okabe-Ito: stays distinguishable under common colour-vision deficiencies and in greyscale print.
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000"]
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*"]  # second cue where lines of several designs coincide
UNIFORM_C, BTA_C = PALETTE[3], PALETTE[0]
SINGLE, DOUBLE = (7.0, 4.5), (11.0, 4.5)
DPI = 200
STYLE = {
    "font.size": 10, "axes.titlesize": 11, "axes.labelsize": 10, "xtick.labelsize": 9, "ytick.labelsize": 9,
    "legend.fontsize": 8.5, "legend.title_fontsize": 8.5, "figure.titlesize": 11.5,
    "axes.grid": True, "grid.alpha": 0.3, "grid.linewidth": 0.6,
    "axes.spines.top": False, "axes.spines.right": False, "axes.prop_cycle": cycler(color=PALETTE),
    "svg.fonttype": "none",  # text stays text: SVGs remain editable and searchable
    "svg.hashsalt": "wsemoe",  # fixed element ids, so replotting the same results gives the same SVG
}
OVER = ("workload.B", "workload.G")
SPARSITY_KEYS = ("model.num_experts", "model.num_experts_per_tok")
SYMBOLS = {"model.num_experts": "E", "model.num_experts_per_tok": "k", "workload.B": "B", "workload.G": "G",
           "model.moe_intermediate_size": "F", "workload.seq_len": "S"}
NAMES = {"mfu": "MFU", "tokens_per_s": "throughput", "step_time_s": "step time",
         "mem_peak_node_bytes": "peak memory per node", "model.num_experts": "experts E",
         "model.num_experts_per_tok": "top-k k", "workload.G": "batch-tiling factor G",
         "workload.B": "attention batch B"}
MEM_TERMS = (("weights", "weights"), ("kept_act", "kept activations"), ("kv", "KV cache"),
             ("attn_transient", "attention transient"), ("bta_buffer", "BTA buffer"),
             ("moe_transient", "MoE transient"))
STAGE_TERMS = {"attention": ("weights", "kept_act", "kv", "attn_transient", "bta_buffer"),
               "MoE": ("weights", "kept_act", "kv", "moe_transient")}
BETTER = {"max": ", higher is better", "min": ", lower is better"}
ENG_UNITS = ("tokens/s", "sequences/s", "tokens", "FLOP", "FLOP/s")
MAX_BAR_GROUPS = 8  # more designs than this make the memory chart unreadable: show the top points instead


class _Results:
    """One results folder, with what every plot needs derived once."""

    def __init__(self, man: dict, points: pd.DataFrame, pareto: pd.DataFrame, comparison, config: dict):
        self.name, self.axes, self.objectives = man.get("name", ""), list(man.get("axes", [])), man.get("objectives", {})
        self.points, self.pareto, self.comparison = points, pareto, comparison
        self.compare, self.model = config.get("compare") or {}, config.get("model") or {}
        self.metric = self.compare.get("metric", "tokens_per_s")  # what "best" means
        self.baseline = self.compare.get("baseline") or ({"workload.G": 1} if "workload.G" in self.axes else {})
        self.feasible = points[points["feasible"].astype(bool)] if "feasible" in points else points
        self.group_cols = [a for a in self.axes if a not in OVER and a in points]  # one design each
        self.varying = [a for a in self.group_cols if points[a].nunique() > 1]  # zipped constants add no label


def plot_results(path) -> list[Path]:
    """Write every plot the results support as PNG and SVG into <path>/plots/; return the written files."""
    path = Path(path)
    res = _load(path)
    folder = path / "plots"
    folder.mkdir(exist_ok=True)
    written = []
    with rc_context(STYLE):  # local style: callers' matplotlib settings stay untouched
        from wsemoe.report.plot_memory import memory_breakdown  # late: it builds on this module's helpers

        for stem, build in (("pareto", _pareto), ("throughput_vs_sparsity", _sparsity),
                            ("speedup_vs_G", _speedup_vs_g), ("memory_breakdown", memory_breakdown)):
            fig = build(res)
            if fig is not None:
                written += _save(fig, folder, stem)
            else:  # a plot the data no longer supports must not linger from an earlier run
                for ext in ("png", "svg"):
                    (folder / f"{stem}.{ext}").unlink(missing_ok=True)
        from wsemoe.report import plot_mesh  # late: plot_mesh imports this module's style helpers

        written += plot_mesh.plot_extra(path, store.read_manifest(path), res.points, folder)
    return written


def _load(path: Path) -> _Results:
    man, points, pareto = store.load_results(path)
    comparison = None
    if (path / "comparison.csv").is_file():
        try:
            comparison = pd.read_csv(path / "comparison.csv")
        except Exception as exc:  # pandas raises many types for damaged files
            raise ResultsError(f"cannot read comparison.csv: {type(exc).__name__}", loc=(str(path),)) from None
    try:
        config = yamlio.load(path / "config.yaml")
    except Exception:  # the config only refines labels and the compare metric; plots work without it
        config = None
    config = config if isinstance(config, dict) else {}
    return _Results({"name": path.name, **man}, points, pareto, comparison, config)


def _save(fig: Figure, folder: Path, stem: str) -> list[Path]:
    """PNG and SVG, each written to a temporary name and renamed, so readers never see half a file."""
    out = []
    for ext in ("png", "svg"):
        target = folder / f"{stem}.{ext}"
        tmp = folder / f".{stem}.{ext}.tmp-{os.getpid()}"
        meta = {"Date": None} if ext == "svg" else None  # no timestamp: same results, same SVG bytes
        try:
            fig.savefig(tmp, format=ext, dpi=DPI, metadata=meta)
            os.replace(tmp, target)
        finally:
            tmp.unlink(missing_ok=True)
        out.append(target)
    return out


# ---------------------------------------------------------------- labels, units and scales

def _scale(col: str) -> tuple[float, str]:
    """(factor, display unit): fractions as %, bytes as GB, everything else as stored."""
    unit = describe(col)[0]
    if col == "mfu":
        return 100.0, "%"
    if unit == "bytes":
        return 1e-9, "GB"
    return 1.0, "" if unit in ("1", "bool") else unit


def _label(col: str) -> str:
    unit = _scale(col)[1]
    return f"{NAMES.get(col, col)} ({unit})" if unit else NAMES.get(col, col)


def _num(v) -> str:
    return f"{v:g}" if isinstance(v, (float, np.floating)) else str(v)


def _group_label(cols, key) -> str:
    key = key if isinstance(key, tuple) else (key,)
    return ", ".join(f"{SYMBOLS.get(c, c.split('.')[-1])} = {_num(v)}" for c, v in zip(cols, key))


def _style_axis(ax, which: str, col: str, values) -> tuple[float, float]:
    """Limits from `values` (log when they span over two decades) and readable tick labels; returns the limits."""
    axis = ax.xaxis if which == "x" else ax.yaxis
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    lo, hi = (v.min(), v.max()) if len(v) else (0.0, 1.0)
    if lo > 0 and hi / lo > 100:
        (ax.set_xscale if which == "x" else ax.set_yscale)("log")
        axis.set_major_formatter(ticker.FuncFormatter(lambda x, _: f"{x:g}"))
        axis.set_minor_formatter(ticker.NullFormatter())
        lim = (lo / 1.4, hi * 1.4)
    else:
        pad = 0.06 * (hi - lo) or 0.05 * abs(hi) or 1.0
        lim = (lo - pad, hi + pad)
    (ax.set_xlim if which == "x" else ax.set_ylim)(*lim)
    if _scale(col)[1] in ENG_UNITS:
        axis.set_major_formatter(ticker.EngFormatter(sep=""))
    return lim


def _log2_ticks(ax, values, labels=None) -> None:
    """log2 x axis with ticks exactly at the swept values (no 2^n tick clutter between them)."""
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(ticker.FixedLocator(list(values)))
    ax.xaxis.set_major_formatter(ticker.FixedFormatter(labels or [_num(v) for v in values]))
    ax.xaxis.set_minor_locator(ticker.NullLocator())


def _single(title: str, height: float = SINGLE[1]):
    """A one-panel figure; the title sits on the axes so legends outside them cannot collide with it."""
    fig = Figure(figsize=(SINGLE[0], height), layout="constrained")
    ax = fig.add_subplot()
    ax.set_title(title)
    return fig, ax


# ---------------------------------------------------------------- 1. Pareto front

def _pareto(r: _Results) -> Figure | None:
    objs = [c for c in r.objectives if c in r.points and pd.api.types.is_numeric_dtype(r.points[c])]
    numeric_axes = [a for a in r.axes if a in r.points and pd.api.types.is_numeric_dtype(r.points[a])]
    if not objs or r.feasible.empty or (len(objs) == 1 and not numeric_axes):
        return None
    xcol, ycol = (objs[0], objs[1]) if len(objs) > 1 else (numeric_axes[0], objs[0])
    (fx, _), (fy, _) = _scale(xcol), _scale(ycol)
    title = "Pareto front" if len(objs) > 1 else f"{NAMES.get(ycol, ycol)} over {NAMES.get(xcol, xcol)}"
    fig, ax = _single(f"{r.name}: {title}")
    feas, infeasible = r.feasible, r.points.drop(r.feasible.index)
    # The view fits the feasible points (and the capacity line): infeasible points can need 100x the
    # memory and would squash the region that matters into a corner; off-scale ones are counted instead.
    lims = {}
    for which, col, f in (("x", xcol, fx), ("y", ycol, fy)):
        cap = _capacity(col, r.points)
        lims[which] = _style_axis(ax, which, col, list(feas[col] * f) + ([cap] if cap else []))
        axis = ax.xaxis if which == "x" else ax.yaxis
        if pd.api.types.is_integer_dtype(r.points[col]) and axis.get_scale() == "linear":  # no 1.2 B ticks
            axis.set_major_locator(ticker.MaxNLocator(integer=True))
        if cap:
            (ax.axvline if which == "x" else ax.axhline)(cap, ls="--", lw=1, color="0.3",
                                                          label=f"capacity per node ({cap:.3g} GB)")
        getattr(ax, f"set_{which}label")(_label(col) + BETTER.get(r.objectives.get(col), ""))
    if len(infeasible):
        ix, iy = infeasible[xcol] * fx, infeasible[ycol] * fy
        off = int((~(ix.between(*lims["x"]) & iy.between(*lims["y"]))).sum())
        note = f"infeasible ({len(infeasible):,}" + (f"; {off:,} off-scale)" if off else ")")
        ax.scatter(ix, iy, s=5, c="0.7", alpha=0.3, lw=0, rasterized=len(infeasible) > 1000, label=note)
    for i, (label, sub) in enumerate(_colour_groups(r, feas)):
        ax.scatter(sub[xcol] * fx, sub[ycol] * fy, s=18, color=PALETTE[i % len(PALETTE)], alpha=0.9, lw=0,
                   label=label, rasterized=len(sub) > 1000, zorder=3)
    front = r.pareto.sort_values(xcol) if xcol in r.pareto else r.pareto.iloc[:0]
    if len(front):  # hollow rings: the design colour of each front point stays visible inside
        ax.plot(front[xcol] * fx, front[ycol] * fy, "-o", color="black", lw=1, ms=7, mfc="none", mew=1.2,
                zorder=4, label="Pareto front")
    fig.legend(loc="outside right upper", markerscale=1.3, frameon=False)  # off the axes: never covers data
    return fig


def _colour_groups(r: _Results, df: pd.DataFrame):
    """One colour per design (e.g. per E) when there are few, else a single 'feasible' series."""
    keys = r.varying
    if keys and df.groupby(keys).ngroups <= len(PALETTE):
        return [(_group_label(keys, k), sub) for k, sub in df.groupby(keys)]
    return [(f"feasible ({len(df):,})", df)]


def _capacity(col: str, points: pd.DataFrame) -> float | None:
    """Per-node memory capacity in GB when `col` is a per-node memory column and the capacity is one value."""
    cap = points.get("mem_capacity_node_bytes")
    if not (col.startswith("mem_") and describe(col)[0] == "bytes") or cap is None or cap.nunique() != 1:
        return None
    return float(cap.iloc[0]) * 1e-9


# ---------------------------------------------------------------- 2. BTA vs uniform across sparsity

def _sparsity(r: _Results) -> Figure | None:
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
    fig.suptitle(f"{r.name}: BTA vs uniform batching across sparsity")
    left, right = fig.subplots(1, 2)
    ticks, xlabel = _sparsity_ticks(r, key, x)
    for ax, col, f in ((left, "mfu", 100.0), (right, "tokens_per_s", 1.0)):
        ax.plot(x, cmp[f"baseline_{col}"] * f, "s--", color=UNIFORM_C, ms=6, label="uniform batching (G = 1)")
        ax.plot(x, cmp[f"best_{col}"] * f, "o-", color=BTA_C, ms=6, label="BTA (best G, B)")
        _log2_ticks(ax, x, ticks)
        ax.set_xlim(x.min() / 1.4, x.max() * 1.4)  # room for the end points' annotations
        if topk:
            ax.invert_xaxis()
        ax.set_xlabel(xlabel)
        ax.set_ylim(0, 1.22 * np.nanmax(cmp[[f"baseline_{col}", f"best_{col}"]].to_numpy() * f))
    left.set_ylabel("MFU (%)")
    right.set_ylabel("throughput (tokens/s)")
    right.yaxis.set_major_formatter(ticker.EngFormatter(sep=""))
    _annotate_bta(left, right, cmp, x)
    # Below the panels: a legend above them collides with the figure title under constrained layout.
    fig.legend(*left.get_legend_handles_labels(), loc="outside lower center", ncol=2, frameon=False)
    return fig


def _sparsity_ticks(r: _Results, key: str, x) -> tuple[list, str]:
    """Tick labels with the density k/E underneath, so both sparsity readings are on the axis."""
    other = r.model.get("num_experts" if key == "model.num_experts_per_tok" else "num_experts_per_tok")
    if not other:
        return [_num(v) for v in x], NAMES[key]
    dens = [Fraction(int(v), int(other)) if key.endswith("per_tok") else Fraction(int(other), int(v)) for v in x]
    labels = [f"{_num(v)}\n{d}" for v, d in zip(x, dens)]
    fixed = f"E = {other}" if key.endswith("per_tok") else f"k = {other}"
    return labels, f"{NAMES[key]}  (below: density k/E, {fixed})"


def _annotate_bta(left, right, cmp: pd.DataFrame, x) -> None:
    """Each BTA point carries its tuned G and B (MFU panel) and its speedup over uniform (throughput panel)."""
    speed = [c for c in cmp if c.startswith("speedup_vs_")]
    for i, xi in enumerate(x):
        row = cmp.iloc[i]
        if "best_G" in cmp:
            gb = f"G={_num(row['best_G'])}" + (f", B={_num(row['best_B'])}" if "best_B" in cmp else "")
            left.annotate(gb, (xi, row["best_mfu"] * 100), xytext=(0, 7), textcoords="offset points",
                          ha="center", fontsize=8, color=BTA_C)
        if speed and np.isfinite(row[speed[0]]):
            right.annotate(f"{row[speed[0]]:.2f}×", (xi, row["best_tokens_per_s"]), xytext=(0, 7),
                           textcoords="offset points", ha="center", fontsize=8, color=BTA_C, weight="bold")


# ---------------------------------------------------------------- 3. speedup over G

def _speedup_vs_g(r: _Results) -> Figure | None:
    if "workload.G" not in r.axes or r.metric not in r.points or r.feasible.empty:
        return None
    gs = np.sort(r.points["workload.G"].unique())
    groups = r.feasible.groupby(r.group_cols) if r.group_cols else [((), r.feasible)]
    fig, ax = _single(f"{r.name}: speedup of batch tiling over G = {_num(gs[0])}")
    last = []
    for i, (key, sub) in enumerate(groups):
        best = sub.groupby("workload.G")[r.metric].max().reindex(gs)  # infeasible G -> NaN -> a gap
        if len(gs) < 2 or not np.isfinite(best.iloc[0]):
            continue  # no feasible smallest-G point: nothing to compare against
        key = dict(zip(r.group_cols, key if isinstance(key, tuple) else (key,)))
        ax.plot(gs, best / best.iloc[0], marker=MARKERS[i % len(MARKERS)], ms=4, lw=1.5, mfc="none",
                color=PALETTE[i % len(PALETTE)], label=_group_label(r.varying, tuple(key[c] for c in r.varying)))
        last.append(best.last_valid_index())
    if not last:
        return None
    ax.axhline(1, color="0.4", lw=0.8, ls=":")
    hi = max(last)  # no empty decade of infeasible G: the axis ends at the largest feasible G, said in the label
    _log2_ticks(ax, [g for g in gs if g <= hi and np.log2(g) % 1 == 0] + ([hi] if np.log2(hi) % 1 else []))
    ax.set_xlim(gs[0] / 1.12, hi * 1.12)
    ax.set_ylim(bottom=0)
    note = f"; no feasible point for G > {_num(hi)}" if hi < gs[-1] else ""
    ax.set_xlabel(f"{NAMES['workload.G']} (log2{note})")
    ax.set_ylabel(f"{NAMES.get(r.metric, r.metric)} over best G = {_num(gs[0])} (×)")
    title = ", ".join(NAMES.get(c, c) + (f" ({describe(c)[0]})" if describe(c)[0] else "") for c in r.varying)
    if r.varying:  # one line needs no legend
        ax.legend(title=title, loc="upper left", frameon=True, framealpha=0.9)
    return fig
