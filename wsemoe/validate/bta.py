"""Batch Tiling on Attention (Soboleva et al., SC Workshops '25) reproduced in tokens/s.

Both shipped sweeps hold the active parameters (docs/sources.md says why). Compared: the uniform
baseline (G = 1, best feasible B) and BTA (best feasible G and B) per sparsity point, the baseline's
losses against the figures Cerebras publishes for BTA, the largest tuned G and the speedup at the
sparsest point.
"""

from __future__ import annotations

import numpy as np

from wsemoe.sweep import chunked
from wsemoe.sweep.compare import comparison_table
from wsemoe.validate.common import row, sweep_config

SWEEPS = (("bta_experts", "E 8→128 at top-k 8"), ("bta_topk", "top-k 8→1 at E 128"))
FLAT = 1.2                 # BTA max/min tokens/s across a sweep: "nearly flat" read as within ±20%
SPEEDUP_RANGE = (4.0, 8.0)  # the paper's "up to 5×" at the sparsest point
FACTOR = 1.4               # a published slowdown factor is reproduced within ×/÷ 1.4
G_RANGE = (32, 64)         # the paper tuned G up to 64: the largest tuned G within a factor 2 of it
SPEEDUP_GAP = ("with active parameters held, uniform batching loses {e:.1f}× across E and {k:.1f}× across "
               "top-k and the two losses multiply, so a flat BTA gains about their product at E 128, top-k 1; "
               "5× there and a flat BTA need the baseline to lose at most 5× in all, against the ~2× and ~7× "
               "Cerebras documents for the two sweeps")


def bta_comparison(name: str):
    """Comparison table (uniform vs best BTA) of a BTA reproduction sweep, ordered by rising sparsity."""
    cfg = sweep_config(name)
    table = comparison_table(chunked.evaluate(cfg), cfg)
    k = table.get("model.num_experts_per_tok", cfg.model.num_experts_per_tok)
    e = table.get("model.num_experts", cfg.model.num_experts)
    table["density"] = k / e
    return table.sort_values("density", ascending=False).reset_index(drop=True)


def _kilo(values) -> str:
    return " → ".join(f"{v / 1e3:.1f}k" for v in values)


def _factor_row(claim, published, factor, target, source) -> dict:
    lo, hi = target / FACTOR, target * FACTOR
    return row(claim, f"{published} ({source})", f"{100 * (1 - 1 / factor):.0f}% slower ({factor:.2f}×)",
               f"{100 * (factor / target - 1):+.0f}% vs {target:g}×", f"{lo:.1f}×–{hi:.1f}×", lo <= factor <= hi)


def bta_rows() -> list[dict]:
    """Baseline falls and BTA stays flat in tokens/s in both sweeps; slowdowns, tuned G and the speedup."""
    rows, tables = [], {name: bta_comparison(name) for name, _ in SWEEPS}
    for name, label in SWEEPS:
        t = tables[name]
        uni, bta = t["baseline_tokens_per_s"].to_numpy(), t["best_tokens_per_s"].to_numpy()
        rows.append(row(f"uniform batching (G = 1, best B) tokens/s as sparsity grows ({label})", "falls",
                        _kilo(uni), f"{uni[0] / uni[-1]:.2f}× drop", "strictly decreasing",
                        np.all(np.diff(uni) < 0)))
        ratio = float(bta.max() / bta.min())
        rows.append(row(f"BTA (best G, B) tokens/s as sparsity grows ({label})", "nearly flat", _kilo(bta),
                        f"max/min {ratio:.3f}", f"max/min ≤ {FLAT}", ratio <= FLAT))
    e, k = tables["bta_experts"], tables["bta_topk"]
    drop_e = float(e["baseline_tokens_per_s"].iloc[0] / e["baseline_tokens_per_s"].iloc[-1])
    drop_k = float(k["baseline_tokens_per_s"].iloc[0] / k["baseline_tokens_per_s"].iloc[-1])
    rows.append(_factor_row("uniform batching slowdown, E 128 vs E 8 (top-k 8)", "up to 53% slower (2×)", drop_e,
                            2.0, "Cerebras BTA docs"))
    rows.append(_factor_row("uniform batching slowdown, top-k 1 vs top-k 8 (E 128)", "up to 86% slower (7×)", drop_k,
                            7.0, "Cerebras BTA docs"))
    g = max(int(t["best_G"].max()) for t in tables.values())
    rows.append(row("largest tuned G over both sweeps (G swept 1…64)", "G up to 64", f"G = {g}", "",
                    f"{G_RANGE[0]}–{G_RANGE[1]}", G_RANGE[0] <= g <= G_RANGE[1]))
    s = float(k["speedup_vs_uniform"].iloc[-1])
    lo, hi = SPEEDUP_RANGE
    rows.append(row("BTA speedup in tokens/s at E 128, top-k 1", "up to 5×",
                    f"{s:.2f}× (G={int(k['best_G'].iloc[-1])}, B={int(k['best_B'].iloc[-1])})",
                    f"{100 * (s / 5 - 1):+.0f}% vs 5×", f"{lo:g}×–{hi:g}×", lo <= s <= hi,
                    reason=SPEEDUP_GAP.format(e=drop_e, k=drop_k)))
    return rows
