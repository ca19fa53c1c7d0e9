"""Constraint columns (g ≤ 0 satisfied), user bounds, `feasible` and `infeasible_reason`."""

from __future__ import annotations

import math

import numpy as np

from wsemoe.errors import ConfigError
from wsemoe.store.block import Labels

REASONS = {
    # Every term of the sum is named (decode's is mostly KV cache, training's the transient): `eval` splits them.
    "g_mem_attn": "attention-stage memory needs {r}× the usable node memory "
                  "(weights + training state + kept activations + KV cache + attention transient at "
                  "B + BTA buffer + prefetched weights; eval splits them)",
    "g_mem_moe": "MoE-stage memory needs {r}× the usable node memory "
                 "(weights + training state + kept activations + KV cache + dispatched tokens and FFN "
                 "intermediates at G·B; eval splits them)",
    "g_mem_prefill": "prefill of the batch's prompts (behind ttft_s) needs {r}× the usable node memory",
    "g_sram_wafers": "the fullest stage needs {r}× what its wafer's PEs hold (weights and the KV cache of B "
                     "sequences: more wafers, fewer sequences or a shorter context)",
    "g_sram_layer": "one layer (or the embedding or head) needs {r}× what one wafer holds (a layer spans one wafer)",
    "g_sram_pe": "a PE's program and buffers need {r}× its SRAM",
    "g_sram_stages": "the pipeline has {r}× as many wafers as the model has layers (a stage holds at least one)",
    "g_pe_sram_attn": "the attention stage needs {r}× what a PE holds beside its program (scores, activations, "
                      "BTA buffer over the PEs)",
    "g_pe_sram_moe": "the busiest expert region needs {r}× what a PE holds beside its program (its expert's weights, "
                     "token copies and FFN intermediates; in training their gradients and deltas too)",
}
SLO = {"ttft_s": "TTFT", "tpot_s": "TPOT"}  # latency columns whose maximum reads as a service-level objective
DIGITS = 3  # significant digits of a ratio in a reason: few distinct texts per chunk, small parts


def feasibility(cfg, outputs, inputs: dict) -> tuple[dict, np.ndarray]:
    """(user-constraint g columns, `feasible` and `infeasible_reason` (worst violation, in words, with its
    ratio to the limit); the worst g of each point, NaN first, as a search ranks infeasible points).

    `outputs` is the engine's `Outputs` (columns built on demand); `inputs` the input columns.
    """
    extra, bounds = {}, {}
    for i, c in enumerate(cfg.constraints):
        x = _constrained(outputs, inputs, c.column, i)
        # relative to the bound; a bound of 0 has no scale, so its g is the excess itself (was x / 1e-300: 7.8e297)
        for side, bound, g in (("max", c.max, lambda b: (x - b) / (abs(b) or 1.0)),
                               ("min", c.min, lambda b: (b - x) / (abs(b) or 1.0))):
            if bound is not None:
                name = f"g_{c.column}_{side}"
                name = name if name not in extra else f"{name}_{i}"  # a repeated bound applies too
                extra[name], bounds[name] = g(bound), bound
    gcols = [col for col in outputs.names if col.startswith("g_")] + list(extra)
    n = outputs.n
    feasible = np.ones(n, dtype=bool)
    worst, which, nan = np.full(n, -np.inf), np.full(n, -1, dtype=np.int32), np.zeros(n, dtype=bool)
    for k, col in enumerate(gcols):
        g = np.asarray(extra[col] if col in extra else outputs.column(col), dtype=float)
        if col not in extra:   # a constraint binds the points whose model has it (SRAM serving or node memory)
            g = np.where(outputs.applies(col), g, -np.inf)
        feasible &= g <= 0
        # The worst-violated constraint names the reason (the first on ties, a NaN first of all, as
        # argmax ranks them).
        isnan = np.isnan(g)
        which = np.where(~nan & ((g > worst) | isnan), np.int32(k), which)
        worst, nan = np.fmax(worst, g), nan | isnan
    worst = np.where(nan, np.nan, worst)
    extra["feasible"] = feasible
    extra["infeasible_reason"] = reasons(worst, which, gcols, bounds, feasible)
    return extra, worst


