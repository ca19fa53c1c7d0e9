"""Checksums checked once: which files of a results folder were found to match their recorded SHA-256.

Every reader verifies every part against the manifest; hashing a large sweep on each `show` would cost
seconds, so a match is remembered in a per-user cache (`$WSEMOE_CACHE_DIR`, else
`$XDG_CACHE_HOME/wsemoe`, else `~/.cache/wsemoe`; results folders are never written by readers). The
cache is untrusted too: an entry counts only for the same folder path, the same checksum, and a file
with the same device, inode, size, modification and status-change times (st_ctime moves on any
write, even one that restores the modification time), so any change is hashed again. A cache that
cannot be read or written only costs the hashing.
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


def _load(path: Path | None, folder: Path) -> dict:
    if path is None:
        return {}
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return {}
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
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
