"""Calibration as a procedure: the unknowns fitted to public targets, under every reading, with what it means.

A target is a published figure, a function of the sampled quantities of the BTA sweeps, a kind (`equal`,
`at_most`, `at_least`) and a tolerance σ (a factor, compared in log units); the fit minimizes χ² = Σ
(residual/σ)² over the unknowns' ranges, whose ends come from sources (`analysis/uncertainty/data/unknowns.yaml`), so no
fitted value leaves them. Each combination of the readings the BTA sweeps depend on is fitted separately
(χ² per reading: which reading explains the published figures best, and by how much); in each, unknowns that
move no target's residual (total-effect index below 0.01) are reported unidentifiable and kept at nominal;
each target's leave-one-out residual says how well the others predict it. Nothing edits a preset: `run`
writes the fit at the default readings as a preset file to review, beside a copy of the original.
"""

from __future__ import annotations

import difflib
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd
import yaml

from wsemoe.analysis.uncertainty import fitting
from wsemoe.store import writer
from wsemoe.analysis.uncertainty.sampled import Sampled
from wsemoe.analysis.uncertainty.shipped import shipped_needs
from wsemoe.analysis.uncertainty.unknowns import Unknown
from wsemoe.arguments import flag, whole
from wsemoe.config import presets
from wsemoe.config import readings as registry
from wsemoe.config.reference import input_unit
from wsemoe.wording import span

FACTOR = float(np.log(1.4))  # σ of a published factor: reproduced within ×/÷ 1.4
MISSING = 10.0                # residual (σ units) of a target the model cannot evaluate (no feasible point)
BTA_SWEEPS = ("bta_experts", "bta_topk")
# The calibration grid: B and G with steps of at most ~12% (a best design found on it lies within a few percent of
# the shipped sweeps'), B to 512 so that S = 2048 (four times the batch of S = 8192) stays inside it.
GRID_B = sorted({int(round(1.12 ** i)) for i in range(0, 56)} | {512})
GRID_G = sorted({int(round(1.12 ** i)) for i in range(0, 37)} | {64})


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


def bta_targets(unknowns: list[Unknown], hardware: str, choice: dict | None = None) -> list[Target]:
    """The public BTA targets (the documentation's losses read as validate reads them, the paper's 5×, flat BTA,
    falling baseline) and Cerebras' shipped micro-batches fitting the usable SRAM under the same reading."""
    paper, docs = "Soboleva et al., abstract", "Cerebras BTA documentation, Performance Impact"
    targets = [
        Target("uniform slowdown E 128 vs E 8 (top-k 8)", "up to 53% slower (2×)", docs, _drop("bta_experts"), 2.0),
        Target("uniform slowdown top-k 1 vs 8 (E 128)", "up to 86% slower (7×)", docs, _drop("bta_topk"), 7.0),
        Target("BTA speedup at E 128, top-k 1", "up to 5×", paper,
               lambda q, x: q["bta_topk"]["speedup_vs_uniform"][:, -1], 5.0),
        Target("BTA max/min tokens/s across E", "nearly flat", docs, _flat("bta_experts"), 1.2, "at_most"),
        Target("BTA max/min tokens/s across top-k", "nearly flat", docs, _flat("bta_topk"), 1.2, "at_most"),
        Target("uniform tokens/s never rises with sparsity (E)", "falls", docs, _rise("bta_experts"), 1.0, "at_most"),
        Target("uniform tokens/s never rises with sparsity (top-k)", "falls", docs, _rise("bta_topk"), 1.0, "at_most"),
    ]
    names = [u.name for u in unknowns]
    shipped = {k: v for k, v in (choice or {}).items() if k in ("attn_kernel", "kept_activations")}
    need = max(n.need for n in shipped_needs(presets.load_hardware(hardware), shipped))
    j = names.index("memory_usable_fraction") if "memory_usable_fraction" in names else None
    usable = presets.load_hardware(hardware).memory_usable_fraction
    targets.append(Target(SHIPPED, f"largest need {need:.3f} of SRAM",
                          "Cerebras Model Zoo 2.10 configs",
                          (lambda q, x: need / x[:, j]) if j is not None else (lambda q, x: np.full(len(x), need / usable)),
                          1.0, "at_most"))
    return targets


