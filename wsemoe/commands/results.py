"""Commands that read results folders: show, plot, compare, report, export, ls, columns."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from wsemoe.arguments import choice
from wsemoe.commands.reply import Reply, registry
from wsemoe.commands.shared import FIGURE_FILES, TABLE_FORMATS, file_kind, emit, folder, shown_path
from wsemoe.errors import ConfigError

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
    from wsemoe.analysis.explain.query import select
    from wsemoe.report.terminal import tables
    from wsemoe.report.terminal.console import width

    choice(fmt, TABLE_FORMATS, "--format")
    if limit is None:
        limit = 20 if fmt == "table" else 0
    cols = [c.strip() for c in columns.split(",") if c.strip()] if columns is not None else None
    if cols == []:   # '-c ,' or '-c ""' asked for no column: say so rather than show the default view
        raise ConfigError(f"no column named in '{columns}': give comma-separated column names", loc=("--columns",))
    if fmt == "table" and not (all_points or where or sort or cols or feasible):
        return _baselines(folder(Reply(), results, limit=limit), [results], fmt)
    if cols and all_points and fmt == "table" and "feasible" not in cols:
        cols = [*cols, "feasible"]  # a table of every point always says which rows are infeasible
    sel = select(results, where=where, columns=cols, sort=sort, limit=limit, every_point=all_points, feasible=feasible)
    what = ("every feasible point" if feasible else "every point") if all_points else "the Pareto front"
    title = f"{sel.matched:,} of {sel.scanned:,} rows of {what}" + (f" where {where}" if where else "")
    if len(sel.rows) < sel.matched and fmt != "table":   # the table says it in its notes, as the same words
        title += f"; {len(sel.rows):,} of them shown (--limit 0 shows all)"
    if fmt == "table":
        return Reply().rich(tables.selection(sel, width(), title))
    return emit(Reply(), sel.rows, fmt, title)


@command()
def plot(results: Path = typer.Argument(..., help="a results folder, or a results root (every results folder in it)"),
         only: Optional[List[str]] = typer.Option(None, "--only", help="a figure (e.g. pareto, speedup_vs_G) or family (bta, mesh, ...); repeatable"),
         fmt: Optional[List[str]] = typer.Option(None, "--format", "-F", help="png | svg | pdf; repeatable (default png and svg)"),
         force: bool = typer.Option(False, "--force", "-f", help="replace figures another wsemoe command wrote there")) -> Reply:
    """Write the plots of a results folder into its plots/ folder (of every results folder under a results root:
    all drawn and checked before any file is written)."""
    from wsemoe.report.figures import plots as plotting
    from wsemoe.report.terminal import progress

    reply = Reply()
    with progress.bar("plot", "figure families") as update:
        written = plotting.plot_results(results, only=only, formats=fmt or None, force=force, on_progress=update)
    for p in written:
        reply.text(shown_path(p))  # relative, as report prints it
    if only and not written:   # asked for, and none drawn: said, not a silent success
        reply.text(f"no figure written: these results support none of {', '.join(only)} (a figure needs the axes "
                   "it is about; `wsemoe plot` without --only draws every one they support)", err=True)
    return reply


@command()
def compare(folders: List[Path] = typer.Argument(..., help="two or more results folders"),
            metric: Optional[str] = typer.Option(None, "--metric", "-m", help="what 'best' means: column[:max|min] (default: the first folder's first objective)"),
            fmt: str = typer.Option("table", "--format", "-F", help="table | csv | json | markdown"),
            plot_to: Optional[Path] = typer.Option(None, "--plot", help="also draw the comparison into this .png, .svg or .pdf file"),
            with_readings: bool = typer.Option(True, "--readings/--no-readings", help="also say how the ratios move over every combination of the readings (when cheap)"),
            force: bool = typer.Option(False, "--force", "-f", help="let --plot replace a file another wsemoe command wrote")) -> Reply:
    """Results folders side by side: the best point of each per common group, ratios, and what binds; and how
    robust each ratio is over the readings (its range, what flips it, what it hinges on)."""
    from wsemoe.analysis.explain.crossrun import compare as compare_runs
    from wsemoe.report.terminal.texts import comparison_view
    from wsemoe.store import writer

    choice(fmt, TABLE_FORMATS, "--format")
    if plot_to is not None:
        file_kind(plot_to, FIGURE_FILES, "--plot")
        writer.check_file(plot_to, "compare", force, _runs_key(folders))
    cmp = compare_runs(folders, metric)
    table, title, priority = comparison_view(cmp, fmt == "table")
    reply = Reply()
    for line in cmp.warnings:  # before the table: a ratio of unrelated runs is read with this in mind
        reply.text(line, err=fmt != "table")
    reply = _baselines(emit(reply, table, fmt, title, index=None, priority=priority), folders, fmt)
    from wsemoe.sweep import crossing  # the one crossover definition, as show and validate state it

    for line in crossing.table_lines(cmp.table, cmp.group, [c for c in cmp.table if "/" in c and
                                                            c.endswith(f":{cmp.metric}")]):
        reply.text(line, err=fmt != "table")
    if with_readings:
        from wsemoe.analysis.uncertainty import folder_readings, robustness

        found = folder_readings.evaluate_folders(folders, cmp)
        lines = [found] if isinstance(found, str) else [
            line for lab in cmp.labels[1:] for line in robustness.statement(found, quantity=f"{lab}/{cmp.labels[0]}:{cmp.metric}")]
        for line in lines:
            if fmt == "table":
                reply.rich(line, markup=False, highlight=False)
            else:
                reply.text(line, err=True)
    if plot_to is not None:
        from wsemoe.report.figures import compareplot
        from wsemoe.report.figures.style import figure_bytes

        ext = plot_to.suffix.lstrip(".").lower()
        writer.write_file(plot_to, figure_bytes(compareplot.figure(cmp), ext), "compare", force, _runs_key(folders))
        reply.text(shown_path(plot_to), err=fmt != "table")
    return reply


@command()
def report(results: Optional[Path] = typer.Argument(None, help="a results folder (with --index: a results root, "
                                                           "default results/)"),
           output: Optional[Path] = typer.Option(None, "-o", "--output", help="HTML file (default <results>/report.html)"),
           index: bool = typer.Option(False, "--index", help="write <root>/index.html linking every sweep's report "
                                                             "(later reports keep it current)"),
           force: bool = typer.Option(False, "--force", "-f", help="replace a file another wsemoe command wrote there")) -> Reply:
    """One self-contained HTML page: summary, what binds, Pareto front, comparison, figures with their claims,
    config, manifest. With --index: results/index.html, a page linking every sweep's report."""
    from wsemoe.commands.shared import shown_path
    from wsemoe.report.html import index as index_page
    from wsemoe.report.html.page import write_report
    from wsemoe.report.terminal import progress

    if index:
        if output is not None:   # the index's links are relative to the root it lies in
            raise ConfigError("--index writes <root>/index.html (its links are relative to the root); -o does not "
                              "apply", loc=("--output",))
        return Reply().text(shown_path(index_page.write_index(results or Path("results"), force)))
    if results is None:
        return Reply().fail("give a results folder (or --index for the page linking every sweep's report)", 2)
    if output is not None:
        file_kind(output, ("html", "htm"), "--output")
    from wsemoe.validate.silicon.baselines import folder_baselines

    lines = folder_baselines([results])
    with progress.bar("report", "figure families") as update:
        written = write_report(results, output, force, on_progress=update, baselines=lines)
    return _baselines(Reply().text(shown_path(written)), [results], "text", lines)


