"""Constraint columns (g ≤ 0 satisfied), user bounds, `feasible` and `infeasible_reason`."""

from __future__ import annotations

import numpy as np

from wsemoe.errors import ConfigError
from wsemoe.sweep.block import Labels

REASONS = {
    "g_mem_attn": "attention-stage memory (transient at B + kept activations + BTA buffer) exceeds node capacity",
    "g_mem_moe": "MoE-stage memory (weights, dispatched tokens and FFN intermediates at G·B) exceeds node capacity",
}


def feasibility(cfg, outputs, inputs: dict) -> tuple[dict, np.ndarray]:
    """(user-constraint g columns, `feasible` and `infeasible_reason` (worst violation, in words);
    the worst g of each point, NaN first, as a search ranks infeasible points).

    `outputs` is the engine's `Outputs` (columns built on demand); `inputs` the input columns.
    """
    extra, reasons = {}, dict(REASONS)
    for i, c in enumerate(cfg.constraints):
        x = _constrained(outputs, inputs, c.column, i)
        for side, bound, g in (("max", c.max, lambda b: (x - b) / max(abs(b), 1e-300)),
                               ("min", c.min, lambda b: (b - x) / max(abs(b), 1e-300))):
            if bound is not None:
                name = f"g_{c.column}_{side}"
                name = name if name not in extra else f"{name}_{i}"  # a repeated bound applies too
                extra[name] = g(bound)
                reasons[name] = f"{c.column} {'above' if side == 'max' else 'below'} its configured {side}imum {bound:g}"
    gcols = [col for col in outputs.names if col.startswith("g_")] + list(extra)
    n = outputs.n
    feasible = np.ones(n, dtype=bool)
    worst, codes, nan = np.full(n, -np.inf), np.full(n, -1, dtype=np.int32), np.zeros(n, dtype=bool)
    for k, col in enumerate(gcols):
        g = np.asarray(extra[col] if col in extra else outputs.column(col), dtype=float)
        feasible &= g <= 0
        # The worst-violated constraint names the reason (the first on ties, a NaN first of all, as
        # argmax ranks them); its ratio stays in its g_ column.
        isnan = np.isnan(g)
        codes = np.where(~nan & ((g > worst) | isnan), np.int32(k), codes)
        worst, nan = np.fmax(worst, g), nan | isnan
    labels = [reasons.get(col, f"constraint {col} violated") for col in gcols]
    categories = list(dict.fromkeys(labels))  # two constraints may read alike: one category
    lut = np.asarray([categories.index(lab) for lab in labels] + [-1], dtype=np.int32)
    codes = np.where(feasible, np.int32(-1), codes)
    extra["feasible"] = feasible
    extra["infeasible_reason"] = Labels(lut[codes], categories)
    return extra, np.where(nan, np.nan, worst)


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
