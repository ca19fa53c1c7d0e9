"""Commands that run the cost model: sweep, check, eval, new, schema, presets."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from wsemoe.arguments import choice
from wsemoe.commands.reply import Reply, registry
from wsemoe.commands.shared import TABLE_FORMATS, emit, file_kind, folder, shown_path
from wsemoe.errors import printable
from wsemoe.wording import count

COMMANDS, command = registry()


@command()
def sweep(config: Path = typer.Argument(..., help="sweep YAML"),
          output: Optional[Path] = typer.Option(None, "-o", "--output", help="results folder (default results/<name>)"),
          results: Path = typer.Option(Path("results"), help="root folder of results"),
          force: bool = typer.Option(False, "--force", "-f", help="re-run an unchanged config; replace results with the plots, report or sensitivity made from them; allow sweeps over the size limit"),
          resume: bool = typer.Option(False, "--resume", help="continue a killed run from its last complete chunk"),
          workers: int = typer.Option(1, "--workers", "-j", min=1, max=1024, help="local worker processes"),
          scheduler: Optional[str] = typer.Option(None, "--scheduler", help="Dask scheduler address (needs the wsemoe[dask] extra)"),
          chunk_size: Optional[int] = typer.Option(None, "--chunk-size", min=1, max=2**31, help="points per chunk (memory bound)"),
          quiet: bool = typer.Option(False, "--quiet", "-q", help="print only the results path"),
          with_readings: bool = typer.Option(True, "--readings/--no-readings",
                                             help="with a comparison: also evaluate it under every combination of the readings (when cheap)")) -> Reply:
    """Evaluate every design point of CONFIG and write results/<name>/ (with a comparison, also its robustness
    over the readings when that costs at most a few million point evaluations)."""
    from wsemoe.report.terminal import progress
    from wsemoe.sweep.run import run_sweep

    from wsemoe.analysis.uncertainty.readings import refresh

    then = (lambda r: refresh(r.config, r.path)) if with_readings else None  # under the run's lock
    with progress.bar("sweep", "points", rate=True, quiet=quiet) as update:
        res = run_sweep(config, out_root=results, force=force, out_dir=output, resume=resume, workers=workers,
                        scheduler=scheduler, chunk_size=chunk_size, on_progress=update, then=then)
    reply = Reply()
    note = res.note
    if quiet:
        return reply.text(printable(res.path))   # absolute, as --quiet promises, one line whatever its name
    if res.status == "up to date":
        return reply.text(f"{res.config.name}: up to date ({shown_path(res.path)}); use --force to re-run"
                          + (f"; {note}" if note else ""))
    if res.status == "repaired":
        parts, points = res.repaired
        return reply.text(f"{res.config.name}: recomputed {count(parts, 'damaged part')} ({count(points, 'point')}) "
                          "in place; "
                          f"every other part verified ({shown_path(res.path)})" + (f"; {note}" if note else ""))
    man = res.manifest
    if resume:
        reply.text(f"resumed: reused {man['chunks_reused']:,} of {man['chunks']:,} chunks "
                   f"({man['points_reused']:,} of {man['points']:,} points), evaluated the rest")
    if note and not note.startswith("readings:"):
        reply.text(note)
    if res.replaced:
        reply.text(f"replaced the results of an earlier config of {res.config.name} in {shown_path(res.path)}")
    if res.removed:
        reply.text(f"removed {', '.join(res.removed)}, made from the results it replaced (--force)")
    folder(reply, res.path, f"({man['points']:,} points in {res.seconds:.2f} s)")
    return reply.text(f"wrote {shown_path(res.path)}/: config.yaml, manifest.json, points.parquet/, pareto.csv"
                      + (", comparison.csv" if (res.path / "comparison.csv").is_file() else "")
                      + (", readings/" if (res.path / "readings").is_dir() else "")
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
def eval_point(config: Optional[Path] = typer.Argument(None, help="sweep YAML, or a results folder (or none: --hardware and --model)"),
               point: int = typer.Option(0, "--point", "-p", help="index of the point, as `show` and pareto.csv give it"),
               set_: Optional[List[str]] = typer.Option(None, "--set", help="override the point's value, e.g. --set workload.G=8"),
               hardware: Optional[str] = typer.Option(None, "--hardware", help="without a sweep file: a hardware preset or YAML file of fields"),
               model: Optional[str] = typer.Option(None, "--model", help="without a sweep file: a model preset, YAML file of fields, or config.json"),
               fmt: str = typer.Option("table", "--format", "-F", help="table | csv | json | markdown")) -> Reply:
    """Break one design point into its terms, and show how they add up to step time, throughput and memory.

    A point of a sweep (CONFIG and --point), or a single point without a sweep file: --hardware, --model and
    --set for any other field (e.g. wsemoe eval --hardware cs2 --model qwen3-30b-a3b --set workload.B=2)."""
    from wsemoe.analysis.explain import point as explain

    choice(fmt, TABLE_FORMATS, "--format")
    _, rows = explain.breakdown(config, point, set_ or [], hardware=hardware, model=model)
    if fmt == "table":
        from wsemoe.report.terminal import tables

        return Reply().rich(tables.breakdown(rows))
    return emit(Reply(), explain.frame(rows), fmt, f"point {point}" if config else "the point", index=None)


@command()
def new(name: str = typer.Argument(..., help="name of the sweep (and of its results folder)"),
        hardware: str = typer.Option(..., "--hardware", help="a hardware preset or YAML file of fields"),
        model: str = typer.Option(..., "--model", help="a model preset, YAML file of fields, or config.json"),
        mode: Optional[str] = typer.Option(None, "--mode", help="train | prefill | decode (default: the config's, "
                                           "train, or decode where the hardware serves from SRAM)"),
        output: Optional[Path] = typer.Option(None, "-o", "--output", help="file to write (default NAME.yaml here)")) -> Reply:
    """Write a commented starting sweep (NAME.yaml) that runs as written: every section explained, the axes
    people sweep first in that mode; never replaces an existing file."""
    from wsemoe.config.starter import starter_text
    from wsemoe.store import writer

    path = output if output is not None else Path(f"{name}.yaml")
    file_kind(path, ("yaml", "yml"), "--output")   # a sweep file, named as one (as report, schema, --plot are)
    text = starter_text(name, hardware, model, mode, base_dir=path.parent, file=str(path))
    writer.create_file(path, text, "new")  # never over anything; the file is the user's from then on
    shown = shown_path(path)
    return Reply().text(f"wrote {shown}; check it with `wsemoe check {shown}`, run it with `wsemoe sweep {shown}`")


@command()
def schema(fmt: str = typer.Option("json", "--format", "-F", help="json (JSON Schema for editors) | markdown (docs/config.md)"),
           output: Optional[Path] = typer.Option(None, "-o", "--output", help="write to this .json (or, with --format markdown, .md) file (default: stdout)"),
           force: bool = typer.Option(False, "--force", "-f", help="replace a file another wsemoe command wrote there")) -> Reply:
    """The sweep-config reference: a JSON Schema (editors validate and complete YAML with it) or Markdown."""
    from wsemoe.report.configdoc import reference_text

    text = reference_text(choice(fmt, ("json", "markdown"), "--format"))
    if output is None:
        return Reply().raw(text)
    from wsemoe.store import writer

    file_kind(output, ("json",) if fmt == "json" else ("md",), "--output")   # JSON is never written into x.md
    writer.check_file(output, "schema", force)   # the name's kind first, as every writer checks it
    return Reply().text(shown_path(writer.write_file(output, text, "schema", force)))


@command()
def presets() -> Reply:
    """List hardware and model presets with their key figures."""
    from wsemoe.report.terminal import presets as preset_tables

    reply = Reply()
    for t in preset_tables.presets():
        reply.rich(t)
    return reply
