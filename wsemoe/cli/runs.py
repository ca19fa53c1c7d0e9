"""Commands that run the model: sweep, check, eval, schema, presets."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from typing import List, Optional

import typer

from wsemoe.cli.base import TABLE_FORMATS, app, choice, console, emit, guarded, show_folder
from wsemoe.version import __version__


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def _progress_bar(quiet: bool):
    """A rich progress bar (rate, ETA) on a terminal; nothing under CI, --quiet or a pipe."""
    if quiet or os.environ.get("CI") or not sys.stderr.isatty():
        return None, None
    import time

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


@app.command()
@guarded
def sweep(config: Path = typer.Argument(..., help="sweep YAML"),
          output: Optional[Path] = typer.Option(None, "-o", "--output", help="results folder (default results/<name>)"),
          results: Path = typer.Option(Path("results"), help="root folder of results"),
          force: bool = typer.Option(False, "--force", "-f", help="re-run an unchanged config; allow sweeps over the size limit"),
          resume: bool = typer.Option(False, "--resume", help="continue a killed run from its last complete chunk"),
          workers: int = typer.Option(1, "--workers", "-j", min=1, help="local worker processes"),
          scheduler: Optional[str] = typer.Option(None, "--scheduler", help="Dask scheduler address (needs the wsemoe[dask] extra)"),
          chunk_size: Optional[int] = typer.Option(None, "--chunk-size", min=1, help="points per chunk (memory bound)"),
          quiet: bool = typer.Option(False, "--quiet", "-q", help="print only the results path")):
    """Evaluate every design point of CONFIG and write results/<name>/."""
    from wsemoe.sweep.run import run_sweep

    signal.signal(signal.SIGTERM, _interrupt)  # a polite kill ends like Ctrl-C: one line, progress kept
    bar, update = _progress_bar(quiet)
    kwargs = dict(out_root=results, force=force, out_dir=output, resume=resume, workers=workers, scheduler=scheduler,
                  chunk_size=chunk_size)
    if bar is not None:
        with bar:
            res = run_sweep(config, on_progress=update, **kwargs)
    else:
        res = run_sweep(config, **kwargs)
    if quiet:
        typer.echo(str(res.path))
        return
    if res.status == "up to date":
        typer.echo(f"{res.config.name}: up to date ({res.path}); use --force to re-run")
        return
    man = res.manifest
    if resume:
        typer.echo(f"resumed: reused {man['chunks_reused']:,} of {man['chunks']:,} chunks "
                   f"({man['points_reused']:,} of {man['points']:,} points), evaluated the rest")
    show_folder(res.path, f"({man['points']:,} points in {res.seconds:.2f} s)")


@app.command()
@guarded
def check(config: Path = typer.Argument(..., help="sweep YAML"),
          estimate: bool = typer.Option(False, "--estimate", "-e", help="also time a sample to estimate run time and output size")):
    """Validate CONFIG (every key, value and column it names) and count its points, without running it."""
    from wsemoe.sweep.plan import check as check_config

    info = check_config(config, estimate=estimate)
    if info["search"]:
        s = info["search"]
        typer.echo(f"{info['name']}: valid; a space of {info['space_points']:,} points, searched with "
                   f"{s['algorithm']} (seed {s['seed']}): at most {info['points']:,} evaluations")
    else:
        typer.echo(f"{info['name']}: valid; {info['points']:,} points")
    for axis, n in info["axes"].items():
        typer.echo(f"  axis {axis}: {n} values")
    for group in info["zip_groups"]:
        typer.echo(f"  zipped: {', '.join(group)}")
    if estimate:
        from wsemoe.report.tables import fmt

        what = "evaluation time (the search's own work comes on top)" if info["search"] else "time"
        typer.echo(f"  estimated {what} {fmt(info['estimated_seconds'], 's')} on one core, "
                   f"output ~{fmt(info['estimated_output_bytes'], 'bytes')}")
    if info["over_limit"]:
        typer.echo(f"  over the limit of {info['limit']:,} points: `sweep` needs --force")


@app.command("eval")
@guarded
def eval_point(config: Path = typer.Argument(..., help="sweep YAML, or a results folder"),
               point: int = typer.Option(0, "--point", "-p", help="index of the point, as `show` and pareto.csv give it"),
               set_: Optional[List[str]] = typer.Option(None, "--set", help="override the point's value, e.g. --set workload.G=8"),
               fmt: str = typer.Option("table", "--format", "-F", help="table | csv | json | markdown")):
    """Break one design point into its terms, and show how they add up to step time, throughput and memory."""
    from wsemoe.analysis import explain

    choice(fmt, TABLE_FORMATS, "--format")
    _, rows = explain.breakdown(config, point, set_ or [])
    if fmt == "table":
        from wsemoe.report import tables

        console().print(tables.breakdown(rows))
        return
    import pandas as pd

    df = pd.DataFrame(rows, columns=["group", "term", "value", "unit", "meaning"])
    df["value"] = df["value"].map(lambda v: v.item() if hasattr(v, "item") else v)
    emit(df, fmt, f"point {point}", index=None)


@app.command()
@guarded
def schema(fmt: str = typer.Option("json", "--format", "-F", help="json (JSON Schema for editors) | markdown (docs/config.md)"),
           output: Optional[Path] = typer.Option(None, "-o", "--output", help="write to this file (default: stdout)")):
    """The sweep-config reference: a JSON Schema (editors validate and complete YAML with it) or Markdown."""
    choice(fmt, ("json", "markdown"), "--format")
    if fmt == "json":
        import json

        from wsemoe.config.reference import json_schema
        from wsemoe.report.output import MARK

        text = json.dumps({"$comment": f"{MARK} {__version__}", **json_schema()}, indent=1, ensure_ascii=False,
                          allow_nan=False) + "\n"
    else:
        from wsemoe.report.configdoc import markdown

        text = markdown()
    if output is None:
        sys.stdout.write(text)
        return
    from wsemoe.report.output import write

    typer.echo(str(write(output, text, "schema")))


@app.command()
@guarded
def presets():
    """List hardware and model presets with their key figures."""
    from wsemoe.report import tables

    for t in tables.presets():
        console().print(t)
