"""Sweep YAML → validated SweepConfig: presets resolved, axes checked value by value.

Validation happens here in one step (ZigZag style); building the design frame is space.py's job.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import math
import re
from pathlib import Path
from typing import Any, Literal, Optional

import numpy as np
from pydantic import Field, field_validator

from wsemoe import presets, yamlio
from wsemoe.errors import ConfigError, excerpt
from wsemoe.specs import BalanceSpec, HardwareSpec, MappingSpec, ModelSpec, WorkloadSpec
from wsemoe.specs.base import Spec, build

SECTIONS = {"hardware": HardwareSpec, "model": ModelSpec, "workload": WorkloadSpec,
            "mapping": MappingSpec, "balance": BalanceSpec}
PRESET_KIND = {"hardware": "hardware", "model": "models"}
TOP_KEYS = ("name", "description", *SECTIONS, "axes", "zip", "sparsity", "constraints", "objectives", "compare", "output")
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


class Sparsity(Spec):
    """Vary E or top-k, holding expert width, active or total routed-expert parameters constant."""

    vary: Literal["num_experts", "num_experts_per_tok"] = Field(description="model field to vary")
    values: list[int] = Field(min_length=1, description="values of the varied field")
    hold: Literal["width", "active", "total"] = Field("width", description="what stays constant: F, k·F, or E·F")


class Constraint(Spec):
    """A user bound on an output column; it becomes a g_<column>_<min|max> column (g ≤ 0 satisfied)."""

    column: str
    max: Optional[float] = None
    min: Optional[float] = None


class Compare(Spec):
    """Best feasible baseline point per group of the other axes against the best feasible point."""

    name: str = Field("uniform", description="suffix of the speedup_vs_<name> column")
    baseline: dict[str, Any] = Field(default_factory=lambda: {"workload.G": 1}, description="axis values of the baseline")
    metric: str = Field("tokens_per_s", description="column to maximize")
    over: Optional[list[str]] = Field(None, description="axes optimized within a group (default: B, G)")


class Output(Spec):
    """What points.parquet keeps: every column (default) or the inputs plus these outputs."""

    columns: Optional[list[str]] = Field(None, description="output columns to keep (feasibility, bound and objectives always kept)")


class SweepConfig(Spec):
    """A validated sweep: base specs, axes (grid and zip), helpers, constraints, objectives, comparison."""

    name: str
    description: str = ""
    hardware: HardwareSpec
    model: ModelSpec
    workload: WorkloadSpec = WorkloadSpec()
    mapping: MappingSpec = MappingSpec()
    balance: BalanceSpec = BalanceSpec()
    axes: dict[str, list[Any]] = Field(default_factory=dict)
    zip: list[dict[str, list[Any]]] = Field(default_factory=list)
    sparsity: Optional[Sparsity] = None
    constraints: list[Constraint] = Field(default_factory=list)
    objectives: dict[str, Literal["min", "max"]] = Field(
        default_factory=lambda: {"tokens_per_s": "max", "mem_peak_node_bytes": "min"})
    compare: Optional[Compare] = None
    output: Output = Output()
    presets: dict[str, dict[str, Any]] = Field(default_factory=dict, description="resolved preset axes: name -> fields")
    expert_histogram: Optional[list[float]] = Field(None, description="per-expert shares read from balance.histogram")
    base_dir: Optional[str] = Field(None, exclude=True, description="folder relative paths in the config resolve against")

    @field_validator("name")
    @classmethod
    def _safe_name(cls, v):
        if not NAME_RE.match(v):
            raise ValueError("must be 1-100 letters, digits, '.', '_' or '-' (it names the results folder)")
        return v

    def config_hash(self) -> str:
        """Content hash of what runs: identical configs skip re-evaluation.

        The sparsity helper is already expanded into `zip`, and a histogram counts by its shares,
        not its path, so a resolved config.yaml hashes like the config it came from.
        """
        data = self.model_dump(mode="json", exclude={"sparsity"})
        data["balance"].pop("histogram", None)
        text = json.dumps(data, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def resolved(self, base_dir: Path | None = None) -> dict:
        """A loadable config of exactly what runs: presets expanded to fields, helpers expanded to zips."""
        data = self.model_dump(mode="json", exclude_none=True, exclude={"sparsity", "presets", "expert_histogram"})
        hist = data["balance"].get("histogram")
        if hist and base_dir is not None and not Path(hist).is_absolute():
            data["balance"]["histogram"] = str((base_dir / hist).resolve())
        return data

    def axis_names(self) -> list[str]:
        """Every swept path, grid axes first, then zipped ones."""
        return list(self.axes) + [k for group in self.zip for k in group]


def _section(key: str, value, base_dir: Path):
    """A base section as a dict: a preset name, {preset: name, ...overrides}, {hf_config: path}, or fields."""
    if key in PRESET_KIND and isinstance(value, str):
        return presets.raw(PRESET_KIND[key], value, loc=(key,))
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ConfigError(f"expected a mapping or preset name, got {type(value).__name__}", loc=(key,))
    value = dict(value)
    if key in PRESET_KIND and "preset" in value:
        return {**presets.raw(PRESET_KIND[key], value.pop("preset"), loc=(key, "preset")), **value}
    if key == "model" and "hf_config" in value:
        from wsemoe.presets.hf import model_from_hf_config

        path = Path(str(value.pop("hf_config")))
        path = path if path.is_absolute() else base_dir / path
        return {**model_from_hf_config(path).model_dump(exclude_defaults=True), **value}
    return value


MAX_AXIS_VALUES = 1_000_000  # values of one axis; sweeps grow by combining axes, not by one endless list


def _number(x, loc) -> float:
    """A finite real number from a range/pow2 argument (booleans and text refused)."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise ConfigError(f"expected a number, got {excerpt(repr(x))}", loc=loc)
    if not math.isfinite(x) or abs(x) > 2**53:
        raise ConfigError(f"expected a finite number of magnitude at most 2**53, got {x!r}", loc=loc)
    return x


