"""Commands that read results folders: show, plot, compare, report, ls."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from wsemoe.cli.base import TABLE_FORMATS, app, choice, console, emit, guarded, show_folder, width


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
    from wsemoe.report import plots as plotting

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
    cmp = compare_runs(folders, metric)
    title = (f"best feasible point per group by {cmp.metric} ({cmp.sense}); ratios to {cmp.labels[0]}"
             + "".join(f"; {n} group(s) of {lab} left out (not in every folder)" for lab, n in cmp.dropped.items() if n))
    table = cmp.table
    if fmt == "table" and cmp.fixed:  # said once in the title, not in every row
        title += "; every row: " + ", ".join(f"{c} = {v}" for c, v in cmp.fixed.items())
        table = table.drop(columns=list(cmp.fixed))
    priority = [*cmp.varying, *(c for c in table.columns if "/" in c and c.endswith(cmp.metric)),
                *(f"{lab}:{cmp.metric}" for lab in cmp.labels), *(f"{lab}:bound" for lab in cmp.labels)]
    emit(table, fmt, title, index=None, priority=priority)
    if plot_to is not None:
        from wsemoe.report import compareplot, output

        ext = plot_to.suffix.lstrip(".").lower()
        output.write(plot_to, output.figure_bytes(compareplot.figure(cmp), ext), "figure")
        typer.echo(str(plot_to), err=fmt != "table")


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

    console().print(tables.inventory(rows, root) if rows else f"no results in {root}")
    for p in removed:
        typer.echo(f"removed stale partial folder {p}")
    for p in inventory.partials_in(root):
        typer.echo(tables.partial_line(p))
