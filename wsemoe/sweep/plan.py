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


def check(config, estimate: bool = True) -> dict:
    """Validate a sweep (every column it names included) and size it; with `estimate`, also time a
    sample of up to 8,192 points and write it as a part would be written, to estimate time and output size."""
    cfg = load_config(config)
    columns = check_columns(cfg)
    n = cfg.size()
    info = {"name": cfg.name, "points": n, "axes": {a: len(v) for a, v in cfg.axes.items()},
            "zip_groups": [list(g) for g in cfg.zip], "config_hash": cfg.config_hash(), "columns": list(columns),
            "limit": max_points(), "over_limit": n > max_points()}
    if estimate:
        info.update(_estimate(cfg))
    return info


def _estimate(cfg) -> dict:
    from wsemoe.sweep import chunked, engine
    from wsemoe.sweep.partial import part_bytes

    n = cfg.size()
    m = min(n, SAMPLE)
    engine.evaluate_points(cfg, 0, min(n, 64))  # warm caches so the timing below is representative
    t0 = time.perf_counter()
    sample = engine.evaluate_points(cfg, 0, m)
    per_point = (time.perf_counter() - t0) / m
    if cfg.compare:  # the written parts carry the speedup column; its values do not matter for size
        sample[f"speedup_vs_{cfg.compare.name}"] = float("nan")
    size = len(part_bytes(sample[chunked.kept_columns(sample, cfg)]))  # written as a part would be
    return {"estimated_seconds": n * per_point, "estimated_output_bytes": n * size / m}
