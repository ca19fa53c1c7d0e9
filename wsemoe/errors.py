"""One exception type for every user-reachable failure, with the offending key path."""

from __future__ import annotations

MAX_MESSAGE = 300  # characters of a message shown to users: never echo a whole hostile input
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


def excerpt(text, limit: int = 60) -> str:
    """Text safe for a one-line message: control characters shown escaped, cut to `limit` characters."""
    shown = "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in str(text)[: 4 * limit])
    return shown if len(shown) <= limit else shown[: limit - 1] + "…"


class ConfigError(WsemoeError):
    """The sweep config or a spec is malformed (unknown key, wrong type, bad value)."""


class PresetError(WsemoeError):
    """A preset name is unknown or a model file cannot be imported."""


class ResultsError(WsemoeError):
    """A results directory is missing, incomplete, unreadable, or not ours to replace."""


class RunError(WsemoeError):
    """A sweep could not finish (executor failure, another run holds the folder); progress is kept."""
