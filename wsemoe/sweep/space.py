"""Axes → design frame: the cartesian product of grid axes and zipped groups, built by index arithmetic.

Row i of the frame is computed from i alone, so any slice of a huge sweep can be built without
the rest (chunked evaluation). The first axis varies slowest.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from wsemoe.config.schema import SweepConfig
from wsemoe.errors import ConfigError


def build_frame(cfg: SweepConfig, start: int = 0, stop: int | None = None) -> pd.DataFrame:
    """Rows [start, stop) of the design frame: one column per swept path, dotted names."""
    total = cfg.size()
    stop = total if stop is None else min(stop, total)
    idx = np.arange(start, stop, dtype=np.int64)
    cols: dict[str, np.ndarray] = {}
    stride = total
    for f in cfg.factors():
        n = len(next(iter(f.values())))
        stride //= n
        pick = (idx // stride) % n
        for path, values in f.items():
            cols[path] = _as_array(values)[pick]
    return pd.DataFrame(cols, index=pd.RangeIndex(start, stop, name="point"))


def _as_array(values: list) -> np.ndarray:
    """Typed column values: numbers as numpy numbers, anything else (names, tuples) as objects."""
    if all(isinstance(v, (bool, np.bool_)) for v in values):
        return np.asarray(values, dtype=bool)
    if all(isinstance(v, (int, float, np.number)) and not isinstance(v, bool) for v in values):
        return np.asarray(values)
    arr = np.empty(len(values), dtype=object)
    arr[:] = values
    return arr


def check_range(total: int, start, stop, chunk_size=None) -> tuple[int, int]:
    """Validated [start, stop) of a sweep of `total` points (stop None: to the end)."""
    for name, v in (("start", start), ("stop", stop), ("chunk_size", chunk_size)):
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, np.integer))):
            raise ConfigError(f"{name} must be an integer, got {v!r}", loc=(name,))
    stop = total if stop is None else int(stop)
    if not 0 <= start < total:
        raise ConfigError(f"start {start} out of range: the sweep has {total} points (0..{total - 1})", loc=("start",))
    if not start < stop <= total:
        raise ConfigError(f"stop {stop} out of range: need start < stop <= {total}", loc=("stop",))
    if chunk_size is not None and chunk_size < 1:
        raise ConfigError(f"chunk_size must be at least 1, got {chunk_size}", loc=("chunk_size",))
    return int(start), stop
