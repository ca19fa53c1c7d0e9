"""Readings: modelling choices no source pins (presets/readings.yaml), loaded strictly, and a sweep under them.

A reading has options, each a set of spec fields (dotted paths, or `sparsity.hold`) with its evidence, and a
default chosen by evidence. For one sweep a reading is varied, pinned (one of its paths is an axis), not
applicable (its `applies_to` rule), or pending (its fields are not in the model yet). `apply` returns the
sweep with chosen options set: base spec fields, the fields of the presets a preset axis names (only those
the rule selects), or the sparsity helper's held quantity.
"""

from __future__ import annotations

import difflib
import functools
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

from pydantic import TypeAdapter, ValidationError

from wsemoe.config import axes, checks, derived, yamlio
from wsemoe.config.schema import PRESET_KIND, SECTIONS, Sparsity, SweepConfig
from wsemoe.errors import ConfigError, excerpt
from wsemoe.specs.hardware import PEFacts, follow_pe
from wsemoe.specs.base import build, error_text

REGISTRY = Path(__file__).resolve().parents[1] / "presets" / "readings.yaml"
READING_KEYS = ("question", "applies_to", "scope", "options", "default", "why", "pending")
REQUIRED = ("question", "options", "default", "why")
OPTION_KEYS = ("set", "evidence", "source")
HOLD = "sparsity.hold"  # the one path outside the five specs: the sparsity helper's held quantity


@dataclass(frozen=True)
class Option:
    """One answer to a reading's question: the fields it sets, the evidence for it and its source."""

    name: str
    set: dict
    evidence: str
    source: str


@dataclass(frozen=True)
class Reading:
    """A modelling choice no source pins: its options, default, and where it applies."""

    name: str
    question: str
    options: dict
    default: str
    why: str
    applies_to: dict = field(default_factory=dict)
    scope: str = ""
    pending: str = ""

    @property
    def paths(self) -> list[str]:
        """Every path some option sets, in order."""
        return list(dict.fromkeys(p for o in self.options.values() for p in o.set))


@dataclass(frozen=True)
class Status:
    """What a reading is for one sweep: varied, pinned, not applicable or pending; and the option it runs as."""

    reading: Reading
    state: str          # "varied" | "pinned" | "not applicable" | "pending"
    detail: str = ""
    configured: str | None = None  # the option the sweep's own values match (None: none of them)

    @property
    def varied(self) -> bool:
        return self.state == "varied"


def _refuse(keys, allowed, loc, what: str) -> None:
    """One line naming the first unknown key, with a did-you-mean."""
    for key in keys:
        if key not in allowed:
            close = difflib.get_close_matches(str(key), allowed, n=1)
            hint = f"; did you mean '{close[0]}'?" if close else f"; a {what} takes {', '.join(allowed)}"
            raise ConfigError(f"unknown key '{excerpt(key)}'{hint}", loc=(*loc, str(key)))


PE = "hardware.pe."   # a PE fact of the hardware (SRAM serving reads them), e.g. hardware.pe.sram_per_pe_bytes


def _field_type(path: str, loc):
    """The pydantic field a path names (checked, with did-you-mean), for typing option and rule values."""
    if path == HOLD:
        return Sparsity.model_fields["hold"]
    if derived.is_derived(path):
        return derived.field_info(path)
    if path.startswith(PE):
        facts = PEFacts.model_fields
        if path[len(PE):] not in facts:
            close = difflib.get_close_matches(path[len(PE):], list(facts), n=1)
            hint = f"; did you mean '{PE}{close[0]}'?" if close else ""
            raise ConfigError(f"unknown PE fact '{path[len(PE):]}'{hint}", loc=loc)
        return facts[path[len(PE):]]
    try:
        section, name = axes.check_path(path, loc)
    except ConfigError as exc:   # a derived fact is a name too
        raise ConfigError(exc.message + derived.suggestion(path, exc.message), loc=loc) from None
    if name is None:
        raise ConfigError(f"'{path}' names a whole section; a reading sets fields (section.field)", loc=loc)
    return SECTIONS[section].model_fields[name]


def _typed(path: str, value, loc, check: bool = True):
    """`value` typed as the field's type (a YAML 9.0e+11 and 900000000000 are one value)."""
    if not check:
        return value
    info = _field_type(path, loc)
    try:  # strict: YAML `true` is no number, "1" no bool; the field's bounds apply
        kind = Annotated[(info.annotation, *info.metadata)] if info.metadata else info.annotation
        return TypeAdapter(kind).validate_python(value, strict=True)
    except ValidationError as exc:
        raise ConfigError(error_text(exc.errors()[0]), loc=loc) from None


