"""Constraint columns (g ≤ 0 satisfied), user bounds, `feasible` and `infeasible_reason`."""

from __future__ import annotations

import numpy as np
import pandas as pd

from wsemoe.errors import ConfigError

REASONS = {
    "g_mem_attn": "attention-stage memory needs {r}× the usable node memory "
                  "(transient at B + kept activations + BTA buffer)",
    "g_mem_moe": "MoE-stage memory needs {r}× the usable node memory "
                 "(weights, dispatched tokens and FFN intermediates at G·B)",
}
DIGITS = 3  # significant digits of a ratio in a reason: few distinct texts per chunk, small parts


def add_feasibility(out: pd.DataFrame, cfg, frame: pd.DataFrame) -> pd.DataFrame:
    """Append user-constraint g columns, `feasible` and `infeasible_reason` (worst violation, in words,
    with its ratio to the limit)."""
    bounds = {}
    for i, c in enumerate(cfg.constraints):
        src = out[c.column] if c.column in out else frame[c.column] if c.column in frame else None
        if src is None:
            raise ConfigError(f"unknown column '{c.column}'", loc=("constraints", i, "column"))
        x = src.to_numpy(dtype=float)
        if c.max is not None:
            out[f"g_{c.column}_max"] = (x - c.max) / max(abs(c.max), 1e-300)
            bounds[f"g_{c.column}_max"] = c.max
        if c.min is not None:
            out[f"g_{c.column}_min"] = (c.min - x) / max(abs(c.min), 1e-300)
            bounds[f"g_{c.column}_min"] = c.min
    gcols = [col for col in out.columns if col.startswith("g_")]
    g = out[gcols].to_numpy(dtype=float)
    feasible = np.all(g <= 0, axis=1)
    out["feasible"] = feasible
    out["infeasible_reason"] = reasons(g, gcols, bounds, feasible)
    return out


def reasons(g: np.ndarray, gcols: list[str], bounds: dict, feasible: np.ndarray) -> pd.Categorical:
    """The worst-violated constraint of each infeasible point, in words with its ratio (empty when feasible).

    The ratio is rounded away from the limit (1.0004× capacity reads 1.01×, never 1.00×), so no reason
    reads as satisfied; one text per distinct (constraint, rounded ratio) keeps the column a small categorical.
    """
    n = len(feasible)
    codes = np.full(n, -1, dtype=np.int64)
    bad = np.flatnonzero(~feasible)
    if not len(bad):
        return pd.Categorical.from_codes(codes, categories=[])
    worst = np.argmax(np.nan_to_num(g[bad], nan=-np.inf), axis=1)
    ratio = np.full(len(bad), np.nan)
    for j, col in enumerate(gcols):
        rows = worst == j
        ratio[rows] = _ratio(g[bad[rows], j], col, bounds.get(col))
    key = np.column_stack([worst.astype(float), _round_away(ratio, worst, gcols)])
    uniq, inverse = np.unique(key, axis=0, return_inverse=True)
    codes[bad] = inverse.ravel()
    texts = [_text(gcols[int(j)], r, bounds.get(gcols[int(j)])) for j, r in uniq]
    return pd.Categorical.from_codes(codes, categories=_distinct(texts))


def _ratio(g: np.ndarray, col: str, bound) -> np.ndarray:
    """Value over its limit: g + 1 for memory and maximum bounds, 1 − g for minimum bounds (positive limits)."""
    if bound is not None and bound <= 0:
        return np.full(len(g), np.nan)  # a ratio to a zero or negative limit says nothing
    return 1.0 - g if col.endswith("_min") and bound is not None else g + 1.0


def _round_away(ratio: np.ndarray, worst: np.ndarray, gcols: list[str]) -> np.ndarray:
    """Ratios to DIGITS significant digits, rounded up above the limit and down below it."""
    out = np.full(len(ratio), np.nan)
    ok = np.isfinite(ratio) & (ratio > 0)
    r = ratio[ok]
    step = 10.0 ** (np.floor(np.log10(r)) - (DIGITS - 1))
    below = np.array([gcols[j].endswith("_min") for j in worst[ok]], dtype=bool)
    out[ok] = np.where(below, np.floor(r / step * (1 + 1e-12)) * step, np.ceil(r / step * (1 - 1e-12)) * step)
    return out


def _text(col: str, r: float, bound) -> str:
    shown = "?" if not np.isfinite(r) else f"{r:.{DIGITS}g}"
    if col in REASONS:
        return REASONS[col].format(r=shown)
    base = col.removeprefix("g_")
    if base.endswith(("_max", "_min")):
        name, side = base[:-4], "maximum" if base.endswith("_max") else "minimum"
        if not np.isfinite(r):
            return f"{name} {'above' if side == 'maximum' else 'below'} its configured {side} ({bound:g})"
        return f"{name} is {shown}× its configured {side} ({bound:g})"
    return f"constraint {col} violated" + (f" ({shown}× its limit)" if np.isfinite(r) else "")


def _distinct(texts: list[str]) -> list[str]:
    """Categories must be unique; two rounded ratios that print alike get their key's full value."""
    seen: dict = {}
    out = []
    for t in texts:
        seen[t] = seen.get(t, 0) + 1
        out.append(t if seen[t] == 1 else f"{t} [{seen[t]}]")
    return out
