"""Commands that study the cost model itself: validate, invariants, sensitivity, calibrate."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import List, Optional

import typer

from wsemoe.commands.reply import Reply, registry
from wsemoe.commands.shared import TABLE_FORMATS, choice, shown_path

COMMANDS, command = registry()


@command()
def validate(fmt: str = typer.Option("table", "--format", "-F", help="table | csv | json | markdown"),
             only: Optional[List[str]] = typer.Option(None, "--only", help="a family of rows: params, bta, mapping, "
                                                      "balance, scale, or moentwine (mapping, balance, scale); repeatable")) -> Reply:
    """Print each published figure the project reproduces beside the model's value and error: a summary line,
    the claims, the context rows, and why each `no` is no (notes below the tables)."""
    from wsemoe.report.terminal import formats, progress, validation
    from wsemoe.validate import families, run_all
    from wsemoe.validate.common import unexplained

    choice(fmt, TABLE_FORMATS, "--format")
    families(only)  # an unknown family fails before anything runs
    with progress.bar("validate", "parts") as update:
        rows = run_all(only, on_progress=update)
    if fmt == "table":
        reply = Reply().rich(validation.tables(rows))
    elif fmt == "markdown":
        reply = Reply().raw(validation.markdown(rows))
    else:
        reply = Reply().raw(formats.machine(validation.frame(rows), fmt, index=None))
    bad = unexplained(rows)
    if bad:
        reply.fail(f"{len(bad)} row(s) fail without a known reason: {bad[0]['claim']}", 1)
    return reply


@command("invariants")
def invariants_cmd(configs: Optional[List[Path]] = typer.Argument(None, help="sweep YAMLs (default: every shipped preset and sweep)"),
                   points: int = typer.Option(512, "--points", "-n", min=1, help="design points checked per config (its axes, thinned evenly)"),
                   junit: Optional[Path] = typer.Option(None, "--junit", help="also write JUnit XML here (for CI)"),
                   fmt: str = typer.Option("text", "--format", help="text, or json for scripts"),
                   only: Optional[List[str]] = typer.Option(None, "--only", help="run only this invariant (repeatable)"),
                   list_: bool = typer.Option(False, "--list", help="list the invariants with their reasons and exit"),
                   verbose: bool = typer.Option(False, "--verbose", "-v", help="the full table even in a pipe"),
                   quiet: bool = typer.Option(False, "--quiet", "-q", help="print nothing; the exit code says it all")) -> Reply:
    """Check the cost model's physical invariants on CONFIGS: exit 0 all hold, 1 one fails, 2 bad input.
    On a terminal a table of every invariant; in a pipe (CI) only what fails, one line each."""
    import json

    from wsemoe.analysis.invariants import REGISTRY
    from wsemoe.analysis.suite import check_invariants
    from wsemoe.report import junit as junit_report
    from wsemoe.report.terminal import tables

    fmt, reply = choice(fmt, ("text", "json"), "--format"), Reply()
    if list_:
        for inv in REGISTRY.values():
            reply.rich(f"[bold]{inv.name}[/bold]: {inv.statement}\n    why: {inv.reason}", highlight=False, soft_wrap=True)
        return reply
    if junit is not None:
        junit_report.check_target(junit)
    from wsemoe.report.terminal import progress

    with progress.bar("invariants", "checks", quiet=quiet or fmt == "json") as update:
        report = check_invariants(configs or None, points=points, only=only, on_progress=update)
    if junit is not None:
        junit_report.write_junit(report, junit)
    if fmt == "json":
        reply.text(json.dumps(report.to_dict(), indent=2, ensure_ascii=False, allow_nan=False))
    elif verbose or (not quiet and sys.stdout.isatty()):
        reply.rich(tables.invariants(report))
    elif not quiet:
        for line in tables.invariant_lines(report):
            reply.rich(line, markup=False, highlight=False, soft_wrap=True)
    reply.code = 0 if report.ok else 1
    return reply


@command("sensitivity")
def sensitivity_cmd(config: Path = typer.Argument(..., help="sweep YAML"),
                    samples: int = typer.Option(10_000, "--samples", "-n", help="samples of the unknowns (at least)"),
                    method: str = typer.Option("sobol", help="sobol (first-order and total indices) or morris"),
                    seed: int = typer.Option(1, help="seed of the sample design"),
                    unknowns: Optional[Path] = typer.Option(None, help="YAML of unknowns (default: the shipped list)"),
                    only: Optional[List[str]] = typer.Option(None, "--only", help="vary only these unknowns"),
                    results: Path = typer.Option(Path("results"), help="root folder of results")) -> Reply:
    """Global sensitivity of CONFIG's results to the calibration unknowns; writes results/<name>/sensitivity/."""
    from wsemoe.analysis import sensitivity as sens
    from wsemoe.report.terminal import progress, tables

    with progress.bar("sensitivity", "samples") as update:
        result, path = sens.run(config, out_root=results, method=method, samples=samples, seed=seed,
                                unknowns_file=unknowns, only=only or (), on_progress=update)
    reply = Reply()
    for q in sens.headline_quantities(result):
        reply.rich(tables.sensitivity(result, q))
    return reply.text(f"sensitivity: {shown_path(path)} ({result.meta['evaluations']:,} evaluations in "
                      f"{result.meta['seconds']:.1f} s)")


@command()
def calibrate(hardware: str = typer.Option("cs2", help="hardware preset whose unknowns are fitted"),
              output: Optional[Path] = typer.Option(None, "-o", "--output",
                                                    help="folder for the fit (default results/calibration-<hardware>)"),
              samples: int = typer.Option(512, "--samples", "-n", help="samples per search stage"),
              seed: int = typer.Option(1, help="seed of the search"),
              unknowns: Optional[Path] = typer.Option(None, help="YAML of unknowns (default: the shipped list)"),
              only: Optional[List[str]] = typer.Option(None, "--only", help="fit only these unknowns")) -> Reply:
    """Fit the calibration unknowns to the public BTA targets; write the fitted preset beside the original."""
    from wsemoe.analysis import calibrate as cal
    from wsemoe.report.terminal import progress, tables

    with progress.bar("calibrate", "samples") as update:
        result, table, path = cal.run(hardware, output, samples=samples, seed=seed, unknowns_file=unknowns,
                                      only=only or (), on_progress=update)
    return Reply().rich(tables.calibration(table, result.residuals, result.chi2)).text(
        f"fitted preset, diff and residuals: {shown_path(path)} (no preset was changed)")
