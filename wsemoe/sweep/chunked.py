"""Chunked evaluation: each chunk of the design space is evaluated, reduced and written on its own.

A chunk task is a pure function of (config, start, stop): it returns the chunk's points (a
columnar `Block`) with the per-point speedup, plus the rows any global reduction could need (its
Pareto front and its best rows per comparison group) and its counts. Reductions over chunks are
exact: each group's front is the front of the chunks' fronts of that group; the best row of a group is the best of
the chunks' best rows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from wsemoe.arguments import whole
from wsemoe.config.loader import load_config
from wsemoe.config.schema import SweepConfig
from wsemoe.errors import ConfigError
from wsemoe.sweep import engine, space
from wsemoe.store.block import Block, Labels, concat_frames
from wsemoe.sweep.compare import (ENERGY, baseline_mask, candidate_mask, check_metrics, end_tops, group_keys, metrics,
                                  nearest_interior, reach)
from wsemoe.sweep.pareto import front_rows, not_finite_rows

DEFAULT_CHUNK = 131_072
MAX_GROUP_TABLE = 1 << 20  # combinations of group factors looked up by table; more go through a merge


@dataclass
class ChunkResult:
    """One evaluated chunk: its points and what the global reductions need from it."""

    points: Block
    candidates: Block
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
    return cfg.model_copy(update={"axes": axes, "zip": zips, "compare": None, "search": None})


def baseline_best(cfg: SweepConfig, chunk_size: int = DEFAULT_CHUNK) -> pd.DataFrame | None:
    """Best feasible baseline metric per comparison group (columns: group keys + 'baseline_best')."""
    if not cfg.compare:
        return None
    sub = baseline_config(cfg)
    group, _ = group_keys(cfg)
    metric = cfg.compare.metric
    best = []
    ev = engine.Evaluator(sub)
    for start, stop in chunk_ranges(sub.size(), chunk_size):
        blk = engine.evaluate_block(sub, start, stop, keep=lambda names: _baseline_columns(names, cfg, group),
                                    evaluator=ev)
        df = blk.take(blk["feasible"]).to_frame()
        if not pd.api.types.is_numeric_dtype(df[metric]) or pd.api.types.is_bool_dtype(df[metric]):
            raise ConfigError(f"comparison metric '{metric}' holds text, not numbers", loc=("compare", "metric"))
        if len(df):
            best.append(df.groupby(group, sort=False)[metric].max().reset_index() if group
                        else pd.DataFrame({metric: [df[metric].max()]}))
    if not best:
        return pd.DataFrame(columns=[*group, "baseline_best"])
    merged = pd.concat(best)
    merged = merged.groupby(group, sort=False)[metric].max().reset_index() if group else \
        pd.DataFrame({metric: [merged[metric].max()]})
    return merged.rename(columns={metric: "baseline_best"})


def _baseline_columns(names: list[str], cfg: SweepConfig, group: list[str]) -> list[str]:
    check_metrics(names, cfg)  # an unknown metric is a one-line error, not a KeyError
    return [*group, cfg.compare.metric, "feasible"]


def group_ids(blk: Block, cfg: SweepConfig, grid: space.Grid) -> tuple[np.ndarray, np.ndarray | None]:
    """(id of each point's comparison group, one grid index per id) from the digits of the factors the
    group axes belong to. Points with equal ids share the group's values (a zip factor may give one
    group several ids, which only refines it); None for the indices when there are too many ids."""
    group, _ = group_keys(cfg)
    facs = [i for i, f in enumerate(grid.factors) if any(p in group for p in f.paths)]
    sizes = [grid.shape[i] for i in facs]
    digits = blk.digits if blk.digits is not None else grid.digits(blk.index)
    ids = np.zeros(len(blk), dtype=np.int64)
    for i, n in zip(facs, sizes):
        ids = ids * n + digits[i]
    if math.prod(sizes) > MAX_GROUP_TABLE:
        return ids, None
    combo = np.unravel_index(np.arange(math.prod(sizes)), sizes) if facs else ()
    return ids, grid.index_of([combo[facs.index(i)] if i in facs else 0 for i in range(len(grid.shape))])


def add_speedup(blk: Block, cfg: SweepConfig, baselines: pd.DataFrame, grid: space.Grid) -> None:
    """`speedup_vs_<name>`: each feasible point's metric over its group's best feasible baseline."""
    group, _ = group_keys(cfg)
    if not group:
        best = np.full(len(blk), baselines["baseline_best"].iloc[0] if len(baselines) else np.nan)
    else:
        ids, reps = group_ids(blk, cfg, grid)
        if reps is not None:  # one lookup per group combination, then a gather
            best = _baseline_table(baselines, grid, reps, group)[ids]
        else:
            keys = pd.DataFrame({g: _plain(blk[g]) for g in group})
            best = keys.merge(baselines, on=group, how="left")["baseline_best"].to_numpy(dtype=float)
    metric = blk.numbers(cfg.compare.metric)
    blk.columns[f"speedup_vs_{cfg.compare.name}"] = np.where(blk["feasible"], metric / best, np.nan)


_TABLE: tuple = (None, None, None)  # (baselines, representatives, table) of the last lookup: chunks reuse it


def _baseline_table(baselines: pd.DataFrame, grid: space.Grid, reps: np.ndarray, group: list[str]) -> np.ndarray:
    """Best baseline metric of every group combination (NaN where no baseline point is feasible).
    The cache is one tuple, read and replaced whole (threads of a Dask worker may share it)."""
    global _TABLE
    last, last_reps, table = _TABLE
    if last is not baselines or not np.array_equal(last_reps, reps):
        keys = space.build_values(grid, reps, group)
        table = keys.merge(baselines, on=group, how="left")["baseline_best"].to_numpy(dtype=float)
        _TABLE = (baselines, reps, table)
    return table


def _plain(col):
    return col.values() if isinstance(col, Labels) else col


def _best_per_group(rows: np.ndarray, ids: np.ndarray, metric: np.ndarray, energy=None) -> np.ndarray:
    """Positions (among `rows`) of each group's best row under `compare.best_rows`' rule, in the order of the
    groups' first rows: the largest metric; among exact ties the least `energy` (NaN last), then the first.
    Group ids index dense tables when they are few (no sort)."""
    if not len(rows):
        return rows
    g = ids[rows]
    if g.max() < 4 * len(rows) + 1024:
        inv, n = g, int(g.max()) + 1
    else:
        _, inv = np.unique(g, return_inverse=True)
        n = int(inv.max()) + 1
    m = metric[rows]
    best = np.full(n, -np.inf)
    np.fmax.at(best, inv, m)
    hit = (m == best[inv]) | np.isneginf(best[inv])
    if energy is not None:   # among the ties, the least energy per token; a group with none finite keeps all
        e = np.where(hit & np.isfinite(energy[rows]), energy[rows], np.inf)
        low = np.full(n, np.inf)
        np.minimum.at(low, inv, e)
        hit &= (e == low[inv]) | np.isposinf(low[inv])
    hit = np.flatnonzero(hit)
    first = np.full(n, len(rows))
    np.minimum.at(first, inv[hit], hit)
    return rows[np.sort(first[first < len(rows)])]


def _interior_per_group(rows: np.ndarray, ids: np.ndarray, metric: np.ndarray, blk: Block, tops: dict) -> np.ndarray:
    """Positions (among `rows`) of each group's design that, of those tied with the group's best in this part, lies
    nearest the interior of the axes `tops` (`compare.nearest_interior`): kept beside the tie-break's pick so the
    comparison over every part can apply the one tie rule (a design tied with the sweep's best ties its own part's)."""
    if not len(rows) or not tops:
        return rows[:0]
    _, inv = np.unique(ids[rows], return_inverse=True)
    reaches = reach({a: blk.numbers(a)[rows] for a in tops}, tops)
    near = nearest_interior(metric[rows], np.ones(len(rows), dtype=bool), inv, int(inv.max()) + 1, reaches)[0]
    return rows[near[near >= 0]]


def candidate_rows(blk: Block, cfg: SweepConfig, grid: space.Grid) -> np.ndarray:
    """Positions of the rows a global reduction may pick: the Pareto front and best rows per group."""
    feas = np.asarray(blk["feasible"], dtype=bool)
    keep = [front_rows(blk, cfg.objectives, cfg.front_groups())]
    if cfg.compare:
        ids, _ = group_ids(blk, cfg, grid)
        rows = np.flatnonzero(feas & candidate_mask(blk, cfg))
        base = np.flatnonzero(feas & baseline_mask(blk, cfg))
        energy = blk.numbers(ENERGY) if ENERGY in blk else None   # best_rows' tie-break, read once
        for metric in metrics(cfg):  # each compared column: both sides tuned for it on their own
            values, tie = blk.numbers(metric), energy if metric != ENERGY else None
            keep += [_best_per_group(rows, ids, values, tie), _best_per_group(base, ids, values, tie)]
        values = blk.numbers(cfg.compare.metric)   # and the tied design the axis-end notes read (comparison_table)
        for side_rows, fixed in ((rows, cfg.compare.candidate), (base, cfg.compare.baseline)):
            keep.append(_interior_per_group(side_rows, ids, values, blk, end_tops(cfg, fixed)))
    return np.unique(np.concatenate(keep)) if keep else np.zeros(0, dtype=np.int64)


def kept_columns(names: list[str], cfg: SweepConfig) -> list[str]:
    """Columns points.parquet keeps under `output.columns` (inputs, feasibility, objectives always)."""
    wanted = cfg.output.columns
    if wanted is None:
        return list(names)
    if cfg.compare:
        check_metrics(names, cfg)
    speedup = f"speedup_vs_{cfg.compare.name}" if cfg.compare else None
    unknown = [c for c in wanted if c not in names and c != speedup]
    if unknown:
        raise ConfigError(f"unknown output column '{unknown[0]}'", loc=("output", "columns"))
    always = [*cfg.axis_names(), "feasible", "infeasible_reason", "bound", *cfg.objectives]
    if cfg.compare:   # the comparison reads its metrics and the energy of the points it compares
        always += [*metrics(cfg), *(c for c in (ENERGY,) if c in names)]
    keep = set(always) | set(wanted)
    return [c for c in names if c in keep]


def evaluate_chunk(cfg: SweepConfig, start: int, stop: int, baselines, index=None, evaluator=None) -> Block:
    """Points [start, stop) (or the grid points `index`) with the columns points.parquet keeps."""
    ev = evaluator or engine.Evaluator(cfg)
    blk = engine.evaluate_block(cfg, start, stop, index=index, keep=lambda names: kept_columns(names, cfg),
                                evaluator=ev)
    if cfg.compare:
        add_speedup(blk, cfg, baselines, ev.grid)
    return blk


def reduce_chunk(blk: Block, cfg: SweepConfig, start: int, stop: int, grid: space.Grid) -> ChunkResult:
    """A part's reductions: its counts and the candidate rows of the global front and comparison.
    [start, stop) names the part: a range of points, or of evaluations in a search."""
    feas = np.asarray(blk["feasible"], dtype=bool)
    bound = blk["bound"].take(feas)
    counts = np.bincount(bound.codes[bound.codes >= 0], minlength=len(bound.categories))
    stats = {"start": start, "stop": stop, "points": int(len(blk)),
             "objectives_not_finite": int(not_finite_rows(blk, cfg.objectives).sum()), "feasible": int(feas.sum()),
             "bounds": {c: int(k) for c, k in zip(bound.categories, counts) if k}}
    return ChunkResult(blk, blk.take(candidate_rows(blk, cfg, grid)).compacted(), stats)


def run_chunk(cfg: SweepConfig, start: int, stop: int, baselines, index=None, evaluator=None) -> ChunkResult:
    """Evaluate points [start, stop) (or the grid points `index`) and prepare their reductions."""
    ev = evaluator or engine.Evaluator(cfg)
    return reduce_chunk(evaluate_chunk(cfg, start, stop, baselines, index, ev), cfg, start, stop, ev.grid)


def evaluate(config, start: int = 0, stop: int | None = None, chunk_size: int = DEFAULT_CHUNK,
             limit: int | None = None) -> pd.DataFrame:
    """Points [start, stop) as one DataFrame, with `speedup_vs_<name>` against the whole sweep's baselines; at most
    `limit` points (the API passes the sweep's size limit); a `search:` is not run: every point of the range is
    evaluated."""
    cfg = load_config(config)
    start, stop = space.check_range(cfg.size(), 0 if start is None else start, stop,
                                    DEFAULT_CHUNK if chunk_size is None else chunk_size)
    limit = None if limit is None else whole(limit, "limit", 1)   # evaluate(config, limit=2.5) was taken as given
    if limit is not None and stop - start > limit:   # one frame in memory: a range at a time, or WSEMOE_MAX_POINTS
        raise ConfigError(f"{stop - start:,} points exceed the limit of {limit:,} (WSEMOE_MAX_POINTS); "
                          "evaluate a range of them (start, stop), or run the sweep, which writes parts",
                          loc=("stop",))
    chunk_size = DEFAULT_CHUNK if chunk_size is None else chunk_size
    baselines = baseline_best(cfg, chunk_size)
    ev = engine.Evaluator(cfg)
    parts = [run_chunk(cfg, start + s, start + e, baselines, evaluator=ev).points.to_frame()
             for s, e in chunk_ranges(stop - start, chunk_size)]
    return concat_frames(parts)
