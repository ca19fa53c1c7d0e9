"""The one way wsemoe writes files and folders: atomically, and never over anything it cannot prove it wrote.

Every command that writes (sweep, report, schema, plot, compare --plot, invariants --junit, calibrate,
sensitivity, readings, export traffic, new) goes through here. A file is written to a temporary name in its
folder, flushed to disk and renamed into place; a folder is built under a hidden name beside its target and
swapped in. What may be replaced is decided by the folder's ledger (`store/ledger.py`), never by a file's
name or content (`wsemoe new` replaces nothing at all: its file is the user's once written):

- a file: only one the ledger lists with the very bytes it holds; one another command wrote needs --force;
  one of a results folder's own files (config.yaml, manifest.json, parts, pareto.csv...) never;
- a folder: only one wsemoe made for the same writer (another key, e.g. another sweep's results, needs
  --force), in which every entry is listed and unchanged;
- never: a symbolic link (the target or any folder of the path as given), the current folder or its
  parents, a results root (a folder holding results folders), a read-only file or folder (its write bits
  cleared: refused even for root), a path more than one folder below an existing one (wsemoe makes at most
  the one folder that holds what it writes, never a tree, and that one only where its own entry may go), a
  folder owned by another writer (points.parquet/, a partial folder, plots/), a FIFO or device, a folder
  holding a `.wsemoe.json` that is not its record, and a report into the results of another sweep than its own
  (`ownership.check_source`).

Every refusal and every OS failure is one line naming the path; what was there before stays as it was. Where
a write may go (the path, the folder it goes into and who owns that folder) is checked in `store/placement.py`.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
import stat
from pathlib import Path

from wsemoe.errors import WsemoeError, excerpt, os_error
from wsemoe.store import ledger
from wsemoe.store.atomic import atomic_bytes, fsync_folder, os_errors
from wsemoe.store.ownership import (PARTIAL_MARKER, WRITERS, check_replaceable, command, is_results, refuse,
                                    remove_tree, writable)
from wsemoe.store.placement import check_parent, checked_path, ensure_parent, is_current
from wsemoe.store.runlock import RunLock

RESERVED = (ledger.NAME, PARTIAL_MARKER)


def _check_file_target(p: Path, writer: str, force: bool, key: str | None = None) -> None:
    """An existing file may be replaced only when its ledger entry proves it is ours, unchanged; one made from
    another source (`key`: a report of other results, a plot of other runs) only with --force, as a folder."""
    try:
        st = os.lstat(p)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(st.st_mode):
        raise refuse(p, "is a folder; give a file name")
    if not stat.S_ISREG(st.st_mode):
        raise refuse(p, "is not a regular file; refusing to replace it")
    e = ledger.read(p.parent).entry(p.name)
    if e is None or e["kind"] != "file":
        raise refuse(p, "exists and wsemoe did not write it; refusing to replace it (choose another name, or "
                      "remove it yourself)")
    if not ledger.matches(p, e):
        raise refuse(p, "changed since wsemoe wrote it, so it is no longer provably wsemoe's; refusing to "
                      "replace it (choose another name, or remove it yourself)")
    if e["writer"] == "sweep" and writer != "sweep":
        raise refuse(p, "is a file of a results folder (written by `wsemoe sweep`); choose another name")
    if e["writer"] != writer and not force:
        raise refuse(p, f"was written by `{command(e['writer'])}`; pass --force to replace it")
    if None not in (key, e.get("key")) and e["key"] != key and not force:
        raise refuse(p, f"was made by `{command(writer)}` from {excerpt(e['key'])}; pass --force to replace it with "
                        f"one made from {excerpt(key)}")
    writable(p, st, "file")


def _file_path(path, writer: str) -> Path:
    """The absolute path of a file to write, once its path, name and folder are checked."""
    p = checked_path(path)
    if p.name in RESERVED:
        raise refuse(p, "is a name wsemoe keeps for its own records; choose another name")
    check_parent(p.parent, writer, p.name)
    return p


def check_file(path, writer: str, force: bool = False, key: str | None = None) -> Path:
    """Everything `write_file` checks, before any work is done; the absolute path."""
    p = _file_path(path, writer)
    _check_file_target(p, writer, force, key)
    return p


@contextlib.contextmanager
def results_locked(p: Path):
    """Hold the run lock of the results folder `p` lies in (an entry of it, or a file of one of its folders, such
    as plots/) while `p` is written: a sweep replacing those results meanwhile would otherwise lose the write, or
    carry it into results of another run. A sweep's own follow-up writes run inside its lock."""
    for folder in (p.parent, p.parent.parent):
        if is_results(folder):
            with RunLock(folder.absolute(), within=True):
                yield
            return
    yield