def _baselines(reply: Reply, folders, fmt: str, lines=None) -> Reply:
    """A line per GPU system the folders ran on: what its baseline rests on (the fitted stacks' own file says
    which backend, with the spread of each value), in a table wrapped to the terminal, else on stderr (`lines`:
    those already found)."""
    from wsemoe.validate.silicon.baselines import folder_baselines

    for line in folder_baselines(folders) if lines is None else lines:
        if fmt == "table":
            reply.rich(line, markup=False, highlight=False)
        else:
            reply.text(line, err=True)
    return reply


@command()
def export(what: str = typer.Argument(..., help="what to export: traffic"),
           source: Optional[Path] = typer.Argument(None, help="a results folder or sweep YAML (or none: --hardware and --model)"),
           point: int = typer.Option(0, "--point", "-p", help="index of the point, as `show` and pareto.csv give it"),
           set_: Optional[List[str]] = typer.Option(None, "--set", help="override the point's value, e.g. --set workload.B=8"),
           hardware: Optional[str] = typer.Option(None, "--hardware", help="without a sweep file: a hardware preset or file"),
           model: Optional[str] = typer.Option(None, "--model", help="without a sweep file: a model preset or file"),
           output: Optional[Path] = typer.Option(None, "-o", "--output", help="a new folder (default <name>-point<N>-traffic)"),
           flit_bytes: Optional[int] = typer.Option(None, "--flit-bytes", help="bytes per flit of the BookSim traces (default: chosen per export)"),
           packet_flits: int = typer.Option(16, "--packet-flits", help="flits per packet of the BookSim traces"),
           force: bool = typer.Option(False, "--force", "-f", help="replace an export of another point (or other wsemoe output) at the folder")) -> Reply:
    """Export one mesh point's traffic: per-phase transfers and matrices, per-link loads (CSV, NPZ, JSON metadata
    with units) and BookSim2 trace files to replay in a cycle-level simulator (docs/traffic-export.md)."""
    from wsemoe.analysis.explain.traffic_export import point_traffic
    from wsemoe.report.exports import export_traffic

    choice(what, ("traffic",), "WHAT")
    pt = point_traffic(source, point, set_ or [], hardware=hardware, model=model)
    folder = output if output is not None else Path(f"{pt.name}-point{pt.point}-traffic")
    files = export_traffic(pt, folder, flit_bytes, packet_flits, force)
    return Reply().text(f"{shown_path(folder)}: {len(files)} files ({sum(f.stat().st_size for f in files) / 1e6:.1f} MB); "
                        "metadata.json says what each holds")


