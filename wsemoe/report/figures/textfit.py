"""Text fitted to a figure as it is drawn (`style.figure_bytes` runs these before each save): every text made
literal (names are never math, control characters never raw), matplotlib's plain tick numbers grouped as every
other number is (`wsemoe.wording.number`), an axis label longer than its axis wrapped, a tick label that would
overlap its neighbour dropped, and a marker label moved off an earlier one."""

from __future__ import annotations

import re
import textwrap

from matplotlib import ticker
from matplotlib.figure import Figure
from matplotlib.font_manager import FontProperties
from matplotlib.textpath import TextToPath
from matplotlib.transforms import Bbox

from wsemoe.errors import printable
from wsemoe.wording import number


def fit_axis_labels(fig: Figure) -> None:
    """Wrap an axis label longer than its axis onto as many lines as it needs: a y label is centred on its
    axes, so one taller than them ran off the figure (the Pareto y label above a long legend)."""
    if fig.get_layout_engine() is None or not any(a.label.get_text() for ax in fig.axes for a in (ax.xaxis, ax.yaxis)):
        return  # a frozen layout was fitted when it was first drawn; no axis labels, no draw
    fig.draw_without_rendering()  # the layout engine places the axes: their size is known from here on
    measure = TextToPath()
    for ax in fig.axes:
        box = ax.get_position()
        for text, room in ((ax.yaxis.label, box.height * fig.get_figheight() * 72),
                           (ax.xaxis.label, box.width * fig.get_figwidth() * 72)):
            words = text.get_text()
            if not words or "\n" in words or room <= 0:
                continue
            width = measure.get_text_width_height_descent(words, FontProperties(size=text.get_fontsize()),
                                                          ismath=False)[0]
            if width > room:
                chars = max(12, int(len(words) * room / width * 0.95))  # characters per line that fit
                text.set_text("\n".join(textwrap.wrap(words, chars)) or words)


def laid_out(fig: Figure) -> None:
    """Lay the figure out unless nothing changed since it last was (matplotlib marks a figure stale when any of
    its artists changes): each fitting step measures the layout, and a draw is most of what rendering costs."""
    if fig.stale:
        fig.draw_without_rendering()


def thin_tick_labels(fig: Figure) -> None:
    """Drop an x tick whose label would overlap the one before it on axes whose ticks sit at given values
    (`log2_ticks`: wafer counts 12, 13, 15 on a narrow panel ran into '1213'), label and tick mark together: a
    bare tick reads as a value left unsaid (the serving figure's 13)."""
    fixed = [ax for ax in fig.axes if isinstance(ax.xaxis.get_major_locator(), ticker.FixedLocator)]
    if fig.get_layout_engine() is None or not fixed:
        return  # a frozen layout was thinned when it was first drawn; no given ticks, nothing to thin (no draw)
    laid_out(fig)
    renderer = fig._get_renderer()
    for ax in fixed:
        last, kept = None, []
        # left to right on the page, not by value: an inverted axis (top-k falling to the right) runs the other way
        boxes = [(t, t.get_window_extent(renderer)) for t in ax.get_xticklabels() if t.get_text()]
        for text, box in sorted(boxes, key=lambda tb: tb[1].x0):
            if last is None or box.x0 >= last.x1 + 2:
                last = box
                kept.append(text)
        if len(kept) < len(boxes):   # the ticks' own label objects keep their style (rotation, size)
            ax.set_xticks(*zip(*sorted((t.get_position()[0], t.get_text()) for t in kept)))


def marker_label(text, owner=None):
    """Mark an annotation (offset in points from its marker) as a marker's label, which separate_marker_labels
    may move; an attribute, not a gid (a gid is an SVG id, and ids on one page must differ). `owner`: the name its
    markers are marked `keep_clear` with."""
    text.wsemoe_marker_label = True
    text.wsemoe_owner = owner
    return text


