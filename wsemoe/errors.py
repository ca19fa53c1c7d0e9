"""One exception type for every user-reachable failure, with the offending key path."""

from __future__ import annotations


class WsemoeError(Exception):
    """A user-facing error: one line, naming the key path or file at fault.

    `loc` is the path to the offending key (e.g. ("axes", "workload.G")); the CLI
    prints `error: [axes -> workload.G] message` and exits non-zero.
    """

    def __init__(self, message: str, loc: tuple | list | str | None = None):
        if isinstance(loc, str):
            loc = (loc,)
        self.loc = tuple(_printable(p) for p in (loc or ()))
        self.message = _printable(" ".join(str(message).split()))
        super().__init__(self.line())

    def line(self) -> str:
        """The one-line form shown to users."""
        where = f"[{' -> '.join(self.loc)}] " if self.loc else ""
        return f"{where}{self.message}"


def _printable(text) -> str:
    """Text safe for a one-line message: control characters (newlines in a key) shown escaped."""
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in str(text))


class ConfigError(WsemoeError):
    """The sweep config or a spec is malformed (unknown key, wrong type, bad value)."""


class PresetError(WsemoeError):
    """A preset name is unknown or a model file cannot be imported."""


class ResultsError(WsemoeError):
    """A results directory is missing, incomplete or unreadable."""
