"""Command line: thin typer commands over pure functions; the only module that prints or exits.

Heavy libraries (numpy, pandas, pydantic, matplotlib, rich) are imported inside the commands that need
them, so `wsemoe --help` and `wsemoe check` start fast.
"""

from __future__ import annotations

import functools
import os
import shutil
import signal
import sys
from pathlib import Path
from typing import List, Optional

import typer
from typer.core import TyperGroup

from wsemoe.version import __version__
from wsemoe.errors import ConfigError, WsemoeError


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


def _width() -> int:
    """Columns of the terminal (COLUMNS when set, 120 when output goes to a pipe or file)."""
    try:
        return max(40, int(os.environ.get("COLUMNS", "")))
    except ValueError:
        return shutil.get_terminal_size((120, 24)).columns if sys.stdout.isatty() else 120


def _out():
    """A rich console for tables at the terminal's width (rich is imported only by commands that print tables)."""
    from rich.console import Console

    return Console(soft_wrap=False, width=_width(), highlight=False)


def _fail(message: str, code: int = 2):
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
            _fail(exc.line())
        except KeyboardInterrupt:
            _fail("interrupted; no results were written (a sweep continues with --resume)", 130)
        except Exception as exc:  # a bug, but users still get one line
            if os.environ.get("WSEMOE_DEBUG"):
                raise
            _fail(f"internal error ({type(exc).__name__}: {exc}); rerun with WSEMOE_DEBUG=1 for a traceback", 1)
    return wrapper


def _choice(value: str, allowed, option: str) -> str:
    if value not in allowed:
        raise ConfigError(f"'{value}' is not one of {', '.join(allowed)}", loc=(option,))
    return value


def _emit(df, fmt: str, title: str = "", index: str | None = "point", priority=None):
    """Rows as a table that fits the terminal, or as Markdown, CSV or JSON on stdout."""
    from wsemoe.report import formats

    if fmt in ("csv", "json"):
        sys.stdout.write(formats.machine(df, fmt, index))
    elif fmt == "markdown":
        sys.stdout.write((f"**{title}**\n\n" if title else "") + formats.markdown(df, index))
    else:
        cols, hidden = formats.fit(df, priority or list(df.columns), _width(), index)
        note = f"not shown for width: {', '.join(hidden)} (--format csv shows every column)" if hidden else ""
        _out().print(formats.table(df[cols], title=title, index=index, caption=note))


def _version(value: bool):
    if value:
        typer.echo(f"wsemoe {__version__}")
        raise typer.Exit()


@app.callback()
def main(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                      help="print the version and exit")):
    """Design-space explorer for Mixture-of-Experts models on wafer-scale processors."""


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
    _show(res.path, f"({man['points']:,} points in {res.seconds:.2f} s)")


def _show(path: Path, status: str = "", limit: Optional[int] = 20):
    """Summary, Pareto front (with point indices) and comparison of a results folder, fitted to the terminal."""
    from wsemoe.analysis.query import select
    from wsemoe.report import tables
    from wsemoe.sweep import store

    man = store.load_manifest(path)
    _out().print(tables.summary(man, status))
    sel = select(path, limit=limit)
    first, sense = next(iter(man["objectives"].items()))
    _out().print(tables.selection(sel, _width(), f"Pareto front ({man['pareto']:,} points, best {first} first)"))
    if (path / "comparison.csv").is_file():
        import pandas as pd

        _out().print(tables.comparison(pd.read_csv(path / "comparison.csv"), _width()))


@app.command()
@guarded
def show(results: Path = typer.Argument(..., help="a results folder"),
         all_points: bool = typer.Option(False, "--all", "-a", help="rows from every point, not only the Pareto front"),
         where: Optional[str] = typer.Option(None, "--where", "-w", help='keep rows where this holds, e.g. "mfu > 0.3 and workload.G <= 16"'),
         columns: Optional[str] = typer.Option(None, "--columns", "-c", help="comma-separated columns to show"),
         sort: Optional[List[str]] = typer.Option(None, "--sort", "-s", help="sort by a column (objectives best first; -col descending, +col ascending)"),
         limit: Optional[int] = typer.Option(None, "--limit", "-n", min=0, help="rows to show (default 20 in a table, all in other formats; 0: all)"),
         fmt: str = typer.Option("table", "--format", "-F", help="table | csv | json | markdown")):
    """Show a results folder: summary, Pareto front (point indices for `eval --point`) and comparison;
    or the rows a question selects (--all, --where, --sort, --columns)."""
    from wsemoe.analysis.query import select
    from wsemoe.report import tables

    _choice(fmt, TABLE_FORMATS, "--format")
    if limit is None:
        limit = 20 if fmt == "table" else 0
    cols = [c.strip() for c in columns.split(",") if c.strip()] if columns else None
    if fmt == "table" and not (all_points or where or sort or cols):
        return _show(results, limit=limit)
    sel = select(results, where=where, columns=cols, sort=sort, limit=limit, every_point=all_points)
    what = "every point" if all_points else "the Pareto front"
    title = f"{sel.matched:,} of {sel.scanned:,} rows of {what}" + (f" where {where}" if where else "")
    if fmt == "table":
        _out().print(tables.selection(sel, _width(), title))
    else:
        _emit(sel.rows, fmt, title)


@app.command()
@guarded
def plot(results: Path = typer.Argument(..., help="a results folder"),
         only: Optional[List[str]] = typer.Option(None, "--only", help="a figure (e.g. pareto, speedup_vs_G) or family (bta, mesh, ...); repeatable"),
         fmt: Optional[List[str]] = typer.Option(None, "--format", "-F", help="png | svg | pdf; repeatable (default png and svg)")):
    """Write the plots of a results folder into its plots/ folder."""
    from wsemoe.report import plots as plotting

    for p in plotting.plot_results(results, only=only, formats=fmt or None):
        typer.echo(str(p))


