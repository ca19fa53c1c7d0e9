"""First contact: --version, help that shows flags as flags and says what they need, shell completion, and
commands that import only what they use (speed is measured in bench/bench_start.py, not here)."""

from __future__ import annotations

import subprocess
import sys

import pytest

import wsemoe
from wsemoe.cli import app

HEAVY = ("numpy", "pandas", "pyarrow", "pydantic", "matplotlib", "rich")


def _modules_after(code: str) -> set:
    out = subprocess.run([sys.executable, "-c", code + "\nimport sys; print(' '.join(sys.modules))"],
                         capture_output=True, text=True, check=True).stdout.split()
    return {m.split(".")[0] for m in out}


def test_version(runner):
    r = runner.invoke(app, ["--version"])
    assert r.exit_code == 0 and r.output.strip() == f"wsemoe {wsemoe.__version__}"


def test_help_shows_flags_as_flags_and_the_dask_extra(runner):
    r = runner.invoke(app, ["sweep", "--help"])
    assert r.exit_code == 0
    assert "<bool>" not in r.output and "-f, --force" in r.output
    assert "wsemoe[dask]" in r.output
    r = runner.invoke(app, ["--help"])
    for cmd in ("sweep", "show", "plot", "check", "eval", "compare", "schema", "report", "ls", "presets", "validate"):
        assert f"  {cmd} " in r.output, cmd
    assert "--install-completion" in r.output and "--version" in r.output


def test_importing_the_cli_loads_no_heavy_library():
    loaded = _modules_after("import wsemoe.cli")
    assert not loaded & set(HEAVY), loaded & set(HEAVY)


def test_check_loads_no_pandas_arrow_or_plotting():
    loaded = _modules_after("import sys\nsys.argv = ['wsemoe', 'check', 'sweeps/quickstart.yaml']\n"
                            "from wsemoe.cli import app\ntry:\n    app()\nexcept SystemExit:\n    pass")
    assert not loaded & {"pandas", "pyarrow", "matplotlib"}, loaded & {"pandas", "pyarrow", "matplotlib"}


@pytest.mark.parametrize("shell", ["bash", "zsh"])
def test_shell_completion_script(shell):
    r = subprocess.run([sys.executable, "-m", "wsemoe.cli", "--show-completion", shell], capture_output=True,
                       text=True, env={"_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1", "PATH": ""}, timeout=60)
    assert r.returncode == 0 and "complete" in r.stdout.lower(), r.stderr
