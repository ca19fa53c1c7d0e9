"""The record of what wsemoe wrote in a folder: `.wsemoe.json`, the only proof of ownership it trusts.

Each folder wsemoe writes into holds one ledger listing the entries it wrote there: a file with the size
and SHA-256 of the bytes written, a folder it made (which holds its own ledger), or a results folder's
part files (listed with their checksums by the manifest). A folder wsemoe made itself also names its
owner (the writer and, for results, the sweep). A user's file can never carry this record by accident,
and a file edited since wsemoe wrote it no longer matches its entry, so it is no longer provably ours.
A ledger is read as untrusted input (bounded, checked); one that does not parse proves nothing.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path

NAME = ".wsemoe.json"
FORMAT = "wsemoe-ledger/1"
MAX_BYTES = 4 << 20  # a ledger lists at most a few hundred entries
KINDS = ("file", "folder", "parts")
_HEX = re.compile(r"^[0-9a-f]{64}$")
_WORD = re.compile(r"^[a-z][a-z-]{0,30}$")


@dataclass
class Ledger:
    """Entries wsemoe wrote in `folder` ({name: {kind, writer, bytes?, sha256?}}), and its owner when wsemoe
    made the folder itself ({writer, key})."""

    folder: Path
    owner: dict | None = None
    entries: dict = field(default_factory=dict)

    def entry(self, name: str) -> dict | None:
        return self.entries.get(name)

    def record_file(self, name: str, writer: str, data_sha256: str, size: int, key: str | None = None) -> None:
        """A file `writer` wrote; `key`, what it was made from (a report's results folder), when it says so."""
        self.entries[name] = {"kind": "file", "writer": writer, "bytes": int(size), "sha256": data_sha256,
                              **({"key": key} if key is not None else {})}

    def record(self, name: str, kind: str, writer: str) -> None:
        self.entries[name] = {"kind": kind, "writer": writer}

    def to_bytes(self) -> bytes:
        body = {"format": FORMAT, "owner": self.owner, "entries": dict(sorted(self.entries.items()))}
        return json.dumps(body, indent=1).encode()


def _file_name(name) -> bool:
    """A name the file system can hold as one entry of a folder: text of 1-255 characters, no '/' and no NUL, not
    '.', '..' or the ledger itself, and encodable (a lone surrogate from JSON's \\ud800 is not)."""
    if not (isinstance(name, str) and 0 < len(name) <= 255 and "/" not in name and "\x00" not in name
            and name not in (".", "..", NAME)):
        return False
    try:
        os.fsencode(name)
    except UnicodeError:
        return False
    return True


MAX_KEY = 4096   # characters of what a file was made from (paths)


def _valid_entry(name, e) -> bool:
    if not _file_name(name):
        return False
    if not isinstance(e, dict) or e.get("kind") not in KINDS or not _WORD.match(str(e.get("writer", ""))):
        return False
    if e["kind"] == "file":
        size = e.get("bytes")
        return (isinstance(size, int) and not isinstance(size, bool) and 0 <= size < 1 << 50
                and isinstance(e.get("sha256"), str) and bool(_HEX.match(e["sha256"]))
                and (e.get("key") is None or (isinstance(e["key"], str) and len(e["key"]) <= MAX_KEY)))
    return True


def _valid_owner(o) -> bool:
    return o is None or (isinstance(o, dict) and _WORD.match(str(o.get("writer", ""))) is not None
                         and (o.get("key") is None or (isinstance(o["key"], str) and len(o["key"]) <= 255)))


def read(folder) -> Ledger:
    """The ledger of `folder`; an empty one when absent, not a regular file, too large or malformed."""
    folder = Path(folder)
    empty = Ledger(folder)
    try:
        fd = os.open(folder / NAME, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return empty
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return empty
        data = os.read(fd, MAX_BYTES + 1)
    except OSError:
        return empty
    finally:
        os.close(fd)
    if len(data) > MAX_BYTES:
        return empty
    try:
        body = json.loads(data)
    except (ValueError, RecursionError):
        return empty
    if not isinstance(body, dict) or body.get("format") != FORMAT or not _valid_owner(body.get("owner")):
        return empty
    entries = body.get("entries")
    if not isinstance(entries, dict) or not all(_valid_entry(n, e) for n, e in entries.items()):
        return empty
    return Ledger(folder, body.get("owner"), dict(entries))


def foreign(folder) -> bool:
    """True when `folder` holds something at the ledger's name that wsemoe did not write as its record (a
    user's file, a link, a folder): writing the ledger would replace it, so nothing is written there."""
    path = Path(folder) / NAME
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return True
        with open(path, "rb") as fh:
            body = json.loads(fh.read(MAX_BYTES + 1))
    except FileNotFoundError:
        return False
    except (OSError, ValueError, RecursionError):
        return True
    return not (isinstance(body, dict) and body.get("format") == FORMAT)


def sha256_file(path) -> tuple[int, str]:
    """(bytes, SHA-256) of a regular file, read in 4 MB blocks without following a symbolic link."""
    h, size = hashlib.sha256(), 0
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        with os.fdopen(fd, "rb", closefd=False) as fh:
            while block := fh.read(4 << 20):
                h.update(block)
                size += len(block)
    finally:
        os.close(fd)
    return size, h.hexdigest()


def matches(path: Path, entry: dict | None) -> bool:
    """True when `path` is a regular file holding exactly the bytes its ledger entry records."""
    if not entry or entry.get("kind") != "file":
        return False
    try:
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode) or st.st_size != entry["bytes"]:
            return False
        return sha256_file(path) == (entry["bytes"], entry["sha256"])
    except OSError:
        return False


def intact(folder, names, writer: str) -> bool:
    """True when `folder` is one `writer` made and each of `names` holds the very bytes its ledger records: how
    a reader of a small output folder (readings/, sensitivity/) knows it is what wsemoe wrote."""
    led = read(folder)
    return bool(led.owner and led.owner["writer"] == writer) and all(matches(Path(folder) / n, led.entry(n))
                                                                      for n in names)


_HELD: dict = {}  # folders this process holds locked: a nested `locked` of one of them is a no-op


@contextlib.contextmanager
def locked(folder):
    """An exclusive lock on the folder itself while its ledger is read, changed and written back (re-entrant
    within a process: flock would block on a second descriptor of the same folder)."""
    key = os.path.realpath(folder)
    if key in _HELD:
        yield
        return
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        _HELD[key] = fd
        yield
    finally:
        _HELD.pop(key, None)
        os.close(fd)  # closing releases the lock