def _range_values(args, step, loc) -> list:
    """Inclusive arithmetic progression; its length is computed before anything is expanded."""
    if not isinstance(args, list) or len(args) not in (2, 3) or (len(args) == 3 and step is not None):
        raise ConfigError("range takes [start, stop] or [start, stop, step] (or step: as its own key)", loc=loc)
    start, stop = (_number(a, (*loc, i)) for i, a in enumerate(args[:2]))
    step = _number(args[2] if len(args) == 3 else 1 if step is None else step, (*loc, "step"))
    if step <= 0 or stop < start:
        raise ConfigError("range needs start <= stop and step > 0", loc=loc)
    if all(isinstance(v, int) for v in (start, stop, step)):
        count = (stop - start) // step + 1
    else:  # a relative tolerance keeps 0.1-steps from losing their last value to rounding
        count = math.floor((stop - start) / step * (1 + 1e-12)) + 1
    if count > MAX_AXIS_VALUES:
        shown = f"{count:,}" if count < 1e12 else f"{float(count):.3g}"
        raise ConfigError(f"range has {shown} values; one axis takes at most {MAX_AXIS_VALUES:,}", loc=loc)
    if isinstance(count, int) and all(isinstance(v, int) for v in (start, stop, step)):
        return list(range(start, stop + 1, step))
    vals = [round(start + i * step, 12) for i in range(int(count))]
    return [int(v) if float(v).is_integer() else v for v in vals]


def _pow2_values(args, loc) -> list:
    if not isinstance(args, list) or len(args) != 2:
        raise ConfigError("pow2 takes [lo, hi]", loc=loc)
    lo, hi = (_number(a, (*loc, i)) for i, a in enumerate(args))
    if not 0 < lo <= hi:
        raise ConfigError("pow2 needs 0 < lo <= hi", loc=loc)
    out = [2**e for e in range(0, 54) if lo <= 2**e <= hi]
    if not out:
        raise ConfigError(f"no power of two lies in [{lo:g}, {hi:g}]", loc=loc)
    return out


def _expand(values, loc):
    """Axis values: a list, {range: [start, stop, step]} or {range: [start, stop], step: s} (inclusive),
    or {pow2: [lo, hi]}."""
    if isinstance(values, list):
        if not values:
            raise ConfigError("empty list: an axis needs at least one value", loc=loc)
        if len(values) > MAX_AXIS_VALUES:
            raise ConfigError(f"{len(values):,} values; one axis takes at most {MAX_AXIS_VALUES:,}", loc=loc)
        return values
    if isinstance(values, dict) and "range" in values and set(values) <= {"range", "step"}:
        return _range_values(values["range"], values.get("step"), (*loc, "range"))
    if isinstance(values, dict) and set(values) == {"pow2"}:
        return _pow2_values(values["pow2"], (*loc, "pow2"))
    raise ConfigError("an axis takes a list of values, {range: [start, stop, step]} or {pow2: [lo, hi]}", loc=loc)


