"""Global sensitivity of a sweep's results to the calibration unknowns (Sobol or Morris, with SALib).

Samples of the unknowns (unit cube → their ranges) go through the engine in one vectorized pass per
chunk (analysis.sampled). For every quantity and group (e.g. the BTA speedup per sparsity point) SALib
gives first-order and total Sobol indices (or Morris μ* and σ); the same samples give uncertainty bands
(5–50–95% quantiles), and the nominal values are evaluated beside them.
"""

from __future__ import annotations

import json
import math
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from wsemoe.analysis.uncertainty import unknowns as unknowns_mod
from wsemoe.analysis.uncertainty.sampled import ROWS_PER_CHUNK, Sampled
from wsemoe.arguments import choice, flag, whole
from wsemoe.errors import ConfigError
from wsemoe.store import ledger
from wsemoe.store import writer
from wsemoe.wording import number

METHODS = ("sobol", "morris")
QUANTILES = (0.05, 0.5, 0.95)
MAX_SAMPLES = 1_000_000


@dataclass
class Sensitivity:
    """Indices (one row per quantity, group, parameter), bands (one row per quantity and group), and metadata."""

    indices: pd.DataFrame
    bands: pd.DataFrame
    meta: dict


def problem(unknowns) -> dict:
    """SALib's problem in the unit cube (each unknown maps [0, 1] onto its own range and scale)."""
    return {"num_vars": len(unknowns), "names": [u.name for u in unknowns], "bounds": [[0.0, 1.0]] * len(unknowns)}


def design(unknowns, method: str, samples: int, seed: int) -> np.ndarray:
    """Unit-cube samples: Sobol (Saltelli) with N·(d+2) rows, N the smallest power of two reaching `samples`;
    Morris with enough trajectories of d+1 rows each."""
    choice(method, METHODS, "--method")
    samples = whole(samples, "--samples", 1, MAX_SAMPLES)
    d = len(unknowns)
    if method == "sobol":
        from SALib.sample import sobol

        n = 2 ** max(2, math.ceil(math.log2(max(samples / (d + 2), 1))))
        return sobol.sample(problem(unknowns), n, calc_second_order=False, seed=seed)
    from SALib.sample import morris

    return morris.sample(problem(unknowns), max(2, math.ceil(samples / (d + 1))), num_levels=4, seed=seed)


