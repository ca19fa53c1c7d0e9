"""A sweep end to end as one function: config → chunks evaluated and written → reductions → results.

No printing here: progress is reported through a callback the CLI turns into a progress bar.
"""

from __future__ import annotations

import io
import os
import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from wsemoe import chunked, engine, space, store
from wsemoe.columns import manifest_columns
from wsemoe.compare import comparison_table
from wsemoe.config import SweepConfig, load_config
from wsemoe.errors import ConfigError
from wsemoe.executors import run_tasks
from wsemoe.pareto import pareto_front

MAX_POINTS = 50_000_000  # default refusal limit; WSEMOE_MAX_POINTS overrides it at run time


def max_points() -> int:
    """The size limit in force (read when a sweep starts, not at import)."""
    return int(os.environ.get("WSEMOE_MAX_POINTS", MAX_POINTS))


@dataclass
class SweepResult:
    """What a sweep produced (or found up to date)."""

    path: Path
    config: SweepConfig
    status: str  # "written" or "up to date"
    manifest: dict
    pareto: pd.DataFrame | None = None
    comparison: pd.DataFrame | None = None
    seconds: float = 0.0


def resolved_config(cfg: SweepConfig) -> dict:
    """The config as it ran, loadable again: presets expanded into fields, axes into value lists."""
    return cfg.resolved(Path(cfg.base_dir) if cfg.base_dir else None)


def run_sweep(config, out_root="results", force: bool = False, out_dir=None, resume: bool = False,
              workers: int = 1, scheduler: str | None = None, chunk_size: int | None = None,
              on_progress=None) -> SweepResult:
    """Evaluate a sweep chunk by chunk and write results/<name>/ (skipped when up to date unless forced).

    `resume` continues a killed run of the same config from its last complete chunk.
    """
    cfg = load_config(config)
    path = Path(out_dir).resolve() if out_dir else store.results_dir(out_root, cfg.name)
    h = cfg.config_hash()
    if not force and store.is_up_to_date(path, h):
        return SweepResult(path, cfg, "up to date", store.read_manifest(path))
    total = space.size(cfg)
    limit = max_points()
    if total > limit and not force:
        raise ConfigError(f"{total:,} points exceed the limit of {limit:,} (WSEMOE_MAX_POINTS); "
                          "check the estimate with `wsemoe check` and pass --force to run it", loc=("axes",))
    # One process takes the largest chunk memory allows (per-chunk work is not free); several
    # workers need several chunks each.
    parallel = workers > 1 or scheduler
    chunk = chunk_size or (max(16_384, min(chunked.DEFAULT_CHUNK, -(-total // (4 * workers if workers > 1 else 8))))
                           if parallel else chunked.DEFAULT_CHUNK)
    t0 = time.perf_counter()
    partial = store.PartialRun(path, h, resume)
    done = partial.done()
    tasks = [t for t in chunked.chunk_ranges(total, chunk) if t[0] not in done]
    progress = on_progress or (lambda done_points, total_points: None)
    finished = total - sum(e - s for _, s, e in tasks)
    progress(finished, total)

    def on_done(stats):
        nonlocal finished
        finished += stats["points"]
        progress(finished, total)

    baselines = chunked.baseline_best(cfg, chunk)
    run_tasks(cfg, tasks, baselines, partial.path, workers=workers, scheduler=scheduler, on_done=on_done)
    cands, stats = partial.read_reductions()
    front = pareto_front(cands, cfg.objectives)
    comparison = comparison_table(cands, cfg) if cfg.compare else None
    seconds = time.perf_counter() - t0
    bounds: dict = {}
    for s in stats:
        for k, v in s["bounds"].items():
            bounds[k] = bounds.get(k, 0) + v
    manifest = {
        "name": cfg.name, "description": cfg.description, "config_hash": h,
        "points": sum(s["points"] for s in stats), "feasible": sum(s["feasible"] for s in stats),
        "pareto": int(len(front)), "objectives": cfg.objectives, "axes": cfg.axis_names(),
        "bounds": dict(sorted(bounds.items(), key=lambda kv: -kv[1])),
        "chunks": len(stats), "chunk_size": chunk, "eval_seconds": round(seconds, 4),
        "columns": manifest_columns(store.part_columns(partial.path)),
    }
    extra = {"comparison.csv": comparison} if comparison is not None else {}
    partial.finish(resolved_config(cfg), front, manifest, extra)
    return SweepResult(path, cfg, "written", manifest, front, comparison, seconds)


def check(config) -> dict:
    """What a sweep would do, without running it: points, axes, time and output-size estimates."""
    cfg = load_config(config)
    n = space.size(cfg)
    m = min(n, 8192)
    engine.evaluate_points(cfg, 0, min(n, 64))  # warm caches so the timing below is representative
    t0 = time.perf_counter()
    sample = engine.evaluate_points(cfg, 0, m)
    per_point = (time.perf_counter() - t0) / m
    buf = io.BytesIO()
    sample.to_parquet(buf, index=True)
    return {"name": cfg.name, "points": n, "axes": {a: len(v) for a, v in cfg.axes.items()},
            "zip_groups": [list(g) for g in cfg.zip], "config_hash": cfg.config_hash(),
            "estimated_seconds": n * per_point, "estimated_output_bytes": n * buf.tell() / m,
            "limit": max_points(), "over_limit": n > max_points()}