def _check_path(path: str, loc) -> tuple[str, str | None]:
    """Split 'section.field' and check both exist (did-you-mean on typos); preset axes have no field."""
    section, _, field = path.partition(".")
    if section not in SECTIONS:
        close = difflib.get_close_matches(section, list(SECTIONS), n=1)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        raise ConfigError(f"unknown axis section '{section}'{hint}", loc=loc)
    if not field:
        if section not in PRESET_KIND:
            raise ConfigError(f"axis '{path}' needs a field, e.g. '{section}.<field>'", loc=loc)
        return section, None
    fields = SECTIONS[section].model_fields
    if field not in fields:
        close = difflib.get_close_matches(field, list(fields), n=1)
        hint = f"; did you mean '{section}.{close[0]}'?" if close else ""
        raise ConfigError(f"unknown field '{field}' of {section}{hint}", loc=loc)
    return section, field


FULL_CHECK = 512  # longer numeric axes validate their type per value and the whole spec at the extremes


def _typed_values(path, values, base: dict, loc, preset_store: dict) -> list:
    """Validate each axis value against its spec (base with the value substituted); return typed values."""
    section, field = _check_path(path, loc)
    if field is None:  # a preset axis: every value is a preset name
        out = []
        for i, v in enumerate(values):
            if not isinstance(v, str):
                raise ConfigError("a preset axis takes preset names", loc=(*loc, i))
            fields = presets.raw(PRESET_KIND[section], v, loc=(*loc, i))
            build(SECTIONS[section], fields, loc=(*loc, i))
            preset_store[v] = fields
            out.append(v)
        return out
    if len(values) > FULL_CHECK and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        return _typed_numbers(section, field, values, base, loc)
    return [getattr(build(SECTIONS[section], {**base[section], field: v}, loc=(*loc, i)), field)
            for i, v in enumerate(values)]


def _typed_numbers(section: str, field: str, values: list, base: dict, loc) -> list:
    """A long numeric axis: every spec constraint is a bound (or monotone in the value), so the spec is
    built at the smallest and largest value only; integrality and finiteness are checked for all."""
    arr = np.asarray(values, dtype=float)
    bad = np.flatnonzero(~np.isfinite(arr))
    if bad.size:
        raise ConfigError(f"not a finite number (got {values[bad[0]]!r})", loc=(*loc, int(bad[0])))
    typed = None
    for i in (int(np.argmin(arr)), int(np.argmax(arr))):
        typed = getattr(build(SECTIONS[section], {**base[section], field: values[i]}, loc=(*loc, i)), field)
    if isinstance(typed, int):
        frac = np.flatnonzero(arr != np.round(arr))
        if frac.size:
            raise ConfigError(f"Input should be a valid integer (got {values[frac[0]]!r})", loc=(*loc, int(frac[0])))
        return [int(v) for v in values]
    return [float(v) for v in values]


def _sparsity_zip(sp: Sparsity, model: dict) -> dict:
    """Zip group of the sparsity helper: the varied field and the expert width that holds `hold` constant."""
    F0, E0, k0 = model["moe_intermediate_size"], model["num_experts"], model["num_experts_per_tok"]
    widths = []
    for v in sp.values:
        E, k = (v, k0) if sp.vary == "num_experts" else (E0, v)
        scale = {"width": 1.0, "active": k0 / k, "total": E0 / E}[sp.hold]
        widths.append(max(1, round(F0 * scale)))
    return {f"model.{sp.vary}": list(sp.values), "model.moe_intermediate_size": widths}