def reasons(worst: np.ndarray, which: np.ndarray, gcols: list[str], bounds: dict, feasible: np.ndarray) -> Labels:
    """The worst-violated constraint of each infeasible point, in words with its ratio (empty when feasible).

    The ratio is rounded away from the limit (1.0004× capacity reads 1.01×, never 1.00×), so no reason
    reads as satisfied; one text per distinct (constraint, rounded ratio) keeps the labels few.
    """
    codes = np.full(len(feasible), -1, dtype=np.int32)
    texts: list[str] = []
    for j, col in enumerate(gcols):
        rows = np.flatnonzero(~feasible & (which == j))
        missing = rows[np.isnan(worst[rows])]
        if len(missing):  # no value to bound (a decode point's TTFT without a prompt): said so, not "above"
            codes[missing] = len(texts)
            texts.append(_missing_text(col, bounds.get(col)))
            rows = rows[~np.isnan(worst[rows])]
        if not len(rows):
            continue
        keys = _rounded_keys(_ratio(worst[rows], col, bounds.get(col)), col.endswith("_min"))
        uniq, inverse = _factorize(keys)
        codes[rows] = len(texts) + inverse
        texts += _cached_texts(col, uniq.tolist(), bounds.get(col))
    return Labels(codes, _distinct(texts))


_TEXTS: dict = {}  # (constraint, bound, key) -> reason: a sweep's chunks share most of their ratios
MAX_TEXTS = 1 << 16  # reasons kept (about 20 MB at most: ~300 bytes each); the cache starts over beyond


def _cached_texts(col: str, keys: list[int], bound) -> list[str]:
    """`_texts` of these keys, each formatted once per process: the 2 M-point BTA sweep formats 58,000
    reasons over its 16 chunks, 3,900 of them distinct. Plain dict reads and writes: threads sharing it
    at worst format a reason twice."""
    new = [k for k in keys if (col, bound, k) not in _TEXTS]
    if new:
        if len(_TEXTS) + len(new) > MAX_TEXTS:
            _TEXTS.clear()
            new = keys
        _TEXTS.update(zip(((col, bound, k) for k in new), _texts(col, [_key_value(k) for k in new], bound)))
    return [_TEXTS[col, bound, k] for k in keys]


def _constrained(outputs, inputs: dict, column: str, i: int) -> np.ndarray:
    """The numeric values a constraint bounds (an output or an input column)."""
    if column in outputs.names:
        src = outputs.column(column)
    elif column in inputs:
        src = inputs[column]
    else:
        raise ConfigError(f"unknown column '{column}'", loc=("constraints", i, "column"))
    if isinstance(src, Labels) or np.asarray(src).dtype.kind not in "iuf":
        raise ConfigError(f"column '{column}' is not numeric; constraints bound numbers", loc=("constraints", i, "column"))
    return np.asarray(src, dtype=float)


def _ratio(g: np.ndarray, col: str, bound) -> np.ndarray:
    """Value over its limit: g + 1 for memory and maximum bounds, 1 − g for minimum bounds (positive limits)."""
    if bound is not None and bound <= 0:
        return np.full(len(g), np.nan)  # a ratio to a zero or negative limit says nothing
    return 1.0 - g if col.endswith("_min") and bound is not None else g + 1.0


_E0 = 330  # exponent offset: every positive finite float64 has its decimal exponent in [-330, 330]
_POW = 10.0 ** np.arange(-_E0, 309)  # looked up per row (far cheaper than 10.0 ** x elementwise); 1e308 is the top
_MANTISSA = 10 ** (DIGITS + 1)  # keys hold (exponent, mantissa of DIGITS digits, up to 10**DIGITS when rounded up)


def _rounded_keys(ratio: np.ndarray, below: bool) -> np.ndarray:
    """Ratios to DIGITS significant digits, rounded up above the limit and down below it, as integer keys
    ((exponent + _E0) · _MANTISSA + mantissa); −1 where there is no ratio (NaN, zero or negative limit)."""
    keys = np.full(len(ratio), -1, dtype=np.int64)
    ok = np.flatnonzero(np.isfinite(ratio) & (ratio > 0))
    r = ratio[ok]
    e = np.floor(np.log10(r)).astype(np.int64) - (DIGITS - 1)
    q = r / _POW[e + _E0]
    q = np.floor(q * (1 + 1e-12)) if below else np.ceil(q * (1 - 1e-12))
    keys[ok] = (e + _E0) * _MANTISSA + q.astype(np.int64)
    return keys


