"""Command line: thin typer commands over pure functions; the only module that prints or exits.

Heavy libraries (numpy, pandas, pydantic, matplotlib, rich) are imported inside the commands that need
them, so `wsemoe --help` and `wsemoe check` start fast. Commands that run the model come first (sweep,
check, eval, schema, presets), then those that read results (show, plot, compare, report, ls), then
those that study the model itself (validate, invariants, sensitivity, calibrate).
"""

from __future__ import annotations

import functools
import os
import signal
import sys
from pathlib import Path
from typing import List, Optional

import typer
from typer.core import TyperGroup

from wsemoe.errors import ConfigError, WsemoeError
from wsemoe.report.terminal.console import console, width
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
    from wsemoe.report.terminal import formats

    out = formats.render(df, fmt, title, index, priority, width())
    sys.stdout.write(out) if isinstance(out, str) else console().print(out)


def show_folder(path: Path, status: str = "", limit: Optional[int] = 20):
    """Summary, Pareto front (with point indices) and comparison of a results folder, fitted to the terminal."""
    from wsemoe.report.terminal.tables import folder_view

    for part in folder_view(path, status, limit, width()):  # built whole first: a damaged file prints nothing
        console().print(part)


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
    from wsemoe.report.terminal import progress
    from wsemoe.sweep.run import run_sweep

    signal.signal(signal.SIGTERM, _interrupt)  # a polite kill ends like Ctrl-C: one line, progress kept
    bar, update = progress.sweep_bar(quiet)
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

    from wsemoe.report.terminal.texts import check_lines

    for line in check_lines(check_config(config, estimate=estimate)):
        typer.echo(line)


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
        from wsemoe.report.terminal import tables

        console().print(tables.breakdown(rows))
        return
    emit(explain.frame(rows), fmt, f"point {point}", index=None)


@app.command()
@guarded
def schema(fmt: str = typer.Option("json", "--format", "-F", help="json (JSON Schema for editors) | markdown (docs/config.md)"),
           output: Optional[Path] = typer.Option(None, "-o", "--output", help="write to this file (default: stdout)")):
    """The sweep-config reference: a JSON Schema (editors validate and complete YAML with it) or Markdown."""
    from wsemoe.report.configdoc import reference_text

    text = reference_text(choice(fmt, ("json", "markdown"), "--format"))
    if output is None:
        sys.stdout.write(text)
        return
    from wsemoe.report.output import write

    typer.echo(str(write(output, text, "schema")))


@app.command()
@guarded
def presets():
    """List hardware and model presets with their key figures."""
    from wsemoe.report.terminal import tables

    for t in tables.presets():
        console().print(t)


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
    from wsemoe.report.terminal import tables

    choice(fmt, TABLE_FORMATS, "--format")
    if limit is None:
        limit = 20 if fmt == "table" else 0
    cols = [c.strip() for c in columns.split(",") if c.strip()] if columns else None
    if fmt == "table" and not (all_points or where or sort or cols):
        return show_folder(results, limit=limit)
    sel = select(results, where=where, columns=cols, sort=sort, limit=limit, every_point=all_points)
    what = "every point" if all_points else "the Pareto front"
    title = f"{sel.matched:,} of {sel.scanned:,} rows of {what}" + (f" where {where}" if where else "")
    if fmt == "table":
        console().print(tables.selection(sel, width(), title))
    else:
        emit(sel.rows, fmt, title)


@app.command()
@guarded
def plot(results: Path = typer.Argument(..., help="a results folder"),
         only: Optional[List[str]] = typer.Option(None, "--only", help="a figure (e.g. pareto, speedup_vs_G) or family (bta, mesh, ...); repeatable"),
         fmt: Optional[List[str]] = typer.Option(None, "--format", "-F", help="png | svg | pdf; repeatable (default png and svg)")):
    """Write the plots of a results folder into its plots/ folder."""
    from wsemoe.report.figures import plots as plotting

    for p in plotting.plot_results(results, only=only, formats=fmt or None):
        typer.echo(str(p))


@app.command()
@guarded
def compare(folders: List[Path] = typer.Argument(..., help="two or more results folders"),
            metric: Optional[str] = typer.Option(None, "--metric", "-m", help="what 'best' means: column[:max|min] (default: the first folder's first objective)"),
            fmt: str = typer.Option("table", "--format", "-F", help="table | csv | json | markdown"),
            plot_to: Optional[Path] = typer.Option(None, "--plot", help="also draw the comparison into this .png, .svg or .pdf file")):
    """Results folders side by side: the best point of each per common group, ratios, and what binds."""
    from wsemoe.analysis.crossrun import compare as compare_runs

    choice(fmt, TABLE_FORMATS, "--format")
    from wsemoe.report.terminal.texts import comparison_view

    cmp = compare_runs(folders, metric)
    table, title, priority = comparison_view(cmp, fmt == "table")
    emit(table, fmt, title, index=None, priority=priority)
    if plot_to is not None:
        from wsemoe.report.figures import compareplot
        from wsemoe.report import output

        ext = plot_to.suffix.lstrip(".").lower()
        output.write(plot_to, output.figure_bytes(compareplot.figure(cmp), ext), "figure")
        typer.echo(str(plot_to), err=fmt != "table")


@app.command()
@guarded
def report(results: Path = typer.Argument(..., help="a results folder"),
           output: Optional[Path] = typer.Option(None, "-o", "--output", help="HTML file (default <results>/report.html)")):
    """One self-contained HTML page: summary, what binds, Pareto front, comparison, figures, config, manifest."""
    from wsemoe.report.html.page import write_report

    typer.echo(str(write_report(results, output)))


