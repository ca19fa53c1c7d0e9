"""Batch Tiling on Attention (Soboleva et al., SC Workshops '25; Cerebras' BTA documentation) in tokens/s.

Both shipped sweeps hold the active parameters and run at the reading chosen from BTA's text
(`figures.BTA`: one head's scores at a time, checkpoints streamed). Compared per sparsity point: uniform
batching (G = 1, best feasible B) and BTA (best feasible G and B): the trends the paper describes, the
baseline's losses the documentation gives (read, as its words say, as uniform batching's degradation as
sparsity increases), and the headline "up to 5×" with its range over every reading.
"""

from __future__ import annotations

import numpy as np

from wsemoe.analysis.uncertainty import readings as study
from wsemoe.analysis.uncertainty import robustness
from wsemoe.sweep import chunked
from wsemoe.sweep.compare import (baseline_mask, candidate_mask, comparison_table, end_tops, group_keys,
                                  nearest_interior, reach)
from wsemoe.validate import figures
from wsemoe.validate.common import bare_headline, claims_only, context, factor, headline, row, sweep_config
from wsemoe.wording import number

SWEEPS = (("bta_experts", "experts", "E 8→128 at top-k 8"), ("bta_topk", "topk", "top-k 8→1 at E 128"))
PAPER = "abstract (SC25 programme page)"
DOCS = "Cerebras BTA documentation, Performance Impact"
SPEEDUP = 5.0  # "up to 5×"


def bta_points(name: str, cfg=None):
    """(config at BTA's reading, every evaluated point) of a BTA sweep."""
    cfg = figures.at(sweep_config(name) if cfg is None else cfg, figures.BTA)
    return cfg, chunked.evaluate(cfg)


def bta_comparison(name: str, cfg=None, points=None):
    """Comparison table (uniform vs best BTA) of a BTA sweep at BTA's reading, ordered by rising sparsity
    (`points`: the sweep's evaluated points from `bta_points`, evaluated here when not given)."""
    cfg, df = points if points is not None else bta_points(name, cfg)
    table = comparison_table(df, cfg)
    k = table.get("model.num_experts_per_tok", cfg.model.num_experts_per_tok)
    e = table.get("model.num_experts", cfg.model.num_experts)
    table["density"] = k / e
    return table.sort_values("density", ascending=False).reset_index(drop=True)


def _kilo(values) -> str:
    return " → ".join(f"{v / 1e3:.1f}k" for v in values)


def _trend_rows(key: str, label: str, t, reading: str) -> list[dict]:
    uni, bta = t["baseline_tokens_per_s"].to_numpy(), t["best_tokens_per_s"].to_numpy()
    step = float(np.max(uni[1:] / uni[:-1]))
    flat = float(bta.max() / bta.min())
    return [
        row(f"bta.falls.{key}", f"uniform batching (G = 1, best B) tokens/s falls as sparsity grows ({label})",
            f"falls ({DOCS}: 'throughput degradation as sparsity increases')", step,
            lambda x: f"{x:.3f}", model=f"{_kilo(uni)} (largest step ratio {step:.3f})", source=DOCS, reading=reading),
        row(f"bta.flat.{key}", f"BTA (best G, B) tokens/s as sparsity grows ({label})",
            f"nearly flat ({DOCS}: 'throughput remains stable')", flat, lambda x: f"{x:.3f}",
            model=f"{_kilo(bta)} (max/min {flat:.3f})", source=DOCS, reading=reading),
    ]


def _slowdown(key: str, claim: str, published: str, value: float, reading: str) -> dict:
    return row(f"bta.docs.{key}", claim, f"{published} ({DOCS})", value, factor,
               model=f"{100 * (1 - 1 / value):.0f}% slower ({value:.2f}×)", source=DOCS, reading=reading)


def edge_reach(cfg, df) -> tuple[float, str]:
    """How far toward the ends of the B and G axes a sweep's best throughput forces each side: per sparsity
    point and side, the reach (largest of B/B_max, G/G_max) of the design `compare.nearest_interior` reads, of
    those tied with the best (tokens/s equal to rounding: at a fixed B·G, B 1 G 64 and B 8 G 8 are the same step)
    the one nearest the interior. 1.0 only when every tied design sits at an axis's end, i.e. the axis, not the
    model, caps the best; a tie-break that happens to pick the end design among interior equals does not count."""
    feas = df[np.asarray(df["feasible"], dtype=bool)]
    group, _ = group_keys(cfg)
    worst, where = 0.0, ""
    for side, mask, fixed in (("BTA", candidate_mask(feas, cfg), cfg.compare.candidate),
                              ("uniform", baseline_mask(feas, cfg), cfg.compare.baseline)):
        rows = feas[mask].reset_index(drop=True)
        tops = {a: t for a, t in end_tops(cfg, fixed).items() if a in rows}
        codes = rows.groupby(group, observed=True).ngroup().to_numpy() if group else np.zeros(len(rows), dtype=int)
        reaches = reach(rows, tops)
        metric = np.asarray(rows[cfg.compare.metric], dtype=float)
        near = nearest_interior(metric, np.ones(len(rows), dtype=bool), codes, int(codes.max(initial=-1)) + 1, reaches)
        for i in near[0][near[0] >= 0]:   # groups in groupby's order, as before: the last of equal reaches is named
            if reaches[i] >= worst:
                worst = float(reaches[i])
                where = f"{side} " + ", ".join(f"{a.split('.')[-1]} {int(rows[a].iloc[i])} of {int(t)}"
                                               for a, t in tops.items())
    return worst, where


