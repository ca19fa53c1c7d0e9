"""What a command hands back to the CLI: what to print, where, and the exit code (commands never print)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable


@dataclass
class Reply:
    """Items printed in order: ("text", str, to_stderr), ("raw", str, None) or ("rich", renderable, print options)."""

    items: list = field(default_factory=list)
    code: int = 0
    error: str | None = None

    def text(self, line: str, err: bool = False) -> "Reply":
        self.items.append(("text", line, err))
        return self

    def raw(self, text: str) -> "Reply":
        """Text written to stdout as it is (tables in CSV, JSON, Markdown)."""
        self.items.append(("raw", text, None))
        return self

    def rich(self, renderable, **options) -> "Reply":
        """A rich renderable (or markup string) printed on the terminal's console with these print options."""
        self.items.append(("rich", renderable, options))
        return self

    def fail(self, message: str, code: int = 1) -> "Reply":
        """End with `error: message` on stderr and this exit code, after what was added before."""
        self.error, self.code = message, code
        return self


def registry():
    """A list of (name, function) and the decorator that adds a command to it under its own or a given name."""
    commands: list[tuple[str | None, Callable]] = []

    def command(name: str | None = None):
        def add(fn):
            commands.append((name, fn))
            return fn
        return add
    return commands, command