def load_config(source, base_dir: Path | None = None) -> SweepConfig:
    """Parse and validate a sweep config from a path, YAML text's parsed dict, or SweepConfig."""
    if isinstance(source, SweepConfig):
        return source
    if isinstance(source, (str, Path)):
        path = Path(source)
        data, base_dir = yamlio.load(path), path.parent
        if isinstance(data, dict):
            data.setdefault("name", path.stem)
    else:
        data = source
    if not isinstance(data, dict):
        raise ConfigError("a sweep config must be a YAML mapping", loc=("config",))
    base_dir = base_dir or Path.cwd()
    for key in data:
        if key not in TOP_KEYS:
            close = difflib.get_close_matches(str(key), TOP_KEYS, n=1)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            raise ConfigError(f"unknown key '{key}'{hint}", loc=(str(key),))
    for key in ("hardware", "model"):
        if key not in data and key not in (data.get("axes") or {}):
            raise ConfigError("required section is missing (a preset name or fields)", loc=(key,))
    base = {k: _section(k, data.get(k), base_dir) for k in SECTIONS}
    for k in ("hardware", "model"):  # a preset axis supplies the base when the section is absent
        if not base[k]:
            first = (data.get("axes") or {}).get(k)
            if isinstance(first, list) and first and isinstance(first[0], str):
                base[k] = presets.raw(PRESET_KIND[k], first[0], loc=("axes", k, 0))
    specs = {k: build(cls, base[k], loc=(k,)) for k, cls in SECTIONS.items()}
    base = {k: s.model_dump(exclude_none=True) for k, s in specs.items()}
    rest = {k: v for k, v in data.items() if k not in SECTIONS}
    meta = build(_Meta, rest)
    preset_store: dict = {}
    axes = {}
    for path, values in (meta.axes or {}).items():
        loc = ("axes", path)
        axes[path] = _typed_values(path, _expand(values, loc), base, loc, preset_store)
    zips = []
    groups = [dict(g) for g in (meta.zip or [])]
    if meta.sparsity:
        groups.append(_sparsity_zip(meta.sparsity, base["model"]))
    for gi, group in enumerate(groups):
        typed = {path: _typed_values(path, _expand(vals, ("zip", gi, path)), base, ("zip", gi, path), preset_store)
                 for path, vals in group.items()}
        lengths = {len(v) for v in typed.values()}
        if len(lengths) > 1:
            raise ConfigError(f"zipped axes need equal lengths, got {sorted(lengths)}", loc=("zip", gi))
        zips.append(typed)
    seen = list(axes) + [p for g in zips for p in g]
    dup = {p for p in seen if seen.count(p) > 1}
    if dup:
        raise ConfigError(f"axis '{sorted(dup)[0]}' is swept twice", loc=("axes", sorted(dup)[0]))
    histogram = _histogram(specs, axes, zips, base_dir)
    cfg = build(SweepConfig, {
        "name": meta.name, "description": meta.description, **specs, "axes": axes, "zip": zips,
        "sparsity": meta.sparsity, "constraints": meta.constraints, "objectives": meta.objectives or
        SweepConfig.model_fields["objectives"].default_factory(), "compare": meta.compare, "presets": preset_store,
        "expert_histogram": histogram, "output": meta.output, "base_dir": str(base_dir),
    })
    from wsemoe.space import check_points

    check_points(cfg)
    return cfg


def _histogram(specs: dict, axes: dict, zips: list, base_dir: Path):
    """Shares of a measured histogram, checked against every expert count the sweep uses."""
    bal = specs["balance"]
    if bal.distribution != "histogram":
        return None
    if not bal.histogram:
        raise ConfigError("distribution 'histogram' needs balance.histogram (a CSV path)", loc=("balance", "histogram"))
    from wsemoe.histogram import read_histogram

    path = Path(bal.histogram)
    shares = read_histogram(path if path.is_absolute() else base_dir / path)
    counts = {specs["model"].num_experts, *axes.get("model.num_experts", [])}
    for g in zips:
        counts |= set(g.get("model.num_experts", []))
    if any(c != len(shares) for c in counts):
        raise ConfigError(f"histogram has {len(shares)} experts but the model has {sorted(counts)}",
                          loc=("balance", "histogram"))
    return shares


class _Meta(Spec):
    """The non-spec part of a sweep file, validated before axes are expanded."""

    output: Output = Output()
    name: str = "sweep"
    description: str = ""
    axes: Optional[dict[str, Any]] = None
    zip: Optional[list[dict[str, Any]]] = None
    sparsity: Optional[Sparsity] = None
    constraints: list[Constraint] = Field(default_factory=list)
    objectives: Optional[dict[str, Literal["min", "max"]]] = None
    compare: Optional[Compare] = None
