"""Commands that read results folders: show, plot, compare, report, ls."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from wsemoe.commands.reply import Reply, registry
from wsemoe.commands.shared import TABLE_FORMATS, choice, emit, folder

COMMANDS, command = registry()


@command()
def show(results: Path = typer.Argument(..., help="a results folder"),
         all_points: bool = typer.Option(False, "--all", "-a", help="rows from every point, not only the Pareto front"),
         feasible: bool = typer.Option(False, "--feasible", help="only feasible points (with --all; front rows are all feasible)"),
         where: Optional[str] = typer.Option(None, "--where", "-w", help='keep rows where this holds, e.g. "mfu > 0.3 and workload.G <= 16"'),
         columns: Optional[str] = typer.Option(None, "--columns", "-c", help="comma-separated columns to show"),
         sort: Optional[List[str]] = typer.Option(None, "--sort", "-s", help="sort by a column (objectives best first; -col descending, +col ascending)"),
         limit: Optional[int] = typer.Option(None, "--limit", "-n", min=0, help="rows to show (default 20 in a table, all in other formats; 0: all)"),
         fmt: str = typer.Option("table", "--format", "-F", help="table | csv | json | markdown")) -> Reply:
    """Show a results folder: summary, Pareto front (point indices for `eval --point`) and comparison;
    or the rows a question selects (--all, --where, --sort, --columns)."""
    from wsemoe.analysis.query import select
    from wsemoe.report.terminal import tables
    from wsemoe.report.terminal.console import width

    choice(fmt, TABLE_FORMATS, "--format")
    if limit is None:
        limit = 20 if fmt == "table" else 0
    cols = [c.strip() for c in columns.split(",") if c.strip()] if columns else None
    if fmt == "table" and not (all_points or where or sort or cols or feasible):
        return folder(Reply(), results, limit=limit)
    if cols and all_points and fmt == "table" and "feasible" not in cols:
        cols = [*cols, "feasible"]  # a table of every point always says which rows are infeasible
    sel = select(results, where=where, columns=cols, sort=sort, limit=limit, every_point=all_points, feasible=feasible)
    what = ("every feasible point" if feasible else "every point") if all_points else "the Pareto front"
    title = f"{sel.matched:,} of {sel.scanned:,} rows of {what}" + (f" where {where}" if where else "")
    if fmt == "table":
        return Reply().rich(tables.selection(sel, width(), title))
    return emit(Reply(), sel.rows, fmt, title)


@command()
def plot(results: Path = typer.Argument(..., help="a results folder"),
         only: Optional[List[str]] = typer.Option(None, "--only", help="a figure (e.g. pareto, speedup_vs_G) or family (bta, mesh, ...); repeatable"),
         fmt: Optional[List[str]] = typer.Option(None, "--format", "-F", help="png | svg | pdf; repeatable (default png and svg)")) -> Reply:
    """Write the plots of a results folder into its plots/ folder."""
    from wsemoe.report.figures import plots as plotting
    from wsemoe.report.terminal import progress

    reply = Reply()
    with progress.bar("plot", "figure families") as update:
        written = plotting.plot_results(results, only=only, formats=fmt or None, on_progress=update)
    for p in written:
        reply.text(str(p))
    return reply


@command()
def compare(folders: List[Path] = typer.Argument(..., help="two or more results folders"),
            metric: Optional[str] = typer.Option(None, "--metric", "-m", help="what 'best' means: column[:max|min] (default: the first folder's first objective)"),
            fmt: str = typer.Option("table", "--format", "-F", help="table | csv | json | markdown"),
            plot_to: Optional[Path] = typer.Option(None, "--plot", help="also draw the comparison into this .png, .svg or .pdf file")) -> Reply:
    """Results folders side by side: the best point of each per common group, ratios, and what binds."""
    from wsemoe.analysis.crossrun import compare as compare_runs
    from wsemoe.report.terminal.texts import comparison_view

    choice(fmt, TABLE_FORMATS, "--format")
    cmp = compare_runs(folders, metric)
    table, title, priority = comparison_view(cmp, fmt == "table")
    reply = emit(Reply(), table, fmt, title, index=None, priority=priority)
    if plot_to is not None:
        from wsemoe.report import output
        from wsemoe.report.figures import compareplot

        ext = plot_to.suffix.lstrip(".").lower()
        output.write(plot_to, output.figure_bytes(compareplot.figure(cmp), ext), "figure")
        reply.text(str(plot_to), err=fmt != "table")
    return reply


@command()
def report(results: Optional[Path] = typer.Argument(None, help="a results folder (with --index: a results root, "
                                                           "default results/)"),
           output: Optional[Path] = typer.Option(None, "-o", "--output", help="HTML file (default <results>/report.html)"),
           index: bool = typer.Option(False, "--index", help="write <root>/index.html linking every sweep's report "
                                                             "(later reports keep it current)")) -> Reply:
    """One self-contained HTML page: summary, what binds, Pareto front, comparison, figures with their claims,
    config, manifest. With --index: results/index.html, a page linking every sweep's report."""
    from wsemoe.commands.shared import shown_path
    from wsemoe.report.html import index as index_page
    from wsemoe.report.html.page import write_report
    from wsemoe.report.terminal import progress

    if index:
        return Reply().text(shown_path(index_page.write_index(results or Path("results"))))
    if results is None:
        return Reply().fail("give a results folder (or --index for the page linking every sweep's report)", 2)
    with progress.bar("report", "figure families") as update:
        written = write_report(results, output, on_progress=update)
    return Reply().text(shown_path(written))


@command("ls")
def list_results(root: Path = typer.Argument(Path("results"), help="folder holding results folders"),
                 clean: bool = typer.Option(False, "--clean", help="remove stale partial folders (unfinished runs no run holds)")) -> Reply:
    """List the sweeps under ROOT (size, points, date, up to date?) and the partial folders runs left behind."""
    from wsemoe.report.terminal import tables
    from wsemoe.sweep import inventory

    removed = inventory.clean(root) if clean else []
    rows = inventory.results_in(root)
    reply = Reply().rich(tables.inventory(rows, root) if rows else f"no results in {root}")
    for p in removed:
        reply.text(f"removed stale partial folder {p}")
    for p in inventory.partials_in(root):
        reply.text(tables.partial_line(p))
    return reply
