"""Calibration unknowns: the figures no publication states, each with a range, a nominal value and a source.

They live in one YAML file (package data, `analysis/uncertainty/data/unknowns.yaml`, keyed by hardware preset); a
user file of the same form may replace it. An unknown maps a unit-interval sample onto its range
(linear, log, or a discrete set) and sets one or more spec fields (`paths`).

PE-level unknowns (`hardware.pe.<field>`: hop, turn and relay cycles, the WSE-3 clock, the operator
overhead, the program bytes per PE; and those marked `named_only`, such as the hop between CS systems) are
listed beside the others but enter only the PE-level model (`wsemoe.cost.wafer`): `select` leaves them out
unless they are named, and a sampled sweep takes them only when it serves from SRAM.
"""

from __future__ import annotations

import typing

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from wsemoe.arguments import whole
from wsemoe.config import presets, yamlio
from wsemoe.config.axes import check_path
from wsemoe.config.schema import SECTIONS
from wsemoe.errors import ConfigError, PresetError, excerpt
from wsemoe.specs.base import MAX_FIGURE, build
from wsemoe.specs.hardware import PEFacts

DEFAULT = Path(__file__).resolve().parent / "data" / "unknowns.yaml"
KEYS = {"paths", "range", "values", "nominal", "scale", "source", "named_only", "bounds", "hardware"}
PE_PREFIX = "hardware.pe."


@dataclass(frozen=True)
class Unknown:
    """One calibration unknown: the fields it sets, its range (or discrete values) and provenance."""

    name: str
    paths: tuple[str, ...]
    low: float
    high: float
    nominal: float
    scale: str = "linear"
    values: tuple[float, ...] | None = None
    source: str = ""
    named_only: bool = False   # read by SRAM serving alone (not a PE fact): sampled only when named, as PE facts
    bounds: tuple[str, str] = ("", "")   # where the low and the high end of the range come from
    hardware: str | None = None   # the one hardware preset it describes: other systems' rows keep their own value

    @property
    def pe_level(self) -> bool:
        """Whether only the PE-level model reads it (a PE fact `hardware.pe.<field>`, or marked `named_only`):
        sampled only when named."""
        return self.named_only or any(p.startswith(PE_PREFIX) for p in self.paths)

    @property
    def serving_only(self) -> bool:
        """Whether only SRAM serving reads it (a PE fact, or named_only without a hardware of its own)."""
        return any(p.startswith(PE_PREFIX) for p in self.paths) or (self.named_only and self.hardware is None)

    def value(self, u):
        """Values for unit-interval samples `u` (array): linear or log over the range, or a discrete pick."""
        u = np.clip(np.asarray(u, dtype=float), 0.0, 1.0)
        if self.values is not None:
            idx = np.minimum((u * len(self.values)).astype(int), len(self.values) - 1)
            return np.asarray(self.values, dtype=float)[idx]
        if self.scale == "log":
            return np.exp(np.log(self.low) + u * (np.log(self.high) - np.log(self.low)))
        return self.low + u * (self.high - self.low)

    def unit(self, value) -> float:
        """The unit-interval position of a value (inverse of `value`; a discrete value maps to its bin centre)."""
        if self.values is not None:
            return (list(self.values).index(value) + 0.5) / len(self.values)
        if self.scale == "log":
            return float((np.log(value) - np.log(self.low)) / (np.log(self.high) - np.log(self.low)))
        return float((value - self.low) / (self.high - self.low))


def _number(v) -> bool:
    """A finite number a sample can take (a range of astronomical figures would overflow the model's products)."""
    return isinstance(v, (int, float)) and not isinstance(v, bool) and abs(v) <= MAX_FIGURE


