"""Several results folders side by side: the best feasible point of each folder in every group they have in
common, its metric, what binds it, and the ratio of each shared objective to the first folder's.

A group is one value of every axis all folders sweep, except the axes a design is tuned over (B and G,
or each sweep's `compare.over`): those, and axes only some folders sweep, are optimized within the group.
Each folder is read part by part with only the columns needed, keeping the best row per group.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from wsemoe.config import yamlio
from wsemoe.errors import ConfigError, excerpt
from wsemoe.store import store
from wsemoe.sweep.column_check import check_column
from wsemoe.sweep.columns import better
from wsemoe.sweep.compare import DEFAULT_OVER


@dataclass
class Comparison:
    """The side-by-side table and how it was made."""

    table: pd.DataFrame        # one row per common group
    labels: list[str]          # one per folder, in the order given
    group: list[str]           # axes that define a group
    metric: str
    sense: str                 # "max" or "min"
    objectives: list[str]      # objectives every folder has (ratios are given for these)
    dropped: dict              # label -> groups with no feasible point there, or not in every folder
    warnings: list = field(default_factory=list)  # why the ratio may compare different questions

    @property
    def fixed(self) -> dict:
        """Group axes with one value in every row ({axis: value}): said once, not in every row."""
        return {g: self.table[g].iloc[0] for g in self.group if len(self.table) and self.table[g].nunique() == 1}

    @property
    def varying(self) -> list[str]:
        """Group axes that tell the rows apart."""
        return [g for g in self.group if g not in self.fixed]


def _labels(paths: list[Path], mans: list[dict]) -> list[str]:
    names = [m.get("name") or p.name for p, m in zip(paths, mans)]
    return names if len(set(names)) == len(names) else [f"{n}#{i + 1}" for i, n in enumerate(names)]


def _over(path: Path, axes: list[str]) -> set:
    """Axes tuned within a design for this folder: its compare.over, else B and G."""
    try:
        cmp = (yamlio.load(path / "config.yaml") or {}).get("compare") or {}
    except Exception:  # a damaged config only costs the default
        cmp = {}
    over = cmp.get("over") if isinstance(cmp, dict) else None
    return set(over) if isinstance(over, list) else {a for a in DEFAULT_OVER if a in axes}


def _metric(metric: str | None, first: dict, kinds: dict) -> tuple[str, str]:
    """(column, sense) of --metric: a column of numbers in every folder (`sweep.column_check.check_column`)."""
    if metric is not None and not (isinstance(metric, str) and metric.strip()):   # '' read as the default
        raise ConfigError(f"a column name, optionally :max or :min; got {metric!r}", loc=("--metric",))
    text = metric or next(iter(first.get("objectives", {})), "tokens_per_s")
    name, _, sense = text.partition(":")
    sense = sense or first.get("objectives", {}).get(name) or better(name) or "max"   # a time: smaller is best
    if sense not in ("max", "min"):
        raise ConfigError(f"Input should be 'min' or 'max' (got {excerpt(repr(sense))}): --metric column:max or column:min",
                          loc=("--metric",))
    check_column(name, kinds, "metric column (in every folder)", ("--metric",), "number")
    return name, sense


def _best(path: Path, man: dict, group: list[str], cols: list[str], metric: str, sense: str) -> pd.DataFrame:
    """Best feasible row per group, read part by part (point index kept as a column)."""
    best = None
    for df in store.iter_parts(path, man, list(dict.fromkeys([*group, *cols, "feasible"]))):
        df = df[df["feasible"].to_numpy(dtype=bool)].reset_index()
        if best is not None:
            df = pd.concat([best, df], ignore_index=True)
        if df.empty:
            continue
        values = df[metric].to_numpy(dtype=float)
        key = np.where(np.isfinite(values), values if sense == "max" else -values, -np.inf)
        df = df.assign(_key=key).sort_values("_key", ascending=False, kind="stable")
        best = (df.drop_duplicates(group) if group else df.head(1)).drop(columns="_key")
    return best if best is not None else pd.DataFrame(columns=["point", *group, *cols])


ENERGY = "energy_per_token_j"


def compare(paths, metric: str | None = None) -> Comparison:
    """Compare two or more results folders (see the module docstring)."""
    paths = [Path(p) for p in paths]
    if len(paths) < 2:
        raise ConfigError("compare needs two or more results folders", loc=("folders",))
    mans = [store.load_manifest(p) for p in paths]   # a damaged folder says so first
    twice = next((p for i, p in enumerate(paths) if p.resolve() in [q.resolve() for q in paths[:i]]), None)
    if twice is not None:   # a folder against itself: every ratio 1, a comparison of nothing
        raise ConfigError("is named twice: compare needs two or more different results folders", loc=(str(twice),))
    labels = _labels(paths, mans)
    columns = set.intersection(*(set(m.get("columns", {})) for m in mans))
    kinds = [store.column_kinds(p, m) for p, m in zip(paths, mans)]
    shared = {c: k for c, k in kinds[0].items() if c in columns and all(kk.get(c) == k for kk in kinds)}
    metric, sense = _metric(metric, mans[0], {**{c: "text" for c in columns}, **shared})
    axes = [a for a in mans[0].get("axes", []) if all(a in m.get("axes", []) for m in mans)]
    over = set.union(*(_over(p, m.get("axes", [])) for p, m in zip(paths, mans)))
    group = [a for a in axes if a not in over]
    objectives = [o for o in mans[0].get("objectives", {}) if o in columns]
    energy = [c for c in (ENERGY,) if c in shared]   # the energy ratio beside the speed ratio, at the same points
    cols = list(dict.fromkeys([metric, *objectives, *energy, *(c for c in ("bound",) if c in columns)]))
    bests = [_best(p, m, group, cols, metric, sense) for p, m in zip(paths, mans)]
    table, dropped = _join(bests, labels, group, cols)
    if table.empty:   # nothing side by side: say so, rather than an empty table (and ratios of nothing)
        raise ConfigError(f"the folders share no group of {', '.join(group)} (each holds values the others do not); "
                          "compare folders swept over common values", loc=("folders",))
    for label in labels[1:]:
        for col in dict.fromkeys([metric, *objectives, *energy]):
            table[f"{label}/{labels[0]}:{col}"] = (table[f"{label}:{col}"].astype(float)
                                                    / table[f"{labels[0]}:{col}"].astype(float))
    return Comparison(table, labels, group, metric, sense, objectives, dropped,
                      unrelated(paths, labels, group))


SAME_QUESTION = ("hardware", "model", "workload.mode")  # what two compared sweeps should share to answer one question
CHANGED = ("hardware", "model")   # a comparison of related runs changes one of these, at one value a side


def _values(cfg: dict, path: str) -> list[str]:
    """The values a resolved config.yaml takes at `path`, in its order: its axis (or zip column) values, else its
    base value ('unset' for a field the stored config leaves out: it holds no None)."""
    for grp in [cfg.get("axes") or {}, *(cfg.get("zip") or [])]:
        if isinstance(grp, dict) and path in grp and isinstance(grp[path], list):
            return list(dict.fromkeys(str(v) for v in grp[path]))
    section, _, name = path.partition(".")
    base = cfg.get(section)
    value = base.get(name or "name") if isinstance(base, dict) else base
    return [str(value) if value is not None else "unset"]


def _swept(cfg: dict) -> list[str]:
    """The hardware and model fields a resolved config.yaml sweeps (axes and zip columns)."""
    grps = [cfg.get("axes") or {}, *(cfg.get("zip") or [])]
    return [p for g in grps if isinstance(g, dict) for p in g if p.partition(".")[0] in CHANGED]


def unrelated(paths: list[Path], labels: list[str], group: list[str]) -> list[str]:
    """A warning per folder whose points differ from the first's in what the ratio does not pair up (a field that
    is not a `group` axis): another mode, both hardware and model, or any hardware or model field one side takes
    several values of and the other not the same ones (a row's best is then over different variants: E = 32 and
    128 against top-k 8 to 1). Its ratio to the first compares different questions (a comparison of related runs
    changes one fixed hardware or model)."""
    try:
        cfgs = [yamlio.load(Path(p) / "config.yaml") or {} for p in paths]
    except Exception:  # a damaged config cannot tell; the folders were verified, so this is rare
        return []
    out = []
    for cfg, lab in zip(cfgs[1:], labels[1:]):
        fields = [k for k in dict.fromkeys([*SAME_QUESTION, *_swept(cfgs[0]), *_swept(cfg)]) if k not in group]
        differ = {k: (_values(cfgs[0], k), _values(cfg, k)) for k in fields}
        differ = {k: v for k, v in differ.items() if set(v[0]) != set(v[1])}
        sections = {k.partition(".")[0] for k in differ}
        pooled = any(len(a) > 1 or len(b) > 1 for a, b in differ.values())
        if "workload" in sections or set(CHANGED) <= sections or pooled:
            said = "; ".join(f"{k} {', '.join(a)} vs {', '.join(b)}" for k, (a, b) in differ.items())
            out.append(f"warning: {labels[0]} and {lab} differ in {' and '.join(differ)} ({said}): the ratio "
                       "compares different questions, not one design change")
    return out


def _join(bests: list[pd.DataFrame], labels: list[str], group: list[str], cols: list[str]):
    """Groups every folder has a best point in, side by side; and how many each folder loses to the join."""
    keep = ["point", *cols]
    renamed = [b.rename(columns={c: f"{lab}:{c}" for c in keep})[[*group, *(f"{lab}:{c}" for c in keep)]]
               for b, lab in zip(bests, labels)]
    if not group:
        table = pd.concat([r.reset_index(drop=True).head(1) for r in renamed], axis=1)
        return table, {lab: 0 for lab in labels}
    table = renamed[0]
    for r in renamed[1:]:
        table = table.merge(r, on=group, how="inner")
    dropped = {lab: len(b) - len(table) for lab, b in zip(labels, bests)}
    return table.reset_index(drop=True), dropped
