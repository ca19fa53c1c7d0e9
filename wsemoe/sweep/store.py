"""Results folders: layout, manifest, verification against the manifest, and reading.

A results folder holds config.yaml, manifest.json, points.parquet/ (one part file per point range,
`part-<start>-<stop>.parquet`), pareto.csv and optional extras (comparison.csv, plots/, ...). The
manifest records every part's range, row count, size and SHA-256, so a deleted, truncated or stray
part is noticed before anything is shown, plotted or called up to date.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from importlib import metadata
from pathlib import Path

import pandas as pd

from wsemoe.errors import ResultsError

FORMAT = "wsemoe-results/2"
FILES = ("config.yaml", "manifest.json", "points.parquet", "pareto.csv")
# Everything wsemoe itself writes into a results folder; anything else there belongs to the user.
KNOWN_ENTRIES = frozenset({*FILES, "comparison.csv", "plots", "report.html", "sensitivity", "readings"})
DEPENDENCIES = ("numpy", "pandas", "pyarrow", "pydantic", "pyyaml", "typer", "rich", "matplotlib", "pymoo", "moocore",
                "dask", "distributed")
PART_RE = re.compile(r"^part-(\d{12})-(\d{12})\.parquet$")


def part_name(start: int, stop: int) -> str:
    """File name of the part holding points [start, stop)."""
    return f"part-{start:012d}-{stop:012d}.parquet"


def part_range(name: str) -> tuple[int, int] | None:
    """(start, stop) of a part file name, or None for any other name."""
    m = PART_RE.match(name)
    return (int(m.group(1)), int(m.group(2))) if m else None


def sha256_of(path: Path) -> str:
    """SHA-256 of a file, read in 4 MB blocks."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(4 << 20):
            h.update(block)
    return h.hexdigest()


def results_dir(out_root, name: str) -> Path:
    """results/<name>, refusing names that would escape the results folder."""
    root = Path(out_root).resolve()
    target = (root / name).resolve()
    if target.parent != root:
        raise ResultsError(f"sweep name '{name}' would write outside {root}", loc=("name",))
    return target


def dependency_versions() -> dict:
    """Installed versions of the packages results depend on (provenance)."""
    return dict(_versions())


@functools.lru_cache(maxsize=1)
def _versions() -> tuple:
    """(package, version) pairs, looked up once per process (importlib.metadata is slow)."""
    out = []
    for pkg in DEPENDENCIES:
        try:
            out.append((pkg, metadata.version(pkg)))
        except metadata.PackageNotFoundError:
            out.append((pkg, None))
    return tuple(out)


def read_manifest(path) -> dict | None:
    """The manifest of a wsemoe results folder, or None (missing, unreadable, or not ours)."""
    try:
        man = json.loads((Path(path) / "manifest.json").read_text())
    except (OSError, ValueError):
        return None
    return man if isinstance(man, dict) and man.get("format") == FORMAT else None


def foreign_entries(path: Path) -> list[str]:
    """Entries of a folder that wsemoe did not write (user files a replacement would destroy)."""
    return sorted(p.name for p in Path(path).iterdir() if p.name not in KNOWN_ENTRIES)


def verify(path, manifest: dict, checksums: bool = False) -> None:
    """Check that points.parquet/ holds exactly the manifest's parts, whole; ResultsError otherwise.

    Always: the part files are exactly those listed, each of the listed size, their ranges tile
    [0, points) and their row counts add up. With `checksums`, every part's SHA-256 as well.
    """
    path = Path(path)
    parts = manifest.get("parts")
    folder = path / "points.parquet"
    if not isinstance(parts, list) or not folder.is_dir():
        raise ResultsError("incomplete results: points.parquet or its part list is missing; re-run the sweep",
                           loc=(str(path),))
    listed = {p["file"]: p for p in parts}
    present = {p.name for p in folder.iterdir()}
    for name in sorted(set(listed) - present):
        raise ResultsError(f"incomplete results: part {name} is missing; re-run the sweep", loc=(str(path),))
    for name in sorted(present - set(listed)):
        raise ResultsError(f"points.parquet holds {name}, which the manifest does not list", loc=(str(path),))
    expected = 0
    for p in sorted(parts, key=lambda p: p["start"]):
        f = folder / p["file"]
        if p["start"] != expected or p["stop"] - p["start"] != p["rows"]:
            raise ResultsError(f"part list does not cover the points (at {p['file']})", loc=(str(path),))
        if f.stat().st_size != p["bytes"]:
            raise ResultsError(f"part {p['file']} has {f.stat().st_size:,} bytes, the manifest says "
                               f"{p['bytes']:,}: damaged; re-run the sweep", loc=(str(path),))
        if checksums and sha256_of(f) != p["sha256"]:
            raise ResultsError(f"part {p['file']} fails its checksum: damaged; re-run the sweep", loc=(str(path),))
        expected = p["stop"]
    if expected != manifest.get("points"):
        raise ResultsError(f"parts hold {expected:,} points, the manifest says {manifest.get('points')}",
                           loc=(str(path),))
    _check_footers(path, folder, parts, expected)


