"""One exception type for every user-reachable failure, with the offending key path."""

from __future__ import annotations

import unicodedata

MAX_MESSAGE = 600  # characters of a message shown to users: never echo a whole hostile input, but room for a
                   # command that names two paths of MAX_KEY each (a repair hint: `wsemoe sweep --resume -o F S`)
MAX_KEY = 240      # characters of one key of the path (file paths included: shown whole up to here)


class WsemoeError(Exception):
    """A user-facing error: one line, naming the key path or file at fault.

    `loc` is the path to the offending key (e.g. ("axes", "workload.G")); the CLI
    prints `error: [axes -> workload.G] message` and exits non-zero.
    """

    def __init__(self, message: str, loc: tuple | list | str | None = None):
        if isinstance(loc, str):
            loc = (loc,)
        self.loc = tuple(excerpt(p, MAX_KEY) for p in (loc or ()))
        self.message = excerpt(" ".join(str(message).split()), MAX_MESSAGE)
        super().__init__(self.line())

    def line(self) -> str:
        """The one-line form shown to users."""
        where = f"[{' -> '.join(self.loc)}] " if self.loc else ""
        return f"{where}{self.message}"


def shown_path(path) -> str:
    """A path as a user would type it: relative to the current folder when inside it (what a command wrote, and
    the path a refusal names, though the writers work on absolute paths), with what cannot show as itself escaped:
    a reply's text keeps its own line breaks, so a folder named 'a\\nb' printed as two lines."""
    from pathlib import Path

    path = Path(path)
    try:
        return printable(path.absolute().relative_to(Path.cwd()))
    except (ValueError, OSError):   # outside the current folder, or the current folder is gone
        return printable(path)


def printable(text, lines: bool = False) -> str:
    """Text with every character a terminal, an SVG, a web page or a one-line message cannot show as itself
    (control characters, escape sequences, direction overrides; line breaks unless `lines`) written as its
    escape, e.g. '\\x1b': the one sanitiser every sink of names from files and folders uses."""
    text = str(text)
    if text.isprintable() or all(map(_shows, text)):
        return text
    if lines:
        if text.replace("\n", "").isprintable():  # the common case, in C
            return text
        return "\n".join(printable(line) for line in text.split("\n"))
    return "".join(ch if _shows(ch) else repr(ch)[1:-1] if repr(ch)[1:-1] != ch else f"\\u{ord(ch):04x}"
                   for ch in text)


def _shows(ch: str) -> bool:
    """Whether a character shows as itself: Python's printable ones and every space (a no-break space between a
    number and its unit is one; Python counts only ' ' as printable among them)."""
    return ch.isprintable() or unicodedata.category(ch) == "Zs"


def excerpt(text, limit: int = 60) -> str:
    """Text safe for a one-line message: control characters shown escaped, cut to `limit` characters."""
    shown = printable(str(text)[: 4 * limit])
    return shown if len(shown) <= limit else shown[: limit - 1] + "…"


class ConfigError(WsemoeError):
    """The sweep config or a spec is malformed (unknown key, wrong type, bad value)."""


class PresetError(WsemoeError):
    """A preset name is unknown or a model file cannot be imported."""


class ResultsError(WsemoeError):
    """A results directory is missing, incomplete, unreadable, or not ours to replace."""


class RunError(WsemoeError):
    """A sweep could not finish (executor failure, another run holds the folder); progress is kept."""


# What an operating-system failure means for the user, by errno name (the rest say the system's own words).
_OS_REASONS = {
    "ENOSPC": "no space left on the device",
    "EDQUOT": "disk quota exceeded",
    "EFBIG": "file larger than this process may write (the file-size limit, ulimit -f)",
    "EROFS": "read-only file system",
    "EACCES": "permission denied",
    "EPERM": "operation not permitted",
    "ENAMETOOLONG": "name too long for the file system",
    "EMFILE": "too many open files in this process (the open-file limit, ulimit -n)",
    "ENFILE": "too many open files on the system",
    "ENOENT": "no such file or folder",
    "ENOTDIR": "a part of the path is not a folder",
    "EISDIR": "is a folder",
    "ELOOP": "too many levels of symbolic links",
    "EIO": "input/output error on the device",
    "ENOTEMPTY": "folder not empty",
    "EXDEV": "crosses file systems",
}


def what_it_is(path) -> str:
    """What a path that is not a folder is, for an error line: 'a file', or 'a pipe or device' (never called a
    file, as config/files.read_text words it)."""
    import os

    return "a file" if os.path.isfile(path) else "a pipe or device"


def os_reason(exc: OSError) -> str:
    """What an OSError means, in words, with its errno name: 'no space left on the device (ENOSPC)'."""
    import errno

    name = errno.errorcode.get(exc.errno or 0, "")
    reason = _OS_REASONS.get(name) or (exc.strerror or type(exc).__name__)
    return f"{reason} ({name})" if name else reason


def os_error(exc: OSError, path=None, doing: str = "") -> "ResultsError":
    """An OSError as one user-facing line naming the path (the file the system names, else `path`) and what
    failed; `doing` says what wsemoe was doing ("write the report"). Nothing else is lost: callers keep
    whatever was whole before."""
    where = exc.filename if exc.filename is not None else path
    text = f"cannot {doing}: {os_reason(exc)}" if doing else os_reason(exc)
    return ResultsError(text, loc=(str(where),) if where is not None else None)
