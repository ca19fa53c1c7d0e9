"""The README works as written: its set-up step comes before the first bare `wsemoe`, and every `wsemoe`
command it shows exists with the options it uses (and the Python API names it uses exist)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import typer

import wsemoe
from wsemoe.cli import app

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()


def _code_lines() -> list[str]:
    blocks = re.findall(r"```(?:bash|sh)\n(.*?)```", README, flags=re.S)
    return [ln.split("#")[0].strip() for b in blocks for ln in b.splitlines() if ln.strip()]


def test_activation_comes_before_the_first_bare_command():
    lines = _code_lines()
    first = next(i for i, ln in enumerate(lines) if ln.startswith("wsemoe "))
    assert any("source .venv/bin/activate" in ln for ln in lines[:first]), lines[: first + 1]


def test_every_command_and_option_shown_exists():
    group = typer.main.get_command(app)
    shown = [ln for ln in _code_lines() if ln.startswith("wsemoe ")]
    assert len(shown) >= 12
    for line in shown:
        args = shlex.split(line)[1:]
        if args[0].startswith("-"):
            assert args[0] in {o for p in group.params for o in p.opts}, line
            continue
        assert args[0] in group.commands, line
        cmd = group.commands[args[0]]
        cmd.make_context(args[0], [a for a in args[1:] if a != ">" and not a.endswith(".csv")])  # parses, or raises


def test_python_api_names_exist():
    for name in re.findall(r"wsemoe\.([a-z_]+)\(", README):
        assert hasattr(wsemoe, name), name