@app.command("ls")
@guarded
def list_results(root: Path = typer.Argument(Path("results"), help="folder holding results folders"),
                 clean: bool = typer.Option(False, "--clean", help="remove stale partial folders (unfinished runs no run holds)")):
    """List the sweeps under ROOT (size, points, date, up to date?) and the partial folders runs left behind."""
    from wsemoe.report.terminal import tables
    from wsemoe.sweep import inventory

    removed = inventory.clean(root) if clean else []
    rows = inventory.results_in(root)
    console().print(tables.inventory(rows, root) if rows else f"no results in {root}")
    for p in removed:
        typer.echo(f"removed stale partial folder {p}")
    for p in inventory.partials_in(root):
        typer.echo(tables.partial_line(p))


@app.command()
@guarded
def validate():
    """Print each published figure the project reproduces beside the model's value and error."""
    from wsemoe.report.terminal import tables
    from wsemoe.validate import run_all
    from wsemoe.validate.common import unexplained

    rows = run_all()
    console().print(tables.validation(rows))
    bad = unexplained(rows)
    if bad:
        fail(f"{len(bad)} row(s) fail without a known reason: {bad[0]['claim']}", 1)


@app.command("invariants")
@guarded
def invariants_cmd(configs: Optional[List[Path]] = typer.Argument(None, help="sweep YAMLs (default: every shipped preset and sweep)"),
                   points: int = typer.Option(512, "--points", "-n", min=1, help="design points checked per config (its axes, thinned evenly)"),
                   junit: Optional[Path] = typer.Option(None, "--junit", help="also write JUnit XML here (for CI)"),
                   fmt: str = typer.Option("text", "--format", help="text, or json for scripts"),
                   only: Optional[List[str]] = typer.Option(None, "--only", help="run only this invariant (repeatable)"),
                   list_: bool = typer.Option(False, "--list", help="list the invariants with their reasons and exit"),
                   verbose: bool = typer.Option(False, "--verbose", "-v", help="the full table even in a pipe"),
                   quiet: bool = typer.Option(False, "--quiet", "-q", help="print nothing; the exit code says it all")):
    """Check the cost model's physical invariants on CONFIGS: exit 0 all hold, 1 one fails, 2 bad input.
    On a terminal a table of every invariant; in a pipe (CI) only what fails, one line each."""
    import json

    from wsemoe.analysis.invariants import REGISTRY
    from wsemoe.analysis.suite import check_invariants
    from wsemoe.report import junit as junit_report
    from wsemoe.report.terminal import tables

    out, fmt = console(), choice(fmt, ("text", "json"), "--format")
    if list_:
        for inv in REGISTRY.values():
            out.print(f"[bold]{inv.name}[/bold]: {inv.statement}\n    why: {inv.reason}", highlight=False, soft_wrap=True)
        return
    if junit is not None:
        junit_report.check_target(junit)
    report = check_invariants(configs or None, points=points, only=only)
    if junit is not None:
        junit_report.write_junit(report, junit)
    if fmt == "json":
        typer.echo(json.dumps(report.to_dict(), indent=2, ensure_ascii=False, allow_nan=False))
    elif verbose or (not quiet and sys.stdout.isatty()):
        out.print(tables.invariants(report))
    elif not quiet:
        for line in tables.invariant_lines(report):
            out.print(line, markup=False, highlight=False, soft_wrap=True)
    if not report.ok:
        raise typer.Exit(1)


@app.command("sensitivity")
@guarded
def sensitivity_cmd(config: Path = typer.Argument(..., help="sweep YAML"),
                    samples: int = typer.Option(10_000, "--samples", "-n", help="samples of the unknowns (at least)"),
                    method: str = typer.Option("sobol", help="sobol (first-order and total indices) or morris"),
                    seed: int = typer.Option(1, help="seed of the sample design"),
                    unknowns: Optional[Path] = typer.Option(None, help="YAML of unknowns (default: the shipped list)"),
                    only: Optional[List[str]] = typer.Option(None, "--only", help="vary only these unknowns"),
                    results: Path = typer.Option(Path("results"), help="root folder of results")):
    """Global sensitivity of CONFIG's results to the calibration unknowns; writes results/<name>/sensitivity/."""
    from wsemoe.analysis import sensitivity as sens
    from wsemoe.report.terminal import tables

    result, path = sens.run(config, out_root=results, method=method, samples=samples, seed=seed,
                            unknowns_file=unknowns, only=only or ())
    for q in sens.headline_quantities(result):
        console().print(tables.sensitivity(result, q))
    typer.echo(f"sensitivity: {path} ({result.meta['evaluations']:,} evaluations in {result.meta['seconds']:.1f} s)")


@app.command()
@guarded
def calibrate(hardware: str = typer.Option("cs2", help="hardware preset whose unknowns are fitted"),
              output: Optional[Path] = typer.Option(None, "-o", "--output",
                                                    help="folder for the fit (default results/calibration-<hardware>)"),
              samples: int = typer.Option(512, "--samples", "-n", help="samples per search stage"),
              seed: int = typer.Option(1, help="seed of the search"),
              unknowns: Optional[Path] = typer.Option(None, help="YAML of unknowns (default: the shipped list)"),
              only: Optional[List[str]] = typer.Option(None, "--only", help="fit only these unknowns")):
    """Fit the calibration unknowns to the public BTA targets; write the fitted preset beside the original."""
    from wsemoe.analysis import calibrate as cal
    from wsemoe.report.terminal import tables

    result, table, path = cal.run(hardware, output, samples=samples, seed=seed, unknowns_file=unknowns,
                                  only=only or ())
    console().print(tables.calibration(table, result.residuals, result.chi2))
    typer.echo(f"fitted preset, diff and residuals: {path} (no preset was changed)")


if __name__ == "__main__":  # pragma: no cover
    app()
