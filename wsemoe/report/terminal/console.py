"""The terminal tables are drawn on: its width, and a rich console at that width (imported lazily)."""

from __future__ import annotations

import os
import shutil
import sys


def width() -> int:
    """Columns of the terminal (COLUMNS when set, 120 when output goes to a pipe or file)."""
    try:
        return max(40, int(os.environ.get("COLUMNS", "")))
    except ValueError:
        return shutil.get_terminal_size((120, 24)).columns if sys.stdout.isatty() else 120


def shown(text) -> str:
    """Text for the terminal: control characters and escape sequences shown escaped (line breaks kept), so a
    name from a folder, a file or a manifest can never move the cursor, retitle the window or recolour it."""
    from wsemoe.errors import printable

    return printable(text, lines=True)


def console():
    """A rich console for tables at the terminal's width (rich is imported only by commands that print tables).

    Every string it renders (cells, titles, captions) passes through `shown`, and markup is off unless a
    caller asks for it (our own styled text uses `Text.from_markup`): text from results is printed as it is."""
    from rich.console import Console
    from rich.segment import Segment
    from rich.table import Table

    from wsemoe.report.terminal import widths

    class SafeConsole(Console):
        def render_str(self, text, **kwargs):
            return super().render_str(shown(text), **kwargs)

        def render(self, renderable, options=None):
            """Last line of defence: text that reached a segment unescaped (a Text built from data) is shown
            escaped; rich's own control segments pass. Every table, nested ones too (rich renders a group's
            parts through here), is laid out so that no cell breaks inside a word (`widths.fitted`)."""
            if isinstance(renderable, Table):
                renderable = widths.fitted(renderable, (options or self.options).max_width)
            for seg in super().render(renderable, options):
                if seg.control or seg.text.replace("\n", "").isprintable():
                    yield seg
                else:
                    yield Segment(shown(seg.text), seg.style)

    return SafeConsole(soft_wrap=False, width=width(), highlight=False, markup=False)
