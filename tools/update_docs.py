"""Regenerate the generated parts of this repository's docs from the code: the validate record in
docs/sources.md and docs/reproductions.md (between their markers), docs/config.md and docs/commands.md. A developer's tool (`make docs`),
not a wsemoe command: wsemoe itself never edits a file it did not write; tests fail when these parts are stale."""

from __future__ import annotations

import sys
from pathlib import Path

from typer.main import get_command

from wsemoe.cli import app
from wsemoe.commands.reference import markdown as commands_text
from wsemoe.report.configdoc import reference_text
from wsemoe.validate import record, run_all

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    rows = run_all()
    for name in ("docs/sources.md", "docs/reproductions.md"):
        page = ROOT / name
        page.write_text(record.replace(page.read_text(), rows))
        sys.stdout.write(f"validate record of {name} regenerated\n")
    (ROOT / "docs" / "config.md").write_text(reference_text("markdown"))
    sys.stdout.write("docs/config.md regenerated\n")
    (ROOT / "docs" / "commands.md").write_text(commands_text(get_command(app)))
    sys.stdout.write("docs/commands.md regenerated\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
