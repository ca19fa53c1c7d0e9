"""Calibration as a procedure: the unknowns fitted to public targets by a bounded search, with residuals.

A target is a published figure, a function of the sampled quantities of one or more sweeps, a kind
(`equal`, `at_most`, `at_least`) and a tolerance σ (a factor, compared in log units). The search
evaluates a scrambled Sobol sample of the unknowns' box through the engine (vectorized), then a second
sample in a box around the best point; the fit minimizes χ² = Σ (residual/σ)². The spread of each
unknown is its range over every evaluated sample within χ²_min + 1. Nothing edits a preset: `run`
writes the fitted preset beside a copy of the original, with the diff and the residuals.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd
import yaml

from wsemoe.analysis.folders import replace_folder
from wsemoe.analysis.sampled import Sampled
from wsemoe.analysis.shipped import shipped_needs
from wsemoe.analysis.unknowns import Unknown
from wsemoe.config import presets
from wsemoe.config.reference import input_unit
from wsemoe.errors import ConfigError

FACTOR = float(np.log(1.4))  # σ of a published factor: reproduced within ×/÷ 1.4
MISSING = 10.0                # residual (σ units) of a target the model cannot evaluate (no feasible point)


@dataclass(frozen=True)
class Target:
    """A published figure the unknowns are fitted to."""

    name: str
    published: str
    source: str
    value: Callable      # (quantities by sweep, unknown values (n, d)) -> array (n,)
    goal: float
    kind: str = "equal"  # equal | at_most | at_least
    sigma: float = FACTOR

    def residual(self, v: np.ndarray) -> np.ndarray:
        """Signed misfit in σ units (0 where an inequality holds); MISSING where the model gives nothing."""
        with np.errstate(divide="ignore", invalid="ignore"):
            r = np.log(np.asarray(v, dtype=float) / self.goal) / self.sigma
        if self.kind == "at_most":
            r = np.maximum(r, 0.0)
        elif self.kind == "at_least":
            r = np.minimum(r, 0.0)
        return np.where(np.isfinite(r), r, MISSING)


def _drop(sweep):
    return lambda q, x: q[sweep]["baseline_tokens_per_s"][:, 0] / q[sweep]["baseline_tokens_per_s"][:, -1]


def _flat(sweep):
    def ratio(q, x):
        best = q[sweep]["best_tokens_per_s"]
        return np.nanmax(best, axis=1) / np.nanmin(best, axis=1)
    return ratio


def _rise(sweep):  # the largest step up of the baseline as sparsity grows (≤ 1: falls throughout)
    return lambda q, x: np.nanmax(q[sweep]["baseline_tokens_per_s"][:, 1:] / q[sweep]["baseline_tokens_per_s"][:, :-1],
                                  axis=1)


def bta_targets(unknowns: list[Unknown], hardware: str) -> list[Target]:
    """The public BTA targets: the docs' slowdowns, the paper's 5×, flat BTA, falling baseline, large G, and
    Cerebras' shipped micro-batches fitting the usable SRAM."""
    paper, docs = "Soboleva et al., SC Workshops '25", "Cerebras training docs, Batch Tiling on Attention"
    targets = [
        Target("uniform slowdown E 128 vs E 8 (top-k 8)", "up to 53% slower (2×)", docs, _drop("bta_experts"), 2.0),
        Target("uniform slowdown top-k 1 vs 8 (E 128)", "up to 86% slower (7×)", docs, _drop("bta_topk"), 7.0),
        Target("BTA speedup at E 128, top-k 1", "up to 5×", paper,
               lambda q, x: q["bta_topk"]["speedup_vs_uniform"][:, -1], 5.0),
        Target("BTA max/min tokens/s across E", "nearly flat", paper, _flat("bta_experts"), 1.2, "at_most"),
        Target("BTA max/min tokens/s across top-k", "nearly flat", paper, _flat("bta_topk"), 1.2, "at_most"),
        Target("uniform tokens/s never rises with sparsity (E)", "falls", paper, _rise("bta_experts"), 1.0, "at_most"),
        Target("uniform tokens/s never rises with sparsity (top-k)", "falls", paper, _rise("bta_topk"), 1.0, "at_most"),
        Target("largest tuned G", "G up to 64", paper, lambda q, x: np.nanmax(
            np.hstack([q["bta_experts"]["best_G"], q["bta_topk"]["best_G"]]), axis=1), 32.0, "at_least"),
    ]
    names = [u.name for u in unknowns]
    if "memory_usable_fraction" in names:
        need = max(n[3] for n in shipped_needs(presets.load_hardware(hardware)))
        j = names.index("memory_usable_fraction")
        targets.append(Target("every shipped micro-batch fits the usable SRAM", f"largest need {need:.3f} of SRAM",
                              "Cerebras Model Zoo 2.10 configs", lambda q, x: need / x[:, j], 1.0, "at_most"))
    return targets


