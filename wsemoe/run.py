"""A sweep end to end as one pure function: config → evaluated points → results folder."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from wsemoe import engine, space, store
from wsemoe.columns import manifest_columns
from wsemoe.compare import comparison_table
from wsemoe.config import SweepConfig, load_config
from wsemoe.pareto import pareto_front


@dataclass
class SweepResult:
    """What a sweep produced (or found up to date)."""

    path: Path
    config: SweepConfig
    status: str  # "written" or "up to date"
    manifest: dict
    points: pd.DataFrame | None = None
    pareto: pd.DataFrame | None = None
    comparison: pd.DataFrame | None = field(default=None)
    seconds: float = 0.0


def resolved_config(cfg: SweepConfig) -> dict:
    """The config as it ran: presets expanded into fields, axes expanded into value lists."""
    return cfg.model_dump(mode="json", exclude_none=True)


def run_sweep(config, out_root="results", force: bool = False, out_dir=None) -> SweepResult:
    """Evaluate a sweep and write results/<name>/ unless identical results exist (or `force`)."""
    cfg = load_config(config)
    path = Path(out_dir).resolve() if out_dir else store.results_dir(out_root, cfg.name)
    h = cfg.config_hash()
    if not force and store.is_up_to_date(path, h):
        return SweepResult(path, cfg, "up to date", store.read_manifest(path))
    t0 = time.perf_counter()
    points = engine.evaluate(cfg)
    front = pareto_front(points, cfg.objectives)
    comparison = comparison_table(points, cfg) if cfg.compare else None
    seconds = time.perf_counter() - t0
    bounds = points.loc[points["feasible"], "bound"].value_counts().to_dict()
    manifest = {
        "name": cfg.name,
        "description": cfg.description,
        "config_hash": h,
        "points": int(len(points)),
        "feasible": int(points["feasible"].sum()),
        "pareto": int(len(front)),
        "objectives": cfg.objectives,
        "axes": cfg.axis_names(),
        "bounds": {str(k): int(v) for k, v in bounds.items()},
        "eval_seconds": round(seconds, 4),
        "columns": manifest_columns(points.columns),
    }
    extra = {"comparison.csv": comparison} if comparison is not None else {}
    store.write_results(path, resolved_config(cfg), points, front, manifest, extra)
    return SweepResult(path, cfg, "written", manifest, points, front, comparison, seconds)


def check(config) -> dict:
    """What a sweep would do, without running it: points, axes, and an output-size estimate."""
    cfg = load_config(config)
    n = space.size(cfg)
    sample = engine.evaluate(cfg, 0, min(n, 256))
    bytes_per_row = sample.memory_usage(deep=True).sum() / max(len(sample), 1)
    t0 = time.perf_counter()
    engine.evaluate(cfg, 0, min(n, 4096))
    per_point = (time.perf_counter() - t0) / min(n, 4096)
    return {"name": cfg.name, "points": n, "axes": {a: len(v) for a, v in cfg.axes.items()},
            "zip_groups": [list(g) for g in cfg.zip], "config_hash": cfg.config_hash(),
            "estimated_seconds": n * per_point, "estimated_output_bytes": n * bytes_per_row * 0.35}
