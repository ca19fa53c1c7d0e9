"""Fit the software stack of each backend (wsemoe.cost.gpu.serving.STACK) to measured runs: soft-L1 least squares
on predicted / measured − 1 of TTFT and TPOT over configuration medians, bounded to physical ranges; spread by
bootstrap over configurations; held-out accuracy by refitting without one group at a time."""

from __future__ import annotations

import numpy as np

from wsemoe.errors import ConfigError
from wsemoe.cost.gpu import serving
from wsemoe.validate.silicon.runs import Runs, backend_codes, subset

# Parameter: (unit scale to SI, lower, upper, start) in the unit the stack file shows.
BOUNDS = {"eta_bw": (1.0, 0.05, 1.0, 0.7), "eta_mm": (1.0, 0.05, 1.0, 0.5), "eta_moe": (1.0, 0.05, 1.0, 0.5),
          "eta_xmm": (1.0, 0.05, 1.0, 0.5),
          "t_layer": (1e-6, 0.0, 500.0, 20.0), "t_moe": (1e-6, 0.0, 500.0, 20.0),
          
          "t_step": (1e-3, 0.0, 50.0, 2.0), "t_seq": (1e-6, 0.0, 500.0, 10.0), "t_req": (1e-3, 0.0, 2000.0, 50.0), "sync": (1.0, 0.0, 1.0, 0.1),
          "alpha": (1.0, 0.0, 1.0, 0.8)}
UNITS = {"eta_bw": "share of HBM bandwidth", "eta_mm": "share of peak matmul FLOP/s",
         "eta_moe": "share of HBM bandwidth the expert kernels reach",
         "eta_xmm": "share of peak matmul FLOP/s the expert kernels reach", "t_layer": "us per layer per step", "t_moe": "us per MoE layer per step, beyond t_layer",
         
         "t_step": "ms per decode step", "t_seq": "us of host time per running sequence per step", "t_req": "ms per request to first token",
         "sync": "share of other in-flight prefills a new request waits behind",
         "alpha": "share of a prefill that stalls decode"}
NAMES = tuple(BOUNDS)
RESID = lambda ratio: ratio - 1.0  # noqa: E731


def stack_arrays(stacks: dict, codes, backends) -> dict:
    """Per-configuration SI arrays of the stack parameters from {backend: {name: value in shown unit}}."""
    table = np.array([[stacks[b][n] * BOUNDS[n][0] for n in NAMES] for b in backends])
    return {n: table[codes, j] for j, n in enumerate(NAMES)}


def predict_one(res: dict, worker: str, stack: dict, **features) -> dict:
    """serving.predict of one resolved run's `worker` with one backend's stack ({name: value in shown unit});
    `features` replace the run's own (a KV format, say)."""
    from wsemoe.validate.silicon.features import one

    X = {k: np.array([v], float) for k, v in {**one(res, worker), **features}.items()}
    return serving.predict(X, {n: np.array([stack[n] * BOUNDS[n][0]]) for n in NAMES})


