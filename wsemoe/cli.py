"""Command line: thin typer commands over pure functions; the only module that prints or exits."""

from __future__ import annotations

import functools
import os
import signal
import sys
from enum import Enum
from pathlib import Path
from typing import List, Optional

import typer
from rich.console import Console

from wsemoe.errors import WsemoeError

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Design-space explorer for Mixture-of-Experts models on wafer-scale processors.")
out = Console(soft_wrap=False, width=None if sys.stdout.isatty() else 160)
err = Console(stderr=True, soft_wrap=True)


def _fail(message: str, code: int = 2):
    err.print(f"error: {message}", markup=False, highlight=False)
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


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def _progress_bar(quiet: bool):
    """A rich progress bar (rate, ETA) on a terminal; nothing under CI, --quiet or a pipe."""
    if quiet or os.environ.get("CI") or not sys.stderr.isatty():
        return None, None
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    bar = Progress(TextColumn("[bold]sweep"), BarColumn(), MofNCompleteColumn(),
                   TextColumn("{task.fields[rate]}"), TimeRemainingColumn(), console=err, transient=True)
    task = bar.add_task("points", total=None, rate="")
    start = {}

    def update(done, total):
        import time

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
          scheduler: Optional[str] = typer.Option(None, "--scheduler", help="Dask scheduler address (needs wsemoe[dask])"),
          chunk_size: Optional[int] = typer.Option(None, "--chunk-size", min=1, help="points per chunk (memory bound)"),
          quiet: bool = typer.Option(False, "--quiet", "-q", help="print only the results path")):
    """Evaluate every design point of CONFIG and write results/<name>/."""
    from wsemoe.report import tables
    from wsemoe.sweep.run import run_sweep

    signal.signal(signal.SIGTERM, _interrupt)  # a polite kill ends like Ctrl-C: one line, progress kept
    bar, update = _progress_bar(quiet)
    if bar is not None:
        with bar:
            res = run_sweep(config, out_root=results, force=force, out_dir=output, resume=resume, workers=workers,
                            scheduler=scheduler, chunk_size=chunk_size, on_progress=update)
    else:
        res = run_sweep(config, out_root=results, force=force, out_dir=output, resume=resume, workers=workers,
                        scheduler=scheduler, chunk_size=chunk_size)
    if quiet:
        out.print(str(res.path))
        return
    if res.status == "up to date":
        out.print(f"[bold]{res.config.name}[/bold]: up to date ({res.path}); use --force to re-run")
        return
    out.print(tables.summary(res.manifest, f"({res.manifest['points']:,} points in {res.seconds:.2f} s)"))
    out.print(tables.top_points(res.pareto, res.config.axis_names(), res.config.objectives, title="Pareto front (best first)"))
    if res.comparison is not None:
        out.print(tables.comparison(res.comparison))
    out.print(f"results: {res.path}")


@app.command()
@guarded
def show(results: Path = typer.Argument(..., help="a results folder"),
         top: int = typer.Option(10, min=0, help="how many top points to list")):
    """Summarize a results folder: counts, what binds, top points, comparison."""
    import pandas as pd

    from wsemoe.sweep import store

    from wsemoe.report import tables

    man, points, _ = store.load_results(results)
    out.print(tables.summary(man))
    out.print(tables.top_points(points, man.get("axes", []), man["objectives"], n=top))
    if (results / "comparison.csv").is_file():
        out.print(tables.comparison(pd.read_csv(results / "comparison.csv")))
    from wsemoe.analysis import sensitivity as sens

    result = sens.load(results, man.get("config_hash"))
    if result is not None:
        out.print(tables.sensitivity(result))


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
    from wsemoe.report import tables

    result, table, path = cal.run(hardware, output, samples=samples, seed=seed, unknowns_file=unknowns,
                                  only=only or ())
    out.print(tables.calibration(table, result.residuals, result.chi2))
    out.print(f"fitted preset, diff and residuals: {path} (no preset was changed)")


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
    from wsemoe.report import tables

    result, path = sens.run(config, out_root=results, method=method, samples=samples, seed=seed,
                            unknowns_file=unknowns, only=only or ())
    qs = list(dict.fromkeys(result.bands["quantity"]))
    for q in [q for q in qs if q.startswith(("speedup_vs_", "best_", "baseline_")) and "tokens" in q or
              q.startswith("speedup_vs_")] or qs[:1]:
        out.print(tables.sensitivity(result, q))
    out.print(f"sensitivity: {path} ({result.meta['evaluations']:,} evaluations in {result.meta['seconds']:.1f} s)")


@app.command()
@guarded
def plot(results: Path = typer.Argument(..., help="a results folder")):
    """Write PNG and SVG plots of a results folder into its plots/ folder."""
    from wsemoe.report import plots as plotting

    written = plotting.plot_results(results)
    for p in written:
        out.print(str(p))


@app.command()
@guarded
def check(config: Path = typer.Argument(..., help="sweep YAML")):
    """Validate CONFIG and estimate points, time and output size, without running it."""
    from wsemoe.sweep.run import check as check_config
    from wsemoe.report.tables import fmt

    info = check_config(config)
    if info["search"]:
        s = info["search"]
        out.print(f"[bold]{info['name']}[/bold]: valid; a space of {info['space_points']:,} points, searched with "
                  f"{s['algorithm']} (seed {s['seed']}): at most {info['points']:,} evaluations")
    else:
        out.print(f"[bold]{info['name']}[/bold]: valid; {info['points']:,} points")
    for axis, n in info["axes"].items():
        out.print(f"  axis {axis}: {n} values")
    for group in info["zip_groups"]:
        out.print(f"  zipped: {', '.join(group)}")
    what = "evaluation time (the search's own work comes on top)" if info["search"] else "time"
    out.print(f"  estimated {what} {fmt(info['estimated_seconds'], 's')} on one core, "
              f"output ~{fmt(info['estimated_output_bytes'], 'bytes')}")
    if info["over_limit"]:
        out.print(f"  over the limit of {info['limit']:,} points: `sweep` needs --force")


