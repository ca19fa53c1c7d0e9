"""The README works as written: its set-up step comes before the first bare `wsemoe`, every `wsemoe` command it
shows exists with the options it uses (and the Python API names it uses exist), and its Use block runs in order,
exactly as written, in a fresh folder holding the shipped sweeps, followed by its Python block."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
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


# ---------------------------------------------------------------- the Use block runs as written

def _use_blocks() -> tuple[list[str], str]:
    """(the Use section's shell lines, its Python block) as the README shows them."""
    use = README.split("\n## Use\n", 1)[1].split("\n## ", 1)[0]
    bash = re.search(r"```bash\n(.*?)```", use, re.S).group(1)
    python = re.search(r"```python\n(.*?)```", use, re.S).group(1)
    return [ln for ln in bash.splitlines() if ln.strip()], python


@pytest.fixture(scope="module")
def clone(tmp_path_factory):
    """A fresh folder holding what a clone holds for the Use block: the shipped sweeps and the CI example."""
    root = Path(__file__).resolve().parents[1]
    folder = tmp_path_factory.mktemp("clone")
    shutil.copytree(root / "sweeps", folder / "sweeps")  # links followed: the files a user's clone has
    shutil.copytree(root / "examples", folder / "examples")
    return folder


def _env() -> dict:
    bin_dir = str(Path(sys.executable).parent)
    return {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}", "COLUMNS": "100", "CI": "1"}


def test_use_block_runs_in_order_as_written_then_the_python_block(clone):
    lines, python = _use_blocks()
    assert len(lines) >= 20 and any("compare" in ln for ln in lines)
    for line in lines:  # exactly as written: the shell parses quotes, redirections, globs and comments
        r = subprocess.run(["bash", "-c", line], cwd=clone, env=_env(), capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, f"{line}\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}"
        if "--feasible --where" in line:  # the README's question returns feasible designs
            assert " yes" in r.stdout and " no " not in r.stdout
    assert (clone / "points.csv").read_text().startswith("point,workload.B,workload.G,mfu,feasible")
    assert (clone / "results" / "index.html").is_file() and (clone / "invariants.xml").is_file()
    r = subprocess.run([sys.executable, "-c", python], cwd=clone, env=_env(), capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