def _indices(method: str, prob: dict, X: np.ndarray, Y: np.ndarray, seed: int) -> dict:
    """{column: array per parameter} from SALib for one output vector."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SALib warns on constant outputs; their indices are reported as 0
        if np.ptp(Y) == 0:
            zero = np.zeros(prob["num_vars"])
            return {"S1": zero, "S1_conf": zero, "ST": zero, "ST_conf": zero} if method == "sobol" else \
                {"mu_star": zero, "mu_star_conf": zero, "sigma": zero}
        if method == "sobol":
            from SALib.analyze import sobol

            r = sobol.analyze(prob, Y, calc_second_order=False, seed=seed)
            return {k: np.asarray(r[k]) for k in ("S1", "S1_conf", "ST", "ST_conf")}
        from SALib.analyze import morris

        r = morris.analyze(prob, X, Y, seed=seed)
        return {k: np.asarray(r[k]) for k in ("mu_star", "mu_star_conf", "sigma")}


def prepare(config, hardware: str | None = None, method: str = "sobol", samples: int | None = None, seed: int = 1,
            unknowns_file=None, only=()) -> tuple[Sampled, np.ndarray]:
    """The sweep bound to its hardware's unknowns and the unit-cube design: every input checked before any
    evaluation (so a bad option leaves nothing behind). `samples` None: `default_samples`."""
    from wsemoe.config.loader import load_config

    cfg = load_config(config)
    seed = unknowns_mod.check_seed(seed)
    hw = hardware or cfg.hardware.name
    systems = {cfg.hardware.name, *(v for f in cfg.factors() for v in f.get("hardware", []))}
    if hw not in systems:   # another system's ranges applied to this sweep's points, stored as its uncertainty
        raise ConfigError(f"hardware '{hw}' is not a system of this sweep ({', '.join(sorted(systems))})",
                          loc=("hardware",))
    unknowns = unknowns_mod.select(unknowns_mod.load(hw, unknowns_file, named_by="hardware"), only)
    if samples is None:
        samples = default_samples(len(unknowns), method, cfg.size())
    rows, points = design_rows(len(unknowns), method, samples), cfg.size()
    if rows * points > MAX_EVALUATIONS:  # counted before the frame, the design or any evaluation is made
        raise ConfigError(f"{rows:,} samples × {points:,} points = {rows * points:,} evaluations; at most "
                          f"{MAX_EVALUATIONS:,}: fewer samples, or a smaller sweep", loc=("--samples",))
    return Sampled(cfg, unknowns), design(unknowns, method, samples, seed)


MAX_EVALUATIONS = 50_000_000  # samples × sweep points one analysis evaluates (the sweep's own default point limit)
DEFAULT_SAMPLES = 10_000       # what the design aims at when the sweep is small
DEFAULT_EVALUATIONS = 1 << 24  # ... and no more than this many samples × points by default (16.8 M: about 20 s on
# one core of a 2-core machine, twice that under load; bta_topk's 32,768 points get 448 Sobol rows). Fewer samples
# widen the indices' confidence intervals, which are shown beside them; --samples asks for more.


def default_samples(d: int, method: str, points: int) -> int:
    """The samples a run takes unless told: DEFAULT_SAMPLES, or fewer where samples × points would pass
    DEFAULT_EVALUATIONS (never below the smallest design: Sobol base 4, Morris 2 trajectories)."""
    samples = DEFAULT_SAMPLES
    while samples > 1 and design_rows(d, method, samples) * max(points, 1) > DEFAULT_EVALUATIONS:
        smaller = samples // 2
        if design_rows(d, method, smaller) == design_rows(d, method, samples):
            break
        samples = smaller
    return samples


def estimate(prepared) -> tuple[float, float]:
    """(seconds the analysis will take, seconds per point evaluation), measured before it starts: one chunk of
    the design's first samples is evaluated and timed (a chunk is what every later step does, so its per-point
    time carries over; one sample alone would miss the chunk's fixed costs)."""
    sampled, U = prepared
    per = max(1, ROWS_PER_CHUNK // max(sampled.points, 1))
    head = U[:per]
    values = np.column_stack([u.value(head[:, j]) for j, u in enumerate(sampled.unknowns)])
    t0 = time.perf_counter()
    sampled.evaluate(values)
    each = (time.perf_counter() - t0) / (len(head) * max(sampled.points, 1))
    return each * (len(U) + 1) * sampled.points, each


def design_rows(d: int, method: str, samples) -> int:
    """Rows `design` makes for `d` unknowns, computed without making them (0 without unknowns); `samples` is
    refused as `design` refuses it."""
    samples = whole(samples, "--samples", 1, MAX_SAMPLES)
    if d < 1:
        return 0
    if method == "sobol":
        return 2 ** max(2, math.ceil(math.log2(max(samples / (d + 2), 1)))) * (d + 2)
    return max(2, math.ceil(samples / (d + 1))) * (d + 1)


def analyse(config, hardware: str | None = None, method: str = "sobol", samples: int | None = None, seed: int = 1,
            unknowns_file=None, only=(), on_progress=None, prepared=None) -> Sensitivity:
    """Sensitivity of every quantity of a sweep to the unknowns of its hardware (nothing is written)."""
    t0 = time.perf_counter()
    seed = unknowns_mod.check_seed(seed)   # stored below as a plain int (numpy's int64 is no JSON), `prepared` or not
    sampled, U = prepared or prepare(config, hardware, method, samples, seed, unknowns_file, only)
    unknowns, hw = sampled.unknowns, hardware or sampled.cfg.hardware.name
    values = np.column_stack([u.value(U[:, j]) for j, u in enumerate(unknowns)])
    Y = sampled.evaluate(values, on_progress)
    nominal = sampled.evaluate(np.array([[u.nominal for u in unknowns]]))
    prob, labels = problem(unknowns), sampled.group_labels()
    rows, bands = [], []
    for q, arr in Y.items():
        per_group = arr.shape[1] == len(labels) and q.split("_")[0] != "sweep"
        for g, label in enumerate(labels if per_group else ["sweep"]):
            y = arr[:, g]
            finite = np.isfinite(y)
            qs = np.quantile(y[finite], QUANTILES) if finite.any() else [np.nan] * 3
            keys = dict(zip(sampled.groups.columns, sampled.groups.iloc[g])) if per_group else {}
            bands.append({"quantity": q, "group": label, **keys, "nominal": nominal[q][0, g],
                          "q05": qs[0], "q50": qs[1], "q95": qs[2], "nonfinite": int((~finite).sum())})
            if not finite.all():
                continue  # SALib needs every sample: a quantity undefined somewhere gets bands, not indices
            idx = _indices(method, prob, U, y, seed)
            for j, u in enumerate(unknowns):
                rows.append({"quantity": q, "group": label, "parameter": u.name,
                             **{k: float(v[j]) for k, v in idx.items()}})
    meta = {"method": method, "samples": int(len(U)), "seed": seed, "points": sampled.points,
            "axis_ends": axis_ends(sampled, U, Y),
            "evaluations": int(len(U)) * sampled.points, "hardware": hw, "config_hash": sampled.cfg.config_hash(),
            "unknowns": [{"name": u.name, "paths": list(u.paths), "low": u.low, "high": u.high, "nominal": u.nominal,
                          "scale": u.scale, "values": list(u.values) if u.values else None, "source": u.source}
                         for u in unknowns],
            "seconds": round(time.perf_counter() - t0, 3)}
    return Sensitivity(pd.DataFrame(rows), pd.DataFrame(bands), meta)


def axis_ends(sampled, U: np.ndarray, Y: dict) -> list[str]:
    """A line per side and tuned axis whose best sits at the largest value that side sweeps in some samples, by
    the one tie rule (`compare.nearest_interior`: the design tied with the best nearest the interior, whose reach
    `<side>_reach_<axis>` is 1; the axis, not the system, may cap it there, and the band then measures the axis),
    with the unknown whose samples differ most where it does ('mostly where seq_len is low')."""
    from wsemoe.sweep import compare

    cfg = sampled.cfg
    if cfg.compare is None:
        return []
    out = []
    for prefix, side, who in (("baseline", cfg.compare.baseline, "baseline"), ("best", cfg.compare.candidate,
                                                                               "candidate")):
        for axis, top in compare.end_tops(cfg, side).items():
            key = f"{prefix}_reach_{axis.split('.')[-1]}"
            if key not in Y:
                continue
            hit = Y[key] >= compare.AT_END          # (samples, groups)
            rows = hit.any(axis=1)
            if not rows.any():
                continue
            shift = [float(U[rows, j].mean() - U[~rows, j].mean()) if (~rows).any() else 0.0
                     for j in range(U.shape[1])]
            j = int(np.argmax(np.abs(shift))) if shift else 0
            driver = (f"; mostly where {sampled.unknowns[j].name} is {'low' if shift[j] < 0 else 'high'}"
                      if shift and abs(shift[j]) > 0.1 else "")
            out.append(f"note: {who} {axis} at its largest swept value ({number(top)}) in {int(rows.sum()):,} of "
                       f"{len(rows):,} samples ({int(hit.any(axis=0).sum())} of {hit.shape[1]} groups){driver}: "
                       "the axis, not the system, may cap it there, and the band measures the axis")
    return out


FOLDER = "sensitivity"  # inside a results folder (a slot of `sensitivity` in sweep/ownership.RESULTS_SLOTS)


def write(result: Sensitivity, results_path, force: bool = False) -> Path:
    """Write indices.csv, bands.csv and meta.json into <results>/sensitivity/ atomically, replacing an earlier
    analysis (built beside, then swapped in; `store/writer.py` refuses anything wsemoe did not write)."""
    return writer.write_folder(Path(results_path) / FOLDER, {
        "indices.csv": result.indices.to_csv(index=False), "bands.csv": result.bands.to_csv(index=False),
        "meta.json": json.dumps(result.meta, indent=2)}, "sensitivity", force)


def load(results_path, config_hash: str | None = None) -> Sensitivity | None:
    """The sensitivity analysis stored in a results folder, or None (absent, unreadable, changed since wsemoe
    wrote it, or of another config)."""
    folder = Path(results_path) / FOLDER
    if not ledger.intact(folder, ("indices.csv", "bands.csv", "meta.json"), "sensitivity"):
        return None  # absent, or changed since wsemoe wrote it (its ledger's checksums)
    try:
        meta = json.loads((folder / "meta.json").read_text())
        indices = pd.read_csv(folder / "indices.csv") if (folder / "indices.csv").stat().st_size > 1 else pd.DataFrame()
        bands = pd.read_csv(folder / "bands.csv")
    except (OSError, ValueError, pd.errors.ParserError):
        return None
    if config_hash is not None and meta.get("config_hash") != config_hash:
        return None  # the sweep changed since: its bands no longer describe these points
    return Sensitivity(indices, bands, meta)


def run(config, out_root="results", hardware=None, method="sobol", samples=None, seed=1, unknowns_file=None,
        only=(), on_progress=None, force: bool = False, prepared=None) -> tuple[Sensitivity, Path]:
    """The sweep's results folder (run when not up to date) with its sensitivity analysis written into it;
    the sensitivity/ folder is checked before the analysis runs."""
    from wsemoe.sweep.run import run_sweep

    force = flag(force, "force")
    prepared = prepared or prepare(config, hardware, method, samples, seed, unknowns_file, only)
    res = run_sweep(prepared[0].cfg, out_root=out_root)
    writer.check_folder(res.path / FOLDER, "sensitivity", force)
    result = analyse(res.config, hardware, method, samples, seed, on_progress=on_progress, prepared=prepared)
    return result, write(result, res.path, force)


def headline_quantities(result) -> list[str]:
    """The quantities a summary shows: the speedups, the energy ratio of the same points and the best/baseline
    throughputs (else the first)."""
    qs = list(dict.fromkeys(result.bands["quantity"]))
    return [q for q in qs if q.startswith(("speedup_vs_", "best_", "baseline_")) and "tokens" in q or
            q.startswith(("speedup_vs_", "energy_vs_"))] or qs[:1]
