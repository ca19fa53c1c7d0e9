"""Checksums checked once: which files of a results folder were found to match their recorded SHA-256.

Every reader verifies every part against the manifest; hashing a large sweep on each `show` would cost
seconds, so a match is remembered in a per-user cache (`$WSEMOE_CACHE_DIR`, else
`$XDG_CACHE_HOME/wsemoe`, else `~/.cache/wsemoe`; results folders are never written by readers). The
cache is untrusted too: an entry counts only for the same folder path, the same checksum, and a file
with the same device, inode, size, modification and status-change times (st_ctime moves on any
write, even one that restores the modification time), so any change is hashed again. A cache that
cannot be read or written only costs the hashing, and so does one not owned by the current user alone (an
entry, its folder or the folder above writable by another user is never trusted). Readers parse the bytes
they verified (`read`): one handle, hashed or identical to the cached state while it was read.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path

MAX_CACHE = 32 << 20


def cache_dir() -> Path | None:
    """Where verified states are kept, or None when no folder is known."""
    for env, sub in (("WSEMOE_CACHE_DIR", ""), ("XDG_CACHE_HOME", "wsemoe")):
        if os.environ.get(env):
            return Path(os.environ[env]) / sub
    home = os.environ.get("HOME")
    return Path(home) / ".cache" / "wsemoe" if home else None


def _cache_file(folder: Path) -> Path | None:
    root = cache_dir()
    if root is None:
        return None
    key = hashlib.sha256(os.path.realpath(folder).encode("utf-8", "surrogateescape")).hexdigest()[:32]
    return root / "verified" / f"{key}.json"


def _ours(st: os.stat_result) -> bool:
    """Owned by this user and writable by no one else: what a cache entry or its folder must be to be trusted
    (another user of a shared cache folder could otherwise vouch for any bytes)."""
    return st.st_uid == os.getuid() and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def _trusted_dir(path: Path) -> bool:
    """The cache's `verified` folder and the folder holding it are real folders that are ours alone."""
    try:
        return all(stat.S_ISDIR(st.st_mode) and _ours(st) for st in (os.lstat(path), os.lstat(path.parent)))
    except OSError:
        return False


def _load(path: Path | None, folder: Path) -> dict:
    if path is None or not _trusted_dir(path.parent):
        return {}
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return {}
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or not _ours(st):
            return {}
        data = os.read(fd, MAX_CACHE + 1)
    except OSError:
        return {}
    finally:
        os.close(fd)
    try:
        body = json.loads(data) if len(data) <= MAX_CACHE else None
    except (ValueError, RecursionError):
        return {}
    if not isinstance(body, dict) or body.get("folder") != os.path.realpath(folder) or not isinstance(body.get("files"), dict):
        return {}
    return {k: v for k, v in body["files"].items() if isinstance(k, str) and isinstance(v, list) and len(v) == 6}


def _save(path: Path | None, folder: Path, files: dict) -> None:
    if path is None:
        return
    from wsemoe.store.atomic import atomic_bytes

    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        if not _trusted_dir(path.parent):
            return  # a folder others can write to: entries there would not be trusted, so none are written
        atomic_bytes(path, json.dumps({"folder": os.path.realpath(folder), "files": files}).encode(), durable=False)
    except OSError:
        pass  # a cache we cannot write only costs hashing next time


def _key(st: os.stat_result) -> list:
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def mismatches(folder, items, first_only: bool = True) -> list[tuple[str, str]]:
    """[(name, what is wrong)] for the files of `folder` that do not hold their recorded bytes; `items` are
    (relative path, bytes, sha256). With `first_only`, stops at the first. OSErrors propagate."""
    from wsemoe.store.ledger import sha256_file

    folder = Path(folder)
    cache_path = _cache_file(folder)
    cache = _load(cache_path, folder)
    bad, changed = [], False
    for name, size, sha in items:
        path = folder / name
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode):
            bad.append((name, "is not a regular file"))
        elif st.st_size != size:
            bad.append((name, f"has {st.st_size:,} bytes, the manifest says {size:,}"))
        elif cache.get(name) != [*_key(st), sha]:
            if sha256_file(path)[1] == sha:
                cache[name] = [*_key(st), sha]
                changed = True
            else:
                cache.pop(name, None)
                bad.append((name, "does not match its checksum (changed since the sweep wrote it)"))
        if bad and first_only:
            break
    if changed:
        _save(cache_path, folder, cache)
    return bad


class Unverified(ValueError):
    """A file's bytes are not the ones its record verifies (the message says how)."""


def read(folder, name: str, size: int, sha: str) -> bytes:
    """The bytes of `folder`/`name` that were verified: read once through one handle (no symbolic link followed),
    trusted without hashing only when that handle's file is the one the cache verified and did not change while
    it was read, else hashed as read. A file swapped or rewritten between a reader's verify and its read can
    therefore never be parsed in place of the verified one. Raises Unverified when the bytes do not match;
    OSErrors propagate."""
    folder = Path(folder)
    fd = os.open(folder / name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    try:
        before = os.fstat(fd)
        if not stat.S_ISREG(before.st_mode):
            raise Unverified(f"{name} is not a regular file")
        if before.st_size != size:
            raise Unverified(f"{name} has {before.st_size:,} bytes, the manifest says {size:,}")
        chunks, left = [], size + 1
        while left > 0 and (block := os.read(fd, min(left, 4 << 20))):
            chunks.append(block)
            left -= len(block)
        after = os.fstat(fd)
    finally:
        os.close(fd)
    data = b"".join(chunks)
    cache_path = _cache_file(folder)
    known = _load(cache_path, folder).get(name) == [*_key(before), sha] and _key(after) == _key(before)
    if len(data) != size or not (known or hashlib.sha256(data).hexdigest() == sha):
        raise Unverified(f"{name} does not match its checksum (changed since the sweep wrote it)")
    return data