def _check_footers(path: Path, folder: Path, parts: list, points: int) -> None:
    """Each part's parquet footer is readable and its row counts add up to the points (a part damaged in
    place, at its recorded size, fails here without reading the data)."""
    import pyarrow.parquet as pq

    rows = []
    for p in parts:
        try:
            rows.append(pq.read_metadata(folder / p["file"]).num_rows)
        except Exception as exc:  # pyarrow raises several types for damaged files
            raise ResultsError(f"cannot read points.parquet: part {p['file']} is damaged ({type(exc).__name__}); "
                               "re-run the sweep", loc=(str(path),)) from None
    if sum(rows) != points:
        raise ResultsError(f"points.parquet has {sum(rows):,} rows, the manifest says {points:,}", loc=(str(path),))
    for p, n in zip(parts, rows):
        if n != p["rows"]:
            raise ResultsError(f"part {p['file']} has {n:,} rows, the manifest says {p['rows']:,}", loc=(str(path),))


def is_up_to_date(path: Path, config_hash: str) -> bool:
    """True when `path` holds complete, undamaged results of exactly this config."""
    man = read_manifest(path)
    if not man or man.get("config_hash") != config_hash or not all((Path(path) / f).exists() for f in FILES):
        return False
    try:
        verify(path, man)
    except (ResultsError, OSError):
        return False
    return True


def load_manifest(path) -> dict:
    """The verified manifest of a complete results folder; a one-line error otherwise."""
    path = Path(path)
    if not path.is_dir():
        raise ResultsError("no such results folder", loc=(str(path),))
    man = read_manifest(path)
    if man is None:
        raise ResultsError("not a wsemoe results folder, or incomplete: manifest.json missing, unreadable or "
                           "from another version (re-run the sweep)", loc=(str(path),))
    verify(path, man)
    return man


def _read(path: Path, columns) -> pd.DataFrame:
    """A parquet file or folder as pandas reads it (index and categoricals from its pandas metadata), through
    pyarrow directly: the same frame as `pandas.read_parquet`, without its dataset layer (faster; measured by
    bench/bench_daily.py)."""
    import pyarrow.parquet as pq

    return pq.read_table(path, columns=columns, use_pandas_metadata=True).to_pandas()


def read_points(path, manifest: dict, columns: list[str] | None = None) -> pd.DataFrame:
    """points.parquet of a verified folder (only `columns` when given), indexed by point."""
    try:
        points = _read(Path(path) / "points.parquet", columns)
    except Exception as exc:  # pyarrow/pandas raise many types for damaged files
        raise ResultsError(f"cannot read points.parquet: {type(exc).__name__}", loc=(str(path),)) from None
    if len(points) != manifest["points"]:
        raise ResultsError(f"points.parquet has {len(points):,} rows, the manifest says {manifest['points']:,}",
                           loc=(str(path),))
    return points.sort_index()


def read_rows(path, manifest: dict, index, columns: list[str] | None = None) -> pd.DataFrame:
    """The rows of points `index` (point numbers) of a verified folder, reading only the parts that hold
    them: a figure that needs some columns of a few points does not read those columns for every point."""
    index = sorted({int(i) for i in index})
    frames = []
    for p in sorted(manifest["parts"], key=lambda p: p["start"]):
        here = [i for i in index if p["start"] <= i < p["stop"]]
        if here:
            try:
                df = _read(Path(path) / "points.parquet" / p["file"], columns)
            except Exception as exc:  # pyarrow/pandas raise many types for damaged files
                raise ResultsError(f"cannot read {p['file']}: {type(exc).__name__}", loc=(str(path),)) from None
            frames.append(df.loc[here])
    return pd.concat(frames) if frames else pd.DataFrame(columns=columns)


def iter_parts(path, manifest: dict, columns: list[str] | None = None):
    """The points of a verified folder part by part, in point order (only `columns` when given): memory
    stays at one part whatever the sweep's size."""
    folder = Path(path) / "points.parquet"
    for p in sorted(manifest["parts"], key=lambda p: p["start"]):
        try:
            df = _read(folder / p["file"], columns)
        except Exception as exc:  # pyarrow/pandas raise many types for damaged files
            raise ResultsError(f"cannot read {p['file']}: {type(exc).__name__}", loc=(str(path),)) from None
        if len(df) != p["rows"]:
            raise ResultsError(f"part {p['file']} has {len(df):,} rows, the manifest says {p['rows']:,}",
                               loc=(str(path),))
        yield df


def read_pareto(path) -> pd.DataFrame:
    """pareto.csv of a results folder, indexed by point."""
    try:
        return pd.read_csv(Path(path) / "pareto.csv", index_col=0)
    except Exception as exc:  # pandas raises many types for damaged files
        raise ResultsError(f"cannot read pareto.csv: {type(exc).__name__}", loc=(str(path),)) from None


def load_results(path) -> tuple[dict, pd.DataFrame, pd.DataFrame]:
    """(manifest, points, pareto) of a complete results folder; a clear error otherwise."""
    path = Path(path)
    man = load_manifest(path)
    return man, read_points(path, man), read_pareto(path)