class Problem:
    """The BTA sweeps under one reading with the unknowns as columns: target values and residuals of samples."""

    def __init__(self, sweeps: dict, targets: list[Target], unknowns: list[Unknown]):
        self.sampled = {n: Sampled(c, unknowns) for n, c in sweeps.items()}
        self.targets, self.unknowns = targets, unknowns
        self.free = list(range(len(unknowns)))
        self.nominal = np.array([u.nominal for u in unknowns])

    def only(self, free: list[int]) -> "Problem":
        """The same problem with only the unknowns `free` varied (the others at nominal)."""
        out = object.__new__(Problem)
        out.__dict__.update(self.__dict__, free=list(free))
        return out

    def values(self, X: np.ndarray) -> np.ndarray:
        """(n, T) target values at unknown values X (n, d) in their units."""
        q = {name: s.evaluate(X) for name, s in self.sampled.items()}
        return np.column_stack([t.value(q, X) for t in self.targets])

    def to_values(self, U: np.ndarray) -> np.ndarray:
        """Unit samples of the free unknowns to values of every unknown (the others at nominal)."""
        X = np.tile(self.nominal, (len(U), 1))
        for k, j in enumerate(self.free):
            X[:, j] = self.unknowns[j].value(U[:, k])
        return X

    def residuals(self, U: np.ndarray) -> np.ndarray:
        v = self.values(self.to_values(U))
        return np.column_stack([t.residual(v[:, i]) for i, t in enumerate(self.targets)])


def fit(sweeps: dict, targets: list[Target], unknowns: list[Unknown], samples: int = 32, seed: int = 1,
        screen: int = 8) -> "Fit":
    """Screen the unknowns, then fit the identifiable ones; residuals at nominal and at the fit, leave-one-out."""
    samples = whole(samples, "--samples", 8, 100_000)
    everything = Problem(sweeps, targets, unknowns)
    effect, index = fitting.total_effects(everything.residuals, len(unknowns), screen, seed) if unknowns else \
        (np.zeros((0, 1)), np.zeros((0, 1)))
    sensitive = effect.max(axis=1) >= fitting.IDENTIFIABLE
    problem = everything.only([j for j in range(len(unknowns)) if sensitive[j]])
    s = fitting.search(problem.residuals, len(problem.free), samples, seed)
    X = problem.to_values(s.U)
    best = X[s.best]
    near = X[s.chi2 <= s.chi2[s.best] + 1.0]
    spread = np.column_stack([near.min(axis=0), near.max(axis=0)])
    nominal = problem.values(problem.nominal[None, :])[0]
    fitted = problem.values(best[None, :])[0]
    loo = fitting.leave_one_out(s)
    rows = [{"target": t.name, "published": t.published, "source": t.source, "kind": t.kind, "goal": t.goal,
             "nominal": nominal[k], "fitted": fitted[k], "residual_sigma": float(s.R[s.best, k]),
             "loo_sigma": float(loo[k])} for k, t in enumerate(targets)]
    names = pd.Index([u.name for u in unknowns], name="unknown")
    return Fit(unknowns, pd.Series(best, index=names, name="fitted"),
               pd.DataFrame(spread, index=names, columns=["low", "high"]), pd.DataFrame(rows), float(s.chi2[s.best]),
               int(len(s.U) + (len(unknowns) + 1) * screen), effect.max(axis=1), sensitive)


@dataclass
class Fit:
    """The fitted unknowns with their spread, every target's residual and leave-one-out residual, the total-effect
    index of each unknown (its largest over the targets) and which were identifiable (fitted)."""

    unknowns: list[Unknown]
    best: pd.Series             # fitted value, indexed by the unknown's name (nominal where unidentifiable)
    spread: pd.DataFrame        # columns low, high: each unknown's range within χ²_min + 1, indexed by name
    residuals: pd.DataFrame     # per target: published, model at nominal and at the fit, residual, leave-one-out (σ)
    chi2: float
    samples: int
    index: np.ndarray           # (d,) largest total effect over the targets (RMS change of a residual, σ)
    identifiable: np.ndarray    # (d,) bool


