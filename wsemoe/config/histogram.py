"""Measured expert-load histograms: a CSV of per-expert (optionally per-layer) token counts or shares."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import numpy as np

from wsemoe.errors import ConfigError
from wsemoe.config.files import read_text
from wsemoe.specs.base import MAX_COUNT

MAX_HISTOGRAM_BYTES = 256 * 2**20  # per-layer, per-expert counts of even huge models are megabytes


def read_histogram(path, loc=("balance", "histogram")) -> list[float]:
    """Per-expert shares from a CSV with columns `expert` and `tokens` (or `share`), optional `layer`.

    Several layers are summed per expert after normalising each layer (every layer weighs the same);
    the cost model has one representative MoE layer, so per-layer differences average out.
    """
    p = Path(path)
    text = read_text(p, MAX_HISTOGRAM_BYTES, "histogram file", loc_prefix=loc)
    try:
        rows = list(csv.DictReader(io.StringIO(text, newline="")))
    except csv.Error as exc:
        raise ConfigError(f"cannot read histogram: {exc}", loc=(*loc, str(p))) from None
    if not rows:
        raise ConfigError("histogram has no rows", loc=(*loc, str(p)))
    value_col = "tokens" if "tokens" in rows[0] else "share" if "share" in rows[0] else None
    if "expert" not in rows[0] or value_col is None:
        raise ConfigError("histogram needs columns 'expert' and 'tokens' (or 'share')", loc=(*loc, str(p)))
    try:
        experts = np.array([int(r["expert"]) for r in rows])
        values = np.array([float(r[value_col]) for r in rows])
        layers = np.array([int(r.get("layer") or 0) for r in rows])
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"bad number in histogram: {exc}", loc=(*loc, str(p))) from None
    if experts.min() < 0 or not np.all(np.isfinite(values)) or values.min() < 0:
        raise ConfigError("expert ids and counts must be non-negative", loc=(*loc, str(p)))
    if experts.max() >= MAX_COUNT:
        raise ConfigError(f"expert id {experts.max()} is beyond the {MAX_COUNT:,} experts supported", loc=(*loc, str(p)))
    n = int(experts.max()) + 1
    ids, where = np.unique(layers, return_inverse=True)  # each layer normalised at once (no loop over layers)
    where = where.ravel()
    totals = np.bincount(where, weights=values, minlength=len(ids))
    if np.any(totals <= 0):
        raise ConfigError(f"layer {ids[int(np.argmax(totals <= 0))]} has no tokens", loc=(*loc, str(p)))
    shares = np.bincount(experts, weights=values / totals[where], minlength=n)
    return (shares / shares.sum()).tolist()
