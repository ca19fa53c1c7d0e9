"""The sweep's progress bar: points done, rate and time left, on a terminal only."""

from __future__ import annotations

import os
import sys
import time


def sweep_bar(quiet: bool):
    """(rich Progress, update(done, total)) on a terminal; (None, None) under CI, --quiet or a pipe."""
    if quiet or os.environ.get("CI") or not sys.stderr.isatty():
        return None, None
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    bar = Progress(TextColumn("[bold]sweep"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[rate]}"),
                   TimeRemainingColumn(), console=Console(stderr=True), transient=True)
    task = bar.add_task("points", total=None, rate="")
    start = {}

    def update(done, total):
        start.setdefault("t", (time.perf_counter(), done))
        t0, d0 = start["t"]
        dt = time.perf_counter() - t0
        rate = f"{(done - d0) / dt:,.0f} points/s" if dt > 0 and done > d0 else ""
        bar.update(task, completed=done, total=total, rate=rate)
    return bar, update
