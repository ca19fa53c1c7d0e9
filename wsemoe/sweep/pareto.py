"""Pareto front of feasible points under min/max objectives (vectorized, no per-point Python loop)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from wsemoe.errors import ConfigError


def _as_minimization(df: pd.DataFrame, objectives: dict) -> np.ndarray:
    cols = []
    for col, sense in objectives.items():
        if col not in df:
            raise ConfigError(f"unknown objective column '{col}'", loc=("objectives", col))
        x = df[col].to_numpy(dtype=float)
        cols.append(-x if sense == "max" else x)
    return np.column_stack(cols) if cols else np.empty((len(df), 0))


def nondominated(points: np.ndarray, block: int = 2048) -> np.ndarray:
    """Boolean mask of rows no other row dominates (all ≤ and one <), minimization.

    Two objectives use a sort and running minimum (O(n log n)); more objectives compare in blocks
    against the candidates that survive, so memory stays at block × candidates.
    """
    n = len(points)
    if n == 0:
        return np.zeros(0, dtype=bool)
    if points.shape[1] == 1:
        return points[:, 0] == points[:, 0].min()
    if points.shape[1] == 2:
        # Exact duplicates share one verdict: decide on unique points, then map back.
        uniq, inverse = np.unique(points, axis=0, return_inverse=True)  # sorted by (f0, f1)
        prev_best = np.minimum.accumulate(np.concatenate([[np.inf], uniq[:-1, 1]]))
        return (uniq[:, 1] < prev_best)[inverse.ravel()]
    mask = np.ones(n, dtype=bool)
    for s in range(0, n, block):
        cand = points[s:s + block]
        le = np.all(points[None, :, :] <= cand[:, None, :], axis=2)
        lt = np.any(points[None, :, :] < cand[:, None, :], axis=2)
        mask[s:s + block] = ~np.any(le & lt, axis=1)
    return mask


def not_finite(df: pd.DataFrame, objectives: dict) -> int:
    """Feasible rows the front cannot rank: an objective is NaN or infinite (counted, never hidden)."""
    feas = df[df["feasible"]] if "feasible" in df else df
    return int((~np.all(np.isfinite(_as_minimization(feas, objectives)), axis=1)).sum())


def pareto_front(df: pd.DataFrame, objectives: dict) -> pd.DataFrame:
    """Feasible, non-dominated rows with finite objectives, sorted by the first objective (best first).

    Rows with a non-finite objective cannot be ranked and are left out; `not_finite` counts them.
    """
    feas = df[df["feasible"]] if "feasible" in df else df
    pts = _as_minimization(feas, objectives)
    ok = np.all(np.isfinite(pts), axis=1)
    feas, pts = feas[ok], pts[ok]
    front = feas[nondominated(pts)]
    first, sense = next(iter(objectives.items()))
    # ties (equal first objective) keep point order, so the front is the same whatever the chunking
    return front.sort_index().sort_values(first, ascending=(sense == "min"), kind="stable")
