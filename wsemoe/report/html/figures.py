"""Figures of the HTML report, embedded so the page reads at 1400 px and stays small enough to send.

A figure whose SVG is small stays vector (crisp at any zoom); one with thousands of points or arrows (a big
cloud, a 16×16 heat map) becomes a PNG of 256 colours at the width the page shows it, which is a tenth of the
SVG's bytes. Families of many similar maps (link heat maps, per-die loads) sit in a grid of thumbnails; a
click opens one to the page's full width (no script: a <details> element).
"""

from __future__ import annotations

import base64
import fnmatch
import io
import re
from html import escape

from wsemoe.report.figures.claims import TESTED, caption_of, finding_of, tested_claim
from wsemoe.report.figures.render import rendered
from wsemoe.report.figures.style import STYLE, figure_bytes
from wsemoe.report.figures.textfit import grouped_ticks, literal_text

SVG_MAX = 120_000     # bytes of SVG above which a figure is embedded as PNG
PNG_DPI = 130         # the widest figures (11 in) at about the page's 1400 px
PNG_COLOURS = 256     # a palette PNG: plots use few colours, so nothing visible is lost
THUMBS = ("link_heatmap_*", "node_load_*")  # many similar large maps: thumbnails, click to enlarge
CSS = """
figure{margin:1.5em 0}figure svg,figure img{max-width:100%;height:auto}figcaption{color:#444;font-size:14px;
max-width:75em}figcaption .stem{color:#888;font-size:12px}.thumbs{display:grid;grid-template-columns:repeat(3,1fr);
gap:1em}.thumbs details{margin:0}.thumbs details[open]{grid-column:1/-1}.thumbs summary{list-style:none;
cursor:zoom-in}.thumbs details[open] summary{cursor:zoom-out}.thumbs summary::-webkit-details-marker{display:none}
.thumbs figure{margin:0}.thumbs figcaption{font-size:12px}.thumbs img{width:100%!important}
"""


def svg(fig, n: int) -> str:
    """A figure as inline SVG: prolog dropped, every id prefixed so figures on one page cannot collide."""
    text = figure_bytes(fig, "svg").decode()
    text = text[text.index("<svg"):]
    ids = set(re.findall(r'id="([^"]+)"', text))
    return re.sub(r'(id="|url\(#|href="#)([^")]+)', lambda m: m.group(1) + (f"f{n}-{m.group(2)}" if m.group(2) in ids
                                                                               else m.group(2)), text)


def png(fig) -> bytes:
    """A figure as a 256-colour PNG at PNG_DPI (its text literal, as `figure_bytes` makes it; no metadata)."""
    from matplotlib import rc_context
    from PIL import Image

    buf = io.BytesIO()
    with rc_context(STYLE):
        literal_text(fig)
        grouped_ticks(fig)
        fig.savefig(buf, format="png", dpi=PNG_DPI)
    img = Image.open(io.BytesIO(buf.getvalue())).convert("RGB")
    out = io.BytesIO()
    img.quantize(colors=PNG_COLOURS, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE).save(
        out, "PNG", optimize=True)
    return out.getvalue()


def image(fig, n: int, alt: str, raster: bool = False) -> str:
    """The figure's markup: inline SVG when small, else (or with `raster`) an embedded PNG; shown as wide as its
    PNG would be (a 7-inch figure about 900 px), never wider than the page."""
    size = f'style="width:{round(fig.get_figwidth() * PNG_DPI)}px"'
    if not raster:
        vector = svg(fig, n)
        if len(vector) <= SVG_MAX:
            return vector.replace("<svg ", f"<svg {size} ", 1)
    data = base64.b64encode(png(fig)).decode()
    return f'<img {size} alt="{escape(alt)}" src="data:image/png;base64,{data}">'


def caption(stem: str, fig, claim_shown: bool = False) -> str:
    """The figcaption: what the figure's data say, then the claim they test (unless shown above its grid), then
    its name. The finding leads: a bold claim followed by 'the data do not bear it out' read as the claim."""
    claim = tested_claim(fig)
    body = escape(finding_of(fig)) + ("" if claim_shown or not claim else
                                      f" <span class=\"claim\">{escape(TESTED + claim)}.</span>")
    return f"<figcaption>{body} <span class=\"stem\">({escape(stem)})</span></figcaption>"


def _family(stem: str) -> str | None:
    """The thumbnail family of a stem (maps drawn as rasters: their SVG is about 1 MB each), or None."""
    return next((p for p in THUMBS if fnmatch.fnmatchcase(stem, p)), None)


def _numbered(figures):
    """(stem, (n, stem, figure)) of each drawn figure, numbered from 0 (ids stay unique on the page)."""
    n = 0
    for stem, fig in figures:
        if fig is not None:
            yield stem, (n, stem, fig)
            n += 1


def _markup(item) -> str:
    """The <figure> of one numbered figure: its image and its caption."""
    n, stem, fig = item
    family = _family(stem)
    return (f"<figure id=\"fig-{escape(stem)}\">{image(fig, n, caption_of(fig) or stem, raster=bool(family))}"
            f"{caption(stem, fig, claim_shown=bool(family))}</figure>")


def section(figures) -> tuple[list[str], int]:
    """The markup of (stem, figure) pairs in order, thumbnail families gathered in grids; how many were drawn."""
    parts, grid, n = [], [], 0
    claim = {}  # the claim of the grid being filled, said once above it

    def flush():
        if grid:
            parts.append(f"<p>{escape(TESTED + claim.get('text', ''))}. Click a map to enlarge it.</p>"
                         "<div class=\"thumbs\">" + "".join(grid) + "</div>")
            grid.clear()

    # Each figure's markup is rendered (in a forked child when a core is free) while the next one is built.
    for stem, body, item in rendered(_numbered(figures), _markup):
        n, fig = item[0] + 1, item[2]
        family = _family(stem)
        text = tested_claim(fig)
        if grid and (family is None or text != claim.get("text")):
            flush()
        if family:
            claim["text"] = text
            grid.append(f"<details><summary>{body}</summary></details>")
        else:
            parts.append(body)
    flush()
    return parts, n
