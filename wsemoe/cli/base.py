"""The command group and what every command shares: one-line errors, terminal width, tables, exit codes."""

from __future__ import annotations

import functools
import os
import shutil
import sys

from pathlib import Path
from typing import Optional

import typer
from typer.core import TyperGroup

from wsemoe.errors import ConfigError, WsemoeError
from wsemoe.version import __version__


def _one_line(exc: Exception) -> None:
    """Usage errors (unknown option, bad or missing value) print as one line, like every other error."""
    if isinstance(exc, typer.TyperException) and hasattr(exc, "show") and type(exc).__name__ != "NoArgsIsHelpError":
        text = " ".join(exc.format_message().split())
        exc.show = lambda file=None: typer.echo(f"error: {text} (see --help)", err=True)


class OneLineGroup(TyperGroup):
    """The command group, with usage errors of the group and of every command shown in one line."""

    def make_context(self, *args, **kwargs):
        try:
            return super().make_context(*args, **kwargs)
        except typer.TyperException as exc:
            _one_line(exc)
            raise

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except typer.TyperException as exc:
            _one_line(exc)
            raise


app = typer.Typer(cls=OneLineGroup, no_args_is_help=True, pretty_exceptions_enable=False, rich_markup_mode=None,
                  help="Design-space explorer for Mixture-of-Experts models on wafer-scale processors.")
TABLE_FORMATS = ("table", "csv", "json", "markdown")


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


def fail(message: str, code: int = 2):
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


def guarded(fn):
    """Turn every failure into one line on stderr and a non-zero exit (no traceback)."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except typer.Exit:
            raise
        except WsemoeError as exc:
            fail(exc.line())
        except KeyboardInterrupt:
            fail("interrupted; no results were written (a sweep continues with --resume)", 130)
        except Exception as exc:  # a bug, but users still get one line
            if os.environ.get("WSEMOE_DEBUG"):
                raise
            fail(f"internal error ({type(exc).__name__}: {exc}); rerun with WSEMOE_DEBUG=1 for a traceback", 1)
    return wrapper


def choice(value: str, allowed, option: str) -> str:
    if value not in allowed:
        raise ConfigError(f"'{value}' is not one of {', '.join(allowed)}", loc=(option,))
    return value


def emit(df, fmt: str, title: str = "", index: str | None = "point", priority=None):
    """Rows as a table that fits the terminal, or as Markdown, CSV or JSON on stdout."""
    from wsemoe.report import formats

    if fmt in ("csv", "json"):
        sys.stdout.write(formats.machine(df, fmt, index))
    elif fmt == "markdown":
        sys.stdout.write((f"**{title}**\n\n" if title else "") + formats.markdown(df, index))
    else:
        cols, hidden = formats.fit(df, priority or list(df.columns), width(), index)
        note = f"not shown for width: {', '.join(hidden)} (--format csv shows every column)" if hidden else ""
        console().print(formats.table(df[cols], title=title, index=index, caption=note))


def show_folder(path: Path, status: str = "", limit: Optional[int] = 20):
    """Summary, Pareto front (with point indices) and comparison of a results folder, fitted to the terminal."""
    from wsemoe.analysis.query import select
    from wsemoe.report import tables
    from wsemoe.sweep import store

    man = store.load_manifest(path)
    sel = select(path, limit=limit)  # before printing anything: a damaged front is one line, not half a page
    console().print(tables.summary(man, status))
    first, sense = next(iter(man["objectives"].items()))
    console().print(tables.selection(sel, width(), f"Pareto front ({man['pareto']:,} points, best {first} first)"))
    if (path / "comparison.csv").is_file():
        import pandas as pd

        console().print(tables.comparison(pd.read_csv(path / "comparison.csv"), width()))
    from wsemoe.analysis import sensitivity as sens

    bands = sens.load(path, man.get("config_hash"))
    if bands is not None:
        console().print(tables.sensitivity(bands))


def _version(value: bool):
    if value:
        typer.echo(f"wsemoe {__version__}")
        raise typer.Exit()


@app.callback()
def main(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                      help="print the version and exit")):
    """Design-space explorer for Mixture-of-Experts models on wafer-scale processors."""