def write_file(path, data: bytes | str, writer: str, force: bool = False, key: str | None = None) -> Path:
    """Write one file atomically and record it in its folder's ledger (with `key`, what it was made from);
    refuse anything not provably ours."""
    p = check_file(path, writer, force, key)
    data = data.encode() if isinstance(data, str) else data
    ensure_parent(p)
    with results_locked(p), os_errors(p, f"write the {WRITERS[writer][1]}"), ledger.locked(p.parent):
        _check_file_target(p, writer, force, key)  # again, under the folder's lock
        atomic_bytes(p, data)
        record_files(p.parent, {p.name: data}, writer, key)
    return p


def create_file(path, data: bytes | str, writer: str) -> Path:
    """Write a file that is the user's from then on (`wsemoe new`'s sweep file): never over anything, not even a
    file wsemoe wrote, and listed in no ledger, so no writer (not even with --force) ever replaces it."""
    p = _file_path(path, writer)
    refusal = refuse(p, f"exists; {command(writer)} never replaces a file (choose another name or -o PATH)")
    if os.path.lexists(p):
        raise refusal
    ensure_parent(p)
    with os_errors(p, f"write the {WRITERS[writer][1]}"):
        try:
            atomic_bytes(p, data.encode() if isinstance(data, str) else data, replace=False)
        except FileExistsError:  # made meanwhile by someone else: theirs
            raise refusal from None
    return p


def record_files(folder: Path, files: dict, writer: str, key: str | None = None) -> None:
    """Add files just written (name -> their bytes) to the folder's ledger (the caller holds its lock)."""
    led = ledger.read(folder)
    for name, data in files.items():
        led.record_file(name, writer, hashlib.sha256(data).hexdigest(), len(data), key)
    atomic_bytes(folder / ledger.NAME, led.to_bytes())


def remove_file(path, writer: str) -> bool:
    """Remove a file only when its ledger entry proves this writer wrote it, unchanged; True if removed."""
    p = Path(path)
    with results_locked(p), os_errors(p, "remove an old file"), ledger.locked(p.parent):
        led = ledger.read(p.parent)
        e = led.entry(p.name)
        if e is None or e["writer"] != writer or not ledger.matches(p, e):
            return False
        os.unlink(p)
        del led.entries[p.name]
        atomic_bytes(p.parent / ledger.NAME, led.to_bytes())
    return True


# ---------------------------------------------------------------- folders

def check_folder(path, writer: str, force: bool = False, key: str | None = None) -> Path:
    """Everything `write_folder` (and a sweep) checks before any work is done; the absolute path."""
    p = checked_path(path)
    if is_current(p):
        raise refuse(p, "is the current folder or one of its parents; refusing to replace it")
    if p.name in RESERVED:
        raise refuse(p, "is a name wsemoe keeps for its own records; choose another name")
    check_parent(p.parent, writer, p.name, whole=True)
    try:
        st = os.lstat(p)
    except FileNotFoundError:
        return p
    if not stat.S_ISDIR(st.st_mode):
        raise refuse(p, "exists and is not a folder; refusing to replace it")
    if any(os.scandir(p)):
        check_replaceable(p, writer, key, force)
    else:
        writable(p, st, "folder")
    return p


def new_folder(target: Path, what: str = "new") -> Path:
    """A hidden, empty folder beside `target` (same file system, so it can be renamed into place)."""
    p = target.with_name(f".{target.name}.wsemoe-{what}-{os.getpid()}-{secrets.token_hex(4)}")
    os.mkdir(p, 0o755)
    return p


def swap_in(new: Path, target: Path, writer: str, force: bool = False, key: str | None = None) -> Path:
    """Rename the finished folder `new` to `target`, replacing an older folder only when it is provably this
    writer's (checked again here, at the last moment); the old one is removed entry by entry after."""
    old = None
    with os_errors(target, f"put the {WRITERS[writer][1]} in place"):
        if os.path.lexists(target):
            if any(os.scandir(target)):
                check_replaceable(target, writer, key, force)
                old = new_folder(target, "old")
                os.replace(target, old)  # over the empty placeholder
        try:
            os.replace(new, target)  # an empty folder is replaced in one rename
        except BaseException:
            if old is not None:
                os.replace(old, target)
            raise
        if old is not None:
            remove_tree(old)
        fsync_folder(target.parent)
        _record_in_parent(target, writer)
    return target


def _record_in_parent(folder: Path, writer: str) -> None:
    """A folder made inside a folder wsemoe owns (plots/ or sensitivity/ of results) joins its ledger."""
    parent = folder.parent
    if not ledger.read(parent).owner:
        return
    with ledger.locked(parent):
        led = ledger.read(parent)
        led.record(folder.name, "folder", writer)
        atomic_bytes(parent / ledger.NAME, led.to_bytes())