def edges(points: dict, reading: str) -> dict:
    """Property: at BTA's reading, each side's best throughput in the BTA sweeps is reached by some design
    below the largest B and G swept (`points`: name → `bta_points`)."""
    worst, where = 0.0, ""
    for name, (cfg, df) in points.items():
        v, w = edge_reach(cfg, df)
        if v >= worst:
            worst, where = v, f"{name}: {w}"
    return row("bta.edges", "no best design of the BTA sweeps (either side) needs the largest B or G swept "
               "(some design tied with the best is below both ends)", "— (the sweeps' ranges)", worst,
               lambda x: f"{x:.2f}", kind="property",
               model=f"nearest-interior tied best over the axes' ends {worst:.2f} ({where})", reading=reading)


def baseline_loss(result) -> dict:
    """Uniform batching's loss from top-k 8 to top-k 1 in every combination of a readings study of bta_topk:
    at the default readings, and its smallest and largest."""
    v = result.values.merge(result.runs, on="run")
    v = v[(v["role"] == "combination") & (v["quantity"] == "baseline_tokens_per_s")]
    p = v.pivot_table(index="run", columns="group", values="value")
    loss = p["num_experts_per_tok=8"] / p["num_experts_per_tok=1"]
    runs = result.runs.set_index("run")
    default = runs.index.to_series().map(lambda i: all(runs.loc[i, s["name"]] == s["default"]
                                                         for s in result.meta["readings"] if s["state"] == "varied"))
    return {"default": float(loss[default.reindex(loss.index).fillna(False)].iloc[0]), "low": float(loss.min()),
            "high": float(loss.max())}


def at_edges(result) -> str:
    """'; 2 of 18 combinations tune to an axis end (attn_kernel=flash, hold=width: B 128; ...)': the combinations
    of a readings study in which, in some group and side, the design tied with the best nearest the interior
    (`robustness.ends`, `compare.nearest_interior`: the rule of `edge_reach`) sits at the largest value a tuned
    axis sweeps: the axis, not the model, caps that best."""
    hits = robustness.ends(result)
    hits = hits[hits["role"] == "combination"]
    if not len(hits):
        return ""
    named = {label: sorted({f"{a} {number(t)}" for a, t in zip(h["short"], h["top"])})
             for label, h in hits.groupby("label", sort=False)}
    return f"; {len(named)} of {result.meta['combinations']} combinations tune to an axis end (" + "; ".join(
        f"{label}: {', '.join(a)}" for label, a in named.items()) + ")"


def bta_rows() -> list[dict]:
    """Trends, the documentation's two losses, the headline with its range over readings, the sweeps' edges."""
    reading = figures.label(figures.BTA)
    points = {name: bta_points(name) for name, _, _ in SWEEPS}
    tables = {name: bta_comparison(name, points=points[name]) for name in points}
    rows = [r for name, key, label in SWEEPS for r in _trend_rows(key, label, tables[name], reading)]
    e, k = tables["bta_experts"], tables["bta_topk"]
    drop_e = float(e["baseline_tokens_per_s"].iloc[0] / e["baseline_tokens_per_s"].iloc[-1])
    drop_k = float(k["baseline_tokens_per_s"].iloc[0] / k["baseline_tokens_per_s"].iloc[-1])
    rows.append(_slowdown("experts", "uniform batching slowdown, E 128 vs E 8 (top-k 8)", "up to 53% slower (2×)",
                          drop_e, reading))
    slowdown_k = _slowdown("topk", "uniform batching slowdown, top-k 1 vs top-k 8 (E 128)", "up to 86% slower (7×)",
                           drop_k, reading)
    s = float(k["speedup_vs_uniform"].iloc[-1])
    check = row("bta.speedup", "BTA speedup in tokens/s at E 128, top-k 1", f"up to {SPEEDUP:g}× ({PAPER})", s,
                model=f"{s:.2f}× (G={int(k['best_G'].iloc[-1])}, B={int(k['best_B'].iloc[-1])}; uniform B="
                f"{int(k['baseline_B'].iloc[-1])})", source=PAPER, reading=reading)
    if claims_only():  # the statuses follow from the values; the ranges over readings and context are skipped
        return rows + [bare_headline(slowdown_k), bare_headline(check), edges(points, reading)]
    cfg_k = figures.at(sweep_config("bta_topk"), figures.BTA)
    study_k = study.evaluate(cfg_k)
    over = f"{study_k.meta['combinations']} combinations of {', '.join(study_k.varied)}" + at_edges(study_k)
    loss = baseline_loss(study_k)
    rows.append(headline(slowdown_k, 7.0, f"{loss['default']:.2f}×", float(loss["low"]), float(loss["high"]), over))
    summary = study_k.summary()
    top = summary[(summary["quantity"] == "speedup_vs_uniform") & (summary["group"] == "num_experts_per_tok=1")].iloc[0]
    rows.append(headline(check, SPEEDUP, f"{top['default']:.2f}×", float(top["low"]), float(top["high"]), over))
    rows.append(edges(points, reading))
    g = max(int(t["best_G"].max()) for t in tables.values())
    rows.append(context("bta.G", "largest tuned G over both sweeps (G swept 1…64)", "not stated in the abstract",
                        f"G = {g}", "the abstract publishes no G; the tuned G is the model's own", reading=reading))
    rows.append(context("bta.docs.against_bta", "the documentation's losses read against BTA instead: speedup at "
                        "E 128 top-k 8 and at top-k 1", "2× and 7× (the other reading of 'slower')",
                        f"{float(k['speedup_vs_uniform'].iloc[0]):.2f}× and {s:.2f}×",
                        "the documentation's words ('degradation as sparsity increases') pick uniform batching "
                        "against itself; with BTA flat the two readings differ by BTA's gain at top-k 8",
                        reading=reading))
    return rows
