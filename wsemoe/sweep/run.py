"""A sweep end to end as one function: config → chunks evaluated and written → reductions → results.

No printing here: progress is reported through a callback the CLI turns into a progress bar.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from wsemoe.sweep import chunked
from wsemoe.sweep import repair, searchrun
from wsemoe.store import store
from wsemoe.store import ownership, placement, writer
from wsemoe.store import partial as partial_mod
from wsemoe.sweep.columns import manifest_columns
from wsemoe.sweep.compare import comparison_table
from wsemoe.arguments import flag, whole
from wsemoe.config.schema import SweepConfig
from wsemoe.config.loader import load_config
from wsemoe.errors import ConfigError, PresetError
from wsemoe.sweep.executors import run_tasks
from wsemoe.sweep.outputs import check_columns
from wsemoe.sweep.pareto import TIES, pareto_front
from wsemoe.sweep.plan import max_points, planned_points

@dataclass
class SweepResult:
    """What a sweep produced (or found up to date)."""

    path: Path
    config: SweepConfig
    status: str  # "written", "up to date" or "repaired"
    manifest: dict
    pareto: pd.DataFrame | None = None
    comparison: pd.DataFrame | None = None
    seconds: float = 0.0
    repaired: tuple = ()  # (parts, points) recomputed in place by --resume
    note: str = ""  # what `then` said (the readings analysis the sweep command brings up to date)
    replaced: bool = False  # the folder held results of another config of this sweep, which these replaced
    removed: tuple = ()  # what other commands had made from the replaced results (plots/, report.html, ...)


def resolved_config(cfg: SweepConfig) -> dict:
    """The config as it ran, loadable again: presets expanded into fields, axes into value lists."""
    return cfg.resolved(Path(cfg.base_dir) if cfg.base_dir else None)


MAX_WORKERS = 1024   # local worker processes, as `--workers` allows


def run_sweep(config, out_root="results", force: bool = False, out_dir=None, resume: bool = False,
              workers: int = 1, scheduler: str | None = None, chunk_size: int | None = None,
              on_progress=None, then=None) -> SweepResult:
    """Evaluate a sweep chunk by chunk and write results/<name>/ (skipped when up to date unless forced).

    The target is replaced only when it provably holds this sweep's results and nothing else (another
    sweep's with `force`; `store/writer.py` decides). `resume` continues a killed run of the same config
    from its whole parts, whatever chunk size either run used, and on finished results recomputes just
    the parts that fail their checksums. `then(result)`, when given, runs under the run's lock once the results
    are in place (the sweep command's readings analysis: written into these results, never into another run's);
    what it returns is the result's `note`.
    """
    force, resume = flag(force, "force"), flag(resume, "resume")
    cfg = load_config(config)
    check_columns(cfg)  # a misspelt objective or constraint column fails here, before anything is written
    if chunk_size is not None:   # 2.0 was a TypeError from range() deep inside the run
        chunk_size = whole(chunk_size, "--chunk-size", 1)
    workers = whole(workers, "--workers", 1, MAX_WORKERS)   # as --workers takes it (0 ran in-process)
    path = Path(out_dir).absolute() if out_dir else store.results_dir(out_root, cfg.name)
    h = cfg.config_hash()
    if not force and store.is_up_to_date(path, h):
        res = SweepResult(path, cfg, "up to date", store.read_manifest(path))
        if then is not None:
            with partial_mod.RunLock(path):
                if store.is_up_to_date(path, h):  # still these results: no other run replaced them meanwhile
                    res.note = then(res)
        return res
    total = planned_points(cfg)
    limit = max_points()
    if total > limit and not force:
        raise ConfigError(f"{total:,} points exceed the limit of {limit:,} (WSEMOE_MAX_POINTS); "
                          "check the estimate with `wsemoe check --estimate` and pass --force to run it",
                          loc=("search", "evaluations") if cfg.search else ("axes",))
    if cfg.search:
        _check_search(cfg, workers, scheduler, limit, force)
    writer.check_folder(path, "sweep", force, key=cfg.name)
    prior = store.read_manifest(path)  # results of another config of this sweep, which a run replaces (and says so)
    made_from = ownership.derived_outputs(path) if prior else {}  # only with --force (refused otherwise)
    placement.ensure_parent(path)  # the results root itself, at most: its own parent exists (checked)
    with partial_mod.RunLock(path):
        fixed = repair.repair(cfg, path, h) if resume and not force else None
        if fixed is not None:
            res = SweepResult(path, cfg, "repaired", fixed[0], repaired=fixed[1:])
        else:
            res = _run_locked(cfg, path, h, total, resume, workers, scheduler, chunk_size, on_progress,
                              _source(config), force)
            res.replaced = bool(prior) and prior.get("config_hash") != h
            res.removed = tuple(n for n in made_from if not os.path.lexists(path / n))
        if then is not None:
            res.note = then(res)
        return res


def _source(config) -> str | None:
    """The sweep file's absolute path (so `wsemoe ls` can tell whether results are up to date), or None. Its folder
    is resolved as the loader resolves it, the file itself not: a linked sweep file is read from where it was named,
    so `ls` resolves its relative paths against the same folder the run did."""
    return str(Path(config).parent.resolve() / Path(config).name) if isinstance(config, (str, Path)) else None


def _check_search(cfg: SweepConfig, workers: int, scheduler, limit: int, force: bool) -> None:
    """A search runs generation by generation in this process; its comparison needs the baseline grid."""
    if not cfg.factors():
        raise ConfigError("a search needs at least one axis to search over", loc=("search",))
    if searchrun.enumerates(cfg):
        return  # the grid is enumerated: any executor
    if workers > 1 or scheduler:
        raise ConfigError("a search evaluates one generation after another in this process; "
                          "drop --workers/--scheduler", loc=("--scheduler" if scheduler else "--workers",))
    if cfg.compare and chunked.baseline_config(cfg).size() > limit and not force:
        raise ConfigError(f"the comparison needs every baseline point ({chunked.baseline_config(cfg).size():,}), "
                          f"more than the limit of {limit:,}; drop compare or pass --force", loc=("compare",))


def _chunk_size(total: int, workers: int, parallel: bool) -> int:
    """One process takes the largest chunk memory allows (per-chunk work is not free); several
    workers need several chunks each."""
    if not parallel:
        return chunked.DEFAULT_CHUNK
    return max(16_384, min(chunked.DEFAULT_CHUNK, -(-total // (4 * workers if workers > 1 else 8))))


def _run_locked(cfg, path, h, total, resume, workers, scheduler, chunk_size, on_progress, source,
                force) -> SweepResult:
    chunk = chunk_size or _chunk_size(total, workers, bool(workers > 1 or scheduler))
    t0 = time.perf_counter()
    partial = partial_mod.PartialRun(path, h, resume)
    reused = partial.reusable() if resume else []
    searching = bool(cfg.search) and not searchrun.enumerates(cfg)
    tasks = [] if searching else chunked.chunk_ranges(total, chunk, reused)
    progress = on_progress or (lambda done_points, total_points: None)
    finished = 0 if searching else total - sum(e - s for s, e in tasks)
    progress(finished, total)

    def on_done(stats):
        nonlocal finished
        finished += stats["points"]
        progress(finished, total)

    search = None
    try:
        baselines = chunked.baseline_best(cfg, chunk)
        if searching:
            search = searchrun.run_search(cfg, baselines, partial.path, chunk, reused, on_done)
            total = search["evaluated"]
        else:
            run_tasks(cfg, tasks, baselines, partial.path, workers=workers, scheduler=scheduler, on_done=on_done)
        cands, stats = partial.read_reductions(total)
        front = pareto_front(cands, cfg.objectives, cfg.front_groups())
        comparison = comparison_table(cands, cfg) if cfg.compare else None
    except (ConfigError, PresetError):
        partial.discard()  # a problem with the input: resuming would fail the same way
        raise
    except BaseException:
        if not partial.has_parts():
            partial.discard()  # nothing to resume from: leave nothing behind
        raise
    seconds = time.perf_counter() - t0
    manifest = _manifest(cfg, h, stats, front, chunk, reused, seconds, partial.parts, source)
    if cfg.search:
        manifest["search"] = {**cfg.search.model_dump(), **(search or searchrun.enumerated_info(cfg))}
    extra = {"comparison.csv": comparison} if comparison is not None else {}
    manifest = partial.finish(resolved_config(cfg), front, manifest, extra, force)
    return SweepResult(path, cfg, "written", manifest, front, comparison, seconds)


def _manifest(cfg, h, stats, front, chunk, reused, seconds, parts_dir, source) -> dict:
    """The manifest of a finished run (the writer adds format, version and dependencies)."""
    bounds: dict = {}
    for s in stats:
        for k, v in s["bounds"].items():
            bounds[k] = bounds.get(k, 0) + v
    parts = [{k: s[k] for k in ("file", "start", "stop", "rows", "bytes", "sha256")} for s in stats]
    return {
        "name": cfg.name, "description": cfg.description, "config_hash": h, "source": source,
        "points": sum(s["points"] for s in stats), "feasible": sum(s["feasible"] for s in stats),
        "pareto": int(len(front)), "pareto_points": int(front[TIES].sum()), "pareto_groups": cfg.front_groups(),
        "pareto_fronts": int(len(front[cfg.front_groups()].drop_duplicates())) if cfg.front_groups() else int(len(front) > 0),
        "objectives": cfg.objectives, "axes": cfg.axis_names(),
        "objectives_not_finite": sum(s.get("objectives_not_finite", 0) for s in stats),
        "bounds": dict(sorted(bounds.items(), key=lambda kv: -kv[1])),
        "chunks": len(stats), "chunk_size": chunk, "chunks_reused": len(reused),
        "points_reused": sum(e - s for s, e in reused), "eval_seconds": round(seconds, 4),
        "columns": manifest_columns(_part_columns(parts_dir)), "parts": parts,
    }


def _part_columns(parts_dir: Path) -> list[str]:
    """Column names of the written points (from the first part's schema)."""
    import pyarrow.parquet as pq

    first = next(iter(sorted(parts_dir.iterdir())), None)
    return [] if first is None else [c for c in pq.read_schema(first).names if c != "point"]
