"""Drawing a mesh of dies: canvas, directed links as arrows, dies in TP-group colours, FTD tiles, heat colours."""

from __future__ import annotations

import numpy as np
from matplotlib import colormaps
from matplotlib.collections import PatchCollection
from matplotlib.colors import ListedColormap, to_rgb
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from wsemoe.report.figures.style import PALETTE

HOT_BOTH_C, IDLE_C = "black", "0.84"
# Heat colours start at light orange, not white, so the lightest loaded link never reads as idle grey.
HEAT = ListedColormap(colormaps["YlOrRd"](np.linspace(0.22, 1.0, 256)), name="heat").with_extremes(under=IDLE_C)
LINK_LEN, LINK_OFF, NODE_HALF = 0.56, 0.12, 0.2  # mesh drawing in units of the node pitch


def lighten(color, amount: float = 0.72):
    """`color` mixed with white: group colours stay in the background of the link colours."""
    return tuple(c + (1 - c) * amount for c in to_rgb(color))


# Cool hues only (no orange, no grey): group fills must not read as link loads or idle links. Five,
# not four, so groups g and g + 4 (vertical neighbours in the usual row-major group grids) differ.
GROUP_C = [lighten(PALETTE[i]) for i in (0, 2, 4, 5, 6)]


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


def draw_wafers(ax, layout) -> None:
    """Solid lines along the wafer boundaries of a mesh of wafers (links across them may be slower)."""
    wr, wc = layout.wafers
    rows, cols = layout.grid
    for i in range(1, wr):
        ax.plot([-0.5, cols - 0.5], [i * layout.rows - 0.5] * 2, color="0.1", lw=2.2, zorder=1.5)
    for j in range(1, wc):
        ax.plot([j * layout.cols - 0.5] * 2, [-0.5, rows - 0.5], color="0.1", lw=2.2, zorder=1.5)


def draw_cells(ax, rows: int, cols: int, fills) -> None:
    """Grid cells (nodes or PE-region tiles) as squares filled in `fills` (row-major)."""
    r, c = np.divmod(np.arange(rows * cols), cols)
    squares = [Rectangle((x - 0.42, y - 0.42), 0.84, 0.84) for x, y in zip(c, r)]
    ax.add_collection(PatchCollection(squares, facecolors=list(fills), edgecolors="0.55", linewidths=0.4, zorder=2))
