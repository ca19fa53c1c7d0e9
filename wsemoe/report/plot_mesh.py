"""Plots of mesh structure and communication: link-load heat maps, communication breakdown, WSC vs NVL72."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib import colormaps, rc_context
from matplotlib.colors import ListedColormap, Normalize, to_rgb
from matplotlib.collections import PatchCollection
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Rectangle

from wsemoe.config import yamlio
from wsemoe.config.schema import SECTIONS
from wsemoe.cost import mesh, structure
from wsemoe.report.plots import DOUBLE, PALETTE, STYLE, _num, _save

PHASE_NAMES = {"allreduce": "all-reduce (attention TP)", "dispatch": "dispatch (tokens to experts)",
               "combine": "combine (results back)"}
PHASE_COLS = {"allreduce": "attention_allreduce_s", "dispatch": "moe_dispatch_s", "combine": "moe_combine_s"}
PHASE_C = {"allreduce": PALETTE[0], "dispatch": PALETTE[3], "combine": PALETTE[1]}
HOT_BOTH_C, IDLE_C = "black", "0.84"
# Heat colours start at light orange, not white, so the lightest loaded link never reads as idle grey.
HEAT = ListedColormap(colormaps["YlOrRd"](np.linspace(0.22, 1.0, 256)), name="heat").with_extremes(under=IDLE_C)
MAX_TP = 3  # more TP sizes than this would flood the plots folder with near-identical maps
LINK_LEN, LINK_OFF, NODE_HALF = 0.56, 0.12, 0.2  # mesh drawing in units of the node pitch
# Preferred value of an axis held fixed for a representative slice; the rest take their first value.
PREFER = {"model.num_experts_per_tok": lambda v: 8 if 8 in v else max(v), "workload.B": max,
          "balance.spare_slots": max}
SLICE_SYMBOLS = {"model.num_experts_per_tok": "top-k", "workload.B": "B", "mapping.tp": "TP",
                 "mapping.strategy": "mapping", "workload.G": "G", "model.num_experts": "E"}
DYNAMIC = ("link_heatmap_*", "node_load_*")  # stems that carry a value: cleaned by pattern


def plot_extra(path, manifest: dict | None, points: pd.DataFrame, outdir) -> list[Path]:
    """Write the mesh, communication and balancing plots the sweep supports; return the written files."""
    from wsemoe.report import plot_balance
    from wsemoe.report import plot_comm  # late: they import this module's helpers

    path, outdir = Path(path), Path(outdir)
    ctx = _Context(path, manifest or {}, points)
    written = []
    with rc_context(STYLE):  # figures take their fonts when built: build and save inside the style
        figures = {"comm_breakdown": plot_comm.comm_breakdown(ctx), "wsc_vs_nvl72": plot_comm.wsc_vs_nvl72(ctx),
                   "throughput_vs_skew": plot_balance.throughput_vs_skew(ctx),
                   **link_heatmaps(ctx), **plot_balance.node_loads(ctx)}
        for stem, fig in figures.items():
            if fig is not None:
                written += _save(fig, outdir, stem)
    _clean(outdir, [s for s, f in figures.items() if f is None], {p.name for p in written})
    return written


def _clean(outdir: Path, absent: list[str], keep: set) -> None:
    """Remove plots the data no longer supports, so none lingers from an earlier run."""
    stale = [outdir / f"{s}.{ext}" for s in absent for ext in ("png", "svg")]
    stale += [p for pat in DYNAMIC for ext in ("png", "svg") for p in outdir.glob(f"{pat}.{ext}")]
    for p in stale:
        if p.name not in keep:
            p.unlink(missing_ok=True)


# ---------------------------------------------------------------- the sweep's config and slices

class _Context:
    """A results folder's points, axes and resolved config (plain dicts: the saved config has extra keys)."""

    def __init__(self, path: Path, manifest: dict, points: pd.DataFrame):
        try:
            cfg = yamlio.load(path / "config.yaml")
        except Exception:  # without the config only the plots that need no structure are drawn
            cfg = None
        self.cfg = cfg if isinstance(cfg, dict) else {}
        self.name = manifest.get("name", path.name)
        self.axes = [a for a in manifest.get("axes", self.cfg.get("axes", {})) if a in points]
        self.points = points

    def has(self, *cols) -> bool:
        return all(c in self.points for c in cols)

    def sections(self, row) -> dict:
        """Each section's fields at one point: base, then a preset axis, then swept fields (as the engine does)."""
        presets, out = self.cfg.get("presets") or {}, {}
        for sec, spec in SECTIONS.items():
            fields = dict(self.cfg.get(sec) or {})
            if isinstance(row.get(sec), str) and row[sec] in presets:
                fields = spec.model_validate(presets[row[sec]]).model_dump()
            for col, val in row.items():
                head, _, field = col.partition(".")
                if head == sec and field:
                    fields[field] = val.item() if isinstance(val, np.generic) else val
            out[sec] = fields
        return out

    def build(self, row, bal=structure.UNIFORM) -> structure.Structure:
        """The cached structure of one point (topology, mesh, mapping and experts resolved at that point)."""
        s = self.sections(row)
        hw, mp, m = s["hardware"], s["mapping"], s["model"]
        tp = int(mp.get("tp") or hw["rows"] * hw["cols"])  # unset TP: one group of all nodes
        ftd = tuple(mp["ftd"]) if mp.get("ftd") else None
        explicit = tuple(mp["placement"]) if mp.get("placement") else None
        return structure.build(hw["topology"], int(hw["rows"]), int(hw["cols"]), tp, mp["strategy"], ftd,
                               int(mp.get("seed", 0)), explicit, mp.get("token_source", "auto"),
                               int(m["num_experts"]), bal)

    def slice(self, keep=()) -> tuple[pd.DataFrame, str]:
        """Points with every swept axis but `keep` held at a representative value, and that slice as text."""
        df, said = self.points, []
        for col in self.axes:
            if col in keep:
                continue
            values = list(pd.unique(df[col]))
            pick = PREFER[col](values) if col in PREFER and _numeric(values) else values[0]
            if self.points[col].nunique() > 1 and col != "model":  # titles name the model anyway
                said.append(_setting(col, pick))
            df = df[df[col] == pick]
        return df, ", ".join(said)

    def context(self, row, skip=()) -> str:
        """Model, mode and mapping of a point, for titles (what the reader needs to place the numbers)."""
        s = self.sections(row)
        parts = [s["model"].get("name"), s["workload"].get("mode")]
        if "mapping.strategy" not in skip and s["mapping"].get("strategy"):
            parts.append(f"{s['mapping']['strategy']} mapping")
        return ", ".join(str(p) for p in parts if p)


