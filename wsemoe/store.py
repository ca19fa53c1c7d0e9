"""Results folders: config.yaml, manifest.json, points.parquet/ (one part per chunk), pareto.csv.

A sweep writes into a hidden partial folder beside the target (`.<name>.partial-<hash>`); every
chunk lands as a part file renamed into place only when complete, so a killed run (even
`kill -9`) leaves whole parts that `--resume` reuses. The manifest is written last and the folder
renamed into place: a folder with a manifest is always complete.
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
DEPENDENCIES = ("numpy", "pandas", "pyarrow", "pydantic", "pyyaml", "typer", "rich", "matplotlib", "dask", "distributed")


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
    return bool(man) and man.get("config_hash") == config_hash and all((Path(path) / f).exists() for f in FILES)


def _atomic_write(path: Path, write) -> None:
    """Write through a temp file in the same folder, then rename (readers never see half a file)."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    os.close(fd)
    try:
        write(Path(tmp))
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class PartialRun:
    """The hidden folder a sweep fills chunk by chunk before it becomes results/<name>."""

    def __init__(self, target: Path, config_hash: str, resume: bool):
        self.target = Path(target)
        self.path = self.target.with_name(f".{self.target.name}.partial-{config_hash}")
        self.parts = self.path / "points.parquet"
        self.cands = self.path / "candidates"
        if not resume:
            for old in self.target.parent.glob(f".{self.target.name}.partial-*"):
                shutil.rmtree(old, ignore_errors=True)
        self.parts.mkdir(parents=True, exist_ok=True)
        self.cands.mkdir(exist_ok=True)

    def done(self) -> set[int]:
        """Chunks whose part is complete (its candidates and stats were written before it)."""
        return {int(p.stem.split("-")[1]) for p in self.parts.glob("part-*.parquet")}

    def _names(self, index: int):
        return _chunk_names(self.path, index)

    def read_reductions(self) -> tuple[pd.DataFrame, list[dict]]:
        """All chunks' candidate rows and stats."""
        idx = sorted(self.done())
        cands = [pd.read_parquet(self._names(i)[1]) for i in idx]
        stats = [json.loads(self._names(i)[2].read_text()) for i in idx]
        return (pd.concat(cands) if cands else pd.DataFrame()), stats

    def finish(self, config: dict, pareto: pd.DataFrame, manifest: dict, extra_csv: dict | None = None) -> Path:
        """Write the small files, the manifest last, and rename the folder into place."""
        shutil.rmtree(self.cands, ignore_errors=True)
        (self.path / "config.yaml").write_text(yamlio.dumps(config))
        pareto.to_csv(self.path / "pareto.csv", index=True)
        for name, frame in (extra_csv or {}).items():
            frame.to_csv(self.path / name, index=False)
        manifest = {"version": __version__, "dependencies": dependency_versions(), **manifest}
        _atomic_write(self.path / "manifest.json", lambda p: p.write_text(json.dumps(manifest, indent=2, default=str)))
        _swap(self.path, self.target)
        return self.target


def _chunk_names(partial: Path, index: int):
    return (partial / "points.parquet" / f"part-{index:06d}.parquet",
            partial / "candidates" / f"part-{index:06d}.parquet",
            partial / "candidates" / f"part-{index:06d}.json")


def write_chunk(partial: Path, index: int, points: pd.DataFrame, candidates: pd.DataFrame, stats: dict) -> None:
    """Candidates and stats first, the part last: a part present means its chunk is whole."""
    part, cand, meta = _chunk_names(Path(partial), index)
    _atomic_write(cand, lambda p: candidates.to_parquet(p, index=True))
    _atomic_write(meta, lambda p: p.write_text(json.dumps(stats)))
    # lz4 keeps dictionary-friendly float columns small and writes faster than the snappy default
    _atomic_write(part, lambda p: points.to_parquet(p, index=True, compression="lz4"))


def part_columns(partial: Path) -> list[str]:
    """Column names of the written points (from the first part's schema)."""
    import pyarrow.parquet as pq

    first = next(iter(sorted((Path(partial) / "points.parquet").glob("part-*.parquet"))), None)
    return [] if first is None else [c for c in pq.read_schema(first).names if c != "point"]


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
    return man, points.sort_index(), pareto
