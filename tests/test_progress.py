"""Progress on every long step: one bar helper, drawn on a terminal only (never in a pipe or under CI), created by
each long command and fed by the work below it until done."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from wsemoe.cli import app
from wsemoe.report.terminal import progress

SMALL = {"name": "prog", "hardware": "cs2", "model": "qwen3-30b-a3b", "workload": {"mode": "train", "seq_len": 8192},
         "sparsity": {"vary": "num_experts", "values": [8, 128], "hold": "active"},
         "axes": {"workload.B": [1, 2], "workload.G": [1, 8]},
         "compare": {"name": "uniform", "baseline": {"workload.G": 1}}}


def test_bar_draws_on_a_terminal_and_nowhere_else(monkeypatch):
    out = io.StringIO()
    with progress.bar("sweep", "points", rate=True, console=Console(file=out, force_terminal=True, width=100)) as bar:
        bar(3, 10)
        bar(10, 10, "done")
    assert "sweep" in out.getvalue() and "10/10" in out.getvalue() and "points" in out.getvalue()
    monkeypatch.setattr("sys.stderr.isatty", lambda: True, raising=False)
    monkeypatch.delenv("CI", raising=False)
    assert progress.visible() and not progress.visible(quiet=True)
    monkeypatch.setenv("CI", "1")
    assert not progress.visible()
    with progress.bar("x") as bar:  # under CI: a bar that draws nothing and takes every update
        bar(1, 2)
        assert bar.progress is None


@pytest.fixture
def bars(monkeypatch):
    """Every bar a command opens, with the updates it received."""
    seen = {}

    class Recording(progress.Bar):
        def __init__(self, label, *args, **kwargs):
            super().__init__(label, *args, **kwargs)
            self.on, seen[label] = False, []

        def __call__(self, done, total=None, note=""):
            seen[self.label].append((done, total))

    monkeypatch.setattr(progress, "bar", lambda label, *a, **k: Recording(label, *a, **k))
    return seen


def test_every_long_command_opens_a_bar_and_fills_it(bars, runner, tmp_path):
    import yaml

    cfg = tmp_path / "prog.yaml"
    cfg.write_text(yaml.safe_dump(SMALL))
    root = tmp_path / "results"
    for args in (["sweep", str(cfg), "--results", str(root)], ["plot", str(root / "prog")],
                 ["report", str(root / "prog")], ["invariants", str(cfg), "--points", "16"],
                 ["validate", "--only", "params"],
                 ["sensitivity", str(cfg), "-n", "16", "--results", str(root), "--only", "io_bandwidth"],
                 ["calibrate", "-n", "8", "-o", str(tmp_path / "cal"), "--only", "io_bandwidth"]):
        r = runner.invoke(app, args)
        assert r.exit_code == 0, (args, r.output)
    assert set(bars) == {"sweep", "plot", "report", "invariants", "validate", "sensitivity", "calibrate"}
    for label, updates in bars.items():
        assert updates and updates[-1][0] == updates[-1][1], (label, updates[-3:])  # filled to its total
        assert [d for d, _ in updates] == sorted(d for d, _ in updates), label
