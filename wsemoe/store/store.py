"""Results folders: layout, manifest, verification against the manifest, and reading.

A results folder holds config.yaml, manifest.json, points.parquet/ (one part file per point range,
`part-<start>-<stop>.parquet`), pareto.csv and optional extras (comparison.csv, plots/, ...). The
manifest records every part's range, row count, size and SHA-256, so a deleted, truncated or stray
part is noticed before anything is shown, plotted or called up to date: every reader checks every
part's checksum (once per change of the file: `store/verified.py`). The manifest itself is untrusted
input, parsed by one strict schema (`store/manifest.py`).
"""

from __future__ import annotations

import functools
import hashlib
import os
from importlib import metadata
from pathlib import Path

import numpy as np
import pandas as pd

from wsemoe.errors import ResultsError, os_error
from wsemoe.store import manifest
from wsemoe.store import verified
from wsemoe.store.manifest import part_name, part_range  # noqa: F401 (where readers and writers find them)

FORMAT = manifest.FORMAT
FILES = ("config.yaml", "manifest.json", "points.parquet", "pareto.csv")
DEPENDENCIES = ("numpy", "pandas", "pyarrow", "pydantic", "pyyaml", "typer", "rich", "matplotlib", "pymoo", "moocore",
                "dask", "distributed")
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
    """The validated manifest of a results folder; None when there is none or it is malformed (callers that
    must say why use `load_manifest`)."""
    try:
        return manifest.read(path)
    except (ResultsError, OSError):
        return None


def sweep_hint(man: dict) -> str:
    """The command that recomputes damaged parts of these results."""
    return f"`wsemoe sweep {man.get('source') or '<sweep file>'} --resume`"


def verify(path, manifest: dict, first_only: bool = True) -> list[str]:
    """Check that points.parquet/ holds exactly the manifest's parts and that every part and recorded file
    holds the bytes the sweep wrote (SHA-256, verified once per change: `store/verified.py`).

    Raises ResultsError for the first problem (with `first_only`); otherwise returns the names of the
    parts that fail their checksum (for `--resume` to recompute), still raising for anything else.
    """
    path = Path(path)
    folder = path / "points.parquet"
    try:
        present = {e.name for e in os.scandir(folder)}
    except FileNotFoundError:
        raise ResultsError("incomplete results: points.parquet is missing; re-run the sweep", loc=(str(path),)) from None
    except OSError as exc:
        raise os_error(exc, folder, "read the results") from None
    listed = {p["file"] for p in manifest["parts"]}
    for name in sorted(listed - present):
        raise ResultsError(f"incomplete results: part {name} is missing; recompute it with {sweep_hint(manifest)}",
                           loc=(str(path),))
    for name in sorted(present - listed):
        raise ResultsError(f"points.parquet holds {name}, which the manifest does not list", loc=(str(path),))
    items = [(f"points.parquet/{p['file']}", p["bytes"], p["sha256"]) for p in manifest["parts"]]
    files = [(name, r["bytes"], r["sha256"]) for name, r in manifest.get("files", {}).items()]
    try:
        bad = verified.mismatches(path, files + items, first_only)
    except FileNotFoundError as exc:
        raise ResultsError(f"incomplete results: {Path(exc.filename or '?').name} is missing; re-run the sweep",
                           loc=(str(path),)) from None
    except OSError as exc:
        raise os_error(exc, None, "read the results") from None
    damaged = []
    for name, why in bad:
        if not name.startswith("points.parquet/"):
            raise ResultsError(f"{name} {why}; re-run the sweep", loc=(str(path),))
        damaged.append(name.split("/", 1)[1])
    if damaged and first_only:
        raise ResultsError(f"part {damaged[0]} {dict(bad)['points.parquet/' + damaged[0]]}; recompute it with "
                           f"{sweep_hint(manifest)}", loc=(str(path),))
    return damaged


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
    man = manifest.read(path)
    if man is None:
        held = sorted(p.name for p in path.iterdir() if p.is_dir() and (p / "manifest.json").is_file())
        if held:  # a results root: say which folders it holds instead of asking to re-run a sweep
            more = f", ... ({len(held)} in all)" if len(held) > 3 else ""
            raise ResultsError(f"a results root holding {', '.join(held[:3])}{more}; name one of them (e.g. "
                               f"{path / held[0]}), or `wsemoe ls {path}` lists them", loc=(str(path),))
        raise ResultsError("not a wsemoe results folder, or incomplete: manifest.json is missing (re-run the sweep)",
                           loc=(str(path),))
    verify(path, man)
    return man


def column_kinds(path, manifest: dict) -> dict[str, str]:
    """{column: "number", "text" or "bool"} of a verified folder's points, from the first part's schema
    (every part has the same), for the one column check (`sweep.columns.check_column`)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    parts = manifest["parts"]
    if not parts:
        return {c: "number" for c in manifest.get("columns", {})}
    try:
        schema = pq.read_schema(Path(path) / "points.parquet" / parts[0]["file"])
    except Exception as exc:  # pyarrow raises several types for damaged files
        raise ResultsError(f"cannot read points.parquet: {type(exc).__name__}", loc=(str(path),)) from None
    kinds = {}
    for field in schema:
        t = field.type.value_type if pa.types.is_dictionary(field.type) else field.type
        kinds[field.name] = ("bool" if pa.types.is_boolean(t) else
                             "number" if pa.types.is_integer(t) or pa.types.is_floating(t) else "text")
    kinds.pop("point", None)
    return kinds


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
    import pyarrow.parquet as pq

    index = np.array(sorted({int(i) for i in index}), dtype=np.int64)
    frames = []
    for p in sorted(manifest["parts"], key=lambda p: p["start"]):
        here = index[(index >= p["start"]) & (index < p["stop"])]
        if len(here):
            try:
                # The rows are picked before pandas sees them: converting a whole part costs more than reading it.
                table = pq.read_table(Path(path) / "points.parquet" / p["file"], columns=columns,
                                      use_pandas_metadata=True)
                df = table.filter(np.isin(table.column("point").to_numpy(), here)).to_pandas()
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
