"""The registry of readings (presets/readings.yaml, or a user file of its form): each reading's question,
options (the spec fields each sets, with evidence and source), default, why, and where it applies, loaded
strictly: every path and value is checked against the specs, a derived fact (config/derived.py) included.
"""

from __future__ import annotations

import difflib
import functools
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated

from pydantic import TypeAdapter, ValidationError

from wsemoe.config import axes, derived, yamlio
from wsemoe.config.schema import SECTIONS, Sparsity
from wsemoe.errors import ConfigError, excerpt
from wsemoe.specs.base import error_line
from wsemoe.specs.hardware import PEFacts

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
        raise ConfigError(error_line(exc.errors()[0]), loc=loc) from None


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
