"""Who owns a folder, and whether a folder may be replaced: decided from ledgers only (`store/ledger.py`).

A folder is a writer's when its ledger names that writer as owner (results folders: `wsemoe sweep`;
plots/: `wsemoe plot`; calibration, sensitivity, readings and traffic-export folders), or when its
parent's ledger lists it as that writer's folder (points.parquet/ of results), or when it is a sweep's
partial folder (its marker). A folder may be replaced only when it is provably the same writer's (another
key, e.g. another sweep's results, needs --force) and every entry in it is one the ledger lists,
unchanged; a results root (a folder holding results folders) never. Results folders of an earlier wsemoe,
which kept no ledger, are recognised (a manifest beside points.parquet/) so that no other writer touches
them, but never replaced.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from wsemoe.errors import ResultsError, shown_path
from wsemoe.store import ledger, manifest
from wsemoe.store.ledger import Ledger
from wsemoe.store.manifest import part_range

# writer -> (the command, what it writes)
WRITERS = {"sweep": ("wsemoe sweep", "results"), "report": ("wsemoe report", "report"),
           "schema": ("wsemoe schema", "schema"), "plot": ("wsemoe plot", "figure"),
           "compare": ("wsemoe compare --plot", "figure"), "junit": ("wsemoe invariants --junit", "JUnit report"),
           "calibrate": ("wsemoe calibrate", "calibration"), "sensitivity": ("wsemoe sensitivity", "sensitivity analysis"),
           "readings": ("wsemoe readings", "readings analysis"), "export": ("wsemoe export traffic", "traffic export"),
           "new": ("wsemoe new", "sweep file"), "validate": ("wsemoe validate --silicon --plot", "figure")}
# Entries of a results folder and the writer each belongs to; nothing else may be added there.
RESULTS_SLOTS = {"config.yaml": "sweep", "manifest.json": "sweep", "points.parquet": "sweep", "pareto.csv": "sweep",
                 "comparison.csv": "sweep", "plots": "plot", "report.html": "report", "sensitivity": "sensitivity",
                 "readings": "readings"}
PARTIAL_MARKER = "wsemoe-partial.json"  # marks a sweep's hidden partial folder as its own
MAX_SCAN = 100_000  # entries looked at when deciding whether a folder holds results folders


def refuse(path, message: str) -> ResultsError:
    return ResultsError(message, loc=(shown_path(path),))


def writable(path: Path, st: os.stat_result, what: str) -> None:
    """Refuse a file or folder whose write bits are all cleared (even for root) or that we may not write."""
    if not st.st_mode & 0o222 or not os.access(path, os.W_OK | (os.X_OK if what == "folder" else 0)):
        raise refuse(path, f"{what} is read-only; wsemoe writes only where it may (EACCES)")


def legacy_results(folder: Path) -> bool:
    """A results folder of an earlier wsemoe, which kept no ledger: a manifest beside the parts folder."""
    return (folder / "manifest.json").is_file() and (folder / "points.parquet").is_dir()


def owner_of(folder: Path) -> str | None:
    """The writer that owns `folder` (results folders, their plots/ and parts, partial folders, outputs of
    calibrate and sensitivity), or None for a folder wsemoe did not make."""
    led = ledger.read(folder)
    if led.owner:
        return led.owner["writer"]
    if (folder / PARTIAL_MARKER).is_file() or legacy_results(folder):
        return "sweep"
    up = ledger.read(folder.parent)
    e = up.entry(folder.name)
    if e and e["kind"] in ("folder", "parts") and (up.owner or legacy_results(folder.parent)):
        return e["writer"]
    if folder.name == "points.parquet" and owner_of_results(folder.parent):
        return "sweep"
    return None


def owner_of_results(folder: Path) -> bool:
    """True when `folder` is a results folder (or a sweep's partial folder)."""
    owner = ledger.read(folder).owner
    return bool(owner and owner["writer"] == "sweep") or (folder / PARTIAL_MARKER).is_file() or legacy_results(folder)


def is_results(folder: Path) -> bool:
    """True for a finished results folder (not a partial one)."""
    owner = ledger.read(folder).owner
    return bool(owner and owner["writer"] == "sweep") or legacy_results(folder)


def holds_results(folder: Path) -> bool:
    """True for a results root: a folder with a results folder (or a sweep's partial folder) in it."""
    try:
        with os.scandir(folder) as it:
            for i, entry in enumerate(it):
                if i >= MAX_SCAN:
                    break
                if entry.is_dir(follow_symlinks=False) and owner_of_results(Path(entry.path)):
                    return True
    except OSError:
        return False
    return False


def _what(writer: str, key) -> str:
    if writer == "sweep":
        return f"results of sweep '{key}'"
    return f"the {WRITERS.get(writer, (None, 'output'))[1]} of '{key}'" if key else f"output of `{command(writer)}`"


def check_replaceable(folder: Path, writer: str, key: str | None, force: bool) -> None:
    """Refuse, in one line, replacing an existing non-empty folder that is not provably this writer's."""
    led = ledger.read(folder)
    if led.owner is None:
        if ledger.foreign(folder):   # a record there wsemoe cannot read: said as every writer says it
            raise refuse(folder / ledger.NAME, "is not the record wsemoe keeps there; refusing to replace its folder")
        if holds_results(folder):
            raise refuse(folder, "holds results folders (a results root); refusing to replace it")
        if legacy_results(folder):
            raise refuse(folder, "holds results of an earlier wsemoe that kept no record of the files it wrote; "
                          "remove the folder yourself, or choose another path")
        what = WRITERS.get(writer, (None, "output"))[1]   # what this command would have written there
        raise refuse(folder, f"exists and is not a folder wsemoe wrote (not a wsemoe {what} folder); refusing to "
                      "replace it (choose another path, or remove it yourself)")
    ow, okey = led.owner["writer"], led.owner.get("key")
    if ow != writer:   # --force replaces this command's own output only: another command's is never rewritten
        if ow == "sweep":
            raise refuse(folder, "is a results folder (written by `wsemoe sweep`); refusing to replace it")
        raise refuse(folder, f"holds the {WRITERS.get(ow, (0, 'output'))[1]} written by `{command(ow)}`, which only "
                     "that command rewrites; refusing to replace it (choose another path, or remove it yourself)")
    if okey != key and not force:
        raise refuse(folder, f"holds {_what(ow, okey)}; pass --force to replace them")
    made_from = derived_outputs(folder) if writer == "sweep" and not force else {}
    if made_from:
        listed = ", ".join(f"{n} (`{command(w)}`)" for n, w in made_from.items())
        raise refuse(folder, f"holds {listed} made from the results it holds; new results would leave them "
                     "describing results that are gone, and the sweep never removes another command's output "
                     "unasked: move them out, or pass --force to replace them with the results")
    check_tree(folder, led)


def derived_outputs(folder: Path) -> dict:
    """{entry: writer} of what other commands made from a results folder's results and keep in it (plots/,
    report.html, sensitivity/); the readings analysis is not among them: the sweep command rewrites it."""
    led = ledger.read(folder)
    return {n + ("/" if e["kind"] != "file" else ""): e["writer"] for n, e in led.entries.items()
            if e["writer"] not in ("sweep", "readings") and os.path.lexists(folder / n)}


def check_tree(folder: Path, led: Ledger) -> None:
    """Every entry of `folder` is one the ledger lists, unchanged (subfolders likewise), and removable: a file
    whose write bits are cleared is refused here as the file writers refuse it (replacing the folder replaces it)."""
    writable(folder, os.lstat(folder), "folder")
    with os.scandir(folder) as it:
        entries = list(it)
    for entry in entries:
        name, path = entry.name, Path(entry.path)
        e = led.entry(name)
        if name == ledger.NAME:
            continue
        if e is None:
            raise refuse(folder, f"holds '{name}', which wsemoe did not write; refusing to replace it "
                          "(move it out first)")
        if e["kind"] == "file":
            if not ledger.matches(path, e):
                raise refuse(folder, f"holds '{name}', which changed since wsemoe wrote it; refusing to replace "
                              "it (move it out first)")
            writable(path, entry.stat(follow_symlinks=False), "file")
        elif not entry.is_dir(follow_symlinks=False):
            raise refuse(folder, f"holds '{name}', which is not the folder wsemoe made; refusing to replace it")
        elif e["kind"] == "parts":
            _check_parts(path)
        else:
            sub = ledger.read(path)
            if not sub.owner or sub.owner["writer"] != e["writer"]:
                raise refuse(folder, f"holds '{name}', which wsemoe did not make; refusing to replace it")
            check_tree(path, sub)


def _check_parts(folder: Path) -> None:
    """A parts folder holds the part files its results' manifest lists, only (their checksums are the manifest's:
    a damaged part is data to recompute, not a user's file; a file merely named like a part is not ours)."""
    writable(folder, os.lstat(folder), "folder")
    listed = _listed_parts(folder)
    with os.scandir(folder) as it:
        for entry in it:
            if part_range(entry.name) is None or not entry.is_file(follow_symlinks=False) \
                    or (listed is not None and entry.name not in listed):
                raise refuse(folder, f"holds '{entry.name}', which wsemoe did not write; refusing to replace it "
                              "(move it out first)")
            writable(Path(entry.path), entry.stat(follow_symlinks=False), "file")


def _listed_parts(folder: Path) -> set | None:
    """The part files the manifest beside a parts folder lists; None when it has none wsemoe could read (the
    manifest's own ledger entry then says whether it is ours)."""
    try:
        man = manifest.read(folder.parent)
    except (ResultsError, OSError):
        return None
    return None if man is None else {p["file"] for p in man["parts"]}


def remove_tree(folder: Path) -> None:
    """Remove what the folder's ledger lists (parts folders: their part files), then the folder; anything
    else that appeared meanwhile stays, and so does the folder holding it."""
    led = ledger.read(folder)
    for name, e in led.entries.items():
        path = folder / name
        if e["kind"] == "file":
            if ledger.matches(path, e):
                os.unlink(path)
        elif os.path.isdir(path) and not os.path.islink(path):
            if e["kind"] == "parts":
                listed = _listed_parts(path)
                for f in os.scandir(path):
                    if part_range(f.name) and f.is_file(follow_symlinks=False) and (listed is None or f.name in listed):
                        os.unlink(f.path)
                with contextlib.suppress(OSError):
                    os.rmdir(path)
            else:
                remove_tree(path)
    with contextlib.suppress(OSError):
        os.unlink(folder / ledger.NAME)
        os.rmdir(folder)


def command(writer: str) -> str:
    return WRITERS.get(writer, (f"wsemoe {writer}", "output"))[0]


def check_source(target, source) -> None:
    """A file that goes into a results folder's slot (a report's report.html) must come from those results: the
    report of one sweep written into another's folder would be listed, indexed and read as that sweep's."""
    folder = Path(os.path.abspath(target)).parent
    if is_results(folder) and os.path.realpath(folder) != os.path.realpath(source):
        raise refuse(target, f"is inside the results of '{folder.name}', not of '{Path(source).name}' it is made "
                     "from; choose another place")
