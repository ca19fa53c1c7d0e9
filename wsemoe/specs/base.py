"""Shared pydantic base for specs: frozen, unknown keys rejected, SI units in field names."""

from __future__ import annotations

import difflib

from pydantic import BaseModel, ConfigDict, ValidationError

from wsemoe.errors import ConfigError


class Spec(BaseModel):
    """Base of every spec: immutable, rejects unknown keys, documents every field."""

    model_config = ConfigDict(frozen=True, extra="forbid", validate_default=True)


def build(cls, data, loc=()):
    """Validate `data` into spec `cls`, turning pydantic errors into one-line ConfigErrors.

    The message names the first offending key path (with a did-you-mean for unknown keys).
    """
    if not isinstance(data, dict):
        raise ConfigError(f"expected a mapping of {cls.__name__} fields, got {type(data).__name__}", loc=loc)
    try:
        return cls.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = tuple(str(p) for p in err.get("loc", ()))
        if err["type"] == "extra_forbidden":
            key = where[-1] if where else "?"
            owner = cls
            for part in where[:-1]:  # walk into nested specs to suggest from the right field set
                ann = owner.model_fields.get(part)
                owner = getattr(ann, "annotation", None) if ann else None
                if not (isinstance(owner, type) and issubclass(owner, Spec)):
                    owner = None
                    break
            fields = list(owner.model_fields) if owner else []
            close = difflib.get_close_matches(key, fields, n=1)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            raise ConfigError(f"unknown key '{key}'{hint}", loc=(*loc, *where)) from None
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "missing":
            msg = "required field is missing"
        elif "input" in err and err["type"] not in ("value_error",):
            msg = f"{msg} (got {err['input']!r})"
        raise ConfigError(msg, loc=(*loc, *where)) from None
