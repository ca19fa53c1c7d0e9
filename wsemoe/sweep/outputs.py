"""A sweep's output columns, known before it runs: one point per categorical group, numpy only.

`check` and `sweep` use this to refuse a misspelt objective, constraint, comparison or output column
with a did-you-mean before anything is evaluated or written. It imports no pandas, so `wsemoe check`
starts fast; the engine builds its per-group namespaces with the same `namespaces`.
"""

from __future__ import annotations

import itertools
from types import SimpleNamespace

import numpy as np

from wsemoe.sweep.column_check import check_column
from wsemoe.sweep.columns import better, describe
from wsemoe.config.schema import SECTIONS, SweepConfig
from wsemoe.cost import serving
from wsemoe.errors import ConfigError
from wsemoe.specs.hardware import follow_energy, follow_pe

MAX_GROUPS = 64  # categorical combinations evaluated to learn the columns (they differ by topology, balancer...)
ALWAYS = ("feasible", "infeasible_reason")
RULE_INPUTS = {"rated_power_w", "static_power_w", "node_peak_flops"}   # what the energy rule divides (specs.hardware)
# units of amounts that cannot be below zero (times, sizes, counts, rates, energies): a bound under zero on one
# admits no point
NEVER_NEGATIVE = ("s", "bytes", "FLOP", "FLOP/s", "tokens", "tokens/s", "sequences", "sequences/s", "J/token", "W",
                  "USD/Mtok", "hops", "PEs", "wafers", "tiles", "experts", "layers", "cycles", "points")


def namespaces(base: dict, preset: dict, values: dict) -> dict:
    """Section namespaces the cost model sees: base spec (or the point's preset) fields, then swept values.

    `base` maps section -> fields; `preset` section -> preset name -> fields; `values` path -> value.
    """
    out = {}
    for section in SECTIONS:
        fields = dict(preset[section][values[section]] if section in values else base[section])
        swept = {p.partition(".")[2]: v for p, v in values.items() if p.partition(".")[0] == section}
        swept.pop("", None)
        facts = {k.partition(".")[2]: swept.pop(k) for k in [k for k in swept if k.startswith("pe.")]}
        facts = {k: v for k, v in facts.items() if v is not None}
        if section == "hardware" and fields.get("pe") and (facts or {"rows", "cols"} & set(swept)):
            # a swept grid splits the same fabric differently, a swept PE fact changes it: node figures follow
            fields = follow_pe(fields, fields["pe"], {**fields["pe"], **facts}, *(
                np.asarray(swept.get(k, fields[k]), float) for k in ("rows", "cols")))
        if section == "hardware" and fields.get("pe") and "energy_flop_j" not in swept and RULE_INPUTS & set(swept):
            fields = follow_energy(fields, {**fields, **swept})   # a derived energy per FLOP follows its rule
        fields.update(swept)
        if facts and fields.get("pe"):   # PE facts (hardware.pe.<field>) enter the PE-level model too
            fields["pe"] = {**fields["pe"], **facts}
        out[section] = SimpleNamespace(**fields)
    return out


def config_namespaces(cfg: SweepConfig, values: dict) -> dict:
    """Section namespaces at `values` ({path: value}) of one sweep: a preset axis value (e.g. `model`)
    replaces its whole section by the preset's fields."""
    preset = {s: {values[s]: preset_fields(cfg, s, values[s])} for s in SECTIONS if s in values}
    return namespaces(base_fields(cfg), preset, values)


def base_fields(cfg: SweepConfig) -> dict:
    """{section: fields} of the sweep's base specs."""
    return {s: getattr(cfg, s).model_dump() for s in SECTIONS}


def preset_fields(cfg: SweepConfig, section: str, name: str) -> dict:
    """The fields of a preset-axis value (e.g. model: deepseek-v3), validated by its section's spec."""
    return type(getattr(cfg, section)).model_validate(cfg.presets[name]).model_dump()