@app.command()
@guarded
def check(config: Path = typer.Argument(..., help="sweep YAML"),
          estimate: bool = typer.Option(False, "--estimate", "-e", help="also time a sample to estimate run time and output size")):
    """Validate CONFIG (every key, value and column it names) and count its points, without running it."""
    from wsemoe.sweep.plan import check as check_config

    info = check_config(config, estimate=estimate)
    typer.echo(f"{info['name']}: valid; {info['points']:,} points")
    for axis, n in info["axes"].items():
        typer.echo(f"  axis {axis}: {n} values")
    for group in info["zip_groups"]:
        typer.echo(f"  zipped: {', '.join(group)}")
    if estimate:
        from wsemoe.report.tables import fmt

        typer.echo(f"  estimated time {fmt(info['estimated_seconds'], 's')} on one core, "
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

    _choice(fmt, TABLE_FORMATS, "--format")
    _, rows = explain.breakdown(config, point, set_ or [])
    if fmt == "table":
        from wsemoe.report import tables

        _out().print(tables.breakdown(rows))
        return
    import pandas as pd

    df = pd.DataFrame(rows, columns=["group", "term", "value", "unit", "meaning"])
    df["value"] = df["value"].map(lambda v: v.item() if hasattr(v, "item") else v)
    _emit(df, fmt, f"point {point}", index=None)


@app.command()
@guarded
def compare(folders: List[Path] = typer.Argument(..., help="two or more results folders"),
            metric: Optional[str] = typer.Option(None, "--metric", "-m", help="what 'best' means: column[:max|min] (default: the first folder's first objective)"),
            fmt: str = typer.Option("table", "--format", "-F", help="table | csv | json | markdown"),
            plot_to: Optional[Path] = typer.Option(None, "--plot", help="also draw the comparison into this .png, .svg or .pdf file")):
    """Results folders side by side: the best point of each per common group, ratios, and what binds."""
    from wsemoe.analysis.crossrun import compare as compare_runs

    _choice(fmt, TABLE_FORMATS, "--format")
    cmp = compare_runs(folders, metric)
    title = (f"best feasible point per group by {cmp.metric} ({cmp.sense}); ratios to {cmp.labels[0]}"
             + "".join(f"; {n} group(s) of {lab} left out (not in every folder)" for lab, n in cmp.dropped.items() if n))
    table = cmp.table
    if fmt == "table" and cmp.fixed:  # said once in the title, not in every row
        title += "; every row: " + ", ".join(f"{c} = {v}" for c, v in cmp.fixed.items())
        table = table.drop(columns=list(cmp.fixed))
    priority = [*cmp.varying, *(c for c in table.columns if "/" in c and c.endswith(cmp.metric)),
                *(f"{lab}:{cmp.metric}" for lab in cmp.labels), *(f"{lab}:bound" for lab in cmp.labels)]
    _emit(table, fmt, title, index=None, priority=priority)
    if plot_to is not None:
        from wsemoe.report import compareplot, output

        ext = plot_to.suffix.lstrip(".").lower()
        output.write(plot_to, output.figure_bytes(compareplot.figure(cmp), ext), "figure")
        typer.echo(str(plot_to), err=fmt != "table")


@app.command()
@guarded
def schema(fmt: str = typer.Option("json", "--format", "-F", help="json (JSON Schema for editors) | markdown (docs/config.md)"),
           output: Optional[Path] = typer.Option(None, "-o", "--output", help="write to this file (default: stdout)")):
    """The sweep-config reference: a JSON Schema (editors validate and complete YAML with it) or Markdown."""
    _choice(fmt, ("json", "markdown"), "--format")
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
def report(results: Path = typer.Argument(..., help="a results folder"),
           output: Optional[Path] = typer.Option(None, "-o", "--output", help="HTML file (default <results>/report.html)")):
    """One self-contained HTML page: summary, what binds, Pareto front, comparison, figures, config, manifest."""
    from wsemoe.report.html import write_report

    typer.echo(str(write_report(results, output)))


@app.command("ls")
@guarded
def list_results(root: Path = typer.Argument(Path("results"), help="folder holding results folders"),
                 clean: bool = typer.Option(False, "--clean", help="remove stale partial folders (unfinished runs no run holds)")):
    """List the sweeps under ROOT (size, points, date, up to date?) and the partial folders runs left behind."""
    from wsemoe.sweep import inventory

    removed = inventory.clean(root) if clean else []
    rows = inventory.results_in(root)
    from wsemoe.report import tables

    _out().print(tables.inventory(rows, root) if rows else f"no results in {root}")
    for p in removed:
        typer.echo(f"removed stale partial folder {p}")
    for p in inventory.partials_in(root):
        typer.echo(tables.partial_line(p))


@app.command()
@guarded
def presets():
    """List hardware and model presets with their key figures."""
    from wsemoe.report import tables

    for t in tables.presets():
        _out().print(t)


@app.command()
@guarded
def validate():
    """Print each published figure the project reproduces beside the model's value and error."""
    from wsemoe.report import tables
    from wsemoe.validate import run_all

    rows = run_all()
    _out().print(tables.validation(rows))
    bad = [r for r in rows if r["ok"] is False]
    if bad:
        _fail(f"{len(bad)} reproduced figure(s) outside tolerance: {bad[0]['claim']}", 1)


if __name__ == "__main__":  # pragma: no cover
    app()
