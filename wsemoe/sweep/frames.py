"""Evaluate arbitrary rows of input values (a DataFrame), as the analysis studies need them.

Calibration samples and invariant frames carry values that are not grid positions (a sampled
matmul efficiency, a bandwidth doubled), so they cannot go through the grid engine's digits.
Rows are grouped by their categorical values; each group is one cost-model call on float64
arrays; feasibility is added exactly as for a sweep.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import pickle

import numpy as np
import pandas as pd

from wsemoe.config.schema import SECTIONS, SweepConfig
from wsemoe.cost import serving
from wsemoe.store.block import Labels
from wsemoe.sweep import space
from wsemoe.sweep.engine import Outputs, Rows
from wsemoe.sweep.outputs import base_fields, namespaces, preset_fields
from wsemoe.sweep.feasibility import feasibility


def _categorical(frame: pd.DataFrame) -> list[str]:
    """Columns that are not plain numbers (names, flags, tuples) or are structural (space.structural): constant
    within a group."""
    return [c for c in frame.columns if space.structural(c)
            or not pd.api.types.is_numeric_dtype(frame[c]) or pd.api.types.is_bool_dtype(frame[c])]


def _sources(cfg: SweepConfig) -> tuple[dict, dict]:
    """Base fields per section and validated preset fields per preset name (the axes may name presets)."""
    preset = {s: {} for s in SECTIONS}
    for name in cfg.presets:
        for s in ("hardware", "model"):
            try:
                preset[s][name] = preset_fields(cfg, s, name)
            except ValueError:  # a preset of the other kind
                pass
    return base_fields(cfg), preset


def iter_groups(cfg: SweepConfig, frame: pd.DataFrame):
    """(index, section namespaces) of each group of rows sharing their categorical values.

    The namespaces hold what the cost model sees for those rows: the base spec (or the row's
    preset) with the row values applied, numeric ones as float64 arrays over the group.
    """
    base, preset = _sources(cfg)
    cats = _categorical(frame)
    groups = frame.groupby(cats, sort=False, dropna=False) if cats else [((), frame)]
    for values, sub in groups:
        values = values if isinstance(values, tuple) else (values,)
        # groupby turns an unset optional (None) into a NaN key: unset it is
        values = tuple(None if isinstance(v, float) and v != v else v for v in values)
        numeric = {c: sub[c].to_numpy(dtype=np.float64) for c in sub.columns if c not in cats}
        yield sub.index, namespaces(base, preset, {**dict(zip(cats, values)), **numeric})


_SHARED: contextvars.ContextVar[dict | None] = contextvars.ContextVar("shared_groups", default=None)


@contextlib.contextmanager
def shared_groups():
    """Within it, a group whose inputs equal an earlier group's is not evaluated again: its outputs are reused.
    For a study that evaluates one sweep under many readings, where most readings leave one system's rows as
    they were (a die-to-die reading never touches the GPU rows). Nested uses share the outer memo."""
    token = _SHARED.set({} if _SHARED.get() is None else _SHARED.get())
    try:
        yield
    finally:
        _SHARED.reset(token)


def _evaluated(cfg: SweepConfig, ns: dict) -> dict:
    """evaluate_group, from the shared memo when one is open and holds a group of these very inputs."""
    memo = _SHARED.get()
    if memo is None:
        return evaluate_group(cfg, ns)
    key = hashlib.blake2b(pickle.dumps((cfg.expert_histogram, ns), protocol=5)).digest()
    if key not in memo:
        memo[key] = evaluate_group(cfg, ns)
    return memo[key]


def evaluate_group(cfg: SweepConfig, ns: dict) -> dict:
    """The cost model on one group's namespaces (communication from the fabric when it applies): only the
    columns that apply to the group (a frame of several groups fills the others with NaN)."""
    return serving.evaluate(ns["hardware"], ns["model"], ns["workload"], ns["mapping"], ns["balance"],
                            cfg.expert_histogram)


def evaluate_frame(cfg: SweepConfig, frame: pd.DataFrame, columns=None) -> pd.DataFrame:
    """Output columns for every row of `frame` (same index), feasibility included. With `columns`, only those
    of them the model gives (a calibration reads a handful of its ~80 outputs over 262k rows: the others are
    never scattered into place or copied into the frame)."""
    position = pd.Series(np.arange(len(frame)), index=frame.index)
    pieces = [(Rows(position.loc[index].to_numpy()), _evaluated(cfg, ns)) for index, ns in iter_groups(cfg, frame)]
    outputs = Outputs(len(frame), pieces)
    inputs = {c: frame[c].to_numpy() for c in frame.columns}
    extra, _ = feasibility(cfg, outputs, inputs)
    wanted = set(outputs.names) | set(extra) if columns is None else set(columns)
    cols = {name: outputs.column(name) for name in outputs.names if name in wanted}
    cols.update((k, v) for k, v in extra.items() if k in wanted)
    return pd.DataFrame({k: v.to_pandas() if isinstance(v, Labels) else v for k, v in cols.items()}, index=frame.index)