def predict(runs: Runs, stacks: dict, mask=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Predicted TTFT and TPOT (ms) per configuration (and whether the model fits in memory)."""
    backends = sorted(stacks)
    codes = backend_codes(runs, backends)
    mask = np.ones(len(codes), bool) if mask is None else mask
    P = stack_arrays(stacks, codes[mask], backends)
    a = serving.predict(subset(runs.X_ttft, mask), P)
    b = serving.predict(subset(runs.X_tpot, mask), P)
    return 1e3 * a["ttft"], 1e3 * b["tpot"], a["fits"] & b["fits"]


def _residuals(theta, runs, mask, backends, codes):
    stacks = {b: dict(zip(NAMES, theta[i * len(NAMES):(i + 1) * len(NAMES)])) for i, b in enumerate(backends)}
    P = stack_arrays(stacks, codes, backends)
    a = serving.predict(subset(runs.X_ttft, mask), P)
    b = serving.predict(subset(runs.X_tpot, mask), P)
    cf = runs.configs[mask]
    return np.concatenate([RESID(1e3 * a["ttft"] / cf["ttft_ms"].to_numpy()),
                           RESID(1e3 * b["tpot"] / cf["tpot_ms"].to_numpy())])


def fit(runs: Runs, mask=None, start: dict | None = None) -> dict:
    """Stack per backend present in the masked configurations, {backend: {name: value}} in shown units."""
    from scipy.optimize import least_squares

    mask = np.ones(len(runs.configs), bool) if mask is None else np.asarray(mask, bool)
    backends = sorted(runs.configs.loc[mask, "backend"].unique())
    codes = backend_codes(runs, backends)[mask]
    x0 = np.array([(start or {}).get(b, {}).get(n, BOUNDS[n][3]) for b in backends for n in NAMES], float)
    lo = np.array([BOUNDS[n][1] for _ in backends for n in NAMES])
    hi = np.array([BOUNDS[n][2] for _ in backends for n in NAMES])
    sol = least_squares(_residuals, np.clip(x0, lo, hi), bounds=(lo, hi), args=(runs, mask, backends, codes),
                        loss="soft_l1", f_scale=0.5, x_scale="jac", max_nfev=400)
    return {b: {n: float(sol.x[i * len(NAMES) + j]) for j, n in enumerate(NAMES)} for i, b in enumerate(backends)}


def bootstrap(runs: Runs, stacks: dict, samples: int = 20, seed: int = 0) -> dict:
    """Standard deviation of each fitted value over refits on configurations drawn with replacement."""
    rng = np.random.default_rng(seed)
    n = len(runs.configs)
    draws = []
    for _ in range(samples):
        counts = np.bincount(rng.integers(0, n, n), minlength=n)
        mask = counts > 0  # duplicates weigh like one: a draw is a set of configurations
        draws.append(fit(runs, mask, start=stacks))
    return {b: {p: float(np.std([d[b][p] for d in draws if b in d])) for p in NAMES} for b in stacks}


def pooled(stacks: dict) -> dict:
    """One stack for a backend no run measured: each value the geometric mean over the fitted backends."""
    return {n: float(np.exp(np.mean([np.log(max(s[n], 1e-9)) for s in stacks.values()]))) for n in NAMES}


def holdout(runs: Runs, by: str, start: dict | None = None) -> list[dict]:
    """For each value of `by` (system, model, backend): refit without it, predict it. Rows of
    (group, configurations, TTFT MAPE, TPOT MAPE) on the left-out group, plus the per-config predictions."""
    column = {"system": "system", "model": "model_preset", "backend": "backend"}[by]
    out, ttft, tpot = [], np.full(len(runs.configs), np.nan), np.full(len(runs.configs), np.nan)
    groups = sorted(runs.configs[column].unique())
    if len(groups) < 2:   # a left-out group is predicted from a fit on the others: there must be others
        raise ConfigError(f"--holdout {by} needs runs of at least two values of {by} (the runs the model can evaluate "
                          f"have {len(groups)}{': ' + str(groups[0]) if groups else ''}); leave it out to fit on them all",
                          loc=("--holdout",))
    for group in groups:
        test = (runs.configs[column] == group).to_numpy()
        stacks = fit(runs, ~test, start=start)
        for b in runs.configs.loc[test, "backend"].unique():
            stacks.setdefault(b, pooled(stacks))
        t1, t2, _ = predict(runs, stacks, test)
        ttft[test], tpot[test] = t1, t2
        cf = runs.configs[test]
        out.append({"group": group, "configs": int(test.sum()),
                    "ttft_mape": float(np.mean(np.abs(t1 / cf["ttft_ms"].to_numpy() - 1))),
                    "tpot_mape": float(np.mean(np.abs(t2 / cf["tpot_ms"].to_numpy() - 1)))})
    return out, ttft, tpot