def keep_clear(ax, x: float, y: float, size: float, owner=None) -> None:
    """Mark a marker (centre in data coordinates, `size` its diameter in points) that no marker label may cover:
    the roofline's 'MoE' sat on its own best marker, and labels left of markers at the axis's left edge ran over
    the tick labels (cerebras_serving). `owner`: the label that names it (`marker_label(text, owner)`); a label
    must sit nearer its own markers than any other's, or it names the wrong one."""
    ax.wsemoe_keep_clear = [*getattr(ax, "wsemoe_keep_clear", []), (x, y, size, owner)]


# Where a marker label may go, offset in points from its marker, tried in order until one is clear: right of the
# marker below, level and above; then left (right-aligned); then above and below it; each ring farther out.
# The first is where the roofline puts a label: a label already clear there stays put.
RINGS = (7, 12, 18, 26, 36)


def _places(d: float):
    for dy in (-9, -3, 4, -16, 11):   # below first: level, a label lay on the line a row of markers sits on
        yield d, dy, "left"
    for dy in (-9, -3, 4, -16, 11):
        yield -d, dy, "right"
    yield 0, d, "center"
    yield 0, -d - 8, "center"


def separate_marker_labels(fig: Figure, step: float = 3.0, most: int = 40) -> None:
    """Place each marker's label (`marker_label`) where it overlaps no label placed before it on its axes, no
    marker marked `keep_clear` and nothing outside its axes: where it was put when that is clear, else the first
    clear place around its marker (`RINGS`); where none is, moved down a few points at a time off the earlier
    labels (the roofline's 'MoE' label sat under 'attention' when the two best markers were a decade apart in
    intensity and close in attained rate). A label carries the names chained onto it (' = dense FFN')."""
    marked = any(getattr(t, "wsemoe_marker_label", False) for ax in fig.axes for t in ax.texts)
    if fig.get_layout_engine() is None or not marked:
        return  # a frozen layout was separated when it was first drawn; no marker labels, no draw
    laid_out(fig)
    renderer = fig._get_renderer()
    points = fig.dpi / 72
    for ax in fig.axes:
        placed = []
        frame = ax.get_window_extent(renderer)
        markers, centres = [], []
        for x, y, size, owner in getattr(ax, "wsemoe_keep_clear", []):
            cx, cy = ax.transData.transform((x, y))
            r = size / 2 * points
            markers.append(Bbox.from_extents(cx - r, cy - r, cx + r, cy + r))
            centres.append((cx, cy, owner))
        # names chained onto a label (' = dense FFN' after 'attention': markers on one point) stand where their
        # label does: they move with it, and are obstacles to every other label
        chained = [t for t in ax.texts if getattr(t, "wsemoe_chained", False)]

        def box_of(text):
            own = [c.get_window_extent(renderer) for c in chained if _anchor(c) is text]
            return Bbox.union([text.get_window_extent(renderer), *own])

        def clear(text, box, strict=True):
            taken = placed + markers + [c.get_window_extent(renderer) for c in chained if _anchor(c) is not text]
            inside = (box.x0 >= frame.x0 and box.x1 <= frame.x1 and box.y0 >= frame.y0 and box.y1 <= frame.y1)
            return (inside and not any(box.overlaps(p) for p in taken)
                    and (not strict or _nearest_own(text, box, centres)))

        def place(text, strict):
            for dx, dy, side in (p for d in RINGS for p in _places(d)):
                text.xyann = (dx, dy)
                text.set_horizontalalignment(side)
                if clear(text, box_of(text), strict):
                    return True
            return False

        for text in (t for t in ax.texts if getattr(t, "wsemoe_marker_label", False)):
            box = box_of(text)
            if not clear(text, box):
                start, ha = text.xyann, text.get_horizontalalignment()
                # the first clear place nearer its own marker than another's; failing that (markers closer than a
                # label is tall), the first clear of markers and labels
                if place(text, strict=True) or place(text, strict=False):
                    box = box_of(text)
                else:   # nowhere clear: back where it was put, moved down off the earlier labels alone
                    text.xyann = start
                    text.set_horizontalalignment(ha)
                    box = box_of(text)
                    for _ in range(most):
                        taken = placed + [c.get_window_extent(renderer) for c in chained if _anchor(c) is not text]
                        if not any(box.overlaps(p) for p in taken):
                            break
                        x, y = text.xyann
                        text.xyann = (x, y - step)
                        box = box_of(text)
            placed.append(box)