def _numeric(values) -> bool:
    return all(isinstance(v, (int, float, np.integer, np.floating)) for v in values)


def _setting(col: str, value) -> str:
    name = SLICE_SYMBOLS.get(col, col.split(".")[-1])
    return str(value) if col in ("model", "hardware") else f"{name} {_num(value)}"


def _pct(x: float) -> str:
    """Signed percentage with a typographic minus."""
    return f"{100 * x:+.0f}%".replace("-", "\u2212")


def _first_row(df: pd.DataFrame) -> dict:
    return df.iloc[0].to_dict()


# ---------------------------------------------------------------- mesh drawing

def link_geometry(rows: int, cols: int) -> tuple[np.ndarray, ...]:
    """Tail (x, y) and vector (u, v) of every directed link, in LinkLoads.all_links() order.

    x is the column, y the row (drawn downwards); the two directions of a link sit side by side.
    """
    r_h, c_h = np.divmod(np.arange(rows * (cols - 1)), cols - 1)
    r_v, c_v = np.divmod(np.arange((rows - 1) * cols), cols)
    gap = 0.5 - LINK_LEN / 2
    x = np.concatenate([c_h + gap, c_h + 1 - gap, c_v + LINK_OFF, c_v - LINK_OFF])
    y = np.concatenate([r_h - LINK_OFF, r_h + LINK_OFF, r_v + gap, r_v + 1 - gap])
    nh, nv = len(r_h), len(r_v)
    u = np.concatenate([np.full(nh, LINK_LEN), np.full(nh, -LINK_LEN), np.zeros(2 * nv)])
    v = np.concatenate([np.zeros(2 * nh), np.full(nv, LINK_LEN), np.full(nv, -LINK_LEN)])
    return x, y, u, v


def draw_links(ax, rows: int, cols: int, values, cmap, norm, gid: str):
    """One arrow per directed link coloured by `values` (all_links() order); returns the Quiver."""
    x, y, u, v = link_geometry(rows, cols)
    q = ax.quiver(x, y, u, v, np.asarray(values, dtype=float), cmap=cmap, norm=norm, angles="xy",
                  scale_units="xy", scale=1, units="xy", width=0.07, headwidth=2.6, headlength=2.4,
                  headaxislength=2.1, zorder=3)
    q.set_gid(gid)  # lets tests and callers find the drawn values again
    return q


