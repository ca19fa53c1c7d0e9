"""Bytes put on disk whole: a temporary file beside the target, flushed and renamed (or linked) into place, and
OS errors as one line naming the path. The primitives `store/writer.py` (and the sweep's parts, repairs and
the verified-read cache) build on; what may be replaced is decided there, never here."""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path

from wsemoe.errors import os_error

MAX_NAME = 200  # bytes of a name: room for the hidden temporary names beside it (255 in all)


@contextlib.contextmanager
def os_errors(path, doing: str):
    """Any OSError inside becomes one line naming the path and what was being done."""
    try:
        yield
    except OSError as exc:
        raise os_error(exc, path, doing) from None


def fsync_folder(folder) -> None:
    """Make a rename in `folder` durable (file systems that cannot sync a folder are left as they are)."""
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_bytes(path, data: bytes, tmp_dir=None, durable: bool = True, replace: bool = True) -> None:
    """Write `data` to a new temporary file (in `tmp_dir`, else beside `path`), flush it to disk when
    `durable`, and rename it over `path`: readers see the old file or the new one, never half of one.
    Without `replace` it is linked into place instead, which fails (FileExistsError) when anything is at
    `path`. A failure removes the temporary file and leaves `path` as it was."""
    path = Path(path)
    folder = Path(tmp_dir) if tmp_dir is not None else path.parent
    tmp = folder / f".{path.name[:MAX_NAME]}.wsemoe-tmp-{os.getpid()}-{secrets.token_hex(4)}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        if durable:
            os.fsync(fd)
        os.close(fd)
        fd = None
        if replace:
            os.replace(tmp, path)
        else:
            _link_new(tmp, path)
    except BaseException:
        if fd is not None:
            os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    if durable:
        fsync_folder(path.parent)


def _link_new(tmp: Path, path: Path) -> None:
    """Put the finished `tmp` at `path` only if nothing is there (a link fails on any existing name)."""
    try:
        os.link(tmp, path)
    except OSError as exc:
        if isinstance(exc, FileExistsError):
            raise
        # a file system without hard links: claim the name exclusively, then rename over the claim
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644))
        os.replace(tmp, path)
    else:
        os.unlink(tmp)
