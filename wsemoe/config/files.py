"""Reading user-named input files safely: regular files only, size-capped, errors that name the file."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from wsemoe.errors import ConfigError, os_reason


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