def calibration_sweeps(hardware: str, choice: dict) -> dict:
    """The BTA sweeps on `hardware` under a reading, on the calibration grid."""
    from wsemoe.config.loader import load_config

    sweeps_dir = Path(__file__).resolve().parents[2] / "validate" / "sweeps"
    out = {}
    for name in BTA_SWEEPS:
        cfg = load_config(sweeps_dir / f"{name}.yaml")
        cfg = cfg.model_copy(update={"hardware": type(cfg.hardware).model_validate(presets.raw("hardware", hardware)),
                                     "axes": {**cfg.axes, "workload.B": GRID_B, "workload.G": GRID_G}})
        out[name] = registry.apply(cfg, choice) if choice else cfg
    return out


def combinations(hardware: str, only_readings=()) -> list[dict]:
    """Every combination of the readings the BTA sweeps vary ({reading: option}), the defaults first."""
    from wsemoe.analysis.uncertainty import readings as study

    cfg = calibration_sweeps(hardware, {})["bta_topk"]
    _, varied, _ = study.plan(cfg, only_readings, option="--reading")
    combos = [c for role, c in study.design(varied) if role == "combination"] if varied else [{}]
    default = {st.reading.name: st.reading.default for st in varied}
    return sorted(combos, key=lambda c: c != default)


def at_edge(u: Unknown, value: float) -> bool:
    """True when a fitted value sits within 2% of its range's end: the targets push it against its bound."""
    if u.values is not None:
        return False
    lo, hi = (np.log(u.low), np.log(u.high)) if u.scale == "log" else (u.low, u.high)
    v = np.log(value) if u.scale == "log" else value
    return bool(min(v - lo, hi - v) <= 0.02 * (hi - lo))


def _preset_text(fields: dict, header: str = "") -> str:
    return header + yaml.safe_dump(fields, sort_keys=False, width=120, allow_unicode=True)


def calibrated_preset(hardware: str, result: Fit, label: str) -> tuple[str, str, dict]:
    """(original preset text, fitted preset text, fields set outside the preset such as seq_len)."""
    raw = presets.raw("hardware", hardware)
    fitted, elsewhere = {**raw, "sources": dict(raw.get("sources", {}))}, {}
    for u, v, (lo, hi), free in zip(result.unknowns, result.best, result.spread.to_numpy(), result.identifiable):
        if not free:
            continue
        for path in u.paths:
            section, _, field = path.partition(".")
            value = float(f"{v:.4g}")
            if section != "hardware":
                elsewhere[path] = int(value) if path == "workload.seq_len" else value
                continue
            fitted[field] = value
            fitted["sources"][field] = (f"calibrated by wsemoe calibrate at {label}: {value:g} (spread "
                                        f"{span(f'{lo:.4g}', f'{hi:.4g}')}, χ² {result.chi2:.2f}); was {raw.get(field)!r}")
    fitted["name"] = f"{hardware}-calibrated"
    header = (f"# {hardware} with its calibration unknowns fitted to public targets (wsemoe calibrate, {label}).\n"
              f"# Not a shipped preset: review the diff and residuals beside this file before using it.\n")
    if elsewhere:
        header += "# Fitted outside the preset (set them in the sweep): " + ", ".join(
            f"{k} = {v:g}" for k, v in elsewhere.items()) + "\n"
    return _preset_text(raw), _preset_text(fitted, header), elsewhere


def label(choice: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in choice.items()) or "the sweeps' own readings"


def fit_readings(hardware: str, us: list[Unknown], samples: int, seed: int, readings=(), on_progress=None):
    """[(reading, Fit)] for every combination of the readings, the default readings first."""
    out = []
    combos = combinations(hardware, readings)
    for k, choice in enumerate(combos):
        sweeps = calibration_sweeps(hardware, choice)
        out.append((choice, fit(sweeps, bta_targets(us, hardware, choice), us, samples=samples, seed=seed)))
        if on_progress:
            on_progress(k + 1, len(combos))
    return out


