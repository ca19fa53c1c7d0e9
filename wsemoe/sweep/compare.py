"""Comparisons: per group of the other axes, best feasible baseline (e.g. G = 1) vs best feasible point."""

from __future__ import annotations

import numpy as np
import pandas as pd

from wsemoe.errors import ConfigError
from wsemoe.store.block import Labels

DEFAULT_OVER = ("workload.B", "workload.G")
ENERGY = "energy_per_token_j"


def group_keys(cfg) -> tuple[list[str], list[str]]:
    """(axes that define a comparison group, axes optimized within it)."""
    cmp = cfg.compare
    axes = cfg.axis_names()
    over = list(cmp.over) if cmp.over is not None else [a for a in DEFAULT_OVER if a in axes]
    for a in list(cmp.baseline) + list(cmp.candidate) + over:
        if a not in axes:
            raise ConfigError(f"'{a}' is not a swept axis", loc=("compare",))
    group = [a for a in axes if a not in over and a not in cmp.baseline and a not in cmp.candidate]
    return group, over


def metrics(cfg) -> list[str]:
    """Every column the comparison maximizes: the metric first, then `also`."""
    return [cfg.compare.metric, *(m for m in cfg.compare.also if m != cfg.compare.metric)]


def check_metrics(names, cfg) -> None:
    """The compared columns must be columns of the sweep (one line, not a KeyError)."""
    for i, m in enumerate(metrics(cfg)):
        if m not in names:
            raise ConfigError(f"unknown column '{m}' to compare", loc=("compare", "metric" if i == 0 else "also"))


def baseline_mask(table, cfg) -> np.ndarray:
    """Rows at the baseline's axis values (e.g. G = 1), of a DataFrame or a Block."""
    return _mask(table, cfg.compare.baseline)


def candidate_mask(table, cfg) -> np.ndarray:
    """Rows the best side may come from (every row unless `candidate` is set)."""
    return _mask(table, cfg.compare.candidate)


def _mask(table, values: dict) -> np.ndarray:
    """Rows at the given axis values, of a DataFrame or a Block."""
    mask = np.ones(len(table), dtype=bool)
    for path, value in values.items():
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
    """One row per group: best baseline, best candidate, speedup, and the winning values of the `over` axes;
    each further compared column (`also`) with both sides tuned for it on their own."""
    cmp = cfg.compare
    group, over = group_keys(cfg)
    feas = df[np.asarray(df["feasible"], dtype=bool)]
    keep = [*over, *(c for c in ("mfu", "bound", ENERGY) if c in df), cmp.metric]

    def pick(rows, prefix):
        named = {c: f"{prefix}_{c.split('.')[-1]}" for c in keep if c != cmp.metric}
        named[cmp.metric] = f"{prefix}_{cmp.metric}"
        return rows[group + keep].rename(columns=named)

    cand, based = feas[candidate_mask(feas, cfg)], feas[baseline_mask(feas, cfg)]
    best = pick(_best_rows(cand, group, cmp.metric), "best")
    base = pick(_best_rows(based, group, cmp.metric), "baseline")
    table = best.merge(base, on=group, how="left") if group else pd.concat(
        [best.reset_index(drop=True), base.reset_index(drop=True)], axis=1)
    table[f"speedup_vs_{cmp.name}"] = table[f"best_{cmp.metric}"] / table[f"baseline_{cmp.metric}"]
    if ENERGY in df:   # the energy of the same two points beside their speed ratio
        table[f"energy_vs_{cmp.name}"] = table[f"best_{ENERGY}"] / table[f"baseline_{ENERGY}"]
    for m in metrics(cfg)[1:]:
        sides = [_best_rows(rows, group, m)[group + [m]].rename(columns={m: f"{side}_{m}"})
                 for rows, side in ((cand, "best"), (based, "baseline"))]
        extra = sides[0].merge(sides[1], on=group, how="outer") if group else pd.concat(
            [x.reset_index(drop=True) for x in sides], axis=1)
        table = table.merge(extra, on=group, how="left") if group else pd.concat([table, extra], axis=1)
        table[f"speedup_vs_{cmp.name}_{m}"] = table[f"best_{m}"] / table[f"baseline_{m}"]
    return table.reset_index(drop=True)