def write_folder(path, files: dict, writer: str, force: bool = False, key: str | None = None) -> Path:
    """Write {name: bytes} as the folder `path` (built beside it, then swapped in), with its ledger."""
    p = check_folder(path, writer, force, key)
    ensure_parent(p)
    new, made = None, []
    with results_locked(p), os_errors(p, f"write the {WRITERS[writer][1]}"), \
            _discarded_on_failure(p, writer, lambda: new, made):
        new = new_folder(p)
        fill_folder(new, files, writer, key, made=made)
        with ledger.locked(p.parent):
            swap_in(new, p, writer, force, key)
    return p


@contextlib.contextmanager
def _discarded_on_failure(target: Path, writer: str, build, made: list):
    """On any failure inside (an OSError, the file-size limit, Ctrl-C), remove the build folder `build()` beside
    `target`: what this writer made in it, newest first, then the folder. When something stays (a file someone
    else put there), the error says so and where, instead of implying nothing was left."""
    try:
        yield
    except BaseException as exc:
        new = build()
        if new is None or discard(new, made):
            raise
        left = f"; its unfinished copy {new.name} could not be removed (remove it by hand)"
        if isinstance(exc, OSError):
            raise os_error(exc, target, f"write the {WRITERS[writer][1]}{left}") from None
        if isinstance(exc, WsemoeError):
            raise type(exc)(exc.message + left, exc.loc) from None
        raise


def discard(folder: Path, made: list) -> bool:
    """Remove what a writer made in its build folder (files and subfolders it listed in `made`, newest first),
    then the folder; True when the folder is gone. Nothing it did not make is touched."""
    for path in reversed(made):
        with contextlib.suppress(OSError):
            if os.path.isdir(path) and not os.path.islink(path):
                os.rmdir(path)
            else:
                os.unlink(path)
    with contextlib.suppress(OSError):
        os.rmdir(folder)
    return not os.path.lexists(folder)


def fill_folder(folder: Path, files, writer: str, key: str | None = None, owner: bool = True,
                made: list | None = None) -> None:
    """Write files into a folder wsemoe is building, then its ledger (owned by `writer`, for `key`). `files` is
    {name: bytes} or (name, bytes) pairs made one at a time (a large export is never held whole); a name
    'sub/file' goes into a subfolder made here, with a ledger of its own. Each file and subfolder made is appended
    to `made` as soon as it exists (what `discard` removes when the writing fails)."""
    made = [] if made is None else made
    ledgers: dict = {}

    def ledger_of(rel: tuple) -> ledger.Ledger:
        if rel not in ledgers:
            if rel:
                ledger_of(rel[:-1]).record(rel[-1], "folder", writer)
                os.mkdir(folder.joinpath(*rel), 0o755)
                made.append(folder.joinpath(*rel))
            ledgers[rel] = ledger.read(folder.joinpath(*rel))
            if owner or rel:
                ledgers[rel].owner = {"writer": writer, "key": key}
        return ledgers[rel]

    ledger_of(())
    for name, data in files.items() if isinstance(files, dict) else files:
        *sub, base = name.split("/")
        data = data.encode() if isinstance(data, str) else data
        led = ledger_of(tuple(sub))  # (makes the subfolder)
        made.append(folder.joinpath(*sub, base))  # listed first: a failed write leaves no file, an interrupted rename one
        atomic_bytes(folder.joinpath(*sub, base), data)
        led.record_file(base, writer, hashlib.sha256(data).hexdigest(), len(data))
    for rel, led in ledgers.items():
        made.append(folder.joinpath(*rel, ledger.NAME))
        atomic_bytes(folder.joinpath(*rel, ledger.NAME), led.to_bytes())


def make_folder(path, writer: str, create: bool = True) -> Path:
    """A folder this writer fills file by file (plots/): made and recorded, or reused when already its own
    (with `create` False: only the checks, before any work is done)."""
    p = checked_path(path)
    check_parent(p.parent, writer, p.name)
    with os_errors(p, f"make the folder for the {WRITERS[writer][1]}"):
        try:
            st = os.lstat(p)
        except FileNotFoundError:
            st = None
        if st is not None:
            if not stat.S_ISDIR(st.st_mode):
                raise refuse(p, "exists and is not a folder; refusing to replace it")
            led = ledger.read(p)
            if not led.owner or led.owner["writer"] != writer:
                raise refuse(p, "exists and wsemoe did not make it; refusing to write into it (move it out first)")
            writable(p, st, "folder")
            return p
        if not create:
            return p
        ensure_parent(p)
        new, made = None, []
        with results_locked(p), _discarded_on_failure(p, writer, lambda: new, made):
            new = new_folder(p)
            fill_folder(new, {}, writer, made=made)
            with ledger.locked(p.parent):
                swap_in(new, p, writer)
    return p
