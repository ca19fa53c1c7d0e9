"""Comparisons: per group of the other axes, best feasible baseline (e.g. G = 1) vs best feasible point."""

from __future__ import annotations

import numpy as np
import pandas as pd

from wsemoe.errors import ConfigError
from wsemoe.store.block import Labels
from wsemoe.wording import number

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
    sides = {*cmp.baseline, *cmp.candidate}
    partners = {a for z in getattr(cfg, "zip", ()) if sides & set(z) for a in z}  # columns zipped with a side's key are that
    # side's own settings (NVL72's weight_source: resident beside the wafer's sram), never a group both share
    group = [a for a in axes if a not in over and a not in sides and a not in partners]
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


def best_rows(df: pd.DataFrame, group: list[str], metric: str) -> pd.DataFrame:
    """The best point of each group (one row when there is no group), in the groups' order: the largest metric;
    among points that tie on it exactly, the least energy per token (a batch of 16 at the speed of a batch of
    one serves 16 users for the same power), then the first. The comparison table, the sweep's per-chunk reduction
    (`chunked._best_per_group`), sensitivity's per-sample best (`sampled._best`) and every figure that quotes or
    draws a best point use it."""
    if not len(df):
        return df.iloc[:0]
    keys, ascending = [metric], [False]
    if ENERGY in df and metric != ENERGY:
        keys, ascending = [metric, ENERGY], [False, True]
    ordered = df.sort_values(keys, ascending=ascending, kind="stable", na_position="last")
    picked = ordered.groupby(group, sort=False, observed=True).head(1).index if group else ordered.index[:1]
    return df[df.index.isin(picked)]


TIE_RTOL = 1e-9   # a design ties a group's best when its metric equals the best's to rounding (relative): at a
# fixed B·G, B 1 G 64 and B 8 G 8 run the same step and their tokens/s differ in the last bits only
AT_END = 1.0 - 1e-9   # a stored reach read as 1, at an axis's end (value / top through a CSV's round trip)


def end_tops(cfg, side: dict) -> dict[str, float]:
    """{axis: the largest value the side sweeps} of the tuned axes whose end may cap a side's best: the numeric
    `over` axes the side does not fix (uniform batching's G is 1), with at least three values on that side, whose
    largest is below the largest the tool accepts (TP over every node is no sweep's choice)."""
    out = {}
    for axis in group_keys(cfg)[1]:
        values = _side_values(cfg, axis, side)
        if axis in side or len(set(values)) < 3 or \
                not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
            continue
        legal = legal_top(cfg, axis, side)
        if legal is None or max(values) < legal:
            out[axis] = float(max(values))
    return out


def reach(frame, tops: dict) -> np.ndarray:
    """Each design's reach toward the ends of the axes `tops`: the largest of value / top over them (1.0 at some
    axis's end; 0 with no axis, or where a row has none of them: a zip column's null, a system the axis is not of).
    `frame`: a DataFrame or {axis: values}."""
    shares = [np.asarray(frame[axis], dtype=float) / top for axis, top in tops.items()]
    return np.nan_to_num(np.fmax.reduce(shares), nan=0.0) if shares else np.zeros(len(frame))


def nearest_interior(metric: np.ndarray, ok: np.ndarray, codes: np.ndarray, n_groups: int,
                     reaches: np.ndarray) -> np.ndarray:
    """The one tie rule every axis-end note reads (validate's bta.edges and its headline note, robustness, the
    sensitivity notes, the note under the comparison table): per sample (row of `metric`, `ok`) and group, the index of the design that, of those tied
    with the group's best (metric within TIE_RTOL of the largest where `ok`), lies nearest the interior of the swept
    axes (least `reaches`, from `reach`; the first of equals); -1 where no design is ok. The tie-break
    (`best_rows`) may pick an axis-end design among interior equals; an axis caps the best only where every tied
    design sits at some axis's end."""
    metric, ok = np.atleast_2d(np.asarray(metric, dtype=float)), np.atleast_2d(ok)
    n, P = metric.shape
    ids = (np.arange(n)[:, None] * n_groups + np.asarray(codes)[None, :]).ravel()   # one id per (sample, group)
    v = np.where(ok & ~np.isnan(metric), metric, -np.inf).ravel()
    top = np.full(n * n_groups, -np.inf)
    np.maximum.at(top, ids, v)
    tied = np.isfinite(v) & np.isclose(v, top[ids], rtol=TIE_RTOL, atol=0.0)
    r = np.where(tied, np.tile(np.asarray(reaches, dtype=float), n), np.inf)
    low = np.full(n * n_groups, np.inf)
    np.minimum.at(low, ids, r)
    pos = np.where(tied & (r == low[ids]), np.tile(np.arange(P), n), P)   # the first of the least reach
    first = np.full(n * n_groups, P)
    np.minimum.at(first, ids, pos)
    return np.where(first < P, first, -1).reshape(n, n_groups)


