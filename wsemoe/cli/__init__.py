"""Command line: thin typer commands over pure functions; the only package that prints or exits.

`base` holds the command group and what commands share (one-line errors, tables at the terminal's
width); `runs`, `results` and `studies` register the commands. Heavy libraries (numpy, pandas,
pydantic, matplotlib, rich) are imported inside the commands that need them, so `wsemoe --help` and
`wsemoe check` start fast.
"""

from __future__ import annotations

from wsemoe.cli import runs, results, studies  # noqa: F401 - importing a module registers its commands
from wsemoe.cli.base import app
from wsemoe.cli.studies import invariants_cmd  # noqa: F401 - the public name tests and docs refer to

__all__ = ["app"]