def evaluate(cfg: SweepConfig, ns: dict) -> dict:
    """The cost model on one piece's namespaces (communication from the fabric when it applies, serving metrics
    for inference); labels stay coded."""
    return serving.evaluate(ns["hardware"], ns["model"], ns["workload"], ns["mapping"], ns["balance"],
                            cfg.expert_histogram, coded=True)


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def representatives(cfg: SweepConfig, limit: int = MAX_GROUPS) -> list[dict]:
    """One point ({path: value}) per distinct combination of categorical axis values (at most `limit`)."""
    per_factor = []
    for f in cfg.factors():
        n = len(next(iter(f.values())))
        rows, seen = [], set()
        for i in range(n):
            row = {p: v[i] for p, v in f.items()}
            key = tuple(repr(v) for v in row.values() if not _is_number(v))
            if key not in seen:
                seen.add(key)
                rows.append(row)
        per_factor.append(rows)
    return [{k: v for row in combo for k, v in row.items()}
            for combo in itertools.islice(itertools.product(*per_factor), limit)]


def output_columns(cfg: SweepConfig) -> dict[str, str]:
    """{column: kind ("number", "text" or "bool")} of every column a sweep's points carry (inputs, cost
    outputs, feasibility)."""
    cols: dict[str, str] = {}
    for values in representatives(cfg):
        for path, v in values.items():
            cols.setdefault(path, _kind(v))
        out = evaluate(cfg, config_namespaces(cfg, {p: float(v) if _is_number(v) else v for p, v in values.items()}))
        for name, v in out.items():
            kind = getattr(v, "dtype", None)
            cols.setdefault(name, ("bool" if kind.kind == "b" else "number" if kind.kind in "fiu" else "text")
                            if kind is not None else _kind(v))
    for c in cfg.constraints:
        for bound in ("max", "min"):
            if getattr(c, bound) is not None:
                cols[f"g_{c.column}_{bound}"] = "number"
    cols.update({"feasible": "bool", "infeasible_reason": "text"})
    if cfg.compare:
        cols[f"speedup_vs_{cfg.compare.name}"] = "number"
    return cols


def _kind(v) -> str:
    return "bool" if isinstance(v, bool) else "number" if _is_number(v) else "text"


def check_columns(cfg: SweepConfig) -> dict[str, str]:
    """Every column the config names exists and has the kind its use needs (objectives, constraints,
    comparison, output); returns the columns with their kinds."""
    cols = output_columns(cfg)
    for name in cfg.objectives:
        check_column(name, cols, "objective column", ("objectives", name), "number")
    for i, c in enumerate(cfg.constraints):
        check_column(c.column, {k: v for k, v in cols.items() if not k.startswith("g_")}, "constraint column",
                     ("constraints", i, "column"), "number")
        unit = describe(c.column)[0]
        if c.max is not None and c.max < 0 and unit in NEVER_NEGATIVE:   # as min above max is refused
            raise ConfigError(f"max {c.max:g} on {c.column}, which is never negative ({unit}): no point could "
                              "satisfy it", loc=("constraints", i, "max"))
    if cfg.compare:
        # (the baseline, candidate and `over` axes are checked when the config loads)
        named = [(cfg.compare.metric, ("compare", "metric")), *((n, ("compare", "also", i))
                                                               for i, n in enumerate(cfg.compare.also))]
        for name, loc in named:
            check_column(name, cols, "comparison metric", loc, "number")
            if better(name) == "min":   # the best point is the largest: a time or memory would pick the worst
                raise ConfigError(f"'{name}' is better smaller ({describe(name)[0]}), and a comparison takes the "
                                  "largest value as best: compare a rate (e.g. tokens_per_s), or use `wsemoe compare "
                                  f"--metric {name}:min` on the results", loc=loc)
        if len({n for n, _ in named}) < len(named):
            raise ConfigError("a column is named twice among compare.metric and compare.also", loc=("compare", "also"))
        if "mfu" in cfg.compare.also:   # its best_/baseline_ columns already hold the compared points' MFU
            raise ConfigError("mfu is reported at the compared points already (best_mfu, baseline_mfu); compare.also "
                              "tunes each side for another column of its own", loc=("compare", "also"))
    for name in cfg.output.columns or ():
        check_column(name, cols, "output column", ("output", "columns"))
    return cols
