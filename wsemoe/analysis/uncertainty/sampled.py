"""A sweep evaluated under many samples of the calibration unknowns, in one vectorized pass per chunk.

The design frame of the sweep (P points) is repeated once per sample, and every unknown's spec fields
become numeric columns of that frame, so the engine evaluates samples × points as one frame. Per sample
the results are reduced to the quantities calibration and sensitivity study: for a sweep with a
comparison, per group the best and baseline metric, their MFU, the speedup, the tuned axes and the reach of
the design the axis-end notes read (`<side>_reach_<axis>`, `compare.nearest_interior`), and over the groups
how flat each series is (max over min); for every objective its best feasible value.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from wsemoe.config import axes, checks
from wsemoe.config import readings as readings_registry
from wsemoe.analysis.uncertainty.unknowns import Unknown
from wsemoe.config.loader import load_config
from wsemoe.errors import ConfigError
from wsemoe.sweep import frames, space
from wsemoe.sweep.compare import (ENERGY, baseline_mask, candidate_mask, end_tops, group_keys, metrics,
                                  nearest_interior, reach)
from wsemoe.sweep.outputs import preset_fields

ROWS_PER_CHUNK = 1 << 18  # samples × points evaluated at once (memory bound)


def _groups(cfg, frame: pd.DataFrame) -> tuple[np.ndarray, pd.DataFrame]:
    """Group code of every point and one row of group values per code (a single group without a comparison)."""
    group = group_keys(cfg)[0] if cfg.compare else []
    if not group:
        return np.zeros(len(frame), dtype=int), pd.DataFrame(index=[0])
    codes = frame.groupby(group, sort=False).ngroup().to_numpy()
    labels = frame[group].drop_duplicates().reset_index(drop=True)
    return codes, labels


def _check(cfg, unknowns: list[Unknown]) -> None:
    swept = set(cfg.axis_names())
    serving = "sram" in readings_registry.sweep_values(cfg, "hardware.weight_source")
    for u in unknowns:
        if u.serving_only and not serving:
            raise ConfigError(f"{u.name} sets a PE fact ({', '.join(u.paths)}), which the PE-level model reads: a "
                              "sweep serving from SRAM (weight_source: sram), not this one", loc=("--only", u.name))
        for p in u.paths:
            if p in swept:
                raise ConfigError(f"'{p}' is both swept and a calibration unknown ({u.name})", loc=("axes", p))
        _fits_sweep(cfg, u)


def _fits_sweep(cfg, u: Unknown) -> None:
    """The unknown's values (its range's ends or its values, and its nominal) pass the sweep's cross-field rules
    (top-k ≤ E, TP divides the nodes, ...) as axis values would: samples are written into the frame past the
    loader, so model.num_experts at 2 under top-k 8 was evaluated (and reported 11× the tokens/s of E = 128)."""
    values = sorted({*(u.values if u.values is not None else (u.low, u.high)), u.nominal})
    base = {k: getattr(cfg, k).model_dump(exclude_none=True) for k in ("hardware", "model", "workload", "mapping",
                                                                       "balance")}
    grid = dict(cfg.axes)
    for p in u.paths:
        grid[p] = axes.typed_values(p, values, base, ("unknowns", u.name, p), dict(cfg.presets), unique=False)
    try:
        checks.check_points(cfg.model_copy(update={"axes": grid}))
    except ConfigError as exc:
        raise ConfigError(f"{u.name} takes {', '.join(f'{v:g}' for v in values)}: {exc.message}",
                          loc=("unknowns", u.name, *exc.loc[1:2])) from None


def _best(values: np.ndarray, ok: np.ndarray, codes: np.ndarray, n_groups: int, sense: str = "max", energy=None):
    """Per sample and group: (best value, index of the point) over points where `ok`; NaN / -1 where none. Among
    points that tie on the value exactly, the least `energy` (when given), then the first: `compare.best_rows`'
    rule, so the point a sample quotes is the one comparison.csv quotes at the same values."""
    sign = 1.0 if sense == "max" else -1.0
    v = np.where(ok, sign * values, -np.inf)
    best = np.full((v.shape[0], n_groups), np.nan)
    where = np.full((v.shape[0], n_groups), -1)
    rows = np.arange(len(v))
    for g in range(n_groups):
        cols = np.flatnonzero(codes == g)
        i = np.argmax(v[:, cols], axis=1)
        top = v[rows, cols[i]]
        if energy is not None:   # the tie's least energy, where one is finite
            e = energy[:, cols]
            e = np.where((v[:, cols] == top[:, None]) & np.isfinite(e), e, np.inf)
            low = np.argmin(e, axis=1)
            i = np.where(np.isfinite(e[rows, low]), low, i)
        has = np.isfinite(top)
        best[has, g] = sign * top[has]
        where[has, g] = cols[i][has]
    return best, where


def own_value(cfg, frame: pd.DataFrame, path: str, hardware: str, sampled: np.ndarray) -> np.ndarray:
    """The sampled values on the rows of `hardware`; elsewhere what the frame already holds at `path` (another
    system's unknown), else each row's own hardware value."""
    field = path.partition(".")[2]
    if path in frame:
        out = frame[path].to_numpy(dtype=float).copy()
    elif "hardware" in frame:
        names = frame["hardware"].astype(str).to_numpy()
        out = np.full(len(frame), np.nan)
        for name in pd.unique(names):
            own = preset_fields(cfg, "hardware", name)[field]
            out[names == name] = np.nan if own is None else own
    else:
        own = getattr(cfg.hardware, field)
        out = np.full(len(frame), np.nan if own is None else own)
    mine = frame["hardware"].astype(str).to_numpy() == hardware if "hardware" in frame else \
        np.full(len(frame), cfg.hardware.name == hardware)
    out[mine] = np.asarray(sampled, dtype=float)[mine]
    return out


class Sampled:
    """Quantities per (sample, group) of one sweep under sampled unknowns."""

    def __init__(self, config, unknowns: list[Unknown]):
        self.cfg = load_config(config)
        _check(self.cfg, unknowns)
        self.unknowns = unknowns
        self.frame = space.build_frame(self.cfg)
        self.codes, self.groups = _groups(self.cfg, self.frame)
        self.base = baseline_mask(self.frame, self.cfg) if self.cfg.compare else None
        self.cand = candidate_mask(self.frame, self.cfg) if self.cfg.compare else None
        compared = metrics(self.cfg) if self.cfg.compare else []
        self._read = {"feasible", "mfu", ENERGY, *self.cfg.objectives, *compared}  # the outputs `_reduce` reads

    @property
    def points(self) -> int:
        return len(self.frame)

    def evaluate(self, values: np.ndarray, on_progress=None) -> dict[str, np.ndarray]:
        """{quantity: array (samples, groups)} for `values` of shape (samples, unknowns)."""
        values = np.atleast_2d(np.asarray(values, dtype=float))
        per = max(1, ROWS_PER_CHUNK // self.points)
        parts = []
        for s in range(0, len(values), per):
            parts.append(self._chunk(values[s:s + per]))
            if on_progress:
                on_progress(min(s + per, len(values)), len(values))
        return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}

    def _chunk(self, values: np.ndarray) -> dict[str, np.ndarray]:
        n, P = len(values), self.points
        big = pd.DataFrame({c: np.tile(self.frame[c].to_numpy(), n) for c in self.frame.columns},
                           index=pd.RangeIndex(n * P))   # a sweep of no axes: one point, no column to size it
        for j, u in enumerate(self.unknowns):
            col = np.repeat(values[:, j], P)
            for path in u.paths:
                value = col.astype(np.int64) if path == "workload.seq_len" else col
                if u.hardware is not None:   # one system's figure: every other system keeps its own
                    value = own_value(self.cfg, big, path, u.hardware, value)
                big[path] = value
        out = frames.evaluate_frame(self.cfg, big, columns=self._read)
        ok = out["feasible"].to_numpy(dtype=bool).reshape(n, P)
        return self._reduce(out, ok, n)

    def _reduce(self, out: pd.DataFrame, ok: np.ndarray, n: int) -> dict[str, np.ndarray]:
        P, G = self.points, len(self.groups)
        col = lambda c: out[c].to_numpy(dtype=float).reshape(n, P)  # noqa: E731
        res = {}
        for obj, sense in self.cfg.objectives.items():
            res[f"sweep_best_{obj}"] = _best(col(obj), ok, np.zeros(P, dtype=int), 1, sense)[0]
        cmp = self.cfg.compare
        if cmp is None:
            return res
        tie = col(ENERGY) if ENERGY in out and cmp.metric != ENERGY else None   # best_rows' tie rule
        best, at = _best(col(cmp.metric), ok & self.cand[None, :], self.codes, G, energy=tie)
        base, base_at = _best(col(cmp.metric), ok & self.base[None, :], self.codes, G, energy=tie)
        res[f"best_{cmp.metric}"], res[f"baseline_{cmp.metric}"] = best, base
        res[f"speedup_vs_{cmp.name}"] = best / base
        for m in metrics(self.cfg)[1:]:  # each further compared column, both sides tuned for it on their own
            top = _best(col(m), ok & self.cand[None, :], self.codes, G)[0]
            res[f"speedup_vs_{cmp.name}_{m}"] = top / _best(col(m), ok & self.base[None, :], self.codes, G)[0]
        if G > 1:  # how flat each series is across the groups (e.g. BTA across sparsity): max over min
            for name, v in ((f"best_{cmp.metric}", best), (f"baseline_{cmp.metric}", base)):
                res[f"sweep_{name}_max_over_min"] = (np.max(v, axis=1) / np.min(v, axis=1))[:, None]
        rows = np.arange(n)[:, None]
        if ENERGY in out:   # the energy of the same two points beside their speed ratio (as comparison.csv)
            e = col(ENERGY)
            res[f"energy_vs_{cmp.name}"] = np.where((at >= 0) & (base_at >= 0), e[rows, np.maximum(at, 0)]
                                                    / e[rows, np.maximum(base_at, 0)], np.nan)
        if "mfu" in out:
            mfu = col("mfu")
            res["best_mfu"] = np.where(at >= 0, mfu[rows, np.maximum(at, 0)], np.nan)
            res["baseline_mfu"] = np.where(base_at >= 0, mfu[rows, np.maximum(base_at, 0)], np.nan)
        for side, mask, fixed in (("best", self.cand, cmp.candidate), ("baseline", self.base, cmp.baseline)):
            # the reach of the design the axis-end notes read: of those tied with the side's best, the one nearest
            # the interior (`compare.nearest_interior`; best_<axis> is the tie-break's pick, which may sit at an
            # axis's end while an interior design ties it)
            tops = end_tops(self.cfg, fixed)
            near = nearest_interior(col(cmp.metric), ok & mask[None, :], self.codes, G, reach(self.frame, tops))
            for axis, top in tops.items():
                share = np.asarray(self.frame[axis], dtype=float) / top
                res[f"{side}_reach_{axis.split('.')[-1]}"] = np.where(near >= 0, share[np.maximum(near, 0)], np.nan)
        for axis in group_keys(self.cfg)[1]:  # the tuned values of each side (numeric axes)
            if not pd.api.types.is_numeric_dtype(self.frame[axis]) or pd.api.types.is_bool_dtype(self.frame[axis]):
                continue
            vals = self.frame[axis].to_numpy(dtype=float)
            for side, where in (("best", at), ("baseline", base_at)):
                res[f"{side}_{axis.split('.')[-1]}"] = np.where(where >= 0, vals[np.maximum(where, 0)], np.nan)
        return res

    def group_labels(self) -> list[str]:
        """Each group by what varies between groups ('num_experts_per_tok=8', or 'all' for the whole sweep);
        of zipped columns that move together only the first that varies."""
        if self.groups.shape[1] == 0:
            return ["all"]
        cols = [c for c in self.groups.columns if self.groups[c].nunique() > 1] or list(self.groups.columns[:1])
        zipped = next((z for z in self.cfg.zip if len(set(cols) & set(z)) > 1), None)
        if zipped:  # partners of one zip say the same thing: keep the first
            cols = [c for c in cols if c not in zipped or c == next(x for x in cols if x in zipped)]
        return [", ".join(f"{c.split('.')[-1]}={r[c]:g}" if isinstance(r[c], (int, float, np.number))
                          else f"{c.split('.')[-1]}={r[c]}" for c in cols) for _, r in self.groups.iterrows()]