def _mapping(spec, allowed, required, loc, what: str) -> None:
    """A mapping with only `allowed` keys and every `required` one, or one line saying what is wrong."""
    if not isinstance(spec, dict):
        raise ConfigError(f"a {what} is a mapping of {', '.join(allowed)}", loc=loc)
    _refuse(spec, allowed, loc, what)
    for key in required:
        if key not in spec:
            raise ConfigError(f"'{key}' is missing", loc=(*loc, key))


def _option(name: str, spec, loc, check: bool) -> Option:
    _mapping(spec, OPTION_KEYS, OPTION_KEYS, loc, "option")
    sets = spec["set"]
    if not isinstance(sets, dict):
        raise ConfigError("set: a mapping of dotted paths to values", loc=(*loc, "set"))
    for k in ("evidence", "source"):
        if not isinstance(spec[k], str) or not spec[k].strip():
            raise ConfigError("text stating it, with its source", loc=(*loc, k))
    typed = {str(p): _typed(str(p), v, (*loc, "set", str(p)), check) for p, v in sets.items()}
    return Option(name, typed, spec["evidence"].strip(), spec["source"].strip())


def _reading(name: str, spec, loc) -> Reading:
    _mapping(spec, READING_KEYS, REQUIRED, loc, "reading")
    pending = str(spec.get("pending") or "")
    opts = spec["options"]
    if not isinstance(opts, dict) or len(opts) < 2:
        raise ConfigError("a reading needs at least two options", loc=(*loc, "options"))
    options = {str(n): _option(str(n), s, (*loc, "options", str(n)), not pending) for n, s in opts.items()}
    if str(spec["default"]) not in options:
        raise ConfigError(f"default '{excerpt(spec['default'])}' is not one of its options ({', '.join(options)})",
                          loc=(*loc, "default"))
    rule = spec.get("applies_to") or {}
    if not isinstance(rule, dict):
        raise ConfigError("applies_to: a mapping of spec paths to lists of values", loc=(*loc, "applies_to"))
    applies = {}
    for path, values in rule.items():
        where = (*loc, "applies_to", str(path))
        if not isinstance(values, list) or not values:
            raise ConfigError("a list of the values the reading applies to", loc=where)
        applies[str(path)] = tuple(_typed(str(path), v, where) for v in values)
    for k in ("question", "why"):
        if not isinstance(spec[k], str) or not spec[k].strip():
            raise ConfigError("one line of text", loc=(*loc, k))
    return Reading(name, spec["question"].strip(), options, str(spec["default"]), spec["why"].strip(), applies,
                   str(spec.get("scope") or "").strip(), pending)


def load(path=None) -> dict[str, Reading]:
    """The registry of readings (the shipped file, or a user file of the same form), validated strictly."""
    if path is None:
        return dict(_shipped())
    return _parse(Path(path))


@functools.lru_cache(maxsize=1)
def _shipped() -> tuple:
    return tuple(_parse(REGISTRY).items())


def _parse(source: Path) -> dict[str, Reading]:
    data = yamlio.load(source)
    if not isinstance(data, dict) or not data:
        raise ConfigError("a mapping of readings by name", loc=(str(source),))
    return {str(n): _reading(str(n), s, (str(source), str(n))) for n, s in data.items()}