def _runs_key(folders) -> str:
    """What a comparison plot is made from: its folders, in order (another set's plot needs --force)."""
    return " vs ".join(str(Path(f).absolute()) for f in folders)


@command("ls")
def list_results(root: Path = typer.Argument(Path("results"), help="a results root, or one results folder"),
                 clean: bool = typer.Option(False, "--clean", help="remove stale partial folders (unfinished runs no run holds)")) -> Reply:
    """List the sweeps under ROOT (size, points, date, up to date?) and the partial folders runs left behind."""
    from wsemoe.report.terminal import tables
    from wsemoe.store import inventory

    arg = root
    root, only = inventory.scope(arg)  # one reading of the argument, with or without --clean
    removed = inventory.clean(root, only) if clean else []
    rows = inventory.results_in(root, only)
    reply = Reply().rich(tables.inventory(rows, root) if rows else f"no results in {arg}")
    stray = inventory.stray_manifest(root) if only is None else None
    if stray is not None:
        reply.text(f"{stray}: not read, a file wsemoe did not write here (it writes no manifest.json in a results "
                   "root, only in the results folders it holds)")
    for p in removed:
        reply.text(f"removed stale partial folder {shown_path(p)}")
    for p in inventory.partials_in(root, only):
        reply.text(tables.partial_line(p))
    return reply


@command("columns")
def columns_cmd(target: Path = typer.Argument(..., help="a results folder, or a sweep YAML (what it would write)"),
                fmt: str = typer.Option("table", "--format", "-F", help="table | csv | json | markdown")) -> Reply:
    """Every output column of a results folder (or of the sweep a YAML would run) with its unit and meaning."""
    import pandas as pd

    choice(fmt, TABLE_FORMATS, "--format")
    from wsemoe.store import store

    if store.names_results(target):
        docs = store.load_manifest(target)["columns"]  # the manifest documents every column it holds
        rows = [(c, d.get("unit", ""), d.get("doc", "")) for c, d in docs.items()]
    else:
        from wsemoe.sweep.chunked import evaluate
        from wsemoe.sweep.columns import describe

        rows = [(c, *describe(c)) for c in evaluate(target, start=0, stop=1).columns]  # one point: its columns
    table = pd.DataFrame(rows, columns=["column", "unit", "meaning"]).set_index("column")
    return emit(Reply(), table, fmt, f"{len(table)} columns of {shown_path(target)}", index="column")