def _unknown(name: str, spec, loc) -> Unknown:
    if not isinstance(spec, dict) or set(spec) - KEYS or "paths" not in spec or "nominal" not in spec:
        raise ConfigError(f"an unknown takes {sorted(KEYS)} with paths and nominal", loc=loc)
    paths = spec["paths"]
    if not isinstance(paths, list) or not paths:
        raise ConfigError("paths: a list of section.field", loc=(*loc, "paths"))
    for p in paths:
        if isinstance(p, str) and p.startswith(PE_PREFIX):
            if p[len(PE_PREFIX):] not in PEFacts.model_fields:
                raise ConfigError(f"'{p}' is not a field of hardware.pe", loc=(*loc, "paths"))
        elif not isinstance(p, str) or check_path(p, (*loc, "paths"))[1] is None:
            raise ConfigError(f"'{p}' is not a section.field path", loc=(*loc, "paths"))
    values = spec.get("values")
    if values is not None:
        if not isinstance(values, list) or len(values) < 2 or not all(_number(v) for v in values):
            raise ConfigError(f"values: a list of at least two numbers of magnitude at most {MAX_FIGURE:g}",
                              loc=(*loc, "values"))
        if len({float(v) for v in values}) < len(values):   # a repeat doubles that value's share of the samples
            raise ConfigError("values: a value is listed twice", loc=(*loc, "values"))
        low, high = min(values), max(values)
    else:
        rng = spec.get("range")
        if not isinstance(rng, list) or len(rng) != 2 or not all(_number(v) for v in rng) or not rng[0] < rng[1]:
            raise ConfigError(f"range: [low, high] with low < high, numbers of magnitude at most {MAX_FIGURE:g} "
                              "(or values: [...])", loc=(*loc, "range"))
        low, high = float(rng[0]), float(rng[1])
    scale = spec.get("scale", "linear")
    if scale not in ("linear", "log") or (scale == "log" and low <= 0):
        raise ConfigError("scale: linear, or log over a positive range", loc=(*loc, "scale"))
    nominal = spec["nominal"]
    if not _number(nominal):   # `true` is an int to Python: it was read as a nominal of 1
        raise ConfigError(f"nominal: a number, got {excerpt(repr(nominal))}", loc=(*loc, "nominal"))
    if not low <= nominal <= high or (values and nominal not in values):
        raise ConfigError(f"nominal {nominal!r} outside the range", loc=(*loc, "nominal"))
    for key, kind, what in (("named_only", bool, "true or false"), ("source", str, "text"), ("hardware", str,
                                                                                            "a hardware preset name")):
        if spec.get(key) is not None and not isinstance(spec[key], kind):   # bool('no') was True
            raise ConfigError(f"{key}: {what}, got {excerpt(repr(spec[key]))}", loc=(*loc, key))
    bounds = spec.get("bounds", {})
    if not isinstance(bounds, dict) or set(bounds) - {"low", "high"} or \
            not all(isinstance(v, str) and v.strip() for v in bounds.values()):
        raise ConfigError("bounds: {low: its source, high: its source}", loc=(*loc, "bounds"))
    return Unknown(name, tuple(paths), low, high, float(nominal), scale,
                   tuple(float(v) for v in values) if values else None, str(spec.get("source", "")),
                   bool(spec.get("named_only", False)), (str(bounds.get("low", "")), str(bounds.get("high", ""))),
                   None if spec.get("hardware") is None else str(spec["hardware"]))


def load(hardware: str, path=None, named_by: str = "--hardware") -> list[Unknown]:
    """The unknowns listed for a hardware preset (from `path`, or the shipped file); `named_by`: where the user named
    the preset (calibrate's --hardware, a sweep's `hardware`), which an error names."""
    source = Path(path) if path else DEFAULT
    data = yamlio.load(source)
    if not isinstance(data, dict) or hardware not in data:
        known = ", ".join(sorted(map(str, data))) if isinstance(data, dict) else "none"   # keys as YAML gives them: 1 too
        where = "" if source == DEFAULT else f" in {source}"   # the shipped list, or the user's own file
        raise ConfigError(f"no calibration unknowns for hardware '{excerpt(str(hardware))}'{where} (listed: {known})",
                          loc=(named_by,) if source == DEFAULT else (str(source),))
    entries = data[hardware]
    if not isinstance(entries, dict) or not entries:
        raise ConfigError("a mapping of unknowns", loc=(str(source), hardware))
    out = [_unknown(str(n), s, (str(source), hardware, str(n))) for n, s in entries.items()]
    for u in out:
        _fits_fields(u, hardware, (str(source), hardware, u.name))
    return out


