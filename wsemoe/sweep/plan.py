"""What a sweep would do, without running it: validation (columns included), size, the size limit, and
on request the time and output-size estimates from a timed sample.

Validation and counting import no pandas or pyarrow, so `wsemoe check` answers in a fraction of a
second; the estimates run the real engine on a sample and pay for those imports.
"""

from __future__ import annotations

import os
import time

from wsemoe.arguments import flag
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
    estimate = flag(estimate, "estimate")
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


RANGES = 16  # the sample is this many short ranges spread over the grid, so it meets most structures


def sample_ranges(n: int, m: int, k: int = RANGES) -> list[tuple[int, int]]:
    """`k` ranges of about m/k points at evenly spaced starts in [0, n) (all of [0, n) when m >= n)."""
    if m >= n:
        return [(0, n)]
    size = max(1, m // k)
    k = min(k, max(1, m // size))
    starts = sorted({round(i * (n - size) / max(1, k - 1)) for i in range(k)})
    return [(s, s + size) for s in starts]


def _estimate(cfg, n: int) -> dict:
    """The run's own steps, timed: the baseline pass whole (as the run does it first), then a sample of point
    ranges spread over the grid evaluated and reduced as chunks are, cold (structures built, as the run builds
    each once) and again warm (the per-point cost), and written as parts are (parquet and SHA-256).
    Time = baseline + structures (cold − warm) + n × (per point + writing per point)."""
    import hashlib

    from wsemoe.sweep import chunked, engine

    from wsemoe.store import partfile

    t0 = time.perf_counter()
    base = chunked.baseline_best(cfg) if cfg.compare else None
    baseline = time.perf_counter() - t0
    ranges = sample_ranges(n if not cfg.search else cfg.size(), min(n, SAMPLE))
    m = sum(e - s for s, e in ranges)
    ev = engine.Evaluator(cfg)
    cold, blocks = _timed(lambda: [chunked.run_chunk(cfg, s, e, base, evaluator=ev) for s, e in ranges])
    warm, _ = _timed(lambda: [chunked.run_chunk(cfg, s, e, base, evaluator=ev) for s, e in ranges])
    write, parts = _timed(lambda: [partfile.to_bytes(b.points) for b in blocks])
    write += _timed(lambda: [hashlib.sha256(p).digest() for p in parts])[0]
    size = sum(len(p) for p in parts)
    parts_seconds = {"baseline": baseline, "structures": max(0.0, cold - warm), "points": n * warm / m,
                     "writing": n * write / m}
    return {"estimated_seconds": sum(parts_seconds.values()), "estimated_parts": parts_seconds,
            "estimated_output_bytes": n * size / m, "sampled_points": m}


def _timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def _nan_baselines(cfg):
    """An empty baseline table: speedups come out NaN, which is all a size estimate needs."""
    import pandas as pd

    from wsemoe.sweep.compare import group_keys

    return pd.DataFrame(columns=[*group_keys(cfg)[0], "baseline_best"])
