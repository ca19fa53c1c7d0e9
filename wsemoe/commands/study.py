"""Commands that study the cost model itself: validate, invariants, sensitivity, readings, calibrate."""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import List, Optional

import typer

from wsemoe.arguments import choice
from wsemoe.commands.reply import Reply, registry
from wsemoe.commands.shared import FIGURE_FILES, TABLE_FORMATS, file_kind, parts, shown_path
from wsemoe.errors import ConfigError
from wsemoe.wording import count

COMMANDS, command = registry()


@command()
def validate(fmt: str = typer.Option("table", "--format", "-F", help="table | csv | json | markdown"),
             only: Optional[List[str]] = typer.Option(None, "--only", help="a family of rows: params, bta, mapping, "
                                                      "balance, scale, waferllm, cerebras, gpu, silicon, energy, or "
                                                      "moentwine "
                                                      "(mapping, balance, scale); repeatable"),
             silicon: Optional[Path] = typer.Option(None, "--silicon", help="instead: a CSV of measured GPU serving "
                                                    "runs (AIConfigurator silicon_sample.csv columns), each predicted "
                                                    "beside its measurement, with MAPE per group"),
             holdout: Optional[str] = typer.Option(None, "--holdout", help="with --silicon: refit leaving one "
                                                   "system | model | backend out at a time and predict it"),
             max_mape: Optional[float] = typer.Option(None, "--max-mape", help="with --silicon: exit 1 when "
                                                      "the overall TTFT or TPOT MAPE (a fraction, 0.2 = 20%) is above"),
             plot_to: Optional[Path] = typer.Option(None, "--plot", help="with --silicon: also draw predicted against "
                                                    "measured (log-log, a colour per system) to this .png/.svg/.pdf"),
             force: bool = typer.Option(False, "--force", "-f", help="let --plot replace a file another wsemoe "
                                        "command wrote")) -> Reply:
    """Print each published figure the project reproduces beside the model's value and band: a summary line,
    the claims, the known deviations apart (their distance and reason), the context rows. Exits 1 when a row
    fails unexpectedly (a check outside its band that is no known deviation, a known deviation that reproduces
    again, a property or fit that does not hold)."""
    from wsemoe.report.terminal import formats, progress, validation
    from wsemoe.validate import families, record, run_all
    from wsemoe.validate.common import unexplained
    from wsemoe.validate.deviations import stale

    choice(fmt, TABLE_FORMATS, "--format")
    if silicon is not None:
        if only:   # the published rows and the measured runs are two reports: --only picks among the former
            return Reply().fail("--only picks families of published rows; --silicon FILE reports measured runs "
                                "instead (give one of them)", 2)
        return _silicon(silicon, fmt, holdout, max_mape, plot_to, force)
    if holdout is not None or max_mape is not None or plot_to is not None:
        used = "--holdout" if holdout is not None else "--max-mape" if max_mape is not None else "--plot"
        return Reply().fail(f"{used} needs --silicon FILE", 2)
    names = families(only)  # an unknown family fails before anything runs
    with progress.bar("validate", "parts") as update:
        rows = run_all(only, on_progress=update)
    ran = f"Families: {', '.join(names)}." if only else ""
    if fmt == "table":
        reply = Reply().rich(validation.tables(rows, f"{record.counts(rows)} {ran}".strip()))
    elif fmt == "markdown":
        reply = Reply().raw((f"{ran}\n\n" if ran else "") + record.markdown(rows))
    else:
        reply = Reply().raw(formats.machine(validation.frame(rows), fmt, index=None))
    bad, gone = unexplained(rows), ([] if only else stale(rows))  # with --only, the other families' rows are absent
    if gone:
        reply.fail(f"known deviations name rows that do not exist: {', '.join(gone)} (validate/deviations.py)", 1)
    if bad:
        reply.fail(f"{count(len(bad), 'row')} failing unexpectedly: {bad[0]['id']} ({bad[0]['reason']})", 1)
    return reply


