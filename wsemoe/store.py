"""Results directories: config.yaml, manifest.json, points.parquet, pareto.csv, written atomically.

Everything is written into a hidden temporary folder beside the target and renamed into place
at the end, manifest last; a killed run never leaves a folder with a manifest that looks complete.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from importlib import metadata
from pathlib import Path

import pandas as pd

from wsemoe import __version__, yamlio
from wsemoe.errors import ResultsError

FILES = ("config.yaml", "manifest.json", "points.parquet", "pareto.csv")
DEPENDENCIES = ("numpy", "pandas", "pyarrow", "pydantic", "pyyaml", "typer", "rich", "matplotlib")


def results_dir(out_root, name: str) -> Path:
    """results/<name>, refusing names that would escape the results folder."""
    root = Path(out_root).resolve()
    target = (root / name).resolve()
    if target.parent != root:
        raise ResultsError(f"sweep name '{name}' would write outside {root}", loc=("name",))
    return target


def dependency_versions() -> dict:
    """Installed versions of the packages results depend on (provenance)."""
    out = {}
    for pkg in DEPENDENCIES:
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = None
    return out


def read_manifest(path: Path) -> dict | None:
    """The manifest of a complete results folder, or None."""
    try:
        return json.loads((Path(path) / "manifest.json").read_text())
    except (OSError, ValueError):
        return None


def is_up_to_date(path: Path, config_hash: str) -> bool:
    """True when `path` holds complete results of exactly this config."""
    man = read_manifest(path)
    return bool(man) and man.get("config_hash") == config_hash and all((Path(path) / f).is_file() for f in FILES)


def write_results(path: Path, config: dict, points: pd.DataFrame, pareto: pd.DataFrame,
                  manifest: dict, extra_csv: dict | None = None) -> Path:
    """Write a complete results folder atomically (temp folder, then rename over the old one)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.tmp-", dir=path.parent))
    try:
        (tmp / "config.yaml").write_text(yamlio.dumps(config))
        points.to_parquet(tmp / "points.parquet", index=True)
        pareto.to_csv(tmp / "pareto.csv", index=True)
        for name, frame in (extra_csv or {}).items():
            frame.to_csv(tmp / name, index=False)
        if path.is_dir() and (path / "plots").is_dir():
            shutil.rmtree(path / "plots")  # plots of older results would describe other numbers
        manifest = {"version": __version__, "dependencies": dependency_versions(), **manifest}
        (tmp / "manifest.json").write_text(json.dumps(manifest, indent=2, default=str))
        _swap(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return path


def _swap(tmp: Path, path: Path) -> None:
    """Replace `path` by `tmp` with renames only (the old folder is removed after the swap)."""
    old = None
    if path.exists():
        old = path.with_name(f".{path.name}.old-{os.getpid()}")
        os.replace(path, old)
    os.replace(tmp, path)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def load_results(path) -> tuple[dict, pd.DataFrame, pd.DataFrame]:
    """(manifest, points, pareto) of a complete results folder; a clear error otherwise."""
    path = Path(path)
    if not path.is_dir():
        raise ResultsError("no such results folder", loc=(str(path),))
    man = read_manifest(path)
    if man is None:
        raise ResultsError("incomplete results: manifest.json missing or unreadable (rerun the sweep)", loc=(str(path),))
    try:
        points = pd.read_parquet(path / "points.parquet")
        pareto = pd.read_csv(path / "pareto.csv", index_col=0)
    except Exception as exc:  # pyarrow/pandas raise many types for damaged files
        raise ResultsError(f"cannot read results: {type(exc).__name__}", loc=(str(path),)) from None
    return man, points, pareto
