"""Where a write may go, decided before anything is written: the path as given holds no symbolic link and a
name the file system can hold; the folder it goes into exists (or only that one folder is missing), is a
writable folder, and takes entries from this writer (no other command owns it). The writer
(`store/writer.py`) calls these before every file or folder it writes.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from wsemoe.errors import ResultsError, os_error, what_it_is
from wsemoe.store import ledger
from wsemoe.store.atomic import MAX_NAME, os_errors
from wsemoe.store.ownership import (RESULTS_SLOTS, command, is_results, owner_of, owner_of_results, refuse,
                                    writable)


def checked_path(path, named: int = 0) -> Path:
    """The absolute path, after refusing a symbolic link anywhere along the path as given and a name the
    file system (with our temporary names beside it) cannot hold. `named`: how many of the last parts wsemoe
    names itself (a sweep's folder in its results root), not the user."""
    if not str(path).strip():
        raise ResultsError("an empty path names nothing to write", loc=("path",))
    p = Path(path)
    cur = Path(p.anchor) if p.is_absolute() else Path()
    parts = p.parts[1:] if p.is_absolute() else p.parts
    for i, part in enumerate(parts):
        cur = cur / part
        if part in (".", ".."):
            continue
        try:
            st = os.lstat(cur)
        except FileNotFoundError:
            break
        except OSError as exc:
            raise os_error(exc, cur, "look at the path") from None
        if stat.S_ISLNK(st.st_mode):
            raise refuse(cur, _link_hint(cur, i >= len(parts) - named))
        if i < len(parts) - 1 and not stat.S_ISDIR(st.st_mode):
            raise refuse(cur, f"is {what_it_is(cur)}, not a folder; nothing can be written inside it")
    absolute = Path(os.path.abspath(p))
    if len(absolute.name.encode()) > MAX_NAME:
        raise refuse(absolute, f"name is {len(absolute.name.encode())} bytes; at most {MAX_NAME} are supported "
                      "(ENAMETOOLONG)")
    return absolute


def _link_hint(link: Path, named: bool) -> str:
    """Why a link is refused, and what to do: a path the user gave can be given again without the link; a name
    wsemoe chose itself (a slot of a results folder: readings/, plots/...; a sweep's folder) cannot, so the
    link itself must go (its target is kept)."""
    if named or link.name in RESULTS_SLOTS and owner_of_results(link.parent):
        return ("is a symbolic link where wsemoe names the folder itself; wsemoe never writes through a link "
                "(remove the link, which leaves what it points to as it is, and run again)")
    return "is a symbolic link; wsemoe never writes through a link (give the real path)"


def is_current(p: Path) -> bool:
    """True for the current folder and every folder above it."""
    here = Path.cwd().resolve()
    return any(q == here or q in here.parents for q in {Path(p), Path(os.path.realpath(p))})


def check_parent(parent: Path, writer: str, name: str, whole: bool = False) -> None:
    """The folder a file or folder goes into: it exists (or only it is missing, and is made when writing:
    wsemoe makes at most that one folder, never a tree), is a writable folder, and takes entries from this
    writer. `whole`: `name` is a command's whole output (a folder it replaces when run again), which no folder
    another run made may hold, even one of this command's: rewriting that one would delete it."""
    try:
        st = os.stat(parent)
    except FileNotFoundError:
        try:
            up = os.stat(parent.parent)
        except FileNotFoundError:
            raise refuse(parent.parent, "folder does not exist; create it first (wsemoe makes at most the one "
                         "folder that holds what it writes)") from None
        except OSError as exc:
            raise os_error(exc, parent.parent, "look at the folder") from None
        if not stat.S_ISDIR(up.st_mode):
            raise refuse(parent.parent, "is not a folder")
        writable(parent.parent, up, "folder")
        _check_owner(parent.parent, writer, parent.name, whole)   # the folder it makes is an entry there too
        return
    except OSError as exc:
        raise os_error(exc, parent, "look at the folder") from None
    if not stat.S_ISDIR(st.st_mode):
        raise refuse(parent, "is not a folder")
    writable(parent, st, "folder")
    _check_owner(parent, writer, name, whole)


def _check_owner(parent: Path, writer: str, name: str, whole: bool = False) -> None:
    """`name` may go into `parent` only when no other writer owns `parent` (a results folder takes only the
    entries its slots name, each from its own writer); a whole output (`whole`) not even when this writer owns
    it: the run that made `parent` replaces it whole when run again, and would take the nested output with it."""
    if ledger.foreign(parent):
        raise refuse(parent / ledger.NAME, "is not the record wsemoe keeps there; refusing to write in its folder")
    owner = owner_of(parent)
    if owner is None or owner == writer and owner != "sweep" and not whole:
        return
    if owner == "sweep" and is_results(parent) and RESULTS_SLOTS.get(name) == writer:
        return
    slots = ", ".join(n for n, w in RESULTS_SLOTS.items() if w == writer)
    hint = f" (here it writes only {slots})" if owner == "sweep" and slots else ""
    raise refuse(parent / name, f"is inside a folder that `{command(owner)}` owns{hint}; choose another place")


def ensure_parent(p: Path) -> None:
    """Make the one missing folder that holds `p` (its own parent was checked to exist)."""
    if not os.path.isdir(p.parent):
        with os_errors(p.parent, "make the folder"):
            try:
                os.mkdir(p.parent)
            except FileExistsError:   # a concurrent run made it between the look and the mkdir: the folder
                if os.path.islink(p.parent) or not os.path.isdir(p.parent):   # wanted; anything else is refused
                    raise
