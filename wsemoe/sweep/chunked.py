"""Chunked evaluation: each chunk of the design frame is evaluated, reduced and written on its own.

A chunk task is a pure function of (config, start, stop): it returns the chunk's points with the
per-point speedup, plus the rows any global reduction could need (its Pareto front and its best
rows per comparison group) and its counts. Reductions over chunks are exact: the global front is
the front of the chunk fronts; the best row of a group is the best of the chunks' best rows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from wsemoe.sweep import engine

from wsemoe.sweep import space
from wsemoe.sweep.compare import baseline_mask, candidate_mask, check_metrics, group_keys, metrics
from wsemoe.config.schema import SweepConfig
from wsemoe.config.loader import load_config
from wsemoe.errors import ConfigError
from wsemoe.sweep.pareto import not_finite, pareto_front

DEFAULT_CHUNK = 262_144


@dataclass
class ChunkResult:
    """One evaluated chunk: its points and what the global reductions need from it."""

    points: pd.DataFrame
    candidates: pd.DataFrame
    stats: dict


def chunk_ranges(total: int, chunk_size: int, done=()) -> list[tuple[int, int]]:
    """(start, stop) of chunks covering [0, total) except the `done` ranges; the last of a gap may be shorter."""
    out, pos = [], 0
    for start, stop in [*sorted(done), (total, total)]:
        out += [(s, min(s + chunk_size, start)) for s in range(pos, start, chunk_size)]
        pos = max(pos, stop)
    return out


def baseline_config(cfg: SweepConfig) -> SweepConfig:
    """The sub-sweep of baseline points (e.g. G = 1 only), to learn each group's best baseline first."""
    base = cfg.compare.baseline
    axes = {p: [v for v in vals if p not in base or v == base[p]] for p, vals in cfg.axes.items()}
    zips = []
    for group in cfg.zip:
        n = len(next(iter(group.values())))
        keep = [i for i in range(n) if all(group[p][i] == base[p] for p in group if p in base)]
        zips.append({p: [vals[i] for i in keep] for p, vals in group.items()})
    return cfg.model_copy(update={"axes": axes, "zip": zips, "compare": None})


def baseline_best(cfg: SweepConfig, chunk_size: int = DEFAULT_CHUNK) -> pd.DataFrame | None:
    """Best feasible baseline metric per comparison group (columns: group keys + 'baseline_best')."""
    if not cfg.compare:
        return None
    sub = baseline_config(cfg)
    group, _ = group_keys(cfg)
    best = []
    for start, stop in chunk_ranges(sub.size(), chunk_size):
        df = engine.evaluate_points(sub, start, stop)
        check_metrics(df, cfg)
        df = df[df["feasible"]]
        if len(df):
            best.append(df.groupby(group, sort=False)[cfg.compare.metric].max().reset_index() if group
                        else pd.DataFrame({cfg.compare.metric: [df[cfg.compare.metric].max()]}))
    if not best:
        return pd.DataFrame(columns=[*group, "baseline_best"])
    merged = pd.concat(best)
    merged = merged.groupby(group, sort=False)[cfg.compare.metric].max().reset_index() if group else \
        pd.DataFrame({cfg.compare.metric: [merged[cfg.compare.metric].max()]})
    return merged.rename(columns={cfg.compare.metric: "baseline_best"})


def add_speedup(df: pd.DataFrame, cfg: SweepConfig, baselines: pd.DataFrame) -> pd.DataFrame:
    """`speedup_vs_<name>`: each feasible point's metric over its group's best feasible baseline."""
    group, _ = group_keys(cfg)
    if group:
        best = df[group].merge(baselines, on=group, how="left")["baseline_best"].to_numpy()
    else:
        best = np.full(len(df), baselines["baseline_best"].iloc[0] if len(baselines) else np.nan)
    metric = df[cfg.compare.metric].to_numpy(dtype=float)
    df[f"speedup_vs_{cfg.compare.name}"] = np.where(df["feasible"].to_numpy(), metric / best, np.nan)
    return df


def candidates(df: pd.DataFrame, cfg: SweepConfig) -> pd.DataFrame:
    """Rows a global reduction may pick: the chunk's Pareto front and best rows per comparison group."""
    keep = [pareto_front(df, cfg.objectives)]
    if cfg.compare:
        group, _ = group_keys(cfg)
        feas = df[df["feasible"]]
        for metric in metrics(cfg):
            for sub in (feas[candidate_mask(feas, cfg)], feas[baseline_mask(feas, cfg)]):
                if len(sub):
                    idx = sub.groupby(group, sort=False, observed=True)[metric].idxmax() if group \
                        else [sub[metric].idxmax()]
                    keep.append(sub.loc[list(idx)])
    out = pd.concat(keep)
    return out[~out.index.duplicated()]


def kept_columns(df: pd.DataFrame, cfg: SweepConfig) -> list[str]:
    """Columns points.parquet keeps under `output.columns` (inputs, feasibility, objectives always)."""
    wanted = cfg.output.columns
    if wanted is None:
        return list(df.columns)
    unknown = [c for c in wanted if c not in df.columns]
    if unknown:
        raise ConfigError(f"unknown output column '{unknown[0]}'", loc=("output", "columns"))
    always = [*cfg.axis_names(), "feasible", "infeasible_reason", "bound", *cfg.objectives]
    if cfg.compare:
        always += [*metrics(cfg), f"speedup_vs_{cfg.compare.name}"]
    keep = set(always) | set(wanted)
    return [c for c in df.columns if c in keep]


def run_chunk(cfg: SweepConfig, start: int, stop: int, baselines) -> ChunkResult:
    """Evaluate points [start, stop) and prepare their reductions."""
    df = engine.evaluate_points(cfg, start, stop)
    if cfg.compare:
        check_metrics(df, cfg)
        df = add_speedup(df, cfg, baselines)
    df = df[kept_columns(df, cfg)] if cfg.output.columns is not None else df
    feas = df["feasible"].to_numpy()
    bounds = df.loc[feas, "bound"].astype(str).value_counts().to_dict()
    stats = {"start": start, "stop": stop, "points": int(len(df)), "objectives_not_finite": not_finite(df, cfg.objectives),
             "feasible": int(feas.sum()), "bounds": {k: int(v) for k, v in bounds.items()}}
    return ChunkResult(df, candidates(df, cfg), stats)


def evaluate(config, start: int = 0, stop: int | None = None, chunk_size: int = DEFAULT_CHUNK) -> pd.DataFrame:
    """Points [start, stop) as one DataFrame, with `speedup_vs_<name>` against the whole sweep's baselines."""
    cfg = load_config(config)
    start, stop = space.check_range(cfg.size(), start, stop, chunk_size)
    baselines = baseline_best(cfg, chunk_size)
    parts = [run_chunk(cfg, start + s, start + e, baselines).points
             for s, e in chunk_ranges(stop - start, chunk_size)]
    return pd.concat(parts) if len(parts) > 1 else parts[0]
