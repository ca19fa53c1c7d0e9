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
    reasons = {}
    for i, c in enumerate(cfg.constraints):
        x = _constrained(out, frame, c.column, i)
        for side, bound, g in (("max", c.max, lambda b: (x - b) / max(abs(b), 1e-300)),
                               ("min", c.min, lambda b: (b - x) / max(abs(b), 1e-300))):
            if bound is not None:
                name = f"g_{c.column}_{side}"
                name = name if name not in out else f"{name}_{i}"  # a repeated bound applies too
                out[name] = g(bound)
                reasons[name] = f"{c.column} {'above' if side == 'max' else 'below'} its configured {side}imum {bound:g}"
    gcols = [col for col in out.columns if col.startswith("g_")]
    g = out[gcols].to_numpy(dtype=float)
    feasible = np.all(g <= 0, axis=1)  # NaN compares False: a point that cannot be judged is not feasible
    out["feasible"] = feasible
    # The worst-violated constraint names the reason; its ratio stays in its g_ column.
    labels = [reasons.get(col) or _reason(col) for col in gcols]
    categories = list(dict.fromkeys(labels))
    code_of = np.array([categories.index(lab) for lab in labels] + [-1])
    worst = np.where(feasible, -1, np.argmax(np.nan_to_num(g, nan=np.inf), axis=1))
    out["infeasible_reason"] = pd.Categorical.from_codes(code_of[worst], categories=categories)
    return out


def _constrained(out: pd.DataFrame, frame: pd.DataFrame, column: str, i: int) -> np.ndarray:
    """The numeric values a constraint bounds (an output or an input column)."""
    src = out[column] if column in out else frame[column] if column in frame else None
    if src is None:
        raise ConfigError(f"unknown column '{column}'", loc=("constraints", i, "column"))
    if not pd.api.types.is_numeric_dtype(src) or pd.api.types.is_bool_dtype(src):
        raise ConfigError(f"column '{column}' is not numeric; constraints bound numbers",
                          loc=("constraints", i, "column"))
    return src.to_numpy(dtype=float)


def _reason(col: str) -> str:
    if col in REASONS:
        return REASONS[col]
    return f"constraint {col} violated"
