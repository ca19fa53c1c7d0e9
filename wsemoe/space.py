"""Axes → design frame: the cartesian product of grid axes and zipped groups, built by index arithmetic.

Row i of the frame is computed from i alone, so any slice of a huge sweep can be built without
the rest (chunked evaluation). The first axis varies slowest.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from wsemoe.config import SweepConfig
from wsemoe.errors import ConfigError


def factors(cfg: SweepConfig) -> list[dict[str, list]]:
    """Independent factors of the product: one per grid axis, one per zip group."""
    return [{path: values} for path, values in cfg.axes.items()] + [dict(g) for g in cfg.zip]


def size(cfg: SweepConfig) -> int:
    """Number of design points."""
    n = 1
    for f in factors(cfg):
        n *= len(next(iter(f.values())))
    return n


def build_frame(cfg: SweepConfig, start: int = 0, stop: int | None = None) -> pd.DataFrame:
    """Rows [start, stop) of the design frame: one column per swept path, dotted names."""
    total = size(cfg)
    stop = total if stop is None else min(stop, total)
    idx = np.arange(start, stop, dtype=np.int64)
    cols: dict[str, np.ndarray] = {}
    stride = total
    for f in factors(cfg):
        n = len(next(iter(f.values())))
        stride //= n
        pick = (idx // stride) % n
        for path, values in f.items():
            cols[path] = _as_array(values)[pick]
    frame = pd.DataFrame(cols, index=pd.RangeIndex(start, stop, name="point"))
    check_points(cfg, frame)
    return frame


def _as_array(values: list) -> np.ndarray:
    """Typed column values: numbers as numpy numbers, anything else (names, tuples) as objects."""
    if all(isinstance(v, (bool, np.bool_)) for v in values):
        return np.asarray(values, dtype=bool)
    if all(isinstance(v, (int, float, np.number)) and not isinstance(v, bool) for v in values):
        return np.asarray(values)
    arr = np.empty(len(values), dtype=object)
    arr[:] = values
    return arr


def column(cfg: SweepConfig, frame: pd.DataFrame, path: str):
    """A field's per-point values: the swept column, or the base spec's scalar."""
    if path in frame.columns:
        return frame[path].to_numpy()
    section, field = path.split(".", 1)
    base = getattr(cfg, section)
    if section in ("hardware", "model") and section in frame.columns:
        names = frame[section].to_numpy()
        return np.array([cfg.presets[n].get(field, getattr(base, field)) for n in names], dtype=object)
    return getattr(base, field)


def check_points(cfg: SweepConfig, frame: pd.DataFrame) -> None:
    """Cross-field rules no single axis value can break alone (top-k ≤ E, TP divides the nodes)."""
    k = np.asarray(column(cfg, frame, "model.num_experts_per_tok"), dtype=float)
    e = np.asarray(column(cfg, frame, "model.num_experts"), dtype=float)
    if np.any(k > e):
        key = "model.num_experts_per_tok" if "model.num_experts_per_tok" in frame else "model.num_experts"
        bad = int(np.argmax(np.broadcast_to(k > e, (len(frame),)))) if len(frame) else 0
        raise ConfigError(f"top-k exceeds the number of experts at point {frame.index[bad]} "
                          f"(k={int(np.broadcast_to(k, (len(frame),))[bad])}, E={int(np.broadcast_to(e, (len(frame),))[bad])})",
                          loc=("axes", key))
    tp = column(cfg, frame, "mapping.tp")
    if tp is not None and not (isinstance(tp, np.ndarray) and tp.dtype == object):
        nodes = np.asarray(column(cfg, frame, "hardware.rows"), dtype=float) * \
            np.asarray(column(cfg, frame, "hardware.cols"), dtype=float)
        if np.any(np.mod(nodes, np.asarray(tp, dtype=float)) != 0):
            raise ConfigError("mapping.tp must divide the number of nodes (rows × cols)", loc=("mapping", "tp"))