@app.command("eval")
@guarded
def eval_point(config: Path = typer.Argument(..., help="sweep YAML"),
               point: int = typer.Option(0, help="index of the design point in the sweep"),
               set_: Optional[List[str]] = typer.Option(None, "--set", help="override, e.g. --set workload.G=8")):
    """Break one design point into every term of its time and memory."""
    from wsemoe.analysis import explain
    from wsemoe.report import tables

    _, rows = explain.breakdown(config, point, set_ or [])
    out.print(tables.breakdown(rows))


@app.command()
@guarded
def presets():
    """List hardware and model presets with their key figures."""
    from rich.table import Table

    from wsemoe.config import presets as ps
    from wsemoe.cost import params
    from wsemoe.report.tables import fmt

    t = Table(title="hardware presets")
    for c in ("name", "topology", "nodes", "peak/node", "memory/node", "link", "weights"):
        t.add_column(c)
    for name in ps.names("hardware"):
        h = ps.load_hardware(name)
        t.add_row(name, h.topology, _layout(h), fmt(h.node_peak_flops, "FLOP/s"),
                  fmt(h.node_memory_bytes, "bytes"), fmt(h.link_bw_bytes_per_s, "B/s"), h.weight_source)
    out.print(t)
    t = Table(title="model presets")
    for c in ("name", "layers", "hidden", "experts", "top-k", "total params", "active params"):
        t.add_column(c)
    for name in ps.names("models"):
        m = ps.load_model(name)
        t.add_row(name, str(m.num_hidden_layers), str(m.hidden_size), str(m.num_experts),
                  str(m.num_experts_per_tok), f"{params.total_params(m) / 1e9:.2f} B", f"{params.active_params(m) / 1e9:.2f} B")
    out.print(t)


def _layout(h) -> str:
    """Nodes of a hardware preset as people describe them: '2×2 wafers of 8×8 = 256', '32 × 8 = 256', '8×8'."""
    if tuple(h.wafers) != (1, 1):
        return f"{h.wafers[0]}×{h.wafers[1]} wafers of {h.rows}×{h.cols} = {h.nodes}"
    if h.scale_up_size and h.scale_up_size < h.nodes:
        return f"{h.nodes // h.scale_up_size} domains × {h.scale_up_size} = {h.nodes}"
    return f"{h.rows}×{h.cols}"


@app.command()
@guarded
def validate():
    """Print each published figure the project reproduces beside the model's value and error."""
    from wsemoe.report import tables
    from wsemoe.validate import run_all
    from wsemoe.validate.common import unexplained

    rows = run_all()
    out.print(tables.validation(rows))
    bad = unexplained(rows)
    if bad:
        _fail(f"{len(bad)} row(s) fail without a known reason: {bad[0]['claim']}", 1)


class Format(str, Enum):
    text = "text"
    json = "json"


@app.command("invariants")
@guarded
def invariants_cmd(configs: Optional[List[Path]] = typer.Argument(None, help="sweep YAMLs (default: every shipped preset and sweep)"),
                   points: int = typer.Option(512, "--points", "-n", min=1, help="design points checked per config (its axes, thinned evenly)"),
                   junit: Optional[Path] = typer.Option(None, "--junit", help="also write JUnit XML here (for CI)"),
                   fmt: Format = typer.Option(Format.text, "--format", help="text, or json for scripts"),
                   only: Optional[List[str]] = typer.Option(None, "--only", help="run only this invariant (repeatable)"),
                   list_: bool = typer.Option(False, "--list", help="list the invariants with their reasons and exit"),
                   verbose: bool = typer.Option(False, "--verbose", "-v", help="the full table even in a pipe"),
                   quiet: bool = typer.Option(False, "--quiet", "-q", help="print nothing; the exit code says it all")):
    """Check the cost model's physical invariants on CONFIGS: exit 0 all hold, 1 one fails, 2 bad input.

    On a terminal a table of every invariant; in a pipe (CI) only what fails, one line each.
    """
    import json

    from wsemoe.analysis.invariants import REGISTRY
    from wsemoe.analysis.suite import check_invariants
    from wsemoe.report import junit as junit_report
    from wsemoe.report import tables

    if list_:
        for inv in REGISTRY.values():
            out.print(f"[bold]{inv.name}[/bold]: {inv.statement}\n    why: {inv.reason}", highlight=False, soft_wrap=True)
        return
    if junit is not None:
        junit_report.check_target(junit)
    report = check_invariants(configs or None, points=points, only=only)
    if junit is not None:
        junit_report.write_junit(report, junit)
    if fmt is Format.json:
        typer.echo(json.dumps(report.to_dict(), indent=2, ensure_ascii=False, allow_nan=False))
    elif verbose or (not quiet and sys.stdout.isatty()):
        out.print(tables.invariants(report))
    elif not quiet:
        for line in tables.invariant_lines(report):
            out.print(line, markup=False, highlight=False, soft_wrap=True)
    if not report.ok:
        raise typer.Exit(1)


def main():  # pragma: no cover - console entry point
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
