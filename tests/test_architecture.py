"""The code's shape: short functions where the physics and sweep machinery live, no private names
imported across modules, a docstring atop every module, printing and exiting only in the CLI."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "wsemoe"
MODULES = sorted(ROOT.rglob("*.py"))
MAX_FUNCTION_LINES = 60


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), filename=str(path))


@pytest.mark.parametrize("package", ["cost", "sweep"])
def test_functions_in_cost_and_sweep_are_short(package):
    long = []
    for path in sorted((ROOT / package).rglob("*.py")):
        for node in ast.walk(_tree(path)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({lines} lines)")
    assert not long, long


def test_no_private_names_imported_across_modules():
    found = []
    for path in MODULES:
        for node in ast.walk(_tree(path)):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("wsemoe"):
                found += [f"{path.relative_to(ROOT)}: {node.module}.{a.name}" for a in node.names
                          if a.name.startswith("_") and not a.name.startswith("__")]
    assert not found, found


def test_every_module_has_a_docstring():
    assert not [str(p.relative_to(ROOT)) for p in MODULES if ast.get_docstring(_tree(p)) is None]


def test_only_the_cli_prints_or_exits():
    offenders = []
    for path in MODULES:
        if path.name == "cli.py":
            continue
        for node in ast.walk(_tree(path)):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("print", "exit"):
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
            if isinstance(node, ast.Attribute) and node.attr == "exit" and getattr(node.value, "id", "") == "sys":
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not offenders, offenders


def test_readme_speed_table_is_the_bench_output():
    """docs/benchmarks.md's speed section is bench/speed.md verbatim (make bench BENCH_ARGS=--readme copies it)."""
    root = Path(__file__).resolve().parents[1]
    readme = (root / "docs" / "benchmarks.md").read_text()
    block = readme.split("<!-- bench:start -->\n", 1)[1].split("<!-- bench:end -->", 1)[0]
    assert block == (root / "bench" / "speed.md").read_text()


def test_readme_mesh_tables_are_the_bench_output():
    """docs/benchmarks.md's huge-mesh tables are bench/mesh.md verbatim (make bench BENCH_ARGS=--readme copies them)."""
    root = ROOT.parent
    block = (root / "docs" / "benchmarks.md").read_text().split("<!-- mesh:start -->\n", 1)[1].split("<!-- mesh:end -->", 1)[0]
    assert block == (root / "bench" / "mesh.md").read_text()
