"""Pareto fronts of feasible points under min/max objectives (vectorized, no per-point Python loop).

The one definition every reader uses (`show`, pareto.csv, figures, the report): a front per group of the
axes that must not be mixed (`SweepConfig.front_groups`: each hardware, model and scenario by default), exact ties
(equal objectives within a group) collapsed into the first point with a `ties` count.
Works on a DataFrame or on a columnar Block alike: both give columns by name.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from wsemoe.errors import ConfigError


def minimization(table, objectives: dict) -> np.ndarray:
    """Objective columns of a DataFrame or Block, maxima negated, as an (n, k) float array."""
    cols = []
    for col, sense in objectives.items():
        if col not in table:
            raise ConfigError(f"unknown objective column '{col}'", loc=("objectives", col))
        try:
            x = np.asarray(table[col], dtype=float)
        except (TypeError, ValueError):   # `bound` or another text column (a raw TypeError from a Labels column)
            raise ConfigError(f"objective column '{col}' holds text, not numbers", loc=("objectives", col)) from None
        cols.append(-x if sense == "max" else x)
    return np.column_stack(cols) if cols else np.empty((len(table), 0))


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
        return _nondominated_2d(points)
    mask = np.ones(n, dtype=bool)
    for s in range(0, n, block):
        cand = points[s:s + block]
        le = np.all(points[None, :, :] <= cand[:, None, :], axis=2)
        lt = np.any(points[None, :, :] < cand[:, None, :], axis=2)
        mask[s:s + block] = ~np.any(le & lt, axis=1)
    return mask


def _nondominated_2d(points: np.ndarray) -> np.ndarray:
    """Sorted by (f0, f1), a point survives when its f1 beats every f1 before its run of exact
    duplicates (duplicates share one verdict). Large sets are thinned first without sorting."""
    keep = _thin_2d(points) if len(points) > THIN_ABOVE else np.arange(len(points))
    mask = np.zeros(len(points), dtype=bool)
    mask[keep] = _sorted_front_2d(points[keep])
    return mask


THIN_ABOVE, THIN_BUCKETS = 4096, 1024


def _thin_2d(points: np.ndarray) -> np.ndarray:
    """Rows that may be non-dominated: f0 is cut into buckets; a point whose f1 is above the smallest
    f1 of any lower bucket is strictly dominated (smaller f0 and smaller f1) and is dropped. Exact:
    only dominated points go. Needs finite values (the front is taken over finite rows only)."""
    f0, f1 = points[:, 0], points[:, 1]
    lo, hi = f0.min(), f0.max()
    if not np.isfinite(lo) or not np.isfinite(hi) or hi <= lo:
        return np.arange(len(points))
    bucket = np.minimum(((f0 - lo) / (hi - lo) * THIN_BUCKETS).astype(np.int64), THIN_BUCKETS - 1)
    best = np.full(THIN_BUCKETS, np.inf)
    np.minimum.at(best, bucket, f1)
    below = np.concatenate([[np.inf], np.minimum.accumulate(best)[:-1]])  # smallest f1 in lower buckets
    return np.flatnonzero(~(f1 > below[bucket]))


def _sorted_front_2d(points: np.ndarray) -> np.ndarray:
    order = np.lexsort((points[:, 1], points[:, 0]))
    f0, f1 = points[order, 0], points[order, 1]
    first = np.ones(len(order), dtype=bool)
    first[1:] = (f0[1:] != f0[:-1]) | (f1[1:] != f1[:-1])
    run_start = np.maximum.accumulate(np.where(first, np.arange(len(order)), 0))
    before = np.minimum.accumulate(np.concatenate([[np.inf], f1[:-1]]))
    mask = np.empty(len(order), dtype=bool)
    mask[order] = f1 < before[run_start]
    return mask


def _feasible(table) -> np.ndarray:
    return np.asarray(table["feasible"], dtype=bool) if "feasible" in table else np.ones(len(table), dtype=bool)


def _finite(points: np.ndarray) -> np.ndarray:
    """Rows whose every objective is finite, column by column (numpy's row-wise `all` over two or three
    columns runs a loop per row: 9 ms of a 131k-point chunk, against well under one this way)."""
    ok = np.ones(len(points), dtype=bool)
    for j in range(points.shape[1]):
        ok &= np.isfinite(points[:, j])
    return ok


def not_finite_rows(table, objectives: dict) -> np.ndarray:
    """Feasible rows the front cannot rank: an objective is NaN or infinite (counted, never hidden)."""
    return _feasible(table) & ~_finite(minimization(table, objectives))


def not_finite(df: pd.DataFrame, objectives: dict) -> int:
    """How many feasible rows have a non-finite objective."""
    return int(not_finite_rows(df, objectives).sum())


def group_ids(table, cols) -> np.ndarray:
    """One integer per row, equal where rows share the values of every column of `cols` (all 0 without any)."""
    if not len(cols):
        return np.zeros(len(table), dtype=np.int64)
    ids = None
    for c in (table[name] for name in cols):
        # NaN is a value of its own here (one group), as every other value
        code = pd.factorize(c.codes if hasattr(c, "codes") and not isinstance(c, pd.Series) else np.asarray(c),
                            use_na_sentinel=False)[0].astype(np.int64)
        # Mixed radix, renumbered after each column so it never overflows: hashing, not a row-wise np.unique,
        # which sorted every row of every chunk (2.1 s of a 2 M-point sweep's 6.8 s).
        ids = code if ids is None else pd.factorize(ids * (int(code.max(initial=0)) + 1) + code)[0].astype(np.int64)
    return ids


def front_rows(table, objectives: dict, groups=()) -> np.ndarray:
    """Positions of the feasible rows with finite objectives that no row of their group dominates (row order)."""
    pts = minimization(table, objectives)
    rows = np.flatnonzero(_feasible(table) & _finite(pts))
    ids = group_ids(table, list(groups))[rows]
    if not len(rows) or ids.max() == 0:
        return rows[nondominated(pts[rows])]
    keep = np.zeros(len(rows), dtype=bool)
    order = np.argsort(ids, kind="stable")
    for part in np.split(order, np.flatnonzero(np.diff(ids[order])) + 1):  # one front per group
        keep[part] = nondominated(pts[rows[part]])
    return rows[keep]


TIES = "ties"  # the column of a front row counting the points it stands for


def pareto_front(df: pd.DataFrame, objectives: dict, groups=()) -> pd.DataFrame:
    """The fronts of every group of `groups` (columns of `df`): feasible, non-dominated rows with finite
    objectives; rows of one group with exactly equal objectives are one row (the first point) whose `ties`
    says how many points it stands for. Groups in point order, each best first by the first objective.

    Rows with a non-finite objective cannot be ranked and are left out; `not_finite` counts them.
    """
    groups = [g for g in groups if g in df]
    front = df.iloc[front_rows(df, objectives, groups)].sort_index()  # point order: the first of ties is kept
    gid = group_ids(front, groups)
    same = group_ids(pd.DataFrame({"group": gid, **{c: front[c].to_numpy() for c in objectives}}),
                     ["group", *objectives])
    first = ~pd.Series(same).duplicated().to_numpy()
    out = front[first].copy()
    out[TIES] = np.bincount(same)[same[first]] if len(same) else np.zeros(0, dtype=np.int64)
    col, sense = next(iter(objectives.items()))
    best = out[col].to_numpy(dtype=float) * (1.0 if sense == "min" else -1.0)
    rank = pd.factorize(gid[first])[0]  # groups in the order of their first point
    return out.iloc[np.lexsort((best, rank))] if len(out) else out
