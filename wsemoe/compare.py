"""Comparisons: per group of the other axes, best feasible baseline (e.g. G = 1) vs best feasible point."""

from __future__ import annotations

import numpy as np
import pandas as pd

from wsemoe.errors import ConfigError

DEFAULT_OVER = ("workload.B", "workload.G")


def group_keys(cfg) -> tuple[list[str], list[str]]:
    """(axes that define a comparison group, axes optimized within it)."""
    cmp = cfg.compare
    axes = cfg.axis_names()
    over = list(cmp.over) if cmp.over is not None else [a for a in DEFAULT_OVER if a in axes]
    for a in list(cmp.baseline) + over:
        if a not in axes:
            raise ConfigError(f"'{a}' is not a swept axis", loc=("compare",))
    group = [a for a in axes if a not in over and a not in cmp.baseline]
    return group, over


def baseline_mask(df: pd.DataFrame, cfg) -> np.ndarray:
    """Rows at the baseline's axis values (e.g. G = 1)."""
    mask = np.ones(len(df), dtype=bool)
    for path, value in cfg.compare.baseline.items():
        mask &= (df[path] == value).to_numpy()
    return mask


def comparison_table(df: pd.DataFrame, cfg) -> pd.DataFrame:
    """One row per group: best baseline, best overall, speedup, and the winning values of the `over` axes."""
    cmp = cfg.compare
    group, over = group_keys(cfg)
    feas = df[df["feasible"]]
    base = feas[baseline_mask(feas, cfg)]
    rows = []
    grouped = feas.groupby(group, sort=False) if group else [((), feas)]
    for key, sub in grouped:
        key = key if isinstance(key, tuple) else (key,)
        sel = base
        for g, v in zip(group, key):
            sel = sel[sel[g] == v]
        best = sub.loc[sub[cmp.metric].idxmax()]
        row = dict(zip(group, key))
        b = sel.loc[sel[cmp.metric].idxmax()] if len(sel) else None
        row[f"baseline_{cmp.metric}"] = b[cmp.metric] if b is not None else np.nan
        row[f"best_{cmp.metric}"] = best[cmp.metric]
        row[f"speedup_vs_{cmp.name}"] = best[cmp.metric] / row[f"baseline_{cmp.metric}"]
        for a in over:
            row[f"best_{a.split('.')[-1]}"] = best[a]
            if b is not None:
                row[f"baseline_{a.split('.')[-1]}"] = b[a]
        for extra in ("mfu", "bound"):
            if extra in sub:
                row[f"best_{extra}"] = best[extra]
                row[f"baseline_{extra}"] = b[extra] if b is not None else None
        rows.append(row)
    return pd.DataFrame(rows)