@dataclass
class Fit:
    """The fitted unknowns with their spread, every target's residual, and all evaluated samples."""

    unknowns: list[Unknown]
    best: pd.Series             # fitted value, indexed by the unknown's name
    spread: pd.DataFrame        # columns low, high: each unknown's range within χ²_min + 1, indexed by name
    residuals: pd.DataFrame     # per target: published, model at nominal and at the fit, residual (σ)
    chi2: float
    samples: int


def _evaluate(sweeps: dict[str, Sampled], targets, X: np.ndarray, on_progress=None, done: int = 0, total: int = 0):
    """(target values, χ²) per row of X; `on_progress` hears of samples done (from `done`, of `total`)."""
    q = {}
    for j, (name, s) in enumerate(sweeps.items()):
        tell = (lambda d, t, j=j: on_progress(done + j * len(X) + d, total, name)) if on_progress else None
        q[name] = s.evaluate(X, tell)
    vals = np.column_stack([t.value(q, X) for t in targets])
    res = np.column_stack([t.residual(vals[:, i]) for i, t in enumerate(targets)])
    return vals, (res ** 2).sum(axis=1)


def fit(sweeps: dict, targets: list[Target], unknowns: list[Unknown], samples: int = 512, seed: int = 1,
        on_progress=None) -> Fit:
    """Fit the unknowns to the targets: a Sobol sample of the box, then one around the best point.
    `on_progress(done, total, sweep)` counts the samples evaluated, sweep by sweep, stage by stage."""
    from scipy.stats import qmc

    if isinstance(samples, bool) or not isinstance(samples, int) or not 8 <= samples <= 100_000:
        raise ConfigError("samples must be a whole number in 8…100,000", loc=("--samples",))
    sampled = {n: Sampled(c, unknowns) for n, c in sweeps.items()}
    d = len(unknowns)
    to_values = lambda U: np.column_stack([u.value(U[:, j]) for j, u in enumerate(unknowns)])  # noqa: E731
    U1 = qmc.Sobol(d, seed=seed).random(samples)
    total = 2 * samples * len(sampled)
    vals1, chi1 = _evaluate(sampled, targets, to_values(U1), on_progress, 0, total)
    centre = U1[int(np.argmin(chi1))]
    U2 = np.clip(centre + (qmc.Sobol(d, seed=seed + 1).random(samples) - 0.5) / 4, 0, 1)  # a box 1/4 as wide
    vals2, chi2 = _evaluate(sampled, targets, to_values(U2), on_progress, total // 2, total)
    U, vals, chi = np.vstack([U1, U2]), np.vstack([vals1, vals2]), np.concatenate([chi1, chi2])
    X = to_values(U)
    i = int(np.argmin(chi))
    near = chi <= chi[i] + 1.0
    spread = np.column_stack([X[near].min(axis=0), X[near].max(axis=0)])
    nominal, _ = _evaluate(sampled, targets, np.array([[u.nominal for u in unknowns]]))
    rows = [{"target": t.name, "published": t.published, "source": t.source, "kind": t.kind, "goal": t.goal,
             "nominal": nominal[0, k], "fitted": vals[i, k], "residual_sigma": float(t.residual(vals[i, k:k + 1])[0])}
            for k, t in enumerate(targets)]
    names = pd.Index([u.name for u in unknowns], name="unknown")
    return Fit(unknowns, pd.Series(X[i], index=names, name="fitted"),
               pd.DataFrame(spread, index=names, columns=["low", "high"]), pd.DataFrame(rows), float(chi[i]), int(len(U)))


BTA_SWEEPS = ("bta_experts", "bta_topk")


def at_edge(u: Unknown, value: float) -> bool:
    """True when a fitted value sits within 2% of its range's end: the targets push it out of the range."""
    if u.values is not None:
        return False
    lo, hi = (np.log(u.low), np.log(u.high)) if u.scale == "log" else (u.low, u.high)
    v = np.log(value) if u.scale == "log" else value
    return bool(min(v - lo, hi - v) <= 0.02 * (hi - lo))


def _preset_text(fields: dict, header: str = "") -> str:
    return header + yaml.safe_dump(fields, sort_keys=False, width=120, allow_unicode=True)


def calibrated_preset(hardware: str, result: Fit) -> tuple[str, str, dict]:
    """(original preset text, fitted preset text, fields set outside the preset such as seq_len)."""
    raw = presets.raw("hardware", hardware)
    fitted, elsewhere = {**raw, "sources": dict(raw.get("sources", {}))}, {}
    for u, v, (lo, hi) in zip(result.unknowns, result.best, result.spread.to_numpy()):
        for path in u.paths:
            section, _, field = path.partition(".")
            value = float(f"{v:.4g}")
            if section != "hardware":
                elsewhere[path] = int(value) if path == "workload.seq_len" else value
                continue
            fitted[field] = value
            fitted["sources"][field] = (f"calibrated by wsemoe calibrate: {value:g} (spread {lo:.4g}–{hi:.4g}, "
                                        f"χ² {result.chi2:.2f}); was {raw.get(field)!r}")
    fitted["name"] = f"{hardware}-calibrated"
    header = (f"# {hardware} with its calibration unknowns fitted to public targets (wsemoe calibrate).\n"
              f"# Not a shipped preset: review the diff and residuals beside this file before using it.\n")
    if elsewhere:
        header += "# Fitted outside the preset (set them in the sweep): " + ", ".join(
            f"{k} = {v:g}" for k, v in elsewhere.items()) + "\n"
    return _preset_text(raw), _preset_text(fitted, header), elsewhere


def run(hardware: str = "cs2", out_dir=None, samples: int = 512, seed: int = 1, unknowns_file=None, only=(),
        on_progress=None):
    """Fit the BTA targets on `hardware` and write the original preset, the fitted one, their diff, the fit
    and the residuals into `out_dir` (default results/calibration-<hardware>/); the preset is untouched."""
    from wsemoe.analysis import unknowns as unknowns_mod
    from wsemoe.config.loader import load_config

    us = unknowns_mod.select(unknowns_mod.load(hardware, unknowns_file), only)
    sweeps_dir = Path(__file__).resolve().parents[1] / "validate" / "sweeps"
    sweeps = {}
    for name in BTA_SWEEPS:
        cfg = load_config(sweeps_dir / f"{name}.yaml")
        hw = {**presets.raw("hardware", hardware)}
        sweeps[name] = cfg.model_copy(update={"hardware": type(cfg.hardware).model_validate(hw)})
    result = fit(sweeps, bta_targets(us, hardware), us, samples=samples, seed=seed, on_progress=on_progress)
    original, fitted, elsewhere = calibrated_preset(hardware, result)
    diff = "".join(difflib.unified_diff(original.splitlines(True), fitted.splitlines(True),
                                        f"{hardware}.yaml", f"{hardware}-calibrated.yaml"))
    table = pd.DataFrame([{"unknown": u.name, "unit": input_unit(u.paths[0]), "nominal": u.nominal, "fitted": v,
                           "spread_low": lo, "spread_high": hi,
                           "range_low": u.low, "range_high": u.high, "at_edge": at_edge(u, v), "source": u.source}
                          for u, v, (lo, hi) in zip(us, result.best, result.spread.to_numpy())])
    meta = {"hardware": hardware, "chi2": result.chi2, "samples": result.samples, "seed": seed,
            "fitted_outside_preset": elsewhere, "sweeps": list(BTA_SWEEPS)}
    path = Path(out_dir) if out_dir else Path("results") / f"calibration-{hardware}"
    replace_folder(path, {f"{hardware}.yaml": original, f"{hardware}-calibrated.yaml": fitted,
                          f"{hardware}-calibrated.diff": diff, "fit.csv": table.to_csv(index=False),
                          "residuals.csv": result.residuals.to_csv(index=False),
                          "fit.json": json.dumps(meta, indent=2)})
    return result, table, path
