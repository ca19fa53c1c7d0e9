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
    extra = {}
    for i, c in enumerate(cfg.constraints):
        if c.column in outputs.names:
            src = outputs.column(c.column)
        elif c.column in inputs:
            src = inputs[c.column]
        else:
            raise ConfigError(f"unknown column '{c.column}'", loc=("constraints", i, "column"))
        x = np.asarray(src, dtype=float)
        if c.max is not None:
            extra[f"g_{c.column}_max"] = (x - c.max) / max(abs(c.max), 1e-300)
        if c.min is not None:
            extra[f"g_{c.column}_min"] = (c.min - x) / max(abs(c.min), 1e-300)
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
    codes = np.where(feasible, np.int32(-1), codes)
    extra["feasible"] = feasible
    extra["infeasible_reason"] = Labels(codes.astype(np.int32), [_reason(c) for c in gcols])
    return extra, np.where(nan, np.nan, worst)


def _reason(col: str) -> str:
    if col in REASONS:
        return REASONS[col]
    base = col.removeprefix("g_")
    if base.endswith("_max"):
        return f"{base.removesuffix('_max')} above its configured maximum"
    if base.endswith("_min"):
        return f"{base.removesuffix('_min')} below its configured minimum"
    return f"constraint {col} violated"
