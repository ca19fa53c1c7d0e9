"""Per-run predictions beside measurements, and MAPE per system × model × backend × mode (over medians of
duplicate configurations), overall and per system × model; held-out accuracy by refitting without a group."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from wsemoe.validate.silicon import fit, reader, runs
from wsemoe.validate.silicon.stacks import load as load_stacks

GROUP = ("system", "model_path", "backend", "mode")
NO_FIT = "the model's weights and one request's KV cache do not fit one GPU's HBM under this layout"


def _mape(pred, meas) -> float:
    pred, meas = np.asarray(pred, float), np.asarray(meas, float)
    return float(np.mean(np.abs(pred / meas - 1))) if len(meas) else float("nan")


def _median_ratio(pred, meas) -> float:
    """Median of predicted / measured: the group's bias, which errors either side of it do not average away."""
    pred, meas = np.asarray(pred, float), np.asarray(meas, float)
    return float(np.median(pred / meas)) if len(meas) else float("nan")


def evaluate(path: Path, stacks: dict | None = None, holdout: str | None = None) -> dict:
    """Rows (one per run of the file) and summaries. `holdout` (system, model, backend): every configuration
    predicted by a fit that left its group out; else the shipped stacks (or `stacks`)."""
    r = runs.load(path)
    stacks = stacks or load_stacks()[0]
    cf = r.configs.copy()
    folds = None
    if len(cf) and holdout:
        folds, ttft, tpot = fit.holdout(r, holdout, start=stacks)
        fits = np.ones(len(cf), bool)
    elif len(cf):
        for b in cf["backend"].unique():  # a backend the stacks file has no fit for: the pooled stack
            stacks.setdefault(b, fit.pooled(stacks))
        ttft, tpot, fits = fit.predict(r, stacks)
    else:
        ttft, tpot, fits = np.zeros(0), np.zeros(0), np.zeros(0, bool)
    cf["pred_ttft_ms"], cf["pred_tpot_ms"], cf["fits"] = ttft, tpot, fits
    rows = _rows(r, cf)
    good = cf[cf["fits"].astype(bool)]
    return {"rows": rows, "groups": _groups(good, list(GROUP)), "system_model": _groups(good, ["system", "model_path"]),
            "system": _groups(good, ["system"]),
            "overall": _overall(good, len(rows), sum(1 for x in rows if x["reason"])), "holdout": folds,
            "holdout_by": holdout}


def _rows(r, cf) -> list[dict]:
    """One record per run of the file, in its order: measurement, prediction (None with the reason)."""
    out = []
    # each configuration's (fits, predictions), looked up per run (a DataFrame's .at per run was most of this)
    pred = dict(zip(cf.index, zip(cf["fits"], cf["pred_ttft_ms"], cf["pred_tpot_ms"])))
    for rec in r.rows.to_dict("records"):
        c, reason = int(rec["config"]), rec["reason"]
        p_ttft = p_tpot = None
        if c >= 0:
            fits, ttft, tpot = pred[c]
            if fits:
                p_ttft, p_tpot = float(ttft), float(tpot)
            else:
                reason = NO_FIT
        out.append({"id": rec["id"], "system": rec["system"], "model_path": rec["model_path"],
                    "backend": rec["backend"], "mode": rec["mode"], "isl": rec["isl"], "osl": rec["osl"],
                    "concurrency": reader.concurrency(rec), "ttft_ms": rec["silicon_ttft_ms"],
                    "tpot_ms": rec["silicon_tpot_ms"], "pred_ttft_ms": p_ttft, "pred_tpot_ms": p_tpot,
                    "reason": reason or None})
    return out


def _groups(cf, keys) -> list[dict]:
    out = []
    for key, g in cf.groupby(keys, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        out.append({**dict(zip(keys, key)), "configs": int(len(g)), "runs": int(g["n"].sum()),
                    "ttft_mape": _mape(g["pred_ttft_ms"], g["ttft_ms"]),
                    "tpot_mape": _mape(g["pred_tpot_ms"], g["tpot_ms"]),
                    "ttft_median_ratio": _median_ratio(g["pred_ttft_ms"], g["ttft_ms"]),
                    "tpot_median_ratio": _median_ratio(g["pred_tpot_ms"], g["tpot_ms"])})
    return out


def _overall(cf, rows: int, unmodelled: int) -> dict:
    return {"runs": rows, "unmodelled": unmodelled, "configs": int(len(cf)),
            "ttft_mape": _mape(cf["pred_ttft_ms"], cf["ttft_ms"]), "tpot_mape": _mape(cf["pred_tpot_ms"], cf["tpot_ms"])}


def worst(result: dict) -> float:
    """The largest MAPE the summary shows (overall TTFT or TPOT): what --max-mape compares."""
    o = result["overall"]
    return max(o["ttft_mape"], o["tpot_mape"])