def _silicon(path: Path, fmt: str, holdout: Optional[str], max_mape: Optional[float], plot_to: Optional[Path],
             force: bool) -> Reply:
    """`validate --silicon`: measured GPU runs beside the model's predictions (wsemoe.validate.silicon)."""
    from wsemoe.commands.shared import emit
    from wsemoe.report.terminal import formats
    from wsemoe.report.terminal import silicon as view
    from wsemoe.store import writer
    from wsemoe.validate.silicon import accuracy

    if holdout is not None:
        choice(holdout, ("system", "model", "backend"), "--holdout")
    # One check, not typer's min=0 as well: NaN failed that as "should be greater than or equal to 0", and inf
    # would let every MAPE pass
    if max_mape is not None and not (math.isfinite(max_mape) and max_mape >= 0):
        raise ConfigError(f"must be a finite share from 0, e.g. 0.35 for 35%; got {max_mape}", loc=("--max-mape",))
    if plot_to is not None:
        file_kind(plot_to, FIGURE_FILES, "--plot")
        writer.check_file(plot_to, "validate", force, str(Path(path).absolute()))
    result = accuracy.evaluate(path, holdout=holdout)
    reply = Reply()
    if fmt == "json":
        reply.raw(view.json_lines(result))
    else:
        for i, (title, frame) in enumerate(view.frames(result)):
            if fmt == "csv" and i:   # one table on stdout, as every command's CSV; the summaries beside it on stderr
                reply.text(f"{title}\n{formats.machine(frame, fmt, None)}".rstrip("\n"), err=True)
            else:
                emit(reply, frame, fmt, title, index=None)
        reply.text(view.overall_line(result), err=fmt == "csv")
    if plot_to is not None:
        from wsemoe.report.figures import fig_silicon
        from wsemoe.report.figures.style import figure_bytes

        title = f"{shown_path(path)}: predicted vs measured" + (f" (held out by {holdout})" if holdout else "")
        fig = fig_silicon.figure(result["rows"], title)
        writer.write_file(plot_to, figure_bytes(fig, plot_to.suffix.lstrip(".").lower()), "validate", force,
                          str(Path(path).absolute()))
        reply.text(shown_path(plot_to), err=fmt != "table")
    if max_mape is not None and not result["overall"]["configs"]:
        reply.fail("--max-mape: no run of the file could be modelled (reasons per row)", 1)
    elif max_mape is not None and accuracy.worst(result) > max_mape:
        reply.fail(f"MAPE {accuracy.worst(result):.3f} is above --max-mape {max_mape:g}", 1)
    return reply


@command("invariants")
def invariants_cmd(configs: Optional[List[Path]] = typer.Argument(None, help="sweep YAMLs (default: every shipped preset and sweep)"),
                   points: int = typer.Option(512, "--points", "-n", min=1, help="design points checked per config (its axes, thinned evenly; at most 65,536)"),
                   junit: Optional[Path] = typer.Option(None, "--junit", help="also write JUnit XML to this .xml file (for CI)"),
                   force: bool = typer.Option(False, "--force", "-f", help="let --junit replace a file another wsemoe command wrote"),
                   fmt: str = typer.Option("table", "--format", "-F", help="table | json (for scripts)"),
                   only: Optional[List[str]] = typer.Option(None, "--only", help="run only this invariant (repeatable)"),
                   list_: bool = typer.Option(False, "--list", help="list the invariants with their reasons and exit"),
                   verbose: bool = typer.Option(False, "--verbose", "-v", help="the full table even in a pipe"),
                   quiet: bool = typer.Option(False, "--quiet", "-q", help="print nothing; the exit code says it all")) -> Reply:
    """Check the cost model's physical invariants on CONFIGS: exit 0 all hold, 1 one fails (or none applies),
    2 bad input.
    On a terminal a table of every invariant; in a pipe (CI) only what fails, one line each."""
    import json

    from wsemoe.analysis.invariants.laws import REGISTRY
    from wsemoe.analysis.invariants.suite import check_invariants
    from wsemoe.report import junit as junit_report
    from wsemoe.report.terminal import tables

    fmt, reply = choice(fmt, ("table", "json"), "--format"), Reply()
    if verbose and quiet:   # one says print everything, the other nothing: which one won was not said
        raise ConfigError("--verbose prints the full table and --quiet nothing; give one of them", loc=("--quiet",))
    if list_:   # the listing runs nothing: an option about a run would be dropped unsaid
        given = [n for n, v in (("CONFIGS", configs), ("--only", only), ("--junit", junit)) if v]
        if given:
            raise ConfigError(f"--list lists the invariants and runs none; {given[0]} does not apply", loc=("--list",))
    twice = next((c for i, c in enumerate(configs or []) if Path(c).resolve() in
                  [Path(x).resolve() for x in (configs or [])[:i]]), None)
    if twice is not None:   # each config is one JUnit suite: twice would count its checks twice
        raise ConfigError("is named twice", loc=(str(twice),))
    if list_ and fmt == "json":
        return reply.text(json.dumps([{"name": i.name, "statement": i.statement, "reason": i.reason}
                                      for i in REGISTRY.values()], indent=2, ensure_ascii=False))
    if list_:
        for inv in REGISTRY.values():
            reply.rich(f"[bold]{inv.name}[/bold]: {inv.statement}\n    why: {inv.reason}", markup=True, highlight=False,
                       soft_wrap=True)
        return reply
    if junit is not None:
        file_kind(junit, ("xml",), "--junit")
        junit_report.check_target(junit, force)
    from wsemoe.report.terminal import progress

    with progress.bar("invariants", "checks", quiet=quiet or fmt == "json") as update:
        report = check_invariants(configs or None, points=points, only=only, on_progress=update)
    if junit is not None:
        junit_report.write_junit(report, junit, force)
    if fmt == "json":
        reply.text(json.dumps(report.to_dict(), indent=2, ensure_ascii=False, allow_nan=False))
    elif verbose or (not quiet and sys.stdout.isatty()):
        reply.rich(tables.invariants(report))
    elif not quiet:
        for line in tables.invariant_lines(report):
            reply.rich(line, markup=False, highlight=False, soft_wrap=True)
    reply.code = 0 if report.ok else 1
    if report.results and all(r.status == "skip" for r in report.results):   # a gate that checked nothing
        reply.fail("no invariant applies to these configs (every check skipped): nothing was checked; "
                   "`wsemoe invariants --list` says what each one needs")
    return reply


