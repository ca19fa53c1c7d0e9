"""What a results root holds: each sweep's results with size, points, date and whether they are up to
date, and the hidden partial folders runs left behind (reported, and removed on request).

Only folders a run marked as its own partial (`wsemoe-partial.json` naming its target) are ever
removed, and only while no run holds that target's lock; nothing is matched by pattern alone, and a
partial folder holding anything wsemoe did not write is kept whole (reported, naming that file). A results folder is
verified as every reader verifies it (each part's checksum), so "up to date" means undamaged too.
"""

from __future__ import annotations

import datetime as dt
import os
import re
from dataclasses import dataclass
from pathlib import Path

from wsemoe.version import __version__
from wsemoe.config.loader import load_config
from wsemoe.errors import ResultsError, WsemoeError, what_it_is
from wsemoe.store import manifest
from wsemoe.store import ownership
from wsemoe.store import partial
from wsemoe.store import placement, store

PARTIAL_NAME = re.compile(r"^\.(?P<target>.+)\.partial-[0-9a-f]{16}$")


@dataclass
class Results:
    """One results folder and its state."""

    path: Path
    name: str
    status: str          # "up to date", "config changed", "config unknown", "damaged: ...", ...
    points: int | None
    feasible: int | None
    bytes: int
    finished: dt.datetime | None
    version: str | None
    source: str | None


@dataclass
class Partial:
    """A hidden folder a run fills before it publishes its results."""

    path: Path
    target: str
    parts: int
    points: int
    bytes: int
    modified: dt.datetime
    running: bool
    foreign: str | None = None  # the first entry wsemoe did not write there: the folder is kept whole


def folder_bytes(path: Path) -> int:
    """Bytes of every file under `path` (symbolic links not followed)."""
    total = 0
    for root, _, files in os.walk(path):
        for f in files:
            try:
                total += os.lstat(os.path.join(root, f)).st_size
            except OSError:
                pass
    return total


def _when(path: Path) -> dt.datetime:
    return dt.datetime.fromtimestamp(path.stat().st_mtime)


def _status(path: Path, man: dict) -> str:
    """Whether the results are whole and still those of their sweep file."""
    try:
        store.verify(path, man)
    except (ResultsError, OSError) as exc:
        return f"damaged: {getattr(exc, 'message', exc)}"
    source = man.get("source")
    if not source:
        return "config unknown (made before sweeps recorded their file, or from Python)"
    if not Path(source).is_file():
        return f"config file gone ({source})"
    try:
        # Its hash only: the cross-field rules over its combinations are the run's to check, not a listing's.
        changed = load_config(source, checked=False).config_hash() != man.get("config_hash")
    except WsemoeError as exc:
        return f"config no longer valid: {exc.line()}"
    return f"config changed: re-run `wsemoe sweep {source}`" if changed else "up to date"


def scope(arg) -> tuple[Path, str | None]:
    """What a listing (`ls`, with or without --clean) was given: a results root as (root, None), or one results
    folder as (its parent, its name). A folder holding results folders is a root whatever else it holds (a stray
    manifest.json there is `stray_manifest`'s, not a damaged sweep hiding the others)."""
    p = Path(arg)
    if p.is_dir() and not ownership.holds_results(p) and (ownership.is_results(p) or (p / "manifest.json").is_file()):
        p = Path(os.path.abspath(p)) if p.name in ("", "..") else p  # '.' or '..': a name to list it by
        return p.parent, p.name
    return p, None


def stray_manifest(root) -> Path | None:
    """A manifest.json at the top of a results root, which wsemoe never writes there (a user's or damaged file)."""
    path = Path(root) / "manifest.json"
    return path if os.path.lexists(path) and ownership.holds_results(Path(root)) else None


def results_in(root, only: str | None = None) -> list[Results]:
    """Every wsemoe results folder directly under `root` (or only the one named `only`), by name. A hidden folder
    (runs' partial folders are) is listed only when named: `ls results/.old` said "no results in results/.old" of
    the results folder it named."""
    root = Path(root)
    if not root.is_dir():
        raise ResultsError(f"is {what_it_is(root)}, not a folder of results" if root.exists() else "no such folder",
                           loc=(str(root),))
    out = []
    for p in sorted(root.iterdir()):
        if (p.name.startswith(".") and only is None) or p.is_symlink() or not p.is_dir() or only not in (None, p.name):
            continue
        try:
            man = manifest.read(p)
        except WsemoeError as exc:  # a manifest that is not one wsemoe could have written: damaged
            out.append(Results(p, p.name, f"damaged: {exc.message}", None, None, folder_bytes(p),
                               _when(p / "manifest.json"), None, None))
            continue
        if man is None:
            continue
        out.append(Results(p, man.get("name", p.name), _status(p, man), man.get("points"), man.get("feasible"),
                           folder_bytes(p), _when(p / "manifest.json"), man.get("version"), man.get("source")))
    return out


def partials_in(root, only: str | None = None) -> list[Partial]:
    """Hidden partial folders under `root` (of the sweep `only`, when named) that a run marked as its own, and
    whether a run holds them now."""
    root = Path(root)
    out = []
    for p in sorted(root.iterdir()) if root.is_dir() else []:
        m = PARTIAL_NAME.match(p.name)
        if not m or only not in (None, m.group("target")) or p not in partial.stale_partials(root / m.group("target")):
            continue
        ranges = [r for r in (store.part_range(f.name) for f in _parts(p)) if r]
        out.append(Partial(p, m.group("target"), len(ranges), sum(b - a for a, b in ranges), folder_bytes(p),
                           _when(p), partial.lock_held(root / m.group("target")), partial.foreign_entry(p)))
    return out


def _parts(p: Path) -> list[Path]:
    folder = p / "points.parquet"
    return list(folder.iterdir()) if folder.is_dir() else []


def clean(root, only: str | None = None) -> list[Path]:
    """Remove the partial folders under `root` (of the sweep `only`, when named) that no run holds (each under its
    target's run lock) and that hold only what wsemoe wrote there (one with a user's file is kept whole:
    `partials_in` names the file); a symbolic link along `root` as given is refused, as by every writer (nothing is
    removed through a link)."""
    root = placement.checked_path(root)
    removed = []
    for part in partials_in(root, only):
        if part.running or part.foreign:
            continue
        target = Path(root) / part.target
        try:
            with partial.RunLock(target):
                if part.path in partial.stale_partials(target) and partial.remove_partial(part.path):
                    removed.append(part.path)  # still ours, still there: its own entries removed
        except WsemoeError:
            continue  # a run started meanwhile: its folder is not stale
    return removed


def version_note(r: Results) -> str:
    """'' when the results come from this version of wsemoe, else which one made them."""
    return "" if r.version in (None, __version__) else f"made by wsemoe {r.version} (this is {__version__})"