def comparison_table(df: pd.DataFrame, cfg) -> pd.DataFrame:
    """One row per group: best baseline, best candidate, speedup, and the winning values of the `over` axes;
    each further compared column (`also`) with both sides tuned for it on their own."""
    cmp = cfg.compare
    group, over = group_keys(cfg)
    feas = df[np.asarray(df["feasible"], dtype=bool)]
    keep = list(dict.fromkeys([*over, *(c for c in ("mfu", "bound", ENERGY) if c in df), cmp.metric]))  # metric: mfu

    def pick(rows, prefix):
        named = {c: f"{prefix}_{c.split('.')[-1]}" for c in keep if c != cmp.metric}
        named[cmp.metric] = f"{prefix}_{cmp.metric}"
        return rows[group + keep].rename(columns=named)

    cand, based = feas[candidate_mask(feas, cfg)], feas[baseline_mask(feas, cfg)]
    best = pick(best_rows(cand, group, cmp.metric), "best")
    base = pick(best_rows(based, group, cmp.metric), "baseline")
    table = best.merge(base, on=group, how="left") if group else pd.concat(
        [best.reset_index(drop=True), base.reset_index(drop=True)], axis=1)
    if group:
        table = _in_sweep_order(table, group, cfg)
    table[f"speedup_vs_{cmp.name}"] = table[f"best_{cmp.metric}"] / table[f"baseline_{cmp.metric}"]
    if ENERGY in df:   # the energy of the same two points beside their speed ratio
        table[f"energy_vs_{cmp.name}"] = table[f"best_{ENERGY}"] / table[f"baseline_{ENERGY}"]
    for m in metrics(cfg)[1:]:
        sides = [best_rows(rows, group, m)[group + [m]].rename(columns={m: f"{side}_{m}"})
                 for rows, side in ((cand, "best"), (based, "baseline"))]
        extra = sides[0].merge(sides[1], on=group, how="outer") if group else pd.concat(
            [x.reset_index(drop=True) for x in sides], axis=1)
        table = table.merge(extra, on=group, how="left") if group else pd.concat([table, extra], axis=1)
        table[f"speedup_vs_{cmp.name}_{m}"] = table[f"best_{m}"] / table[f"baseline_{m}"]
    for prefix, rows, fixed in (("best", cand, cmp.candidate), ("baseline", based, cmp.baseline)):
        reaches = _interior_reach(rows, group, cmp.metric, end_tops(cfg, fixed), prefix)
        if reaches is not None:
            table = table.merge(reaches, on=group, how="left") if group else pd.concat(
                [table, reaches.reset_index(drop=True)], axis=1)
    return table.reset_index(drop=True)


def _interior_reach(rows: pd.DataFrame, group: list[str], metric: str, tops: dict, prefix: str):
    """Per group, `<prefix>_reach_<axis>` of the design `nearest_interior` reads among `rows` (None with no axis):
    what `axis_ends` reads, where `<prefix>_<axis>` is the tie-break's pick."""
    tops = {a: t for a, t in tops.items() if a in rows}
    if not tops:
        return None
    codes = rows.groupby(group, sort=False, observed=True).ngroup().to_numpy() if group else \
        np.zeros(len(rows), dtype=int)
    near = nearest_interior(np.asarray(rows[metric], dtype=float), codes >= 0, np.maximum(codes, 0),
                            int(codes.max(initial=-1)) + 1, reach(rows, tops))[0]
    at = rows.iloc[near[near >= 0]]
    out = at[group].reset_index(drop=True)
    for axis, top in tops.items():
        out[f"{prefix}_reach_{axis.split('.')[-1]}"] = np.asarray(at[axis], dtype=float) / top
    return out


