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
import shlex
from importlib import metadata
from pathlib import Path

import numpy as np
import pandas as pd

from wsemoe.errors import ResultsError, os_error, what_it_is
from wsemoe.store import manifest
from wsemoe.store import placement, verified
from wsemoe.store.block import concat_frames, sorted_categories
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
    """results/<name>, refusing names that would escape the results folder and a symbolic link anywhere along the
    path as given (the writer's rule: a link is never written through, nor resolved into its target here)."""
    root = placement.checked_path(out_root)
    target = placement.checked_path(root / name, named=1)   # the name comes from the config
    if target.parent != root or name in (".", ".."):
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


def sweep_hint(man: dict, folder) -> str:
    """The command that recomputes damaged parts of the results in `folder` (as the user named it, so the hint
    runs where their command ran): this folder (-o), not a new one under ./results, every path quoted for a
    shell, --resume first (a message is cut at MAX_MESSAGE characters; long paths go last)."""
    source = shlex.quote(str(man["source"])) if man.get("source") else "<sweep file>"
    return f"`wsemoe sweep --resume -o {shlex.quote(str(folder))} {source}`"


CHANGED_HINT = manifest.CHANGED_HINT


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
        raise ResultsError(f"incomplete results: part {name} is missing; recompute it with "
                           f"{sweep_hint(manifest, path)}",
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
            raise ResultsError(f"{name} {why}; {CHANGED_HINT}", loc=(str(path),))
        damaged.append(name.split("/", 1)[1])
    if damaged and first_only:
        why = dict(bad)["points.parquet/" + damaged[0]]
        raise ResultsError(f"part {damaged[0]} {why}; {_recompute(why, manifest, path)}", loc=(str(path),))
    return damaged


def _recompute(why: str, manifest: dict, folder) -> str:
    """How to recompute a damaged part: a link or other non-file in its place is not wsemoe's, so the sweep will
    not replace it: it goes first."""
    first = "move it out (not a file wsemoe wrote), then " if "not a regular file" in why else ""
    return f"{first}recompute it with {sweep_hint(manifest, folder)}"


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


def names_results(source) -> bool:
    """Whether an argument that takes a sweep YAML or a results folder (eval, export, columns, readings) names a
    folder, read as results; a path that names nothing is refused here, in words that name both, so a mistyped
    results folder is not reported as a missing YAML file."""
    if not isinstance(source, (str, os.PathLike)):
        return False   # a sweep as a dict or SweepConfig
    if not os.path.lexists(source):
        raise ResultsError("no such sweep YAML or results folder", loc=(str(source),))
    return Path(source).is_dir()


def load_manifest(path) -> dict:
    """The verified manifest of a complete results folder; a one-line error otherwise."""
    path = Path(path)
    if not path.is_dir():
        what = f"is {what_it_is(path)}, not a results folder" if path.exists() else "no such results folder"
        raise ResultsError(what, loc=(str(path),))
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
    (every part has the same), for the one column check (`sweep.column_check.check_column`)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    parts = manifest["parts"]
    if not parts:
        return {c: "number" for c in manifest.get("columns", {})}
    try:
        schema = pq.read_schema(pa.BufferReader(_part_bytes(Path(path), parts[0], manifest)))
    except ResultsError:
        raise
    except Exception as exc:  # pyarrow raises several types for damaged files
        raise ResultsError(f"cannot read points.parquet: {type(exc).__name__}", loc=(str(path),)) from None
    kinds = {}
    for field in schema:
        t = field.type.value_type if pa.types.is_dictionary(field.type) else field.type
        kinds[field.name] = ("bool" if pa.types.is_boolean(t) else
                             "number" if pa.types.is_integer(t) or pa.types.is_floating(t) else "text")
    kinds.pop("point", None)
    return kinds


def _read(path: Path, columns, manifest: dict) -> pd.DataFrame:
    """Every part of points.parquet/ in point order, as pandas reads it (index and
    categoricals from its pandas metadata), parsed from the very bytes that were verified (store/verified.py):
    the same frame as `pandas.read_parquet`, without its dataset layer."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = path.parent
    parts = sorted(manifest["parts"], key=lambda p: p["start"])
    tables = [pq.read_table(pa.BufferReader(_part_bytes(folder, p, manifest)), columns=columns, use_pandas_metadata=True)
              for p in parts]
    if not tables:
        return pq.read_table(path, columns=columns, use_pandas_metadata=True).to_pandas()
    return sorted_categories(pa.concat_tables(tables).to_pandas())


def _part_bytes(folder: Path, part: dict, manifest: dict) -> bytes:
    """A part's bytes as verified against the manifest (read once: verified and parsed from the same bytes)."""
    try:
        return verified.read(folder, f"points.parquet/{part['file']}", part["bytes"], part["sha256"])
    except verified.Unverified as exc:
        raise ResultsError(f"{exc}; {_recompute(str(exc), manifest, folder)}", loc=(str(folder),)) from None
    except OSError as exc:
        raise os_error(exc, folder, "read the results") from None


def _part_frame(folder: Path, part: dict, manifest: dict, columns) -> pd.DataFrame:
    import pyarrow as pa
    import pyarrow.parquet as pq

    data = _part_bytes(folder, part, manifest)
    return pq.read_table(pa.BufferReader(data), columns=columns, use_pandas_metadata=True).to_pandas()


def read_points(path, manifest: dict, columns: list[str] | None = None) -> pd.DataFrame:
    """points.parquet of a verified folder (only `columns` when given), indexed by point."""
    try:
        points = _read(Path(path) / "points.parquet", columns, manifest)
    except ResultsError:
        raise
    except Exception as exc:  # pyarrow/pandas raise many types for damaged files
        raise ResultsError(f"cannot read points.parquet: {type(exc).__name__}", loc=(str(path),)) from None
    if len(points) != manifest["points"]:
        raise ResultsError(f"points.parquet has {len(points):,} rows, the manifest says {manifest['points']:,}",
                           loc=(str(path),))
    return points.sort_index()


def read_rows(path, manifest: dict, index, columns: list[str] | None = None) -> pd.DataFrame:
    """The rows of points `index` (point numbers) of a verified folder, reading only the parts that hold
    them: a figure that needs some columns of a few points does not read those columns for every point."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    index = np.array(sorted({int(i) for i in index}), dtype=np.int64)
    frames = []
    for p in sorted(manifest["parts"], key=lambda p: p["start"]):
        here = index[(index >= p["start"]) & (index < p["stop"])]
        if len(here):
            try:
                # The rows are picked before pandas sees them: converting a whole part costs more than reading it.
                table = pq.read_table(pa.BufferReader(_part_bytes(Path(path), p, manifest)), columns=columns,
                                      use_pandas_metadata=True)
                df = table.filter(np.isin(table.column("point").to_numpy(), here)).to_pandas()
            except ResultsError:
                raise
            except Exception as exc:  # pyarrow/pandas raise many types for damaged files
                raise ResultsError(f"cannot read {p['file']}: {type(exc).__name__}", loc=(str(path),)) from None
            frames.append(df.loc[here])
    return concat_frames(frames) if frames else pd.DataFrame(columns=columns)


def iter_parts(path, manifest: dict, columns: list[str] | None = None):
    """The points of a verified folder part by part, in point order (only `columns` when given): memory
    stays at one part whatever the sweep's size."""
    for p in sorted(manifest["parts"], key=lambda p: p["start"]):
        try:
            df = _part_frame(Path(path), p, manifest, columns)
        except ResultsError:
            raise
        except Exception as exc:  # pyarrow/pandas raise many types for damaged files
            raise ResultsError(f"cannot read {p['file']}: {type(exc).__name__}", loc=(str(path),)) from None
        if len(df) != p["rows"]:
            raise ResultsError(f"part {p['file']} has {len(df):,} rows, the manifest says {p['rows']:,}",
                               loc=(str(path),))
        yield df


def read_pareto(path, manifest: dict | None = None) -> pd.DataFrame:
    """pareto.csv of a results folder, indexed by point (the verified bytes when `manifest` records it)."""
    return read_csv(path, "pareto.csv", manifest, index_col=0)


def read_csv(path, name: str, manifest: dict | None = None, **options) -> pd.DataFrame:
    """A CSV file of a results folder, parsed from the bytes verified against the manifest's record of it (read
    once: a file swapped after `verify` is refused, never shown); a file the manifest does not record (older
    folders) is read as it is."""
    import io

    record = (manifest or {}).get("files", {}).get(name)
    try:
        if record is not None:
            data = verified.read(Path(path), name, record["bytes"], record["sha256"])
            return pd.read_csv(io.BytesIO(data), **options)
        return pd.read_csv(Path(path) / name, **options)
    except verified.Unverified as exc:
        raise ResultsError(f"{exc}; {CHANGED_HINT}", loc=(str(path),)) from None
    except OSError as exc:
        raise os_error(exc, Path(path) / name, f"read {name}") from None
    except Exception as exc:  # pandas raises many types for damaged files
        raise ResultsError(f"cannot read {name}: {type(exc).__name__}", loc=(str(path),)) from None


def load_results(path) -> tuple[dict, pd.DataFrame, pd.DataFrame]:
    """(manifest, points, pareto) of a complete results folder; a clear error otherwise."""
    path = Path(path)
    man = load_manifest(path)
    return man, read_points(path, man), read_pareto(path, man)
