"""Commands that run the cost model: sweep, check, eval, schema, presets."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from wsemoe.commands.reply import Reply, registry
from wsemoe.commands.shared import TABLE_FORMATS, choice, emit, folder, shown_path

COMMANDS, command = registry()


@command()
def sweep(config: Path = typer.Argument(..., help="sweep YAML"),
          output: Optional[Path] = typer.Option(None, "-o", "--output", help="results folder (default results/<name>)"),
          results: Path = typer.Option(Path("results"), help="root folder of results"),
          force: bool = typer.Option(False, "--force", "-f", help="re-run an unchanged config; allow sweeps over the size limit"),
          resume: bool = typer.Option(False, "--resume", help="continue a killed run from its last complete chunk"),
          workers: int = typer.Option(1, "--workers", "-j", min=1, help="local worker processes"),
          scheduler: Optional[str] = typer.Option(None, "--scheduler", help="Dask scheduler address (needs the wsemoe[dask] extra)"),
          chunk_size: Optional[int] = typer.Option(None, "--chunk-size", min=1, help="points per chunk (memory bound)"),
          quiet: bool = typer.Option(False, "--quiet", "-q", help="print only the results path")) -> Reply:
    """Evaluate every design point of CONFIG and write results/<name>/."""
    from wsemoe.report.terminal import progress
    from wsemoe.sweep.run import run_sweep

    with progress.bar("sweep", "points", rate=True, quiet=quiet) as update:
        res = run_sweep(config, out_root=results, force=force, out_dir=output, resume=resume, workers=workers,
                        scheduler=scheduler, chunk_size=chunk_size, on_progress=update)
    reply = Reply()
    if quiet:
        return reply.text(str(res.path))
    if res.status == "up to date":
        return reply.text(f"{res.config.name}: up to date ({shown_path(res.path)}); use --force to re-run")
    man = res.manifest
    if resume:
        reply.text(f"resumed: reused {man['chunks_reused']:,} of {man['chunks']:,} chunks "
                   f"({man['points_reused']:,} of {man['points']:,} points), evaluated the rest")
    folder(reply, res.path, f"({man['points']:,} points in {res.seconds:.2f} s)")
    return reply.text(f"wrote {shown_path(res.path)}/: config.yaml, manifest.json, points.parquet/, pareto.csv"
                      + (", comparison.csv" if (res.path / "comparison.csv").is_file() else "")
                      + f" (next: wsemoe show|plot|report {shown_path(res.path)})")


@command()
def check(config: Path = typer.Argument(..., help="sweep YAML"),
          estimate: bool = typer.Option(False, "--estimate", "-e", help="also time a sample to estimate run time and output size")) -> Reply:
    """Validate CONFIG (every key, value and column it names) and count its points, without running it."""
    from wsemoe.report.terminal.texts import check_lines
    from wsemoe.sweep.plan import check as check_config

    reply = Reply()
    for line in check_lines(check_config(config, estimate=estimate)):
        reply.text(line)
    return reply


@command("eval")
def eval_point(config: Path = typer.Argument(..., help="sweep YAML, or a results folder"),
               point: int = typer.Option(0, "--point", "-p", help="index of the point, as `show` and pareto.csv give it"),
               set_: Optional[List[str]] = typer.Option(None, "--set", help="override the point's value, e.g. --set workload.G=8"),
               fmt: str = typer.Option("table", "--format", "-F", help="table | csv | json | markdown")) -> Reply:
    """Break one design point into its terms, and show how they add up to step time, throughput and memory."""
    from wsemoe.analysis import explain

    choice(fmt, TABLE_FORMATS, "--format")
    _, rows = explain.breakdown(config, point, set_ or [])
    if fmt == "table":
        from wsemoe.report.terminal import tables

        return Reply().rich(tables.breakdown(rows))
    return emit(Reply(), explain.frame(rows), fmt, f"point {point}", index=None)


@command()
def schema(fmt: str = typer.Option("json", "--format", "-F", help="json (JSON Schema for editors) | markdown (docs/config.md)"),
           output: Optional[Path] = typer.Option(None, "-o", "--output", help="write to this file (default: stdout)")) -> Reply:
    """The sweep-config reference: a JSON Schema (editors validate and complete YAML with it) or Markdown."""
    from wsemoe.report.configdoc import reference_text

    text = reference_text(choice(fmt, ("json", "markdown"), "--format"))
    if output is None:
        return Reply().raw(text)
    from wsemoe.report.output import write

    return Reply().text(str(write(output, text, "schema")))


@command()
def presets() -> Reply:
    """List hardware and model presets with their key figures."""
    from wsemoe.report.terminal import tables

    reply = Reply()
    for t in tables.presets():
        reply.rich(t)
    return reply
