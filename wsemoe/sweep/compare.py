"""Comparisons: per group of the other axes, best feasible baseline (e.g. G = 1) vs best feasible point."""

from __future__ import annotations

import numpy as np
import pandas as pd

from wsemoe.errors import ConfigError
from wsemoe.sweep.block import Labels

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


def baseline_mask(table, cfg) -> np.ndarray:
    """Rows at the baseline's axis values (e.g. G = 1), of a DataFrame or a Block."""
    mask = np.ones(len(table), dtype=bool)
    for path, value in cfg.compare.baseline.items():
        col = table[path]
        if isinstance(col, Labels):  # compare the few categories, then gather by code
            hit = np.asarray([c == value for c in col.categories] + [False])
            mask &= hit[col.codes]
        else:
            mask &= np.asarray(col == value, dtype=bool)
    return mask


def _best_rows(df: pd.DataFrame, group: list[str], metric: str) -> pd.DataFrame:
    """The row with the largest metric in each group (one row when there is no group)."""
    if not len(df):
        return df.iloc[:0]
    idx = df.groupby(group, sort=False, observed=True)[metric].idxmax() if group else [df[metric].idxmax()]
    return df.loc[list(idx)]


def comparison_table(df: pd.DataFrame, cfg) -> pd.DataFrame:
    """One row per group: best baseline, best overall, speedup, and the winning values of the `over` axes."""
    cmp = cfg.compare
    group, over = group_keys(cfg)
    feas = df[df["feasible"].to_numpy()]
    keep = [*over, *(c for c in ("mfu", "bound") if c in df), cmp.metric]

    def pick(rows, prefix):
        named = {c: f"{prefix}_{c.split('.')[-1]}" for c in keep if c != cmp.metric}
        named[cmp.metric] = f"{prefix}_{cmp.metric}"
        return rows[group + keep].rename(columns=named)

    best = pick(_best_rows(feas, group, cmp.metric), "best")
    base = pick(_best_rows(feas[baseline_mask(feas, cfg)], group, cmp.metric), "baseline")
    table = best.merge(base, on=group, how="left") if group else pd.concat(
        [best.reset_index(drop=True), base.reset_index(drop=True)], axis=1)
    table[f"speedup_vs_{cmp.name}"] = table[f"best_{cmp.metric}"] / table[f"baseline_{cmp.metric}"]
    return table.reset_index(drop=True)