def _fits_fields(u: Unknown, hardware: str, loc) -> None:
    """Every value the unknown can take is one its fields accept (their spec's bounds and type, on the preset
    it describes): sampling and fitting write the frame directly, past the spec's checks, so a range past a
    field's limits would give results the spec refuses (an efficiency above 1) or overflow."""
    ends = list(u.values) if u.values is not None else [u.low, u.high]
    where = (*loc, "values" if u.values is not None else "range")
    try:   # read once per unknown, not per path and value
        base = presets.raw("hardware", u.hardware or hardware)
    except PresetError:
        base = None   # a user's key that names no preset: the field's own limits only, below
    for path in u.paths:
        section, _, field = path.partition(".")
        for v in (*ends, u.nominal):
            if section == "hardware":
                if field.startswith("pe.") and base is not None and base.get("pe"):
                    build(PEFacts, {**base["pe"], field[3:]: v}, loc=(*where, "pe"))
                    continue
                if base is not None and not field.startswith("pe."):
                    typed = getattr(build(SECTIONS[section], {**base, field: v}, loc=where), field)
                    _continuous(u, path, typed, where)
                    continue
            spec, name = (PEFacts, field[3:]) if field.startswith("pe.") else (SECTIONS[section], field)
            _field_only(spec, name, v, u, path, where)


def _field_only(spec, field: str, v, u: Unknown, path: str, loc) -> None:
    """The field's own limits (the spec built from defaults with the value set, the error about this field)."""
    try:
        typed = getattr(spec.model_validate({field: v}), field)
    except Exception as exc:   # noqa: BLE001 (a spec that needs other fields: only this field's error matters)
        errors = getattr(exc, "errors", lambda: [])()
        mine = [e for e in errors if tuple(e.get("loc", ()))[:1] == (field,)]
        if mine:
            raise ConfigError(f"{path} = {v!r}: {mine[0]['msg']}", loc=loc) from None
        # the spec needs fields it was not given (a model's shape): its type still says whether the field is
        # whole (a range over model.num_experts was sampled as 37.4 experts and evaluated)
        typed = 0 if _whole_field(spec, field) else 0.0
    _continuous(u, path, typed, loc)


def _whole_field(spec, field: str) -> bool:
    """True when the spec's field holds whole numbers (int, or an optional int)."""
    info = spec.model_fields.get(field)
    if info is None:
        return False
    return int in (typing.get_args(info.annotation) or (info.annotation,))


def _continuous(u: Unknown, path: str, typed, loc) -> None:
    """A whole-number field takes a discrete set of values, never a continuous range (its samples would be
    fractional)."""
    if isinstance(typed, int) and not isinstance(typed, bool) and u.values is None:
        raise ConfigError(f"{path} is a whole number: give its values as a list (values: [...]), not a range",
                          loc=loc)


MAX_SEED = 2**63 - 1   # a seed numpy's generators and SALib take whole


def check_seed(seed) -> int:
    """The seed of a sample design or a search: a whole number from 0 (as --seed takes it); -1, 1.5 or None were
    numpy's errors from deep inside a run."""
    return whole(seed, "--seed", 0, MAX_SEED)


def select(unknowns: list[Unknown], names) -> list[Unknown]:
    """Only the named unknowns, in the file's order; when `names` is empty, every one a sweep reads (the
    PE-level ones only by name)."""
    if not names:
        return _one_per_field([u for u in unknowns if not u.pe_level])
    known = {u.name for u in unknowns}
    for n in names:
        if n not in known:
            raise ConfigError(f"unknown calibration parameter '{n}' (known: {', '.join(sorted(known))})",
                              loc=("--only",))
    return _one_per_field([u for u in unknowns if u.name in set(names)])


def _one_per_field(chosen: list[Unknown]) -> list[Unknown]:
    """`chosen`, refused when two of them set one field of one system: the later one's samples would overwrite
    the earlier one's, whose indices would then read as zero."""
    owner: dict = {}
    for u in chosen:
        for p in u.paths:
            other = owner.setdefault((u.hardware, p), u.name)
            if other != u.name:
                raise ConfigError(f"unknowns '{other}' and '{u.name}' both set {p}"
                                  f"{f' of {u.hardware}' if u.hardware else ''}: one would overwrite the other's "
                                  "samples (keep one, or sample them apart with --only)", loc=("--only", u.name))
    return chosen
