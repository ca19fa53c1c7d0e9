"""Runs of a silicon file grouped into configurations (medians over duplicates: runs whose columns agree, the
layout by the one it spells, reader.config_key), resolved, with features."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from wsemoe.validate.silicon import features, reader


@dataclass
class Runs:
    """The file's rows, its configurations and what the model needs of them.

    `rows`: the file (DataFrame) with `config` (index into configs, -1 for a run that cannot be modelled)
    and `reason`. `configs`: one row per modelled configuration with the median measurements `ttft_ms`,
    `tpot_ms` and `n` runs. `X_ttft`, `X_tpot`: features of the worker each measurement comes from."""

    rows: object
    configs: object
    X_ttft: dict
    X_tpot: dict


MAX_MEASURED_MS = 3.6e6   # a TTFT or TPOT above an hour is not a serving measurement (1e308 ms was scored)
# Nor is one below a microsecond: one CUDA kernel launch alone takes ~5 us, and a token passes dozens of kernels
# (1e-320 ms was scored: predicted / measured overflowed, the MAPE came out null with no reason, numpy warned)
MIN_MEASURED_MS = 1e-3


def load(path: Path) -> Runs:
    """Read, resolve and group a silicon file."""
    import pandas as pd

    from wsemoe.config import presets

    frame = reader.read(path)
    model = functools.lru_cache(None)(presets.load_model)
    hardware = functools.lru_cache(None)(presets.load_hardware)
    resolved = [reader.resolve(r, model, hardware) for r in frame.to_dict("records")]
    reasons = [r.get("reason", "") for r in resolved]
    measured = frame[["silicon_ttft_ms", "silicon_tpot_ms"]].astype(float)
    meas_ok = (measured.ge(MIN_MEASURED_MS) & measured.le(MAX_MEASURED_MS)).all(axis=1)
    seen: dict = {}
    for i, (ok, ident) in enumerate(zip(meas_ok, frame["id"])):
        first = seen.setdefault(ident, i)
        if not reasons[i] and not ok:
            reasons[i] = (f"no measured TTFT and TPOT of at least {MIN_MEASURED_MS:g} ms (a microsecond) and at "
                          f"most {MAX_MEASURED_MS:,.0f} ms (an hour)")
        elif not reasons[i] and not ident.strip():   # rows are reported by id: one without is no one's
            reasons[i] = "no id"
        elif not reasons[i] and first != i:
            reasons[i] = f"id '{ident}' is also row {first + 1}'s (each run's id names it alone)"
    frame = frame.assign(reason=reasons)
    # a configuration by its canonical layout (reader.config_key): two spellings of one layout are one
    keys = pd.Series([reader.config_key(row, res) if not why else None
                      for row, res, why in zip(frame.to_dict("records"), resolved, reasons)], index=frame.index)
    frame["config"] = -1
    good = frame["reason"].eq("")
    if not good.any():  # nothing to model: every run keeps its reason
        empty = pd.DataFrame(columns=[*reader.CONFIG, "ttft_ms", "tpot_ms", "n", "model_preset", "system_preset"])
        return Runs(frame, empty, {}, {})
    codes = {k: i for i, k in enumerate(dict.fromkeys(keys[good]))}
    frame.loc[good, "config"] = keys[good].map(codes)
    first = frame[good].groupby("config").head(1).sort_values("config")
    med = frame[good].groupby("config")[["silicon_ttft_ms", "silicon_tpot_ms"]].median()
    configs = first[list(reader.CONFIG)].reset_index(drop=True).assign(
        ttft_ms=med["silicon_ttft_ms"].to_numpy(), tpot_ms=med["silicon_tpot_ms"].to_numpy(),
        n=frame[good].groupby("config").size().to_numpy(),
        model_preset=[resolved[i]["model_preset"] for i in first.index],
        system_preset=[resolved[i]["system_preset"] for i in first.index])
    res = [resolved[i] for i in first.index]
    x_ttft = features.arrays(res, lambda r: "agg" if r["mode"] == "agg" else "prefill")
    x_tpot = features.arrays(res, lambda r: "agg" if r["mode"] == "agg" else "decode")
    return Runs(frame, configs, x_ttft, x_tpot)


def subset(X: dict, mask) -> dict:
    """Features of the configurations `mask` selects."""
    return {k: v[mask] for k, v in X.items()}


def backend_codes(runs: Runs, backends) -> np.ndarray:
    """Index of each configuration's backend in `backends` (-1 for a backend not among them)."""
    return runs.configs["backend"].map({b: i for i, b in enumerate(backends)}).fillna(-1).to_numpy(dtype=int)
