"""Copy a bench's own output into docs/benchmarks.md between its markers (the `--readme` flag), so the docs show what
the bench printed."""

from __future__ import annotations

from pathlib import Path

README = Path(__file__).resolve().parent.parent / "docs" / "benchmarks.md"


def update_readme(text: str, marks: tuple[str, str]) -> None:
    """Replace what docs/benchmarks.md holds between `marks` (start, end) by `text`."""
    head, rest = README.read_text().split(marks[0], 1)
    _, tail = rest.split(marks[1], 1)
    README.write_text(f"{head}{marks[0]}\n{text}{marks[1]}{tail}")


def publish(text: str, out: Path, marks: tuple[str, str], argv: list[str]) -> None:
    """A bench's report: written to `out`, printed, and copied into docs/benchmarks.md with --readme."""
    out.write_text(text)
    print(text)
    if "--readme" in argv:
        update_readme(text, marks)
