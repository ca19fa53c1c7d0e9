"""Drawing a mesh of dies: canvas, directed links as arrows, dies in TP-group colours, FTD tiles, heat colours."""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from matplotlib import colormaps
from matplotlib.collections import PathCollection
from matplotlib.colors import ListedColormap, to_rgb
from matplotlib.figure import Figure
from matplotlib.font_manager import FontProperties
from matplotlib.patches import PathPatch, Rectangle
from matplotlib.path import Path
from matplotlib.textpath import TextPath

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


SHAFT = 0.07  # arrow shaft width in node pitches; the head is 2.6 shafts wide and 2.4 long, notched to 2.1


@lru_cache(maxsize=16)
def arrow_polygons(rows: int, cols: int) -> np.ndarray:
    """(links, 7, 2) outline of every directed link's arrow in data units, in all_links() order."""
    x, y, u, v = link_geometry(rows, cols)
    length = np.hypot(u, v)[:, None]
    along = np.stack([u, v], axis=1) / length
    across = np.stack([-along[:, 1], along[:, 0]], axis=1)
    w, head, notch, half = SHAFT / 2, 2.4 * SHAFT, 2.1 * SHAFT, 1.3 * SHAFT
    a = np.concatenate([np.zeros_like(length), length - notch, length - head, length, length - head,
                        length - notch, np.zeros_like(length)], axis=1)  # distance along the arrow
    b = np.array([-w, -w, -half, 0.0, half, w, w])  # distance across it
    return (np.stack([x, y], axis=1)[:, None, :] + a[:, :, None] * along[:, None, :]
            + b[None, :, None] * across[:, None, :])


def draw_links(ax, rows: int, cols: int, values, cmap, norm, gid: str) -> PathCollection:
    """One arrow per directed link coloured by `values` (all_links() order); returns the layer, which carries the
    colour mapping (for a colour bar). Arrows of one colour form one compound path: an SVG holds one element per
    colour used, not one per link (a 16×16 mesh has 960 links a panel). The values stay on the layer
    (`drawn_links`)."""
    values = np.asarray(values, dtype=float)
    rgba = cmap(norm(values))  # below the norm: the colour map's 'under' colour (idle grey)
    colours, which = np.unique(rgba, axis=0, return_inverse=True)
    polys = arrow_polygons(rows, cols)
    paths = [Path.make_compound_path_from_polys(polys[which.ravel() == k]) for k in range(len(colours))]
    # The layer keeps the norm and colour map (no array: its colours are set) for a colour bar to read.
    layer = PathCollection(paths, facecolors=colours, edgecolors="none", linewidths=0, zorder=3, norm=norm,
                           cmap=cmap)
    layer.set_gid(gid)  # lets tests and callers find the drawn values again
    layer.link_values = values
    ax.add_collection(layer, autolim=False)
    return layer


def drawn_links(fig: Figure) -> dict:
    """{gid: values} of every link layer drawn in `fig` (what the colours encode, all_links() order)."""
    return {c.get_gid(): c.link_values for ax in fig.axes for c in ax.collections if hasattr(c, "link_values")}


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
    """Dies as small squares in light TP-group colours (numbered by `label_dies` once the canvas's size is known)."""
    rows, cols = placement.rows, placement.cols
    r, c = np.divmod(np.arange(rows * cols), cols)
    fills = [GROUP_C[int(g) % len(GROUP_C)] for g in placement.group_of]
    draw_squares(ax, c, r, NODE_HALF, fills, edgecolor="0.35", linewidth=0.5)


MIN_LABEL_PT = 6.0  # the smallest type a printed figure is read at


def label_dies(ax, placement) -> bool:
    """Number each die by its TP group (colours repeat, numbers do not) where the numbers come out at least
    MIN_LABEL_PT at the canvas's laid-out size (run the figure's layout first); else number the rows and columns
    along the canvas's edges, so a die can still be named. A 16×16 mesh's numbers came out under 3 pt. Returns
    whether the dies are numbered."""
    rows, cols = placement.rows, placement.cols
    box = ax.get_position()   # laid out, the equal aspect applied; the canvas spans cols + 0.2 pitches
    pitch = box.width * ax.figure.get_figwidth() * 72 / (cols + 0.2)   # points per node pitch
    em = min(number_em(str(int(g)), NUMBER_HEIGHT) for g in set(placement.group_of))
    # One path for all numbers, not a text per die: a 16×16 heat map drew 768 texts, seconds to lay out and
    # render; one path costs milliseconds, and its glyphs scale with the dies (sizes in node pitches).
    if em * pitch >= MIN_LABEL_PT:
        r, c = np.divmod(np.arange(rows * cols), cols)
        _numbers(ax, numbers_path(c, r, placement.group_of, NUMBER_HEIGHT), em, "die-numbers")
        return True
    # Rows down the left and columns along the bottom, in a margin the canvas grows by (paths, not tick labels:
    # 96 tick labels doubled the time to draw a 16×16 heat map); every `step`-th where a pitch is too narrow.
    size = MIN_LABEL_PT + 0.5
    room = 0.62 * size * len(str(max(rows, cols) - 1)) + 3   # points a number needs, with a gap
    margin = 1.1 * room / pitch   # node pitches the canvas grows by, left and below
    pitch *= (cols + 0.2) / (cols + 0.2 + margin)
    step = next(k for k in (1, 2, 4, 8, 16, 32, 64, rows + cols) if k * pitch >= room)
    ax.set_xlim(-0.6 - margin, cols - 0.4)
    ax.set_ylim(rows - 0.4 + margin, -0.6)
    at_r, at_c = np.arange(0, rows, step), np.arange(0, cols, step)
    x = np.concatenate([np.full(len(at_r), -0.6 - margin / 2), at_c])
    y = np.concatenate([at_r, np.full(len(at_c), rows - 0.4 + margin / 2)])
    labels, width = np.concatenate([at_r, at_c]), 0.9 * min(margin, step)
    em = min(number_em(str(n), size / pitch * _digits()[1], width) for n in labels)
    _numbers(ax, numbers_path(x, y, labels, size / pitch * _digits()[1], width), em, "row-col-numbers")
    return False


