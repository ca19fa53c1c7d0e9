"""Evaluate a sweep: build the design frame, group points by categorical values, run the cost model.

Categorical columns (mode, strategy, presets, ...) are constant within a group, so the cost model
sees numpy arrays for numeric axes and scalars for everything else; structural terms are built
once per group, not per point.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from wsemoe.sweep import space
from wsemoe.config.schema import SweepConfig
from wsemoe.config.loader import load_config
from wsemoe.sweep.feasibility import add_feasibility
from wsemoe.sweep.outputs import evaluate, namespaces


def _categorical(frame: pd.DataFrame) -> list[str]:
    """Columns that are not plain numbers (names, flags, tuples): constant within a group."""
    return [c for c in frame.columns
            if not pd.api.types.is_numeric_dtype(frame[c]) or pd.api.types.is_bool_dtype(frame[c])]


def _float(column: pd.Series) -> np.ndarray:
    """Numeric inputs as float64: exact for the bounded integers specs admit, and products of them
    (G·B·S·layers·width) cannot wrap around as int64 products silently would."""
    return column.to_numpy(dtype=np.float64)


def _columns(out: dict, n: int) -> dict:
    """Cost-model outputs broadcast to n rows; labels (bound, phase bounds) become categoricals."""
    cols = {}
    for k, v in out.items():
        v = np.broadcast_to(v, (n,))
        cols[k] = pd.Categorical(v) if v.dtype.kind in "OU" else v
    return cols


def evaluate_frame(cfg: SweepConfig, frame: pd.DataFrame) -> pd.DataFrame:
    """Output columns for every row of `frame` (same index), feasibility included."""
    cats = _categorical(frame)
    if not cats:  # one group: no split, no reassembly
        ns = namespaces(cfg, {c: _float(frame[c]) for c in frame.columns})
        cols = _columns(evaluate(cfg, ns), len(frame))
        return add_feasibility(pd.DataFrame(cols, index=frame.index), cfg, frame)
    parts = []
    for values, sub in frame.groupby(cats, sort=False, dropna=False):
        values = values if isinstance(values, tuple) else (values,)
        numeric = {c: _float(sub[c]) for c in sub.columns if c not in cats}
        ns = namespaces(cfg, {**dict(zip(cats, values)), **numeric})
        parts.append(pd.DataFrame(_columns(evaluate(cfg, ns), len(sub)), index=sub.index))
    result = pd.concat(parts).loc[frame.index] if len(parts) > 1 else parts[0]
    return add_feasibility(result, cfg, frame)


def evaluate_points(config, start: int = 0, stop: int | None = None) -> pd.DataFrame:
    """Points [start, stop) of a sweep: input columns (dotted names) then output columns, no comparison."""
    cfg = load_config(config)
    frame = space.build_frame(cfg, start, stop)
    return pd.concat([frame, evaluate_frame(cfg, frame)], axis=1)