def _in_sweep_order(table: pd.DataFrame, group: list[str], cfg) -> pd.DataFrame:
    """The groups in the order the sweep enumerates them (its first factor slowest, each value where its axis or
    zip lists it first), not in that of their best points: cerebras_serving listed qwen3-235b before qwen3-30b at
    131,072 tokens, where the 235b's best point came first. A key no factor lists keeps its place."""
    listed = {}
    for factor in cfg.factors():
        for path, values in factor.items():
            listed[path] = {v: i for i, v in reversed(list(enumerate(map(str, values))))}
    keys = [k for k in dict.fromkeys(cfg.axis_names()) if k in group and k in listed]
    if not keys:
        return table
    ranks = [table[k].astype(str).map(listed[k]).fillna(len(listed[k])).to_numpy() for k in keys]
    return table.iloc[np.lexsort(ranks[::-1])].reset_index(drop=True)


def _side_values(cfg, axis: str, side: dict) -> list:
    """The values a side's rows sweep of an `over` axis: a grid axis's values, or a zip column's in the rows of
    its zip whose compared keys match the side (all of them when the side names none of that zip's columns);
    a zip column's nulls are rows where the axis does not apply (a wafer has no TP group)."""
    if axis in getattr(cfg, "axes", {}):
        return [v for v in cfg.axes[axis] if v is not None]
    for z in getattr(cfg, "zip", ()):
        if axis in z:
            rows = range(len(z[axis]))
            rows = [i for i in rows if all(str(z[k][i]) == str(v) for k, v in side.items() if k in z)]
            return [z[axis][i] for i in rows if z[axis][i] is not None]
    return []


def legal_top(cfg, axis: str, side: dict) -> float | None:
    """The largest value of `axis` the tool accepts on a side, where it knows one: a TP group spans at most
    every node of the side's hardware (config/checks.py: TP divides the nodes)."""
    if axis != "mapping.tp":
        return None
    name = side.get("hardware")
    fields = cfg.presets.get(str(name)) if name is not None else None
    if fields is None and "hardware" not in cfg.axis_names():
        fields = cfg.hardware.model_dump()
    if not fields or fields.get("rows") is None or fields.get("cols") is None:
        return None
    wafers = fields.get("wafers") or (1, 1)
    return float(fields["rows"] * fields["cols"] * wafers[0] * wafers[1])


def axis_ends(table: pd.DataFrame, cfg) -> list[str]:
    """A note per side and tuned axis (grid or zip column) whose best sits at the largest value that side sweeps,
    in some group, by the one tie rule (`nearest_interior`: the stored `<side>_reach_<axis>` of the design tied with
    the best nearest the interior is 1): the axis, not the system, may be what caps it. Quiet where that value is
    the largest the tool accepts (TP over every node), or the axis has fewer than three values on that side. A
    comparison.csv written before the reach was is read by the tie-break's pick (`<side>_<axis>`), and says so."""
    cmp = cfg.compare
    if cmp is None:
        return []
    out = []
    for prefix, side, who in (("baseline", cmp.baseline, "baseline"), ("best", cmp.candidate, "candidate")):
        for axis, top in end_tops(cfg, side).items():
            short = axis.split('.')[-1]
            col, legacy = f"{prefix}_reach_{short}", f"{prefix}_reach_{short}" not in table
            if legacy and f"{prefix}_{short}" not in table:
                continue
            tuned = pd.to_numeric(table[f"{prefix}_{short}" if legacy else col], errors="coerce")
            hits = int((np.isclose(tuned, top) if legacy else tuned >= AT_END).sum())
            if hits:
                legal = legal_top(cfg, axis, side)
                more = f"; the tool accepts up to {number(legal)}" if legal is not None else ""
                old = (" (the tie-break's pick: this comparison.csv predates the reach of the designs tied with it; "
                       "`wsemoe sweep --force` rewrites it)") if legacy else ""
                out.append(f"note: {who} {axis} at its largest swept value ({number(top)}) in {hits} of "
                           f"{int(tuned.notna().sum())} groups{more}{old}: the axis, not the system, may cap it")
    return out
