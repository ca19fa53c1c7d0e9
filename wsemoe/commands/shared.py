"""Pieces several commands share: rows in any table format, a results folder's view, checked option values."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from wsemoe.commands.reply import Reply
from wsemoe.errors import ConfigError, shown_path  # noqa: F401 (the commands print every path through it)

TABLE_FORMATS = ("table", "csv", "json", "markdown")


FIGURE_FILES = ("png", "svg", "pdf")


def file_kind(path: Path, allowed, option: str) -> str:
    """The kind of file `path` names (its extension, lower case) if it is one of `allowed`, else a one-line error
    naming the option: a command writes what its file's name says or nothing."""
    kind = path.suffix.lstrip(".").lower()
    if path.is_dir() and not path.is_symlink():   # what is there first, as the writers say it
        raise ConfigError("is a folder; give a file name", loc=(option, shown_path(path)))
    if kind not in allowed:
        raise ConfigError(f"name a {', '.join('.' + a for a in allowed[:-1])} or .{allowed[-1]} file"
                          if len(allowed) > 1 else f"name a .{allowed[0]} file", loc=(option, shown_path(path)))
    return kind


def emit(reply: Reply, df, fmt: str, title: str = "", index: str | None = "point", priority=None) -> Reply:
    """Rows as a table that fits the terminal, or as Markdown, CSV or JSON on stdout."""
    from wsemoe.report.terminal import formats
    from wsemoe.report.terminal.console import width

    out = formats.render(df, fmt, title, index, priority, width())
    return reply.raw(out) if isinstance(out, str) else reply.rich(out)


def folder(reply: Reply, path: Path, status: str = "", limit: Optional[int] = 20) -> Reply:
    """Summary, Pareto front (with point indices) and comparison of a results folder, fitted to the terminal."""
    from wsemoe.report.terminal.console import width
    from wsemoe.report.terminal.tables import folder_view

    return parts(reply, folder_view(path, status, limit, width()))  # built whole first: a damaged file prints nothing


def parts(reply: Reply, items) -> Reply:
    """Renderables printed in order, each fitted to the terminal."""
    for item in items:
        reply.rich(item)
    return reply
