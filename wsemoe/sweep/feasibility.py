"""Constraint columns (g ≤ 0 satisfied), user bounds, `feasible` and `infeasible_reason`."""

from __future__ import annotations

import numpy as np
import pandas as pd

from wsemoe.errors import ConfigError

REASONS = {
    "g_mem_attn": "attention-stage memory (transient at B + kept activations + BTA buffer) exceeds node capacity",
    "g_mem_moe": "MoE-stage memory (weights, dispatched tokens and FFN intermediates at G·B) exceeds node capacity",
}


def add_feasibility(out: pd.DataFrame, cfg, frame: pd.DataFrame) -> pd.DataFrame:
    """Append user-constraint g columns, `feasible` and `infeasible_reason` (worst violation, in words)."""
    for i, c in enumerate(cfg.constraints):
        src = out[c.column] if c.column in out else frame[c.column] if c.column in frame else None
        if src is None:
            raise ConfigError(f"unknown column '{c.column}'", loc=("constraints", i, "column"))
        x = src.to_numpy(dtype=float)
        if c.max is not None:
            out[f"g_{c.column}_max"] = (x - c.max) / max(abs(c.max), 1e-300)
        if c.min is not None:
            out[f"g_{c.column}_min"] = (c.min - x) / max(abs(c.min), 1e-300)
    gcols = [col for col in out.columns if col.startswith("g_")]
    g = out[gcols].to_numpy(dtype=float)
    feasible = np.all(g <= 0, axis=1)
    out["feasible"] = feasible
    # The worst-violated constraint names the reason; its ratio stays in its g_ column.
    codes = np.where(feasible, -1, np.argmax(g, axis=1))
    out["infeasible_reason"] = pd.Categorical.from_codes(codes, categories=[_reason(c) for c in gcols])
    return out


def _reason(col: str) -> str:
    if col in REASONS:
        return REASONS[col]
    base = col.removeprefix("g_")
    if base.endswith("_max"):
        return f"{base.removesuffix('_max')} above its configured maximum"
    if base.endswith("_min"):
        return f"{base.removesuffix('_min')} below its configured minimum"
    return f"constraint {col} violated"
