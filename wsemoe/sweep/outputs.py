"""A sweep's output columns, known before it runs: one point per categorical group, numpy only.

`check` and `sweep` use this to refuse a misspelt objective, constraint, comparison or output column
with a did-you-mean before anything is evaluated or written. It imports no pandas, so `wsemoe check`
starts fast; the engine builds its per-group namespaces with the same `namespaces`.
"""

from __future__ import annotations

import difflib
import itertools
from types import SimpleNamespace

from wsemoe.config.schema import SECTIONS, SweepConfig
from wsemoe.cost import step
from wsemoe.cost.comm import comm_model
from wsemoe.errors import ConfigError

MAX_GROUPS = 64  # categorical combinations evaluated to learn the columns (they differ by topology, balancer...)
ALWAYS = ("feasible", "infeasible_reason")


def namespaces(cfg: SweepConfig, values: dict) -> dict:
    """Section namespaces at `values` ({path: value}): base spec (or preset) fields, then swept values.

    A preset axis (a path without a field, e.g. `model`) replaces its whole section by the preset's fields.
    """
    out = {}
    for section in SECTIONS:
        fields = getattr(cfg, section).model_dump()
        if section in values:
            fields = type(getattr(cfg, section)).model_validate(cfg.presets[values[section]]).model_dump()
        for path, value in values.items():
            sec, _, field = path.partition(".")
            if sec == section and field:
                fields[field] = value
        out[section] = SimpleNamespace(**fields)
    return out


def evaluate(cfg: SweepConfig, ns: dict) -> dict:
    """The cost model on one group's namespaces (communication from the fabric when it applies)."""
    comm = comm_model(ns["hardware"], ns["model"], ns["workload"], ns["mapping"], ns["balance"], cfg.expert_histogram)
    return step.evaluate(ns["hardware"], ns["model"], ns["workload"], ns["mapping"], comm=comm)


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def representatives(cfg: SweepConfig, limit: int = MAX_GROUPS) -> list[dict]:
    """One point ({path: value}) per distinct combination of categorical axis values (at most `limit`)."""
    per_factor = []
    for f in cfg.factors():
        n = len(next(iter(f.values())))
        rows, seen = [], set()
        for i in range(n):
            row = {p: v[i] for p, v in f.items()}
            key = tuple(repr(v) for v in row.values() if not _is_number(v))
            if key not in seen:
                seen.add(key)
                rows.append(row)
        per_factor.append(rows)
    return [{k: v for row in combo for k, v in row.items()}
            for combo in itertools.islice(itertools.product(*per_factor), limit)]


def output_columns(cfg: SweepConfig) -> dict[str, bool]:
    """{column: numeric?} of every column a sweep's points carry (inputs, cost outputs, feasibility)."""
    cols: dict[str, bool] = {}
    for values in representatives(cfg):
        for path, v in values.items():
            cols.setdefault(path, _is_number(v))
        out = evaluate(cfg, namespaces(cfg, {p: float(v) if _is_number(v) else v for p, v in values.items()}))
        for name, v in out.items():
            kind = getattr(v, "dtype", None)
            cols.setdefault(name, kind.kind in "fiu" if kind is not None else _is_number(v))
    for c in cfg.constraints:
        for bound in ("max", "min"):
            if getattr(c, bound) is not None:
                cols[f"g_{c.column}_{bound}"] = True
    cols.update({"feasible": False, "infeasible_reason": False})
    if cfg.compare:
        cols[f"speedup_vs_{cfg.compare.name}"] = True
    return cols


def _known(name: str, cols, loc, what: str, numeric: dict | None = None) -> None:
    """Refuse a column that is not among `cols` (with a did-you-mean), or that is text where a number is needed."""
    if name not in cols:
        close = difflib.get_close_matches(str(name), list(cols), n=1)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        raise ConfigError(f"unknown {what} '{name}'{hint}", loc=loc)
    if numeric is not None and not numeric[name]:
        raise ConfigError(f"{what} '{name}' is not a number", loc=loc)


def check_columns(cfg: SweepConfig) -> dict[str, bool]:
    """Every column the config names exists (objectives, constraints, comparison, output); returns the columns."""
    cols = output_columns(cfg)
    for name in cfg.objectives:
        _known(name, cols, ("objectives", name), "objective column", cols)
    for i, c in enumerate(cfg.constraints):
        _known(c.column, {k: v for k, v in cols.items() if not k.startswith("g_")}, ("constraints", i, "column"),
               "constraint column", cols)
    if cfg.compare:
        _known(cfg.compare.metric, cols, ("compare", "metric"), "comparison metric", cols)
        axes = {a: True for a in cfg.axis_names()}
        for path, value in cfg.compare.baseline.items():
            _known(path, axes, ("compare", "baseline", path), "baseline axis")
            values = [v for f in cfg.factors() for v in f.get(path, [])]
            if value not in values:
                raise ConfigError(f"{value!r} is not among the values of {path}: no point would be a baseline",
                                  loc=("compare", "baseline", path))
        for path in cfg.compare.over or ():
            _known(path, axes, ("compare", "over"), "axis")
    for name in cfg.output.columns or ():
        _known(name, cols, ("output", "columns"), "output column")
    return cols