def run(hardware: str = "cs2", out_dir=None, samples: int = 32, seed: int = 1, unknowns_file=None, only=(),
        readings=(), on_progress=None, force: bool = False):
    """Fit the BTA targets on `hardware` under every reading; write the fit at the default readings as a preset
    to review (beside the original, with the diff), and per-reading χ², residuals and leave-one-out tables.
    The folder (default results/calibration-<hardware>/) is checked before the fit (`store/writer.py`): only an
    earlier calibration is replaced (of another preset with `force`), never a folder wsemoe did not write."""
    from wsemoe.analysis.uncertainty import unknowns as unknowns_mod

    t0 = time.perf_counter()
    seed = unknowns_mod.check_seed(seed)   # a plain int: numpy's int64 is no JSON
    force = flag(force, "force")
    us = unknowns_mod.select(unknowns_mod.load(hardware, unknowns_file), only)
    path = Path(out_dir) if out_dir else Path("results") / f"calibration-{hardware}"
    writer.check_folder(path, "calibrate", force, key=hardware)
    fits = fit_readings(hardware, us, samples, seed, readings, on_progress)
    (default_choice, result) = fits[0]
    original, fitted, elsewhere = calibrated_preset(hardware, result, label(default_choice))
    diff = "".join(difflib.unified_diff(original.splitlines(True), fitted.splitlines(True),
                                        f"{hardware}.yaml", f"{hardware}-calibrated.yaml"))
    table = unknown_table(result)
    per_reading = reading_table(fits)
    meta = {"hardware": hardware, "default_readings": label(default_choice), "chi2": result.chi2,
            "samples": result.samples, "seed": seed, "fitted_outside_preset": elsewhere, "sweeps": list(BTA_SWEEPS),
            "readings": len(fits), "seconds": round(time.perf_counter() - t0, 1)}
    residuals = pd.concat([f.residuals.assign(reading=label(c)) for c, f in fits], ignore_index=True)
    writer.write_folder(path, {f"{hardware}.yaml": original, f"{hardware}-calibrated.yaml": fitted,
                               f"{hardware}-calibrated.diff": diff, "fit.csv": table.to_csv(index=False),
                               "residuals.csv": residuals.to_csv(index=False),
                               "readings.csv": per_reading.to_csv(index=False),
                               "fit.json": json.dumps(meta, indent=2)}, "calibrate", force, key=hardware)
    return fits, table, per_reading, path, meta


def unknown_table(result: Fit) -> pd.DataFrame:
    """Per unknown: its unit, nominal, fitted (nominal when unidentifiable), spread, range with the source of each
    end."""
    return pd.DataFrame([{"unknown": u.name, "unit": input_unit(u.paths[0]), "nominal": u.nominal, "fitted": v, "spread_low": lo, "spread_high": hi,
                          "range_low": u.low, "range_high": u.high, "identifiable": bool(free), "effect_sigma": float(ix),
                          "at_edge": bool(free) and at_edge(u, v), "low_source": u.bounds[0], "high_source": u.bounds[1]}
                         for u, v, (lo, hi), free, ix in zip(result.unknowns, result.best, result.spread.to_numpy(),
                                                             result.identifiable, result.index)])


SHIPPED = "every shipped micro-batch fits the usable SRAM"


def reading_table(fits) -> pd.DataFrame:
    """Per reading: χ² (and its parts: BTA's published figures, Cerebras' shipped micro-batches), its distance
    from the best, the fitted and the unidentifiable unknowns."""
    best = min(f.chi2 for _, f in fits)
    rows = []
    for choice, f in fits:
        fitted = [f"{u.name} {v:.4g}" + (f" {unit}" if (unit := input_unit(u.paths[0])) not in ("", "1") else "")
                  for u, v, free in zip(f.unknowns, f.best, f.identifiable) if free]
        r2 = f.residuals.set_index("target")["residual_sigma"] ** 2
        rows.append({**choice, "chi2": f.chi2, "chi2_bta": float(r2.drop(SHIPPED).sum()),
                     "chi2_shipped": float(r2.get(SHIPPED, 0.0)), "delta_chi2": f.chi2 - best,
                     "fitted": "; ".join(fitted), "unidentifiable": ", ".join(
                         u.name for u, free in zip(f.unknowns, f.identifiable) if not free)})
    return pd.DataFrame(rows)
