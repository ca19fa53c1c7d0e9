"""Progress of long steps (sweep, sensitivity, calibrate, invariants, validate, plots, reports): one rich bar on
stderr, on a terminal only (never in a pipe, under CI or with --quiet), so logs and piped output stay clean.

A command opens `bar(label, unit)` around the work and hands the bar to it as its `on_progress(done, total)`
callback; the layers below know only the callback, never rich.
"""

from __future__ import annotations

import os
import sys
import time


def visible(quiet: bool = False) -> bool:
    """True when a bar may be drawn: stderr is a terminal, not under CI, not asked to be quiet."""
    return not (quiet or os.environ.get("CI") or not sys.stderr.isatty())


class Bar:
    """A context manager and a callback `bar(done, total, note="")`; does nothing where `visible` is False.

    `rate=True` adds '<n> <unit>/s' measured from the first update (a resumed sweep's reused points are not
    counted as speed). `console` draws elsewhere (tests)."""

    def __init__(self, label: str, unit: str = "", rate: bool = False, quiet: bool = False, console=None):
        self.label, self.unit, self.rate = label, unit, rate
        self.on = console is not None or visible(quiet)
        self.console, self.progress, self.task, self.start = console, None, None, None

    def __enter__(self) -> "Bar":
        if self.on:
            from rich.console import Console
            from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn,
                                       TimeRemainingColumn)

            self.progress = Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                                     TextColumn(self.unit), TextColumn("{task.fields[note]}"), TimeElapsedColumn(),
                                     TimeRemainingColumn(), console=self.console or Console(stderr=True),
                                     transient=self.console is None)
            self.progress.start()
            self.task = self.progress.add_task(self.label, total=None, note="")
        return self

    def __exit__(self, *exc) -> None:
        if self.progress is not None:
            self.progress.stop()
            self.progress = None

    def __call__(self, done: int, total: int | None = None, note: str = "") -> None:
        if self.progress is None:
            return
        if self.rate:
            self.start = self.start or (time.perf_counter(), done)
            t0, d0 = self.start
            dt = time.perf_counter() - t0
            note = (f"{(done - d0) / dt:,.0f} {self.unit}/s " if dt > 0 and done > d0 else "") + note
        self.progress.update(self.task, completed=done, total=total, note=note)


def say(line: str, quiet: bool = False, console=None) -> None:
    """One line on stderr now, before a long step starts (its estimate), where a bar would be drawn: on a
    terminal only, like the bar (a pipe or a log gets the command's reply, which repeats it)."""
    if console is None and not visible(quiet):
        return
    from rich.console import Console

    (console or Console(stderr=True, highlight=False, markup=False)).print(line)


def bar(label: str, unit: str = "", rate: bool = False, quiet: bool = False, console=None) -> Bar:
    """The progress bar of one long step (see `Bar`)."""
    return Bar(label, unit, rate, quiet, console)