@command("sensitivity")
def sensitivity_cmd(config: Path = typer.Argument(..., help="sweep YAML"),
                    samples: Optional[int] = typer.Option(None, "--samples", "-n", help="samples of the unknowns (at least; default 10,000, fewer where samples × points would pass 16.8 M)"),
                    method: str = typer.Option("sobol", help="sobol (first-order and total indices) or morris"),
                    seed: int = typer.Option(1, min=0, help="seed of the sample design"),
                    unknowns: Optional[Path] = typer.Option(None, help="YAML of unknowns (default: the shipped list)"),
                    only: Optional[List[str]] = typer.Option(None, "--only", help="vary only these unknowns"),
                    with_readings: bool = typer.Option(True, "--readings/--no-readings", help="also evaluate every combination of the readings"),
                    results: Path = typer.Option(Path("results"), help="root folder of results"),
                    force: bool = typer.Option(False, "--force", "-f", help="replace output another wsemoe command wrote at sensitivity/ or readings/")) -> Reply:
    """Sensitivity of CONFIG's results to the discrete readings (every combination) and to the calibration
    unknowns (Sobol or Morris, at the sweep's own readings); writes results/<name>/readings/ and sensitivity/."""
    from wsemoe.analysis.uncertainty import readings as rd
    from wsemoe.analysis.uncertainty import sensitivity as sens
    from wsemoe.report.terminal import progress, tables
    from wsemoe.report.terminal import readings as rd_view

    prepared = sens.prepare(config, None, method, samples, seed, unknowns, only or ())  # bad options fail first
    reply = Reply()
    seconds, each = sens.estimate(prepared)  # timed on the design's first chunk, before anything is written
    if with_readings:
        seconds += rd.cost(prepared[0].cfg, budget=0)[1] * each   # runs of coinciding configs counted once
    ahead = (f"sensitivity of {prepared[0].cfg.name}: {len(prepared[1]):,} samples × {prepared[0].points:,} points"
             f"{' and the readings' if with_readings else ''}: about {seconds:,.0f} s (timed on its first samples)")
    if progress.visible():
        progress.say(ahead)  # on a terminal, before the work starts
    else:
        reply.text(ahead)    # a pipe or a log: the reply's first line
    if with_readings:
        from wsemoe.store import writer
        from wsemoe.sweep.run import run_sweep

        res = run_sweep(prepared[0].cfg, out_root=results)
        writer.check_folder(res.path / sens.FOLDER, "sensitivity", force)  # both outputs checked before either is written
        found, where = rd.run(res.path, force=force)
        parts(reply, rd_view.view(found, _readings_quantities(found)))
        reply.text(f"readings: {where} ({found.meta['evaluations']:,} evaluations in {found.meta['seconds']:.1f} s)")
    with progress.bar("sensitivity", "samples") as update:
        result, path = sens.run(config, out_root=results, method=method, samples=samples, seed=seed,
                                unknowns_file=unknowns, only=only or (), force=force, prepared=prepared,
                                on_progress=update)
    for q in sens.headline_quantities(result):
        reply.rich(tables.sensitivity(result, q))
    return reply.text(f"sensitivity: {shown_path(path)} ({result.meta['evaluations']:,} evaluations in "
                      f"{result.meta['seconds']:.1f} s; estimated beforehand: {seconds:,.0f} s with the readings)"
                      if with_readings else f"sensitivity: {shown_path(path)} ({result.meta['evaluations']:,} "
                      f"evaluations in {result.meta['seconds']:.1f} s; estimated beforehand: {seconds:,.0f} s)")