def shown_ratio(ratio: float) -> str:
    """A ratio to its limit as every reason says it: DIGITS significant digits, rounded away from the limit
    (above 1 up, below down), so `eval` and `infeasible_reason` give one number for one point."""
    key = int(_rounded_keys(np.asarray([ratio], dtype=float), bool(ratio < 1.0))[0])
    value = _key_value(key)
    return f"{value:.{DIGITS}g}" if math.isfinite(value) else "?"


def _key_value(key: int) -> float:
    """The rounded ratio a key stands for (NaN for −1)."""
    return float("nan") if key < 0 else (key % _MANTISSA) * 10.0 ** (key // _MANTISSA - _E0)


def _factorize(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(distinct keys ascending, each row's position among them): by presence over the keys' span when it is
    small (linear time; ratios of one chunk span few decades), else by sorting."""
    lo, hi = int(keys.min()), int(keys.max())
    if hi - lo >= 1 << 22:
        uniq, inverse = np.unique(keys, return_inverse=True)
        return uniq, inverse.ravel()
    present = np.zeros(hi - lo + 1, dtype=bool)
    present[keys - lo] = True
    return np.flatnonzero(present) + lo, (np.cumsum(present) - 1)[keys - lo]


def _texts(col: str, ratios: list, bound) -> list[str]:
    """The reason of a constraint at each ratio: its template is chosen once per constraint, so a chunk's
    thousands of distinct ratios cost one string format each."""
    if col in REASONS:
        template = REASONS[col]
        return [template.format(r=f"{r:.{DIGITS}g}" if math.isfinite(r) else "?") for r in ratios]
    base = col.removeprefix("g_")
    if not base.endswith(("_max", "_min")):
        return [f"constraint {col} violated" + (f" ({r:.{DIGITS}g}× its limit)" if math.isfinite(r) else "")
                for r in ratios]
    name, side = base[:-4], "maximum" if base.endswith("_max") else "minimum"
    if name in SLO and side == "maximum":
        limit = _seconds(bound)
        return [f"{SLO[name]} " + (f"{r:.{DIGITS}g}× the SLO" if math.isfinite(r) else "above the SLO") + f" ({limit})"
                for r in ratios]
    beyond = f"{name} {'above' if side == 'maximum' else 'below'} its configured {side} ({bound:g})"
    return [f"{name} is {r:.{DIGITS}g}× its configured {side} ({bound:g})" if math.isfinite(r) else beyond
            for r in ratios]


def _missing_text(col: str, bound) -> str:
    """The reason of a point whose constrained column has no value (NaN): the bound cannot be checked there."""
    from wsemoe.sweep.column_check import NEEDS

    base = col.removeprefix("g_")
    name, side = (base[:-4], "maximum" if base.endswith("_max") else "minimum") if base.endswith(("_max", "_min")) \
        else (base, None)
    label = SLO.get(name, name) if side == "maximum" else name
    what = (f"the SLO ({_seconds(bound)})" if name in SLO and side == "maximum" and bound is not None
            else f"its configured {side} ({bound:g})" if side and bound is not None else "its constraint")
    need = f" (it needs {NEEDS[name]})" if name in NEEDS else ""
    return f"no {label} at this point{need}, so {what} cannot be checked"


def _seconds(x: float) -> str:
    """A latency bound in readable units: 2 s, 50 ms, 800 µs."""
    for f, u in ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs")):
        if abs(x) >= f:
            return f"{x / f:g} {u}"
    return f"{x * 1e9:g} ns"


def _distinct(texts: list[str]) -> list[str]:
    """Categories must be unique; two rounded ratios that print alike get their key's full value."""
    if len(set(texts)) == len(texts):
        return texts  # the usual case: no two rounded ratios print alike
    seen: dict = {}
    out = []
    for t in texts:
        seen[t] = seen.get(t, 0) + 1
        out.append(t if seen[t] == 1 else f"{t} [{seen[t]}]")
    return out
