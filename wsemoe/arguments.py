"""The rules for arguments the Python API takes (a count, a flag, a selection), fixed once here so every entry point
and layer applies the same one; each refusal is one ConfigError line naming the argument."""

from __future__ import annotations

import numbers

from wsemoe.errors import ConfigError, excerpt


def whole(value, loc: str, low: int | None = 0, high: int | None = None, what: str = "") -> int:
    """`value` as a Python int when it is a whole number in [low, high] (None: no bound that side; a caller that
    says more about the range, such as "out of range: the sweep has 24 points", checks it itself), else one line.

    A whole number is an int or a numpy integer (any numbers.Integral). Refused: a bool (True is not a count) and
    every float, 2.0 included: the CLI's options refuse '2.0' (click's int type), so the API does too, and a float
    that happens to be whole today (a computed 1e6 / 1e3) is not silently a count tomorrow (1e6 / 7). `what` names
    the thing counted in the message ("a point index").
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or \
            (low is not None and value < low) or (high is not None and value > high):
        span = (f" from {low:,}" if low is not None else "") + (f" to {high:,}" if high is not None else "")
        raise ConfigError(f"{what + ' ' if what else ''}must be a whole number{span}, got {excerpt(repr(value))}",
                          loc=(loc,))
    return int(value)


def choice(value, allowed, loc: str):
    """`value` if it is one of `allowed`, else one line naming the option and what was given: the one refusal of a
    value outside a fixed set (a --format, --method or --mode), so every command words it alike."""
    if value not in allowed:
        raise ConfigError(f"'{excerpt(value)}' is not one of {', '.join(allowed)}", loc=(loc,))
    return value


def flag(value, loc: str) -> bool:
    """`value` when it is a real boolean (bool, or numpy's bool_ as read from a frame), else one line: a flag given
    "no", "false" or 0 was taken by its truth, so "no" meant yes."""
    import numpy as np   # here, not atop: the commands import this module, and `wsemoe --help` stays light

    if not isinstance(value, (bool, np.bool_)):
        raise ConfigError(f"must be True or False, got {excerpt(repr(value))}", loc=(loc,))
    return bool(value)


def selection(value, loc: str):
    """A selection the caller names (columns, figures, invariants, unknowns, readings, formats): None is the
    default (every one, or the usual ones); an empty one asked for nothing and is refused, not silently read as
    that default. A list of overrides (`sets`) or of sort keys is not a selection: empty, it is none of them."""
    if value is not None and not isinstance(value, str) and hasattr(value, "__len__") and not len(value):
        raise ConfigError("is empty: name at least one, or leave it out (None) for the default", loc=(loc,))
    return value
