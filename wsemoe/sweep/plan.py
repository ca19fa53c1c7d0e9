"""What a sweep would do, without running it: validation (columns included), size, the size limit, and
on request the time and output-size estimates from a timed sample.

Validation and counting import no pandas or pyarrow, so `wsemoe check` answers in a fraction of a
second; the estimates run the real engine on a sample and pay for those imports.
"""

from __future__ import annotations

import os
import time

from wsemoe.config.loader import load_config
from wsemoe.errors import ConfigError, excerpt
from wsemoe.sweep.outputs import check_columns

MAX_POINTS = 50_000_000  # default refusal limit; WSEMOE_MAX_POINTS overrides it at run time
SAMPLE = 8192  # points timed for the estimate


def max_points() -> int:
    """The size limit in force (read when a sweep starts, not at import)."""
    text = os.environ.get("WSEMOE_MAX_POINTS")
    if text is None:
        return MAX_POINTS
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not (value.is_integer() and 0 < value <= 2**62):
        raise ConfigError(f"must be a positive whole number of points, got {excerpt(text)!r}",
                          loc=("WSEMOE_MAX_POINTS",))
    return int(value)


def planned_points(cfg) -> int:
    """Points a run evaluates: the whole grid, or a search's budget (at most the grid)."""
    return min(cfg.search.evaluations, cfg.size()) if cfg.search else cfg.size()


def check(config, estimate: bool = True) -> dict:
    """Validate a sweep (every column it names included) and size it; with `estimate`, also time a
    sample of up to 8,192 points and write it as a part would be written, to estimate time and output size."""
    cfg = load_config(config)
    columns = check_columns(cfg)
    n = planned_points(cfg)
    info = {"name": cfg.name, "points": n, "space_points": cfg.size(),
            "axes": {a: len(v) for a, v in cfg.axes.items()}, "zip_groups": [list(g) for g in cfg.zip],
            "config_hash": cfg.config_hash(), "columns": list(columns),
            "search": cfg.search.model_dump() if cfg.search else None,
            "limit": max_points(), "over_limit": n > max_points()}
    if estimate:
        info.update(_estimate(cfg, n))
    return info


def _estimate(cfg, n: int) -> dict:
    """Time a sample of the run's own chunk evaluation and write it as a part, to scale both to `n` points."""
    from wsemoe.sweep import chunked, engine, partfile

    m = min(n, SAMPLE)
    ev = engine.Evaluator(cfg)
    base = _nan_baselines(cfg) if cfg.compare else None
    chunked.run_chunk(cfg, 0, min(m, 64), base, evaluator=ev)  # warm caches so the timing below is representative
    t0 = time.perf_counter()
    sample = chunked.run_chunk(cfg, 0, m, base, evaluator=ev).points
    per_point = (time.perf_counter() - t0) / m
    size = len(partfile.to_bytes(sample))  # as parts are written (the speedup's values do not matter for size)
    return {"estimated_seconds": n * per_point, "estimated_output_bytes": n * size / m}


def _nan_baselines(cfg):
    """An empty baseline table: speedups come out NaN, which is all a size estimate needs."""
    import pandas as pd

    from wsemoe.sweep.compare import group_keys

    return pd.DataFrame(columns=[*group_keys(cfg)[0], "baseline_best"])
