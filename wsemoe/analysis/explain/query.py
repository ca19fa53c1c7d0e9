"""Rows of a results folder by question: which rows (the Pareto front or every point), a filter, the
columns, the order and how many, read part by part with only the columns the question needs.

Memory stays at one part plus the rows kept, whatever the sweep's size: each part is read with the
columns shown, filtered and sorted by, filtered, and cut to the best `limit` rows before the next one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from wsemoe.analysis.explain.where import Where
from wsemoe.arguments import flag, whole
from wsemoe.config import yamlio
from wsemoe.errors import ConfigError
from wsemoe.store import store
from wsemoe.store.block import concat_frames
from wsemoe.sweep.column_check import check_column
from wsemoe.sweep.pareto import TIES


@dataclass
class Selection:
    """The rows a question selected, and what it took to get them."""

    rows: pd.DataFrame               # indexed by point, columns in display order
    matched: int                     # rows the filter kept, before `limit`
    scanned: int                     # rows looked at (the front, or every point)
    source: str                      # "pareto" or "points"
    priority: list[str] = field(default_factory=list)  # columns most worth keeping when space is short
    required: list[str] = field(default_factory=list)  # never dropped for width: asked for, or axes, objectives,
    # bound and feasible (a narrow table wraps them onto a second table instead)
    fronts: int = 0                  # > 0: the limit took the best rows of each of this many fronts in turn


def columns_of(manifest: dict) -> list[str]:
    """Every column of a results folder's points (the manifest documents each one)."""
    return list(manifest.get("columns", {}))


def varying_axes(path, manifest: dict) -> list[str]:
    """Swept axes that take more than one value (from the resolved config; no points are read)."""
    try:
        cfg = yamlio.load(Path(path) / "config.yaml")
    except Exception:  # an unreadable config only costs the choice of default columns
        cfg = {}
    counts = {p: len(v) for p, v in (cfg.get("axes") or {}).items() if isinstance(v, list)}
    for group in cfg.get("zip") or []:
        for p, v in group.items():
            counts[p] = len({repr(x) for x in v}) if isinstance(v, list) else 2
    return [a for a in manifest.get("axes", []) if counts.get(a, 2) > 1]


def default_columns(path, manifest: dict, source: str, axes: list[str] | None = None) -> tuple[list[str], list[str]]:
    """(display order, keep-first order) of the columns shown when none are asked for. Every point's rows
    keep `feasible` first (a narrow table never hides which rows are infeasible); front rows, all feasible,
    keep how many points each stands for."""
    axes = varying_axes(path, manifest) if axes is None else axes   # `axes`: varying_axes as the caller has it
    objectives = list(manifest.get("objectives", {}))
    extra = ["bound", "feasible", "infeasible_reason"] if source == "points" else ["bound", TIES]
    groups = [a for a in manifest.get("pareto_groups") or [] if a in axes]  # which front a row belongs to
    shown = list(dict.fromkeys([*groups, *axes, *objectives, *extra]))
    first = ["feasible"] if source == "points" else groups
    priority = list(dict.fromkeys([*first, *objectives, *([TIES] if source == "pareto" else []), *axes, *extra]))
    return shown, priority


def _check_names(names, known, what: str, loc) -> None:
    """Columns shown or sorted by may be of any kind; each must exist (the one column check)."""
    kinds = dict.fromkeys(known)
    for n in names:
        check_column(n, kinds, what, loc)


def parse_sort(sort: list[str] | None, known, objectives: dict) -> list[tuple[str, bool]]:
    """[(column, ascending)]: 'mfu' sorts an objective best first and anything else ascending; '-mfu'
    descending, '+mfu' ascending."""
    out = []
    for item in sort or []:
        for part in str(item).split(","):
            part = part.strip()
            if not part:
                continue
            name = part[1:] if part[0] in "+-" else part
            if name[:1] in ("+", "-"):   # '--mfu' or '+-mfu': one sign, or the column would be read past it
                raise ConfigError(f"'{part}' has more than one sign: give -column (descending) or +column "
                                  "(ascending)", loc=("--sort",))
            _check_names([name], known, "sort column", ("--sort",))
            if any(name == n for n, _ in out):   # '-s mfu -s -mfu': the second key would never act
                raise ConfigError(f"sorts by '{name}' twice", loc=("--sort",))
            asc = part.startswith("+") or (not part.startswith("-") and objectives.get(name) != "max")
            out.append((name, asc))
    return out