def _readings_quantities(result) -> list[str]:
    """The quantities a summary shows over the readings: the comparison's ratios and the best metric."""
    qs = list(dict.fromkeys(result.values["quantity"]))
    return [q for q in qs if q.startswith("speedup_vs_")] + [q for q in qs if q.startswith("best_") and "tokens" in q][:1] \
        or [q for q in qs if q.startswith("sweep_best_")]


@command("readings")
def readings_cmd(target: Optional[Path] = typer.Argument(None, help="a sweep YAML or a results folder (none: list the readings)"),
                 only: Optional[List[str]] = typer.Option(None, "--only", help="vary only this reading (repeatable)"),
                 fix: Optional[List[str]] = typer.Option(None, "--set", help="fix a reading for every run: name=option (repeatable)"),
                 evidence: bool = typer.Option(False, "--evidence", "-e", help="with no target: every option's evidence and source"),
                 results: Path = typer.Option(Path("results"), help="root folder of results"),
                 force: bool = typer.Option(False, "--force", "-f", help="replace output another wsemoe command wrote at readings/")) -> Reply:
    """The modelling choices no source pins, or TARGET evaluated under every combination of them (one at a time
    beyond 512 combinations): each quantity as configured, at the default readings, its range, what flips it and
    what it hinges on."""
    from wsemoe.analysis.uncertainty import readings as rd
    from wsemoe.analysis.uncertainty import robustness
    from wsemoe.config import readings as registry
    from wsemoe.report.terminal import readings as rd_view

    if target is None:
        used = [name for name, given in (("--set", fix), ("--only", only)) if given]
        if used:
            return Reply().fail(f"{used[0]} needs a TARGET: a sweep YAML or a results folder to evaluate under the "
                                "readings", 2)
        return Reply().rich(rd_view.registry(registry.load(), evidence), soft_wrap=False)
    if evidence:   # it lists the evidence of the registry; a TARGET's runs have none to add
        raise ConfigError("--evidence lists the readings' evidence: give it without a TARGET", loc=("--evidence",))
    found, where = rd.run(target, out_root=results, only=only or (), fixed=rd.parse_choices(fix), force=force)
    done = f"{found.meta['evaluations']:,} evaluations in {found.meta['seconds']:.1f} s"
    stored = (f"readings: {shown_path(where)} ({done})" if where is not None else
              f"readings what-if ({robustness.what_if(found.meta)}; {done}): not stored; the sweep's own analysis, "
              "every reading varied, stays what show, plot and report use")
    return parts(Reply(), rd_view.view(found, _readings_quantities(found))).text(stored)


@command()
def calibrate(hardware: str = typer.Option("cs2", help="hardware preset whose unknowns are fitted"),
              output: Optional[Path] = typer.Option(None, "-o", "--output",
                                                    help="folder for the fit (default results/calibration-<hardware>)"),
              samples: int = typer.Option(32, "--samples", "-n", help="samples per search stage, per reading"),
              seed: int = typer.Option(1, min=0, help="seed of the search"),
              unknowns: Optional[Path] = typer.Option(None, help="YAML of unknowns (default: the shipped list)"),
              only: Optional[List[str]] = typer.Option(None, "--only", help="fit only these unknowns"),
              reading: Optional[List[str]] = typer.Option(None, "--reading", help="vary only these readings (the "
                                                          "others at the sweeps' own); repeatable"),
              force: bool = typer.Option(False, "--force", "-f",
                                         help="replace a calibration another wsemoe command wrote for another preset")) -> Reply:
    """Fit the calibration unknowns to the public BTA targets under every reading: χ² per reading, the unknowns
    no target can identify (not fitted), each target's leave-one-out residual; write the fit at the default
    readings as a preset to review beside the original (no preset is changed)."""
    from wsemoe.analysis.uncertainty import calibrate as cal
    from wsemoe.report.terminal import progress, tables

    with progress.bar("calibrate", "readings") as update:
        fits, table, per_reading, path, meta = cal.run(hardware, output, samples=samples, seed=seed,
                                                       unknowns_file=unknowns, only=only or (), readings=reading or (),
                                                       force=force, on_progress=update)
    return Reply().rich(tables.calibration(fits, table, per_reading)).text(
        f"fitted preset (default readings), diff, residuals and χ² per reading: {shown_path(path)} (no preset was "
        f"changed; {meta['readings']} readings in {meta['seconds']:.0f} s)")
