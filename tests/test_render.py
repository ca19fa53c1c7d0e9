"""Rendering beside building (report/figures/render.py): forked children give the bytes this process would, in
order, and a child that fails or dies is never trusted."""

from __future__ import annotations

import os
import signal
import sys
import time

import numpy as np
import pytest
from matplotlib.figure import Figure

from wsemoe.report.figures.render import rendered, spare_cores
from wsemoe.report.figures.style import figure_bytes

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="rendering in children needs fork")


def _figures(n: int = 5):
    """(stem, figure) pairs, one None among them (a figure the data do not support)."""
    rng = np.random.default_rng(0)
    for k in range(n):
        if k == 2:
            yield "absent", None
            continue
        fig = Figure(figsize=(3, 2))
        ax = fig.add_subplot()
        ax.plot(rng.random(50), label=f"series {k}")
        ax.set_title(f"figure {k}")
        fig.legend()
        yield f"f{k}", fig


def _files(fig) -> dict:
    return {ext: figure_bytes(fig, ext) for ext in ("png", "svg")}


def test_children_give_the_bytes_and_order_of_this_process():
    here = [(stem, out) for stem, out, _ in rendered(_figures(), _files, children=0)]
    forked = [(stem, out) for stem, out, _ in rendered(_figures(), _files, children=2)]
    assert [s for s, _ in forked] == ["f0", "f1", "absent", "f3", "f4"]
    assert forked == here
    assert dict(forked)["absent"] is None and dict(forked)["f0"]["png"].startswith(b"\x89PNG")


def test_an_error_in_a_child_surfaces_here_with_its_own_type():
    def failing(fig):
        if fig.axes[0].get_title() == "figure 3":
            raise ZeroDivisionError("the figure's own error")
        return _files(fig)

    with pytest.raises(ZeroDivisionError, match="own error"):
        list(rendered(_figures(), failing, children=2))


def test_a_child_that_dies_is_replaced_by_rendering_here():
    parent = os.getpid()

    def dying(fig):
        if os.getpid() != parent:  # only in a child: as if the OOM killer took it
            os.kill(os.getpid(), signal.SIGKILL)
        return _files(fig)

    got = {stem: out for stem, out, _ in rendered(_figures(), dying, children=2)}
    assert got == {stem: out for stem, out, _ in rendered(_figures(), _files, children=0)}


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_stopping_early_leaves_no_child():
    """Closing the stream (as an interrupted command does) kills and reaps the children still rendering."""
    parent = os.getpid()

    def children() -> set:
        return set(open(f"/proc/{parent}/task/{parent}/children").read().split())

    def slow(fig):
        if os.getpid() != parent and fig.axes[0].get_title() != "figure 0":
            time.sleep(30)  # still rendering when the stream is closed
        return _files(fig)

    before = children()  # a test runner's worker may have children of its own (a resource tracker ...)
    gen = rendered(_figures(8), slow, children=2)
    next(gen)
    assert children() - before  # some figures are being rendered in children right now
    gen.close()
    assert children() - before == set()


def test_one_child_per_core_and_none_on_one_core(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    assert spare_cores() == 2
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0})
    assert spare_cores() == 0


def test_a_child_that_hangs_is_killed_and_its_figure_rendered_here():
    parent = os.getpid()

    def hanging(fig):
        if os.getpid() != parent and fig.axes[0].get_title() == "figure 1":
            time.sleep(60)  # as a child stuck on a lock held at fork time
        return _files(fig)

    t0 = time.monotonic()
    got = {stem: out for stem, out, _ in rendered(_figures(), hanging, children=2, timeout=1.0)}
    assert time.monotonic() - t0 < 30
    assert got == {stem: out for stem, out, _ in rendered(_figures(), _files, children=0)}
