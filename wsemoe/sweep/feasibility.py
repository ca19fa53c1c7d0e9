"""Constraint columns (g ≤ 0 satisfied), user bounds, `feasible` and `infeasible_reason`."""

from __future__ import annotations

import numpy as np

from wsemoe.errors import ConfigError
from wsemoe.sweep.block import Labels

REASONS = {
    "g_mem_attn": "attention-stage memory needs {r}× the usable node memory "
                  "(transient at B + kept activations + BTA buffer)",
    "g_mem_moe": "MoE-stage memory needs {r}× the usable node memory "
                 "(weights, dispatched tokens and FFN intermediates at G·B)",
}
DIGITS = 3  # significant digits of a ratio in a reason: few distinct texts per chunk, small parts


def feasibility(cfg, outputs, inputs: dict) -> tuple[dict, np.ndarray]:
    """(user-constraint g columns, `feasible` and `infeasible_reason` (worst violation, in words, with its
    ratio to the limit); the worst g of each point, NaN first, as a search ranks infeasible points).

    `outputs` is the engine's `Outputs` (columns built on demand); `inputs` the input columns.
    """
    extra, bounds = {}, {}
    for i, c in enumerate(cfg.constraints):
        x = _constrained(outputs, inputs, c.column, i)
        for side, bound, g in (("max", c.max, lambda b: (x - b) / max(abs(b), 1e-300)),
                               ("min", c.min, lambda b: (b - x) / max(abs(b), 1e-300))):
            if bound is not None:
                name = f"g_{c.column}_{side}"
                name = name if name not in extra else f"{name}_{i}"  # a repeated bound applies too
                extra[name], bounds[name] = g(bound), bound
    gcols = [col for col in outputs.names if col.startswith("g_")] + list(extra)
    n = outputs.n
    feasible = np.ones(n, dtype=bool)
    worst, which, nan = np.full(n, -np.inf), np.full(n, -1, dtype=np.int32), np.zeros(n, dtype=bool)
    for k, col in enumerate(gcols):
        g = np.asarray(extra[col] if col in extra else outputs.column(col), dtype=float)
        feasible &= g <= 0
        # The worst-violated constraint names the reason (the first on ties, a NaN first of all, as
        # argmax ranks them).
        isnan = np.isnan(g)
        which = np.where(~nan & ((g > worst) | isnan), np.int32(k), which)
        worst, nan = np.fmax(worst, g), nan | isnan
    worst = np.where(nan, np.nan, worst)
    extra["feasible"] = feasible
    extra["infeasible_reason"] = reasons(worst, which, gcols, bounds, feasible)
    return extra, worst


def reasons(worst: np.ndarray, which: np.ndarray, gcols: list[str], bounds: dict, feasible: np.ndarray) -> Labels:
    """The worst-violated constraint of each infeasible point, in words with its ratio (empty when feasible).

    The ratio is rounded away from the limit (1.0004× capacity reads 1.01×, never 1.00×), so no reason
    reads as satisfied; one text per distinct (constraint, rounded ratio) keeps the labels few.
    """
    codes = np.full(len(feasible), -1, dtype=np.int32)
    texts: list[str] = []
    for j, col in enumerate(gcols):
        rows = np.flatnonzero(~feasible & (which == j))
        if not len(rows):
            continue
        ratio = _round_away(_ratio(worst[rows], col, bounds.get(col)), col.endswith("_min"))
        uniq, inverse = np.unique(ratio, return_inverse=True)  # NaNs (no ratio) collapse into one value
        codes[rows] = len(texts) + inverse.ravel()
        texts += [_text(col, r, bounds.get(col)) for r in uniq]
    return Labels(codes, _distinct(texts))


def _constrained(outputs, inputs: dict, column: str, i: int) -> np.ndarray:
    """The numeric values a constraint bounds (an output or an input column)."""
    if column in outputs.names:
        src = outputs.column(column)
    elif column in inputs:
        src = inputs[column]
    else:
        raise ConfigError(f"unknown column '{column}'", loc=("constraints", i, "column"))
    if isinstance(src, Labels) or np.asarray(src).dtype.kind not in "iuf":
        raise ConfigError(f"column '{column}' is not numeric; constraints bound numbers", loc=("constraints", i, "column"))
    return np.asarray(src, dtype=float)


def _ratio(g: np.ndarray, col: str, bound) -> np.ndarray:
    """Value over its limit: g + 1 for memory and maximum bounds, 1 − g for minimum bounds (positive limits)."""
    if bound is not None and bound <= 0:
        return np.full(len(g), np.nan)  # a ratio to a zero or negative limit says nothing
    return 1.0 - g if col.endswith("_min") and bound is not None else g + 1.0


def _round_away(ratio: np.ndarray, below: bool) -> np.ndarray:
    """Ratios to DIGITS significant digits, rounded up above the limit and down below it."""
    out = np.full(len(ratio), np.nan)
    ok = np.isfinite(ratio) & (ratio > 0)
    r = ratio[ok]
    step = 10.0 ** (np.floor(np.log10(r)) - (DIGITS - 1))
    out[ok] = np.floor(r / step * (1 + 1e-12)) * step if below else np.ceil(r / step * (1 - 1e-12)) * step
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
