"""Shared pydantic base for specs: frozen, unknown keys rejected, SI units in field names."""

from __future__ import annotations

import difflib
import typing
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from wsemoe.errors import ConfigError, excerpt


def _admits_bool(annotation) -> bool:
    """True when a field's type takes booleans (bool itself, or bool inside Optional/Union/containers)."""
    if annotation is bool:
        return True
    if typing.get_origin(annotation) is typing.Literal:
        return any(isinstance(a, bool) for a in typing.get_args(annotation))
    return any(_admits_bool(a) for a in typing.get_args(annotation))


def _has_bool(value) -> bool:
    if isinstance(value, bool):
        return True
    return isinstance(value, (list, tuple)) and any(isinstance(v, bool) for v in value)


class Spec(BaseModel):
    """Base of every spec: immutable, rejects unknown keys, documents every field."""

    model_config = ConfigDict(frozen=True, extra="forbid", validate_default=True)

    @field_validator("*", mode="before")
    @classmethod
    def _no_booleans_as_numbers(cls, value, info):
        """YAML `true` is not the number 1: pydantic's lax mode would run `seq_len: true` as 1."""
        if _has_bool(value) and not _admits_bool(cls.model_fields[info.field_name].annotation):
            raise ValueError(f"expected a number or text, got a boolean ({value!r})")
        return value


def _spec_in(annotation):
    """The Spec class inside an annotation (itself, or inside Optional[...], list[...], ...), or None."""
    if isinstance(annotation, type) and issubclass(annotation, Spec):
        return annotation
    for arg in typing.get_args(annotation):
        found = _spec_in(arg)
        if found is not None:
            return found
    return None


def build(cls, data, loc=()):
    """Validate `data` into spec `cls`, turning pydantic errors into one-line ConfigErrors.

    The message names the first offending key path (with a did-you-mean for unknown keys).
    """
    if not isinstance(data, dict):
        raise ConfigError(f"expected a mapping of {cls.__name__} fields, got {type(data).__name__}", loc=loc)
    try:
        return cls.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors()
        # An unknown key (a typo) usually explains the other errors (the field it should have set is missing).
        err = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])
        if err["type"] == "missing":  # a field derived from a bad one (node figures from hardware.pe) is missing
            err = next((e for e in errors if e["type"] != "missing"), err)  # because of it: name the cause
        where = tuple(str(p) for p in err.get("loc", ()))
        if err["type"] == "extra_forbidden":
            key = where[-1] if where else "?"
            owner = cls
            for part in where[:-1]:  # walk into nested specs to suggest from the right field set
                if owner is None or part.isdigit():  # list indices keep the item type
                    continue
                ann = owner.model_fields.get(part)
                owner = _spec_in(ann.annotation) if ann else None
            fields = list(owner.model_fields) if owner else []
            close = difflib.get_close_matches(key, fields, n=1)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            raise ConfigError(f"unknown key '{key}'{hint}", loc=(*loc, *where)) from None
        raise ConfigError(error_line(err), loc=(*loc, *where)) from None


BOUNDS = {"greater_than_equal": ("ge", "greater than or equal to"), "greater_than": ("gt", "greater than"),
          "less_than_equal": ("le", "less than or equal to"), "less_than": ("lt", "less than")}


def error_line(err: dict) -> str:
    """One pydantic error as every input's reader says it: its words (error_text) and the value given."""
    if err["type"] == "missing":
        return "required field is missing"
    msg = error_text(err)
    return got(msg, err["input"]) if "input" in err and err["type"] not in ("value_error",) else msg


def got(msg: str, value) -> str:
    """`msg` with the value given, as the error line of every kind of input shows it."""
    return f"{msg} (got {excerpt(repr(value))})"


def not_integer(value) -> str:
    """The words for a value that should be an integer: pydantic's own, through error_line, as for a spec field."""
    from pydantic import TypeAdapter

    try:
        TypeAdapter(int).validate_python(value)
    except ValidationError as exc:
        return error_line(exc.errors()[0])
    return got("Input should be a valid integer", value)


def not_positive(value, what: str = "Input") -> str:
    """The words for a number that should be above 0 (a non-integer: not_integer)."""
    if isinstance(value, bool) or not isinstance(value, int):
        return not_integer(value)
    return got(f"{what} should be greater than 0", value)


def error_text(err: dict) -> str:
    """One pydantic error's words, a float bound as 1e-30 (pydantic writes 0.000…01): every reader of specs, the
    readings registry and config.json importers say it alike."""
    value = err.get("input")
    if isinstance(value, float) and value != value:   # NaN fails every bound; say what it is (as finite fields do)
        return "Input should be a number, not NaN"
    bound = BOUNDS.get(err["type"])
    if bound and isinstance((err.get("ctx") or {}).get(bound[0]), float):
        return f"Input should be {bound[1]} {err['ctx'][bound[0]]:g}"
    return err["msg"].removeprefix("Value error, ")


# Bounds of integer and float inputs. The cost model multiplies them (tokens = G·B·S, bytes =
# tokens·width·layers, ...) in float64, exact for integers below 2**53; these bounds keep every
# product well inside that and inside what is physically meaningful, and make absurd inputs
# (2**63, 1e308) one-line errors instead of wrapped integers or infinite times.
MAX_TOKENS = 2**24        # sequence length and attention batch (16.7M)
MAX_TILES = 2**16         # batch-tiling factor G
MAX_WIDTH = 2**24         # hidden, FFN and head widths, low-rank widths
MAX_COUNT = 2**20         # heads, experts, top-k, nodes per TP group
MAX_LAYERS = 2**16
MAX_VOCAB = 2**26
MAX_MESH_SIDE = 1024      # node rows or columns of one wafer
# Die rows or columns of a whole mesh (rows·Wr, cols·Wc): the mesh engine routes every node pair, ~N² work; measured
# (`wsemoe eval`, 2 loaded cores, 2026-12): 64×64 in under 1 s, 128×128 in 7 s, 256×256 in 72 s (issue 30).
MAX_GRID_SIDE = 128
MAX_WAFERS_SIDE = 64      # wafers along one side of a multi-wafer system
MAX_PIPELINE_WAFERS = 256  # systems of an SRAM-serving pipeline
MAX_SEED = 2**32 - 1
MAX_FIGURE = 1e30         # any hardware rate, capacity or byte size
MIN_FIGURE = 1e-30        # ...and the least positive one: no step of the model then overflows to inf or NaN
MIN_SHARE = 1e-6          # the least efficiency or usable fraction (a share of a peak or of memory)
Figure = Annotated[float, Field(ge=MIN_FIGURE)]   # a positive hardware figure (its upper bound set per field)
