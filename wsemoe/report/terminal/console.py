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


def console():
    """A rich console for tables at the terminal's width (rich is imported only by commands that print tables)."""
    from rich.console import Console

    return Console(soft_wrap=False, width=width(), highlight=False)