def drawn_links(fig: Figure) -> dict:
    """{gid: values} of every link layer drawn in `fig` (what the colours encode, all_links() order)."""
    return {c.get_gid(): np.asarray(c.get_array()) for ax in fig.axes for c in ax.collections if c.get_gid()}


def mesh_axes(ax, rows: int, cols: int) -> None:
    """A bare mesh canvas: one unit per node, row 0 on top, no ticks (positions carry no quantity)."""
    ax.set_xlim(-0.6, cols - 0.4)
    ax.set_ylim(rows - 0.4, -0.6)
    ax.set_aspect("equal")
    ax.grid(False)
    ax.set_xticks([])
    ax.set_yticks([])
    for side in ax.spines.values():
        side.set_visible(False)


def _lighten(color, amount: float = 0.72):
    """`color` mixed with white: group colours stay in the background of the link colours."""
    return tuple(c + (1 - c) * amount for c in to_rgb(color))


# Cool hues only (no orange, no grey): group fills must not read as link loads or idle links. Five,
# not four, so groups g and g + 4 (vertical neighbours in the usual row-major group grids) differ.
GROUP_C = [_lighten(PALETTE[i]) for i in (0, 2, 4, 5, 6)]


def draw_nodes(ax, placement) -> None:
    """Dies as small squares in light TP-group colours, numbered by group (colours repeat, numbers do not)."""
    rows, cols = placement.rows, placement.cols
    r, c = np.divmod(np.arange(rows * cols), cols)
    squares = [Rectangle((x - NODE_HALF, y - NODE_HALF), 2 * NODE_HALF, 2 * NODE_HALF) for x, y in zip(c, r)]
    fills = [GROUP_C[int(g) % len(GROUP_C)] for g in placement.group_of]
    ax.add_collection(PatchCollection(squares, facecolors=fills, edgecolors="0.35", linewidths=0.5, zorder=2))
    if rows * cols > 256:  # numbers would not fit
        return
    size = min(6.5, 56 / max(rows, cols))
    for x, y, g in zip(c, r, placement.group_of):
        # Kept out of the layout: they lie inside the axes, and measuring hundreds of them is slow.
        ax.text(x, y, str(int(g)), ha="center", va="center", fontsize=size, color="0.15", zorder=4,
                in_layout=False)


def draw_ftd(ax, placement) -> None:
    """Outline the full-token-domain tiles of an ER placement (dispatch stays inside them)."""
    if placement.ftd_shape is None:
        return
    fr, fc = placement.ftd_shape
    for r0 in range(0, placement.rows, fr):
        for c0 in range(0, placement.cols, fc):
            ax.add_patch(Rectangle((c0 - 0.5, r0 - 0.5), fc, fr, fill=False, lw=1.3, ls=(0, (4, 2)),
                                   ec="0.25", zorder=1, in_layout=False))


# ---------------------------------------------------------------- 1. link-load heat maps

