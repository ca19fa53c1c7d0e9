"""A results folder as figures see it: loaded once, with its config, slices and per-point structures."""

from __future__ import annotations

import copy
import fnmatch
from functools import cache, cached_property
from pathlib import Path

import numpy as np
import pandas as pd

from wsemoe.analysis.uncertainty import readings
from wsemoe.analysis.uncertainty import sensitivity as sens
from wsemoe.config import yamlio
from wsemoe.config.loader import load_config
from wsemoe.config.schema import SECTIONS
from wsemoe.cost import structure
from wsemoe.report.figures.style import SLICE_SYMBOLS, setting
from wsemoe.store import store
from wsemoe.sweep.compare import ENERGY

OVER = ("workload.B", "workload.G")  # axes a design is tuned over, not one design each
# A system's own configuration: what "the best configuration of each system" tunes (unless the comparison
# names its `over`); everything else (workload, model, ...) is the slice, held at a representative value.
TUNED = ("mapping.", "balance.", "workload.comm_overlap", *OVER)
# Preferred value of an axis held fixed for a representative slice; the rest take their first value.
PREFER = {"model.num_experts_per_tok": lambda v: 8 if 8 in v else max(v), "workload.B": max,
          "balance.spare_slots": max,
          # the middle of the decode regime: neither latency- nor memory-bound at its ends
          "workload.tokens_per_device": lambda v: sorted(v)[len(v) // 2]}


class ResultsView:
    """One results folder's points, front, comparison and resolved config (plain dicts: the saved config has
    extra keys), with what several figures need derived once."""

    def __init__(self, name: str, manifest: dict, points: pd.DataFrame, pareto: pd.DataFrame,
                 comparison: pd.DataFrame | None, cfg: dict, sensitivity=None, readings=None):
        self.name, self.points, self.pareto, self.comparison, self.cfg = name, points, pareto, comparison, cfg
        self.sensitivity = sensitivity  # analysis.sensitivity.Sensitivity of these very points, or None
        self.readings = readings  # analysis.readings.Readings of this very sweep, or None
        self.path, self.manifest = None, manifest  # set by `load`: `rows` reads further columns of a few points
        self.axes = [a for a in manifest.get("axes", cfg.get("axes", {})) if a in points]
        # the axes whose values each have a front of their own (pareto.csv's groups; none in older results)
        self.front_groups = [a for a in manifest.get("pareto_groups") or [] if a in pareto]
        self.objectives = manifest.get("objectives", {})
        self.compare, self.model = cfg.get("compare") or {}, cfg.get("model") or {}
        self.metric = self.compare.get("metric", "tokens_per_s")  # what "best" means
        self.baseline = self.compare.get("baseline") or ({"workload.G": 1} if "workload.G" in self.axes else {})
        self.group_cols = [a for a in self.axes if a not in OVER]  # one design each

    def with_points(self, points: pd.DataFrame) -> ResultsView:
        """This view over other rows or columns of its points: what derives from them is derived again, except
        the axes that vary, which stay those of the whole sweep (labels name what the sweep varies)."""
        out = copy.copy(self)
        out.varying = self.varying
        for derived in ("feasible", "infeasible", "_ok"):
            out.__dict__.pop(derived, None)
        out.points = points
        return out

    # Derived when first asked for: each family's view needs some of them, and each costs a pass over every point.
    @cached_property
    def feasible(self) -> pd.DataFrame:
        """The feasible points."""
        return self.points[self._ok] if self._ok is not None else self.points

    @cached_property
    def infeasible(self) -> pd.DataFrame:
        """The infeasible points."""
        return self.points[~self._ok] if self._ok is not None else self.points.iloc[:0]

    @cached_property
    def _ok(self) -> np.ndarray | None:
        return self.points["feasible"].to_numpy(dtype=bool) if "feasible" in self.points else None

    @cached_property
    def varying(self) -> list[str]:
        """The design axes with more than one value (zipped constants add no label)."""
        return [a for a in self.group_cols if self.points[a].nunique() > 1]

    @classmethod
    def load(cls, path, columns=None, base: pd.DataFrame | None = None, like: ResultsView | None = None) -> ResultsView:
        """Read and verify a results folder; ResultsError when it is missing, incomplete or damaged.

        `columns` (names or fnmatch patterns of the manifest's columns) bounds memory: the points hold only
        those, plus the axes, `feasible`, the objectives and the comparison metric every figure may use.
        `base`, those common columns already read (`base_columns`), is reused: only the rest is read.
        `like`, a view of the same folder already loaded: its manifest, front, comparison, config and analyses
        are reused (read and parsed once per command, not once per figure family).
        """
        path = Path(path)
        if like is not None:
            man, pareto, comparison, cfg = like.manifest, like.pareto, like.comparison, like.cfg
            sensitivity, analysed = like.sensitivity, like.readings
        else:
            man = store.load_manifest(path)
            pareto = store.read_pareto(path, man)
            comparison = None
            if (path / "comparison.csv").is_file():
                comparison = store.read_csv(path, "comparison.csv", man)
            cfg = _config(path)
            sensitivity, analysed = sens.load(path, man.get("config_hash")), readings.load(path, man.get("config_hash"))
        wanted = _projection(man, columns, cfg)
        extra = [c for c in wanted if c not in base] if base is not None and wanted is not None else None
        if extra is None:
            points = store.read_points(path, man, wanted)
        else:
            points = pd.concat([base, store.read_points(path, man, extra)], axis=1) if extra else base
        view = cls(man.get("name", path.name), man, points, pareto, comparison, cfg, sensitivity, analysed)
        view.path = path
        return view

    def rows(self, index, columns: list[str]) -> pd.DataFrame:
        """Columns the view does not hold, for a few points (read from the parts that hold them)."""
        have = [c for c in columns if c in self.manifest.get("columns", {})]
        if self.path is None:
            return self.points.loc[list(index), [c for c in have if c in self.points]]
        return store.read_rows(self.path, self.manifest, index, have)

    def band(self, quantity: str, key: str, values) -> tuple[np.ndarray, np.ndarray] | None:
        """(5%, 95%) of a sensitivity quantity at each of `values` of the group column `key`, or None."""
        b = self.sensitivity.bands if self.sensitivity is not None else None
        if b is None or key not in b:
            return None
        b = b[b["quantity"] == quantity].set_index(key)
        if not set(values) <= set(b.index):
            return None
        return b.loc[list(values), "q05"].to_numpy(), b.loc[list(values), "q95"].to_numpy()

    def has(self, *cols) -> bool:
        """True when the points hold every one of `cols`."""
        return all(c in self.points for c in cols)

    @staticmethod
    def first_row(df: pd.DataFrame) -> dict:
        """The first point of `df` as {column: value} (the representative of a slice)."""
        return df.iloc[0].to_dict()

    def sections(self, row) -> dict:
        """Each section's fields at one point: the spec's defaults (a stored config leaves out fields that are
        unset), the base, then a preset axis, then swept fields (as the engine does)."""
        presets, out = self.cfg.get("presets") or {}, {}
        for sec, spec in SECTIONS.items():
            fields = {**_defaults(spec), **(self.cfg.get(sec) or {})}
            if isinstance(row.get(sec), str) and row[sec] in presets:
                fields = spec.model_validate(presets[row[sec]]).model_dump()
            for col, val in row.items():
                head, _, field = col.partition(".")
                if head == sec and field:
                    fields[field] = val.item() if isinstance(val, np.generic) else val
            out[sec] = fields
        return out

    def build(self, row, bal=structure.UNIFORM) -> structure.Structure:
        """The cached structure of one point (topology, mesh, mapping and experts resolved at that point)."""
        s = self.sections(row)
        hw, mp, m = s["hardware"], s["mapping"], s["model"]
        wafers = tuple(int(v) for v in (hw.get("wafers") or (1, 1)))
        tp = int(mp.get("tp") or hw["rows"] * hw["cols"] * wafers[0] * wafers[1])  # unset TP: one group of all nodes
        ftd = tuple(mp["ftd"]) if mp.get("ftd") else None
        explicit = tuple(mp["placement"]) if mp.get("placement") else None
        coll = structure.Collectives(int(mp.get("ring_directions", 1)), mp.get("combine_routing", "xy"),
                                     bool(hw.get("in_switch_reduction", False)))
        return structure.build(hw["topology"], int(hw["rows"]), int(hw["cols"]), tp, mp["strategy"], ftd,
                               int(mp.get("seed", 0)), explicit, mp.get("token_source", "auto"),
                               int(m["num_experts"]), bal, wafers, hw.get("scale_up_size"), coll)

    def slice(self, keep=()) -> tuple[pd.DataFrame, str]:
        """Points with every swept axis but `keep` held at a representative value, and that slice as text.

        Representatives are chosen among values that keep a feasible point in the slice when there is one
        (a slice where every point is infeasible says little); `slice_feasible` tells figures whether any is.
        """
        df, said = self.points, []
        kept = [k for k in keep if k in df]
        for col in self.axes:
            if col in keep or any(_follows(df, col, k) for k in kept):
                continue  # a column zipped with a kept one (NVL72's weight_source beside the wafer's) moves with it
            values = list(pd.unique(df[col]))
            ok = list(pd.unique(df.loc[df["feasible"].to_numpy(dtype=bool), col])) if "feasible" in df else values
            values = ok or values
            pick = PREFER[col](values) if col in PREFER and _numeric(values) else values[0]
            if self.points[col].nunique() > 1 and col != "model":  # titles name the model anyway
                said.append(setting(col, pick))
            same = df[col] == pick
            df = df[same | (df[col].isna() & pd.isna(pick))] if not isinstance(pick, str) else df[same]   # NaN: unset
        self.slice_feasible = bool(df["feasible"].to_numpy(dtype=bool).any()) if "feasible" in df else True
        return df, ", ".join(said)

    def tuned_axes(self, keep=()) -> list[str]:
        """Swept axes a system is tuned over, `keep` excepted: the comparison's `over` (with B and G) when the
        sweep names it, else every mapping and balance axis, communication overlap, B and G."""
        over = self.compare.get("over")
        pick = (lambda a: a in over or a in OVER) if over else (lambda a: a.startswith(TUNED))
        return [a for a in self.axes if pick(a) and a not in keep and self.points[a].nunique() > 1]

    def best(self, keep, metric: str, sense: str = "max") -> tuple[pd.DataFrame, str, list[str]]:
        """The rule figures that compare systems follow: each combination of `keep` at its best configuration
        (the best `metric` over `tuned_axes`, feasible points first), every other axis held at its
        representative value (`slice`). Returns (one row per combination, the held values as text, the
        tuned axes)."""
        tuned = self.tuned_axes(keep)
        df, said = self.slice(keep=(*keep, *tuned))
        if df.empty or metric not in df:
            return df.iloc[:0], said, tuned
        ok = df["feasible"].to_numpy(dtype=bool) if "feasible" in df else np.ones(len(df), dtype=bool)
        score = df[metric].to_numpy(dtype=float) * (1.0 if sense == "max" else -1.0)
        ranked = df.assign(_ok=ok, _score=np.nan_to_num(score, nan=-np.inf))
        ranked = ranked.sort_values(["_ok", "_score"], ascending=False, kind="stable")
        rows = ranked.drop_duplicates(list(keep)).drop(columns=["_ok", "_score"])
        return rows.loc[df.index.intersection(rows.index)], said, tuned

    def subtitle(self, fixed: str = "", best_over=(), drawn: str = "") -> str:
        """What a figure shows in words: what it draws, what it holds fixed, what it optimizes, and when
        nothing in it is feasible."""
        parts = [drawn] if drawn else []
        if fixed:
            parts.append(f"fixed: {fixed}")
        over = [SLICE_SYMBOLS.get(c, c.split(".")[-1]) for c in best_over if c in self.axes]
        if over:
            parts.append(f"best feasible over {', '.join(over)}")
        if not getattr(self, "slice_feasible", True):
            parts.append("every point shown is infeasible")
        return "; ".join(parts)

    def context(self, row, skip=()) -> str:
        """Model, mode and mapping of a point, for titles (what the reader needs to place the numbers)."""
        s = self.sections(row)
        parts = [s["model"].get("name"), s["workload"].get("mode")]
        if "mapping.strategy" not in skip and s["mapping"].get("strategy"):
            parts.append(f"{s['mapping']['strategy']} mapping")
        return ", ".join(str(p) for p in parts if p)


def _config(path: Path) -> dict:
    """The resolved config as plain data, with preset axes' fields (reloaded, so imported models resolve too)."""
    try:
        cfg = yamlio.load(path / "config.yaml")
    except Exception:  # the config refines labels and builds structures; plots that need neither still work
        return {}
    if not isinstance(cfg, dict):
        return {}
    try:
        cfg["presets"] = load_config(path / "config.yaml").presets
    except Exception:  # a config that no longer loads (a preset renamed since) still labels the plots
        pass
    return cfg


def base_columns(man: dict, cfg: dict) -> list[str]:
    """What every figure may use, so every view holds it: the axes, `feasible`, the objectives, the comparison
    metric and the energy per token (`best_rows` breaks ties on it wherever a figure picks a best point), those
    the results have; `cfg`, the saved config as `_config` reads it ({} without)."""
    cmp = cfg.get("compare") or {}
    base = {*man.get("axes", []), "feasible", *man.get("objectives", {}), cmp.get("metric", "tokens_per_s"), ENERGY}
    return [c for c in man.get("columns", {}) if c in base]


def _projection(man: dict, columns, cfg: dict) -> list[str] | None:
    """The columns to read: every one when `columns` is None, else these plus what every figure may use."""
    if columns is None:
        return None
    base = set(base_columns(man, cfg))
    return [c for c in man.get("columns", {}) if c in base or any(fnmatch.fnmatchcase(c, p) for p in columns)]


def _follows(df: pd.DataFrame, col: str, key: str) -> bool:
    """Whether `col` takes one value for each value of `key` while `key` varies (a zip partner of it)."""
    if col == key or df[key].nunique() < 2 or df[col].nunique(dropna=False) < 2:
        return False
    return bool((df.groupby(key, observed=True, dropna=False)[col].nunique(dropna=False) <= 1).all())


def _numeric(values) -> bool:
    return all(isinstance(v, (int, float, np.integer, np.floating)) for v in values)


@cache
def _defaults(spec) -> dict:
    """The fields of a spec class that have a default, at it (None for an optional field left unset)."""
    return {name: f.get_default(call_default_factory=True) for name, f in spec.model_fields.items()
            if not f.is_required()}
