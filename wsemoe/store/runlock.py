"""The run lock of a results folder: one exclusive lock file beside it (`.<name>.lock`), held by a sweep for its
whole run and by every other writer while it writes into that results folder (plots, report, readings and
sensitivity analyses), so that no file is ever written into results another process is replacing.

A lock file is created, locked (flock, non-blocking: a second run fails at once with one line) and removed
after; a lock file that is not wsemoe's is never used.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from wsemoe.errors import ResultsError, RunError, os_error
from wsemoe.store.atomic import os_errors

LOCK_TEXT = b"wsemoe run lock\n"  # the first line of a lock file: a file without it is not ours to take


_HELD: set = set()  # the run locks this process holds (their lock files' real paths)


class RunLock:
    """An exclusive lock on `.<name>.lock` beside the target, for the whole run (removed after). With `within`,
    a lock this process already holds is taken as held (a no-op): a sweep's own follow-up writes into the
    results it just wrote, e.g. its readings analysis, run inside the sweep's lock."""

    def __init__(self, target: Path, within: bool = False):
        self.target = Path(target)
        self.path = self.target.with_name(f".{self.target.name}.lock")
        self.fd = None
        self.key = os.path.realpath(self.path)
        self.within = within

    def __enter__(self):
        if self.within and self.key in _HELD:
            return self
        with os_errors(self.path, "take the run's lock"):
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            # The holder before us may have removed the file after we opened it: lock the live one.
            if os.fstat(fd).st_ino != os.stat(self.path).st_ino:
                raise BlockingIOError
            head = os.pread(fd, len(LOCK_TEXT), 0)
            if head and head != LOCK_TEXT:
                raise ResultsError("exists and is not wsemoe's lock file; refusing to use it (move it away)",
                                   loc=(str(self.path),))
            os.ftruncate(fd, 0)
            os.pwrite(fd, LOCK_TEXT + f"{os.getpid()}\n".encode(), 0)
        except (BlockingIOError, FileNotFoundError):
            os.close(fd)
            raise RunError("another run is writing these results; wait for it to finish",
                           loc=(str(self.path.with_name(self.path.name[1:-5])),)) from None
        except OSError as exc:
            os.close(fd)
            self.path.unlink(missing_ok=True)
            raise os_error(exc, self.path, "take the run's lock") from None
        except BaseException:
            os.close(fd)
            raise
        self.fd = fd
        _HELD.add(self.key)
        return self

    def __exit__(self, *exc):
        if self.fd is None:
            return False  # taken as held: the outer lock releases it
        _HELD.discard(self.key)
        try:
            if os.fstat(self.fd).st_ino == os.stat(self.path).st_ino:  # still our file
                self.path.unlink()
        except OSError:
            pass
        os.close(self.fd)
        return False


def lock_held(target: Path) -> bool:
    """True while a run holds the lock of `target` (its partial folder is in use, not stale)."""
    path = Path(target).with_name(f".{Path(target).name}.lock")
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False  # no lock file: no run
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing releases a lock we took
    return False
