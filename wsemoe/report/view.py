"""A results folder as figures see it: loaded once, with its config, slices and per-point structures."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from wsemoe.analysis import sensitivity as sens
from wsemoe.config import yamlio
from wsemoe.config.schema import SECTIONS
from wsemoe.cost import structure
from wsemoe.errors import ResultsError
from wsemoe.report.style import setting
from wsemoe.sweep import store

OVER = ("workload.B", "workload.G")  # axes a design is tuned over, not one design each
# Preferred value of an axis held fixed for a representative slice; the rest take their first value.
PREFER = {"model.num_experts_per_tok": lambda v: 8 if 8 in v else max(v), "workload.B": max,
          "balance.spare_slots": max,
          # the middle of the decode regime: neither latency- nor memory-bound at its ends
          "workload.tokens_per_device": lambda v: sorted(v)[len(v) // 2]}


class ResultsView:
    """One results folder's points, front, comparison and resolved config (plain dicts: the saved config has
    extra keys), with what several figures need derived once."""

    def __init__(self, name: str, manifest: dict, points: pd.DataFrame, pareto: pd.DataFrame,
                 comparison: pd.DataFrame | None, cfg: dict, sensitivity=None):
        self.name, self.points, self.pareto, self.comparison, self.cfg = name, points, pareto, comparison, cfg
        self.sensitivity = sensitivity  # analysis.sensitivity.Sensitivity of these very points, or None
        self.axes = [a for a in manifest.get("axes", cfg.get("axes", {})) if a in points]
        self.objectives = manifest.get("objectives", {})
        self.compare, self.model = cfg.get("compare") or {}, cfg.get("model") or {}
        self.metric = self.compare.get("metric", "tokens_per_s")  # what "best" means
        self.baseline = self.compare.get("baseline") or ({"workload.G": 1} if "workload.G" in self.axes else {})
        self.feasible = points[points["feasible"].astype(bool)] if "feasible" in points else points
        self.group_cols = [a for a in self.axes if a not in OVER]  # one design each
        self.varying = [a for a in self.group_cols if points[a].nunique() > 1]  # zipped constants add no label

    @classmethod
    def load(cls, path) -> ResultsView:
        """Read and verify a results folder; ResultsError when it is missing, incomplete or damaged."""
        path = Path(path)
        man, points, pareto = store.load_results(path)
        comparison = None
        if (path / "comparison.csv").is_file():
            try:
                comparison = pd.read_csv(path / "comparison.csv")
            except Exception as exc:  # pandas raises many types for damaged files
                raise ResultsError(f"cannot read comparison.csv: {type(exc).__name__}", loc=(str(path),)) from None
        try:
            cfg = yamlio.load(path / "config.yaml")
        except Exception:  # the config refines labels and builds structures; plots that need neither still work
            cfg = None
        return cls(man.get("name", path.name), man, points, pareto, comparison, cfg if isinstance(cfg, dict) else {},
                   sens.load(path, man.get("config_hash")))

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
        """Each section's fields at one point: base, then a preset axis, then swept fields (as the engine does)."""
        presets, out = self.cfg.get("presets") or {}, {}
        for sec, spec in SECTIONS.items():
            fields = dict(self.cfg.get(sec) or {})
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
        """Points with every swept axis but `keep` held at a representative value, and that slice as text."""
        df, said = self.points, []
        for col in self.axes:
            if col in keep:
                continue
            values = list(pd.unique(df[col]))
            pick = PREFER[col](values) if col in PREFER and _numeric(values) else values[0]
            if self.points[col].nunique() > 1 and col != "model":  # titles name the model anyway
                said.append(setting(col, pick))
            df = df[df[col] == pick]
        return df, ", ".join(said)

    def context(self, row, skip=()) -> str:
        """Model, mode and mapping of a point, for titles (what the reader needs to place the numbers)."""
        s = self.sections(row)
        parts = [s["model"].get("name"), s["workload"].get("mode")]
        if "mapping.strategy" not in skip and s["mapping"].get("strategy"):
            parts.append(f"{s['mapping']['strategy']} mapping")
        return ", ".join(str(p) for p in parts if p)


def _numeric(values) -> bool:
    return all(isinstance(v, (int, float, np.integer, np.floating)) for v in values)
