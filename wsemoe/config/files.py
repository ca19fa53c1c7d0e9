"""Reading user-named input files safely: regular files only, size-capped, errors that name the file."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from wsemoe.errors import ConfigError, excerpt, os_reason


def read_text(path, limit: int, what: str = "file", loc_prefix=()) -> str:
    """UTF-8 text of a regular file of at most `limit` bytes.

    FIFOs, devices and sockets are refused before they are opened for reading (a FIFO would
    block forever, /dev/zero would read without end); the size is checked on the open file.
    """
    p = Path(path)
    loc = (*loc_prefix, str(p))
    try:
        st = os.stat(p)
    except FileNotFoundError:
        raise ConfigError(f"{what} not found", loc=loc) from None
    except OSError as exc:
        raise ConfigError(f"cannot read {what}: {os_reason(exc)}", loc=loc) from None
    if stat.S_ISDIR(st.st_mode):
        raise ConfigError(f"is a directory, expected a {what}", loc=loc)
    if not stat.S_ISREG(st.st_mode):
        raise ConfigError(f"is not a regular file (a pipe or device?); expected a {what}", loc=loc)
    try:
        with open(p, "rb") as fh:
            data = fh.read(limit + 1)
    except OSError as exc:
        raise ConfigError(f"cannot read {what}: {os_reason(exc)}", loc=loc) from None
    if len(data) > limit:
        raise ConfigError(f"{what} is larger than {limit:,} bytes", loc=loc)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"cannot read {what}: not UTF-8 text", loc=loc) from None


MAX_INT_DIGITS = 300  # digits of an integer literal: beyond 10**300 no bound of any field is near (floats end at 1.8e308)


class HugeNumber:
    """An integer literal too long to be any field's value (Python refuses to convert more than 4,300 digits; no
    float holds 10**309): kept as this marker so the field it was given to reports it in its own one-line error
    (pydantic: "Input should be a valid integer (got <integer of 5,000 digits>)"), never converted."""

    def __init__(self, digits: int):
        self.digits = digits

    def __repr__(self) -> str:
        return f"<integer of {self.digits:,} digits>"

    __str__ = __repr__


def model_json(text: str):
    """A JSON file a model brings (config.json, hf_quant_config.json), by one reading rule: huge integers caught by
    their digits (`parse_int`), and a key given twice refused (json keeps the last one silently, as a YAML mapping
    with a repeated key is refused). Raises ValueError."""
    def unique(pairs):
        out = {}
        for key, value in pairs:
            if key in out:
                raise ValueError(f"key '{excerpt(key)}' appears twice in one object")
            out[key] = value
        return out

    return json.loads(text, parse_int=parse_int, object_pairs_hook=unique)


def parse_int(text: str):
    """An integer literal (YAML or JSON) as an int, or a HugeNumber when it has more than MAX_INT_DIGITS digits
    (counted before any conversion)."""
    digits = len(text.lstrip("+-").replace("_", ""))
    return HugeNumber(digits) if digits > MAX_INT_DIGITS else int(text)