def _nearest_own(text, box, centres) -> bool:
    """Whether a label's edge facing its marker is nearer one of its own markers than any other label's (a label
    with no owner, or no marker of another, is never in doubt)."""
    own = getattr(text, "wsemoe_owner", None)
    if own is None or not any(o is not None and o != own for *_, o in centres):
        return True
    ha = text.get_horizontalalignment()
    x = box.x0 if ha == "left" else box.x1 if ha == "right" else (box.x0 + box.x1) / 2
    y = (box.y0 + box.y1) / 2 if ha != "center" else box.y0 if text.xyann[1] > 0 else box.y1
    dist = {}
    for cx, cy, o in centres:
        if o is not None:
            d = ((cx - x) ** 2 + (cy - y) ** 2) ** 0.5
            dist[o == own] = min(dist.get(o == own, float("inf")), d)
    return dist.get(True, float("inf")) < dist.get(False, float("inf"))


def _anchor(text):
    """The label a chain of annotations (each placed on the one before) hangs from."""
    while getattr(text, "wsemoe_chained", False):
        text = text.xycoords
    return text


class Grouped(ticker.ScalarFormatter):
    """matplotlib's default tick labels, with a whole part from 1,000 on grouped by the one rule ('1,200' on the
    axis under a caption's '1,883 tokens/s', never '1200'); offsets, scientific notation and decimals as before."""

    WHOLE = re.compile(r"([\u2212-]?)(\d{4,})(\.\d+)?")

    def __call__(self, x, pos=None):
        text = super().__call__(x, pos)
        m = self.WHOLE.fullmatch(text)
        return f"{m.group(1)}{number(int(m.group(2)))}{m.group(3) or ''}" if m else text


def grouped_ticks(fig: Figure) -> None:
    """Every axis still on matplotlib's own ScalarFormatter (not one a figure chose) onto `Grouped`, once."""
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            f = axis.get_major_formatter()
            if type(f) is ticker.ScalarFormatter:
                axis.set_major_formatter(Grouped(useOffset=f.get_useOffset(), useMathText=f.get_useMathText()))


def math_text(text):
    """Mark a Text whose '$...$' is matplotlib mathtext we wrote (the tornado's $S_T$), which `literal_text`
    leaves as math: every other '$' comes from names and stays literal. Returns the text."""
    text.wsemoe_math = True
    return text


def literal(text) -> str:
    """Text matplotlib shows as written: '$' escaped (a '$x$' model or folder name is not math, and an odd
    one cannot fail to parse) and control characters as escapes (an SVG cannot hold them)."""
    return printable(text, lines=True).replace("$", r"\$")


def literal_text(fig: Figure) -> None:
    """Make every text of a figure literal, once: titles, labels, legends, annotations, and tick labels from
    any formatter that may carry names (fixed, categorical, ours); matplotlib's numeric formatters keep
    their own math (2^3 on a log axis)."""
    from matplotlib.text import Text

    if getattr(fig, "_wsemoe_literal", False):
        return
    fig._wsemoe_literal = True
    numeric = (ticker.ScalarFormatter, ticker.LogFormatter, ticker.EngFormatter, ticker.NullFormatter,
               ticker.PercentFormatter)
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            for get, put in ((axis.get_major_formatter, axis.set_major_formatter),
                             (axis.get_minor_formatter, axis.set_minor_formatter)):
                f = get()
                if not isinstance(f, numeric):
                    put(ticker.FuncFormatter(lambda x, pos, f=f: literal(f(x, pos))))
    for t in fig.findobj(Text):
        text = t.get_text()
        if getattr(t, "wsemoe_math", False):
            continue
        if text and ("$" in text or printable(text, lines=True) != text):
            t.set_text(literal(text))