def select(path, where: str | None = None, columns: list[str] | None = None, sort: list[str] | None = None,
           limit: int | None = None, every_point: bool = False, feasible: bool = False) -> Selection:
    """Rows of the Pareto front (or every point) matching `where` (and feasible, with `feasible`), sorted, at
    most `limit` of them."""
    every_point, feasible = flag(every_point, "every_point"), flag(feasible, "feasible")
    path = Path(path)
    man = store.load_manifest(path)
    source = "points" if every_point else "pareto"
    known = columns_of(man) + ([TIES] if source == "pareto" else [])
    axes = varying_axes(path, man)   # reads the config: once
    shown, priority = default_columns(path, man, source, axes)
    needed = {*axes, *man.get("objectives", {}), "bound", "feasible"}
    required = [c for c in shown if c in needed]
    if columns:   # `point` is the rows' index, always shown first (as --where and --sort read it)
        _check_names([c for c in columns if c != POINT], known, "column", ("--columns",))
        shown = priority = required = list(dict.fromkeys(c for c in columns if c != POINT))
    shown = [c for c in shown if c in known]
    kinds = {c: k for c, k in store.column_kinds(path, man).items() if c in known}
    flt = Where(where, {**{c: None for c in known}, **kinds}) if where else None
    feasible = feasible and every_point  # front rows are feasible by definition
    order = parse_sort(sort, [*known, POINT], man.get("objectives", {}))
    if not columns:   # the default view shows what the question is about: rows sorted or kept by a column show it
        asked = [c for c in [*(c for c, _ in order), *(flt.columns if flt else [])] if c != "point"]
        shown = list(dict.fromkeys([*shown, *asked]))
        priority = list(dict.fromkeys([*priority[:1], *asked, *priority[1:]]))
        required = list(dict.fromkeys([*required, *asked]))
    limit = None if limit is None else whole(limit, "--limit", 0) or None   # 0: all, as --limit 0
    # a front per system (or model): a limit takes the best rows of every front in turn, so a sweep about a
    # system shows it even when another's front is longer (cerebras_serving: 20 rows, none of them CS-3)
    fronts = [g for g in man.get("pareto_groups") or [] if g in known] if (
        source == "pareto" and limit and not order and (man.get("pareto_fronts") or 1) > 1) else []
    needed = list(dict.fromkeys([*shown, *(flt.columns if flt else []), *(c for c, _ in order if c != POINT),
                                 *(["feasible"] if feasible else []), *fronts]))
    if every_point:
        frames = store.iter_parts(path, man, needed)
    else:
        front = store.read_pareto(path, man)
        frames = [front[[c for c in needed if c in front]]]
    kept, matched, scanned = [], 0, 0
    for df in frames:
        scanned += len(df)
        if feasible:
            df = df[df["feasible"].to_numpy(dtype=bool)]
        if flt is not None:
            df = df[flt.mask(df)]
        matched += len(df)
        kept = _keep(kept, df, order, limit)
        if limit and not order and flt is None and not feasible and not fronts and matched >= limit:
            matched = man["points"] if every_point else matched  # unfiltered: every point matches
            break
    rows = concat_frames(kept) if kept else pd.DataFrame(columns=needed)
    if order and not limit:  # with a limit, _keep kept the rows sorted
        rows = _sorted(rows, order)
    if fronts and limit:
        rows = every_front(rows, fronts, limit)
    rows = rows[[c for c in shown if c in rows]]
    if limit:
        rows = rows.head(limit)
    return Selection(rows, matched, scanned if not every_point else man["points"], source,
                     [c for c in priority if c in rows], [c for c in required if c in rows],
                     fronts=int(man.get("pareto_fronts") or 0) if fronts and len(rows) < matched else 0)


def every_front(rows: pd.DataFrame, groups: list[str], limit: int) -> pd.DataFrame:
    """At most `limit` front rows with every front in them: each front's first row (a front is stored best
    first), then each one's second, and so on; shown front by front, in the order the fronts first appear."""
    if len(rows) <= limit:
        return rows
    by = rows.groupby(groups, sort=False, observed=True, dropna=False)
    rank, front = by.cumcount().to_numpy(), by.ngroup().to_numpy()
    chosen = np.argsort(rank, kind="stable")[:limit]  # stable: within a rank, the order the fronts appear in
    return rows.iloc[chosen[np.lexsort((rank[chosen], front[chosen]))]]


POINT = "point"   # the rows' index: the point's number in the sweep


def _sorted(df: pd.DataFrame, order) -> pd.DataFrame:
    """Stable sort, so equal rows keep point order; NaN last whatever the direction (`point`: the index)."""
    return df.sort_values([c for c, _ in order], ascending=[a for _, a in order], kind="stable", na_position="last")


def _keep(kept: list, df: pd.DataFrame, order, limit) -> list:
    """Rows kept so far plus this part's; with an order and a limit, only the best `limit` (bounded memory)."""
    if not (order and limit):
        return kept + [df]
    both = concat_frames([*kept, df]) if kept else df
    return [_sorted(both, order).head(limit)]
