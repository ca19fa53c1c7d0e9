"""Measured GPU serving runs against the model (`wsemoe validate --silicon`): tables and JSON lines."""

from __future__ import annotations

import json
import math

import pandas as pd

ROW_COLUMNS = ("id", "system", "model_path", "backend", "mode", "isl", "osl", "concurrency", "ttft_ms",
               "pred_ttft_ms", "tpot_ms", "pred_tpot_ms", "reason")


def _pct(x):
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else round(100 * x, 1)


def frames(result: dict) -> list[tuple[str, pd.DataFrame]]:
    """(title, table) pairs: every run, MAPE (and the median predicted/measured) per system × model × backend ×
    mode, per system × model and per system, the held-out folds when there are, and the overall line."""
    rows = pd.DataFrame(result["rows"], columns=list(ROW_COLUMNS))
    out = [("Runs: measured beside predicted (ms)", rows)]
    for title, key in (("MAPE per system × model × backend × mode (%, medians of duplicate configurations)", "groups"),
                       ("MAPE per system × model (%)", "system_model"),
                       ("MAPE (%) and median predicted/measured (the bias) per system", "system")):
        g = pd.DataFrame(result.get(key, []))
        if len(g):
            g["ttft_mape"], g["tpot_mape"] = g["ttft_mape"].map(_pct), g["tpot_mape"].map(_pct)
            g = g.rename(columns={"ttft_mape": "ttft_mape_pct", "tpot_mape": "tpot_mape_pct"})
            g = g.round({"ttft_median_ratio": 2, "tpot_median_ratio": 2})
        out.append((title, g))
    if result.get("holdout"):
        h = pd.DataFrame(result["holdout"])
        h["ttft_mape"], h["tpot_mape"] = h["ttft_mape"].map(_pct), h["tpot_mape"].map(_pct)
        out.append((f"Held out by {result['holdout_by']}: each group predicted by a fit without it (MAPE %)",
                    h.rename(columns={"ttft_mape": "ttft_mape_pct", "tpot_mape": "tpot_mape_pct"})))
    return out


def overall_line(result: dict) -> str:
    o = result["overall"]
    how = f" (each configuration predicted by a fit leaving its {result['holdout_by']} out)" if result.get("holdout_by") else ""
    return (f"{o['runs']} runs, {o['configs']} configurations modelled, {o['unmodelled']} runs not modelled (reason "
            f"per row){how}: MAPE TTFT {_shown(o['ttft_mape'])}, TPOT {_shown(o['tpot_mape'])}")


def _shown(x) -> str:
    p = _pct(x)
    return "n/a" if p is None else f"{p}%"


def _clean(x):
    """NaN (a MAPE over no configuration) and ±inf (a cell too large for a float) as JSON null, everywhere in a
    record."""
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: _clean(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_clean(v) for v in x]
    return x


def json_lines(result: dict) -> str:
    """One JSON object per run (upstream id, prediction or null with the reason), then the summary object."""
    lines = [json.dumps(_clean(r), ensure_ascii=False, allow_nan=False, default=float) for r in result["rows"]]
    summary = {"summary": {"overall": result["overall"], "groups": result["groups"],
                           "system_model": result["system_model"], "system": result.get("system", []),
                           "holdout_by": result.get("holdout_by"),
                           "holdout": result.get("holdout")}}
    lines.append(json.dumps(_clean(summary), ensure_ascii=False, allow_nan=False))
    return "\n".join(lines) + "\n"