def _numbers(ax, path: Path, em: float, gid: str) -> None:
    numbers = PathPatch(path, facecolor="0.15", edgecolor="none", zorder=4, in_layout=False, gid=gid)
    numbers.number_em = em   # the smallest number's type size, in node pitches (tests read it)
    ax.add_artist(numbers)


def draw_squares(ax, x, y, half: float, fills, edgecolor, linewidth: float, zorder: float = 2) -> None:
    """Squares centred on (x, y), one compound path per fill colour: an SVG holds a few elements, not one per
    square. Added as artists, not patches: the canvas limits are fixed, so nothing needs measuring."""
    corners = np.array([[-1, -1], [1, -1], [1, 1], [-1, 1], [-1, -1]]) * half
    x, y, colours = np.asarray(x, float), np.asarray(y, float), [to_rgb(f) for f in fills]
    for colour in dict.fromkeys(colours):
        at = np.array([k for k, f in enumerate(colours) if f == colour])
        polys = corners[None] + np.stack([x[at], y[at]], axis=1)[:, None, :]
        ax.add_artist(PathPatch(Path.make_compound_path_from_polys(polys), facecolor=colour, edgecolor=edgecolor,
                                linewidth=linewidth, zorder=zorder))


NUMBER_HEIGHT, NUMBER_WIDTH = 0.19, 0.34  # digit height, widest label, in node pitches (a die's square is 0.4)


@lru_cache(maxsize=1)
def _digits() -> tuple[list, float, float]:
    """([(vertices, codes)] of the digits 0-9 with their baseline at 0, digit height, advance), 1 unit = 1 em.
    DejaVu Sans has tabular figures (every digit the same advance), so labels compose from ten glyphs."""
    prop = FontProperties(family="DejaVu Sans")
    glyphs = [TextPath((0, 0), str(d), size=1.0, prop=prop) for d in range(10)]
    height = max(g.get_extents().y1 for g in glyphs)
    advance = TextPath((0, 0), "00", size=1.0, prop=prop).get_extents().x1 - glyphs[0].get_extents().x1
    return [(g.vertices.copy(), g.codes.copy()) for g in glyphs], height, advance


def number_em(text: str, height: float, width: float = NUMBER_WIDTH) -> float:
    """The type size (an em, in node pitches) `numbers_path` draws `text` at: digits `height` tall, narrower to fit
    `width`."""
    glyphs, digit_h, advance = _digits()
    v = np.concatenate([glyphs[int(ch)][0] + (i * advance, 0) for i, ch in enumerate(text)])
    return min(height / digit_h, width / ((v[:, 0].max() - v[:, 0].min()) or 1.0))


def numbers_path(x, y, numbers, height: float, width: float = NUMBER_WIDTH) -> Path:
    """One path holding every number centred on its (x, y), digits `height` tall (narrower to fit `width`),
    upright on a canvas whose rows run downwards."""
    glyphs, digit_h, advance = _digits()
    verts, codes = [], []
    for xi, yi, n in zip(x, y, numbers):
        text = str(int(n))
        parts = [(glyphs[int(ch)][0] + (i * advance, 0), glyphs[int(ch)][1]) for i, ch in enumerate(text)]
        v = np.concatenate([p[0] for p in parts])
        lo, hi = v[:, 0].min(), v[:, 0].max()
        k = number_em(text, height, width)
        centred = (v - [(lo + hi) / 2, digit_h / 2]) * [k, -k]  # y flipped: row 0 is drawn on top
        verts.append(centred + (xi, yi))
        codes.extend(p[1] for p in parts)
    if not verts:
        return Path(np.zeros((0, 2)))
    return Path(np.concatenate(verts), np.concatenate(codes))


def draw_ftd(ax, placement) -> None:
    """Outline the full-token-domain tiles of an ER placement (dispatch stays inside them)."""
    if placement.ftd_shape is None:
        return
    fr, fc = placement.ftd_shape
    for r0 in range(0, placement.rows, fr):
        for c0 in range(0, placement.cols, fc):
            ax.add_artist(Rectangle((c0 - 0.5, r0 - 0.5), fc, fr, fill=False, lw=1.3, ls=(0, (4, 2)),
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
    draw_squares(ax, c, r, 0.42, fills, edgecolor="0.55", linewidth=0.4)