def registry_hash(readings: dict[str, Reading]) -> str:
    """Content hash of a registry: stored analyses made under another registry are stale."""
    text = json.dumps({n: [r.default, r.applies_to, r.pending, {o.name: o.set for o in r.options.values()}]
                       for n, r in readings.items()}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def select(readings: dict[str, Reading], names, loc=("--only",)) -> dict[str, Reading]:
    """Only the named readings (all when `names` is empty)."""
    for n in names or ():
        if n not in readings:
            close = difflib.get_close_matches(str(n), list(readings), n=1)
            hint = f"; did you mean '{close[0]}'?" if close else f"; known: {', '.join(readings)}"
            raise ConfigError(f"unknown reading '{excerpt(n)}'{hint}", loc=loc)
    return {n: r for n, r in readings.items() if not names or n in names}


# ---- one sweep under the readings -------------------------------------------------------------------------

def preset_axis(cfg: SweepConfig, section: str) -> list[str]:
    """The preset names a preset axis of `section` takes (empty when the section is not swept by preset)."""
    if section not in PRESET_KIND:
        return []
    for group in [cfg.axes, *cfg.zip]:
        if section in group:
            return list(dict.fromkeys(group[section]))
    return []


def field_value(fields: dict, name: str):
    """A field of a spec's fields; `pe.<fact>` a PE fact (None where the hardware has no PE fabric)."""
    if name.startswith("pe."):
        return (fields.get("pe") or {}).get(name[3:])
    return derived.value(fields, name) if name in derived.DERIVED else fields.get(name)


def _set_field(fields: dict, name: str, value) -> None:
    """Set a field in a spec's fields; `pe.<fact>` inside the PE facts."""
    if name.startswith("pe."):
        fields["pe"] = {**(fields.get("pe") or {}), name[3:]: value}
    else:
        fields[name] = value


def _merged(fields: dict, changes: dict) -> dict:
    """A spec's fields with a reading's changes; node figures derived from PE facts follow changed facts."""
    out = {**fields, **changes}
    return follow_pe(out, fields["pe"], changes["pe"]) if "pe" in changes and fields.get("pe") else out


def _spec_fields(cfg: SweepConfig, section: str, name: str | None) -> dict:
    """The fields of the base spec (name None) or of one preset the section's axis names."""
    if name is None:
        return getattr(cfg, section).model_dump()
    return build(SECTIONS[section], cfg.presets[name], loc=(section, name)).model_dump()


def sparsity_helper(cfg: SweepConfig) -> tuple[Sparsity, int] | None:
    """The sparsity helper and the index of its zip group: from the config, or recognized in a resolved
    config.yaml (which keeps only the expanded zip) by recomputing each hold's widths."""
    model = cfg.model.model_dump()
    candidates = [cfg.sparsity] if cfg.sparsity else []
    for i, group in enumerate(cfg.zip):
        keys = set(group)
        for vary in ("num_experts", "num_experts_per_tok"):
            if keys != {f"model.{vary}", "model.moe_intermediate_size"}:
                continue
            tries = candidates or [Sparsity(vary=vary, values=group[f"model.{vary}"], hold=h)
                                   for h in ("active", "width", "total")]
            for sp in tries:
                if sp.vary == vary and axes.sparsity_zip(sp, model) == group:
                    return sp, i
    return None


def targets(cfg: SweepConfig, reading: Reading, section: str) -> list[str | None]:
    """Which specs of `section` the reading changes: the base (None) or the presets its axis names, each
    only if it meets the reading's conditions on that section (in some row of its zip, the row's own fields
    of the section over the preset's: a cs3 zipped with weight_source sram serves from SRAM)."""
    names = preset_axis(cfg, section) or [None]
    rule = {p.partition(".")[2]: v for p, v in reading.applies_to.items() if p.partition(".")[0] == section}
    return [n for n in names if any(all(field_value(row, f) in vals for f, vals in rule.items())
                                    for row in _rows(cfg, section, n))]


def _rows(cfg: SweepConfig, section: str, name: str | None) -> list[dict]:
    """The fields of `section` a spec takes: the preset's (or the base's), with each zip row's own fields of the
    section over them where the preset is zipped with some."""
    fields = _spec_fields(cfg, section, name)
    for group in cfg.zip:
        own = [p for p in group if p.partition(".")[0] == section and p != section]
        if name is not None and section in group and own:
            rows = [i for i, v in enumerate(group[section]) if v == name]
            return [{**fields, **{p.partition(".")[2]: group[p][i] for p in own}} for i in rows]
    return [fields]


def sweep_values(cfg: SweepConfig, path: str) -> list:
    """Every value the sweep takes on `path`: an axis's values, each preset's field, or the base field."""
    if path == HOLD:
        helper = sparsity_helper(cfg)
        return [helper[0].hold] if helper else []
    for group in [cfg.axes, *cfg.zip]:
        if path in group:
            return list(group[path])
    if derived.is_derived(path) and set(derived.inputs(path)) & set(cfg.axis_names()):
        return [True, False]   # swept inputs: the fact may take either value
    section, _, name = path.partition(".")
    return [field_value(_spec_fields(cfg, section, n), name) for n in (preset_axis(cfg, section) or [None])]


def status(cfg: SweepConfig, reading: Reading) -> Status:
    """Whether the sweep varies the reading, and the option its own values match."""
    if reading.pending:
        return Status(reading, "pending", reading.pending)
    swept = set(cfg.axis_names())
    pinned = [p for p in reading.paths if p in swept]
    if pinned:
        return Status(reading, "pinned", f"pinned by the sweep: {pinned[0]} is an axis")
    if HOLD in reading.paths and sparsity_helper(cfg) is None:
        return Status(reading, "not applicable", f"the sweep has no sparsity helper ({reading.scope})")
    for path, allowed in reading.applies_to.items():
        seen = sweep_values(cfg, path)
        if not set(seen) & set(allowed):
            shown = ", ".join("unset" if v is None else str(v) for v in dict.fromkeys(seen))
            return Status(reading, "not applicable", f"{path} is {shown}; it applies where {where(path, allowed)} "
                          f"({reading.scope})")
    return Status(reading, "varied", configured=configured(cfg, reading))


def where(path: str, values) -> str:
    """Where a reading applies, in words: `path in a, b`, `path unset` (YAML null: a field left to its default)."""
    named = [str(v) for v in values if v is not None]
    if not named:
        return f"{path} unset"
    return f"{path} in {', '.join(named)}" + (" or unset" if len(named) < len(values) else "")


def configured(cfg: SweepConfig, reading: Reading) -> str | None:
    """The option whose fields the sweep already has (an option that sets nothing matches when none other
    does); an unset optional field inherits from another one, so it contradicts no option."""
    def matches(opt: Option) -> bool:
        for path, value in opt.set.items():
            section = path.partition(".")[0]
            names = targets(cfg, reading, section) if section in PRESET_KIND else [None]
            if path == HOLD:
                if sweep_values(cfg, HOLD) != [value]:
                    return False
                continue
            for n in names:
                have = field_value(_spec_fields(cfg, section, n), path.partition(".")[2])
                if have is not None and have != value:
                    return False
        return True
    hits = [o.name for o in reading.options.values() if o.set and matches(o)]
    empty = [o.name for o in reading.options.values() if not o.set]
    return (hits or empty or [None])[0]


def plan(cfg: SweepConfig, readings: dict[str, Reading]) -> list[Status]:
    """The status of every reading for one sweep, in registry order."""
    return [status(cfg, r) for r in readings.values()]


def apply(cfg: SweepConfig, choice: dict[str, str], readings: dict[str, Reading] | None = None) -> SweepConfig:
    """The sweep with each chosen reading's option set ({reading: option}); a reading the sweep cannot vary
    (pinned, not applicable, pending) is refused in one line."""
    readings = load() if readings is None else readings
    base: dict = {s: {} for s in SECTIONS}
    moved: dict = {}
    zips, sparsity = list(cfg.zip), cfg.sparsity
    for name, opt_name in choice.items():
        loc = ("readings", str(name))
        reading = select(readings, [name], loc)[name]
        if opt_name not in reading.options:
            raise ConfigError(f"'{excerpt(opt_name)}' is not an option of {name} ({', '.join(reading.options)})",
                              loc=loc)
        st = status(cfg, reading)
        if not st.varied:
            raise ConfigError(f"{name} is {st.state} for this sweep: {st.detail}", loc=loc)
        for path, value in reading.options[opt_name].set.items():
            section, _, fname = path.partition(".")
            if path == HOLD:
                helper, index = sparsity_helper(cfg)
                sparsity = helper.model_copy(update={"hold": value})
                zips[index] = axes.sparsity_zip(sparsity, cfg.model.model_dump())
            elif section in PRESET_KIND and preset_axis(cfg, section):
                for n in targets(cfg, reading, section):
                    _set_field(moved.setdefault(n, dict(cfg.presets[n])), fname, value)
            elif section not in PRESET_KIND or targets(cfg, reading, section):
                if fname.startswith("pe.") and "pe" not in base[section]:   # the other PE facts stay
                    base[section]["pe"] = getattr(cfg, section).model_dump().get("pe")
                _set_field(base[section], fname, value)
    update: dict[str, Any] = {s: build(SECTIONS[s], _merged(getattr(cfg, s).model_dump(), f), loc=("readings", s))
                              for s, f in base.items() if f}
    for n, fields in moved.items():
        section = next(s for s in PRESET_KIND if n in preset_axis(cfg, s))
        build(SECTIONS[section], fields, loc=("readings", section, n))
    update.update(presets={**cfg.presets, **moved}, zip=zips, sparsity=sparsity)
    out = cfg.model_copy(update=update)
    checks.check_points(out)
    return out


def spec_fields(choice: dict[str, str], readings: dict[str, Reading] | None = None) -> dict[str, dict]:
    """{section: {field: value}} the chosen options set ({reading: option}): for a study that builds its specs
    itself rather than a sweep (the shipped micro-batches). `sparsity.hold` has no spec and is left out."""
    readings = load() if readings is None else readings
    out: dict[str, dict] = {}
    for name, opt_name in choice.items():
        reading = select(readings, [name], ("readings", str(name)))[name]
        if opt_name not in reading.options:
            raise ConfigError(f"'{excerpt(opt_name)}' is not an option of {name} ({', '.join(reading.options)})",
                              loc=("readings", str(name)))
        for path, value in reading.options[opt_name].set.items():
            if path != HOLD:
                section, _, fname = path.partition(".")
                out.setdefault(section, {})[fname] = value
    return out


def defaults(names, readings: dict[str, Reading] | None = None) -> dict[str, str]:
    """{reading: its default option} for the named readings."""
    readings = load() if readings is None else readings
    return {n: select(readings, [n])[n].default for n in names}
