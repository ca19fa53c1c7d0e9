"""Figures rendered beside their building: forked children render figures while this process builds the next.

Rendering (PNG and SVG of a figure with thousands of artists) is most of what `plot` and `report` spend, and
it is one figure at a time, single-threaded, in matplotlib. A child forked once the figure exists shares it
with this process (copy on write: nothing is pickled on the way in), renders it, and hands back only bytes,
through an anonymous temporary file (a pipe would block the child until this process came to read it).
Results come back in the order the figures came, identical to rendering here: the child renders the same
figure with the same settings. Without fork (not POSIX) or with one core, everything renders in this process.

A child dies with this process (even by SIGKILL: PR_SET_PDEATHSIG) and dies at once on Ctrl-C or SIGTERM,
which reach the whole process group; the command then ends as it would without children. A child that fails
for any other reason, or has not finished after CHILD_TIMEOUT_S, is not trusted: it is killed and its figure
rendered again here, where an error would surface with its traceback.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import os
import pickle
import signal
import tempfile
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator

from wsemoe.sweep.executors import usable_cores


def spare_cores() -> int:
    """Children worth running beside this process: one per core (none on one core or without fork). Not one
    fewer: this process mostly builds figures, which is lighter than rendering them, and renders one itself
    only when every child is busy. On the 2-core bench machine, two children took the 1.2 M-point BTA plot
    from 5.5 to 4.9 s and moentwine_scale from 8.8 to 7.9 s against one (best of 5 and of 3)."""
    if not hasattr(os, "fork"):
        return 0
    cores = usable_cores()
    return cores if cores > 1 else 0


class _Child:
    """One figure being rendered in a forked child; `result()` waits for it (None if the child failed)."""

    def __init__(self, render: Callable, fig):
        self.out = tempfile.TemporaryFile()
        self.pid = os.fork()
        if self.pid == 0:  # the child: render, write, leave without running any of the parent's clean-up
            code = 1
            try:
                # No collections in a child that lives a second: one would walk (and so copy) every object
                # it shares with this process.
                gc.disable()
                _child_signals()
                pickle.dump(render(fig), self.out, protocol=pickle.HIGHEST_PROTOCOL)
                self.out.flush()
                code = 0
            finally:
                os._exit(code)
        self.status: int | None = None

    def done(self) -> bool:
        if self.status is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.status = status
        return self.status is not None

    def result(self, timeout: float):
        """The child's bytes, or None when it failed or did not finish within `timeout` seconds (killed)."""
        deadline = time.monotonic() + timeout
        while not self.done():
            if time.monotonic() > deadline:  # stuck (a lock held at fork time?): never wait on it forever
                self.kill()
                return None
            time.sleep(0.003)
        try:
            if self.status != 0:
                return None
            self.out.seek(0)
            return pickle.load(self.out)
        finally:
            self.out.close()

    def kill(self) -> None:
        if self.status is None:
            with contextlib.suppress(OSError):
                os.kill(self.pid, signal.SIGKILL)
                self.status = os.waitpid(self.pid, 0)[1]
        self.out.close()


def _child_signals() -> None:
    """Ctrl-C and SIGTERM end a child silently (the parent reports); the parent's death ends it too."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


CHILD_TIMEOUT_S = 300.0  # a child that has not rendered its figure by then is killed; the figure is rendered here


def rendered(pairs: Iterable, render: Callable, children: int | None = None,
             timeout: float = CHILD_TIMEOUT_S) -> Iterator[tuple]:
    """(stem, render(figure), figure) for each (stem, figure) of `pairs`, in order; None in place of both for
    a figure that is None. Up to `children` (default `spare_cores()`) render in forked children while the next
    figures are built; when all are busy, this process renders the figure itself. A child that fails, dies or
    takes longer than `timeout` seconds is not trusted: its figure is rendered again here."""
    children = spare_cores() if children is None else children
    pending: deque = deque()  # [stem, figure, _Child or None, result]
    try:
        for stem, fig in pairs:
            busy = sum(1 for item in pending if item[2] is not None and not item[2].done())
            if fig is None:
                pending.append([stem, None, None, None])
            elif busy < children:
                pending.append([stem, fig, _Child(render, fig), None])
            else:
                pending.append([stem, fig, None, render(fig)])
            while pending and (pending[0][2] is None or pending[0][2].done()):
                yield _finish(pending.popleft(), render, timeout)
        while pending:
            yield _finish(pending.popleft(), render, timeout)
    finally:
        for item in pending:
            if item[2] is not None:
                item[2].kill()


def _finish(item: list, render: Callable, timeout: float) -> tuple:
    stem, fig, child, result = item
    if child is not None:
        result = child.result(timeout)
        if result is None:  # the child failed: render here, where an error shows with its traceback
            result = render(fig)
    return stem, result, fig