def link_heatmaps(ctx: _Context) -> dict:
    """{stem: figure} per strategy and TP; colour scales shared across strategies at one TP."""
    if "mapping.strategy" not in ctx.axes or not ctx.cfg or not ctx.has("dispatch_max_link_bytes"):
        return {}
    rows, _ = ctx.slice(keep=("mapping.strategy", "mapping.tp"))
    tps = sorted(pd.unique(rows["mapping.tp"])) if "mapping.tp" in rows else [None]
    if len(tps) > MAX_TP:  # smallest, middle and largest
        tps = [tps[0], tps[len(tps) // 2], tps[-1]]
    out = {}
    for tp in tps:
        at = rows if tp is None else rows[rows["mapping.tp"] == tp]
        maps = [m for m in (link_loads(ctx, _first_row(g)) for _, g in at.groupby("mapping.strategy", sort=False))
                if m is not None]
        vmax = max((float(v.max()) for m in maps for v in m["values"].values()), default=0.0)
        for m in maps:
            out[f"link_heatmap_{m['strategy']}_tp{m['tp']}"] = _heatmap_figure(ctx, m, vmax)
    return out


def link_loads(ctx: _Context, row: dict) -> dict | None:
    """Per-link bytes of one all-reduce and one dispatch at a point (unit loads × the point's bytes)."""
    s = ctx.build(row)
    if s.phases["dispatch"].loads is None:  # a switch has no links to draw
        return None
    values = {}
    for phase in ("allreduce", "dispatch"):
        values[phase] = s.phases[phase].loads.all_links() * phase_scale(s, row, phase)
    return {"row": row, "structure": s, "values": values, "strategy": s.placement.strategy, "tp": s.placement.tp}


def phase_scale(s: structure.Structure, row: dict, phase: str) -> float:
    """Bytes per unit of a phase at a point, recovered from its busiest-link bytes (no cost formula repeated)."""
    unit = s.phases[phase].max_link
    return float(row[f"{phase}_max_link_bytes"]) / unit if unit > 0 else 0.0


def _byte_unit(vmax: float) -> tuple[float, str]:
    for factor, unit in ((1e9, "GB"), (1e6, "MB"), (1e3, "kB")):
        if vmax >= factor:
            return factor, unit
    return 1.0, "bytes"


def _heatmap_figure(ctx: _Context, m: dict, vmax: float) -> Figure:
    s, vals, row = m["structure"], m["values"], m["row"]
    pl = s.placement
    factor, unit = _byte_unit(vmax)
    # Loaded links map onto the heat colours from just above zero; exactly idle links fall 'under' (grey).
    norm = Normalize(vmin=vmax / factor * 1e-9, vmax=vmax / factor or 1.0)
    # A grid, not colorbar(ax=...): constrained layout misaligns equal-aspect panels that share a colourbar.
    fig = Figure(figsize=(DOUBLE[0], 5.0), layout="constrained")
    fig.get_layout_engine().set(h_pad=0.06)  # air between the figure title and the two-line panel titles
    grid = fig.add_gridspec(2, 3, height_ratios=[1, 0.19])
    axes = [fig.add_subplot(grid[0, i]) for i in range(3)]
    idle = {p: mesh.idle_share(s.phases[p].loads) for p in vals}
    for ax, phase in zip(axes, vals):
        mesh_axes(ax, pl.rows, pl.cols)
        draw_ftd(ax, pl)
        draw_nodes(ax, pl)
        q = draw_links(ax, pl.rows, pl.cols, vals[phase] / factor, HEAT, norm, f"links-{phase}")
        ax.set_title(f"{PHASE_NAMES[phase]}\n{100 * idle[phase]:.0f}% of links idle")
    legend, bar = fig.add_subplot(grid[1, 2]), fig.add_subplot(grid[1, :2])
    legend.axis("off")
    bar.axis("off")
    _hot_panel(axes[2], s, legend)
    # A thin bar inside a blank cell: its ticks and label stay within the cell the layout reserved.
    cb = fig.colorbar(q, cax=bar.inset_axes([0.1, 0.72, 0.8, 0.2]), orientation="horizontal", extend="min")
    cb.set_label(f"bytes per link in one all-reduce / one dispatch ({unit}); grey: idle; "
                 "same scale for every mapping at this TP")
    _, said = ctx.slice(keep=("mapping.strategy", "mapping.tp"))
    fig.suptitle(f"{ctx.name}: {pl.strategy} mapping, TP {pl.tp} on {pl.rows}×{pl.cols} dies "
                 f"({ctx.context(row, skip=('mapping.strategy',))}" + (f", {said})" if said else ")"))
    note = "squares: dies, number = TP group" + (", dashed: FTD tiles" if pl.ftd_shape else "")
    fig.supxlabel(note + "; each link drawn as two arrows, one per direction (XY routing)", fontsize=8.5)
    return fig


def _hot_panel(ax, s: structure.Structure, legend_ax) -> None:
    """Links hot (top decile of loaded links) in one phase only, in both, or in neither."""
    pl, a, d = s.placement, s.phases["allreduce"].loads, s.phases["dispatch"].loads
    hot_a, hot_d = mesh.hot_links(a), mesh.hot_links(d)
    code = np.where(hot_a & hot_d, 3, np.where(hot_d, 2, np.where(hot_a, 1, 0)))
    colours = ListedColormap([IDLE_C, PHASE_C["allreduce"], PHASE_C["dispatch"], HOT_BOTH_C])
    mesh_axes(ax, pl.rows, pl.cols)
    draw_ftd(ax, pl)
    draw_nodes(ax, pl)
    draw_links(ax, pl.rows, pl.cols, code, colours, Normalize(-0.5, 3.5), "hot-links")
    ax.set_title(f"hot links (top 10% of each phase)\noverlap (Jaccard) {s.hot_overlap:.2f}")
    labels = [f"hot in all-reduce only ({int((code == 1).sum())})", f"hot in dispatch only ({int((code == 2).sum())})",
              f"hot in both ({int((code == 3).sum())})", "neither"]
    handles = [Line2D([], [], color=c, lw=3) for c in colours.colors[1:] + [IDLE_C]]
    legend_ax.legend(handles, labels, loc="center", ncol=2, frameon=False, fontsize=8, handlelength=1.5,
                     columnspacing=1.0)
