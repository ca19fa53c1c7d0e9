"""Where the GPU serving model's TTFT misses come from on the shipped measured runs, with the shipped stacks.

Usage: python tools/silicon_ttft_misses.py

Prints (1) the measurement floor: the best any model blind to osl can do on configurations that differ only in
osl at 16 or fewer concurrent requests (TTFT should not depend on osl there: no KV queueing), and the scatter of
repeated runs of one configuration; (2) the TTFT error per backend × precision × attention DP × concurrency
band: configurations, MAPE, median predicted/measured and share of the total absolute error.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from wsemoe.validate.silicon import fit, reader, runs, stacks  # noqa: E402

DATA = ROOT / "tests" / "data" / "silicon" / "silicon_given.csv"


def _best_constant_mape(m) -> float:
    """Least mean |p/m - 1| of one prediction p for all measurements m (attained at one of them)."""
    m = np.asarray(m, float)
    return min(float(np.mean(np.abs(p / m - 1))) for p in m)


def main() -> None:
    r = runs.load(DATA)
    cf = r.configs.copy()
    low = cf[cf.batch_size <= 16]
    key = [k for k in reader.CONFIG if k != "osl"]
    sets = [g.ttft_ms.to_numpy() for _, g in low.groupby(key, dropna=False) if len(g) > 1]
    n = sum(len(s) for s in sets)
    floor = sum(len(s) * _best_constant_mape(s) for s in sets) / n
    print(f"floor: {n} configurations in {len(sets)} sets differing only in osl (C <= 16): "
          f"best osl-blind TTFT MAPE {100 * floor:.1f}%")
    rows = r.rows[r.rows.config >= 0]
    size = rows.groupby("config").silicon_ttft_ms.transform("size")
    dup = rows[size > 1]
    med = dup.groupby("config").silicon_ttft_ms.transform("median")
    print(f"repeated runs: {len(dup)} runs, mean |run/median - 1| of TTFT {100 * np.mean(np.abs(dup.silicon_ttft_ms / med - 1)):.1f}%")
    st, _ = stacks.load()
    ttft, _, _ = fit.predict(r, st)
    cf["ratio"] = ttft / cf.ttft_ms.to_numpy()
    cf["err"] = np.abs(cf.ratio - 1)
    cf["precision"] = cf.precision.fillna("(none)")  # 16-bit runs leave the column empty
    cf["attention_dp"] = np.where(r.X_ttft["dp"] > 1, "DP", "-")
    cf["C"] = pd.cut(r.X_ttft["C"], [0, 16, 128, 1e9], labels=["C<=16", "16<C<=128", "C>128"])
    total = cf.err.sum()
    table = cf.groupby(["backend", "precision", "attention_dp", "C"], observed=True).agg(
        configs=("err", "size"), ttft_mape_pct=("err", lambda e: 100 * e.mean()),
        median_pred_over_meas=("ratio", "median"), share_of_error_pct=("err", lambda e: 100 * e.sum() / total))
    print(f"overall TTFT MAPE {100 * cf.err.mean():.1f}% over {len(cf)} configurations")
    print(table.round(2).to_string())


if __name__ == "__main__":
    main()
