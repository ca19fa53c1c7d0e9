"""Evaluate a sweep: build the design frame, group points by categorical values, run the cost model.

Categorical columns (mode, strategy, presets, ...) are constant within a group, so the cost model
sees numpy arrays for numeric axes and scalars for everything else; structural terms are built
once per group, not per point.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd

from wsemoe.sweep import space
from wsemoe.config.schema import SECTIONS, SweepConfig
from wsemoe.config.loader import load_config
from wsemoe.cost import step
from wsemoe.cost.comm import comm_model
from wsemoe.specs.hardware import PEFacts, derive_node_figures
from wsemoe.sweep.feasibility import add_feasibility


def _categorical(frame: pd.DataFrame) -> list[str]:
    """Columns that are not plain numbers (names, flags, tuples): constant within a group."""
    return [c for c in frame.columns
            if not pd.api.types.is_numeric_dtype(frame[c]) or pd.api.types.is_bool_dtype(frame[c])]


def _namespaces(cfg: SweepConfig, key: dict, numeric: dict) -> dict:
    """Section namespaces for one group: base spec (or preset) fields, then swept values."""
    out = {}
    for section in SECTIONS:
        fields = getattr(cfg, section).model_dump()
        if section in key:  # a preset axis: the preset's fields replace the base section
            fields = type(getattr(cfg, section)).model_validate(cfg.presets[key[section]]).model_dump()
        swept = {p.partition(".")[2]: v for p, v in {**key, **numeric}.items() if p.partition(".")[0] == section}
        swept.pop("", None)
        if section == "hardware" and fields.get("pe") and ({"rows", "cols"} & set(swept)):
            fields = _rederive(fields, swept)
        fields.update(swept)
        out[section] = SimpleNamespace(**fields)
    return out


def _rederive(fields: dict, swept: dict) -> dict:
    """A swept grid splits the same PE fabric differently: node figures derived from PE facts follow it.

    A figure equal to its derived value at the base grid was derived (or agrees with the derivation),
    so it is re-derived at the swept grid; a figure the user set to another value stays as set.
    """
    pe = PEFacts.model_validate(fields["pe"])
    at_base = derive_node_figures(pe, fields["rows"], fields["cols"])
    at_point = derive_node_figures(pe, np.asarray(swept.get("rows", fields["rows"]), float),
                                   np.asarray(swept.get("cols", fields["cols"]), float))
    return {**fields, **{k: at_point[k] for k, v in at_base.items() if np.isclose(fields.get(k), v, rtol=1e-12)}}


def _float(column: pd.Series) -> np.ndarray:
    """Numeric inputs as float64: exact for the bounded integers specs admit, and products of them
    (G·B·S·layers·width) cannot wrap around as int64 products silently would."""
    return column.to_numpy(dtype=np.float64)


def _columns(out: dict, n: int) -> dict:
    """Cost-model outputs broadcast to n rows; labels (bound, phase bounds) become categoricals."""
    cols = {}
    for k, v in out.items():
        v = np.broadcast_to(v, (n,))
        cols[k] = pd.Categorical(v) if v.dtype.kind in "OU" else v
    return cols


def iter_groups(cfg: SweepConfig, frame: pd.DataFrame):
    """(index, section namespaces) of each group of rows sharing their categorical values.

    The namespaces hold what the cost model sees for those rows: the base spec (or the row's
    preset) with the swept values applied, numeric ones as float64 arrays over the group.
    """
    cats = _categorical(frame)
    if not cats:  # one group: no split, no reassembly
        yield frame.index, _namespaces(cfg, {}, {c: _float(frame[c]) for c in frame.columns})
        return
    for values, sub in frame.groupby(cats, sort=False, dropna=False):
        values = values if isinstance(values, tuple) else (values,)
        numeric = {c: _float(sub[c]) for c in sub.columns if c not in cats}
        yield sub.index, _namespaces(cfg, dict(zip(cats, values)), numeric)


def evaluate_frame(cfg: SweepConfig, frame: pd.DataFrame) -> pd.DataFrame:
    """Output columns for every row of `frame` (same index), feasibility included."""
    parts = [pd.DataFrame(_columns(evaluate_group(cfg, ns), len(index)), index=index)
             for index, ns in iter_groups(cfg, frame)]
    result = pd.concat(parts).loc[frame.index] if len(parts) > 1 else parts[0]
    return add_feasibility(result, cfg, frame)


def evaluate_group(cfg: SweepConfig, ns: dict) -> dict:
    """The cost model on one group's namespaces (communication from the fabric when it applies): only the
    columns that apply to the group (a frame of several groups fills the others with NaN)."""
    comm = comm_model(ns["hardware"], ns["model"], ns["workload"], ns["mapping"], ns["balance"], cfg.expert_histogram)
    return step.evaluate(ns["hardware"], ns["model"], ns["workload"], ns["mapping"], comm=comm)


def evaluate_points(config, start: int = 0, stop: int | None = None) -> pd.DataFrame:
    """Points [start, stop) of a sweep: input columns (dotted names) then output columns, no comparison."""
    cfg = load_config(config)
    frame = space.build_frame(cfg, start, stop)
    return pd.concat([frame, evaluate_frame(cfg, frame)], axis=1)
