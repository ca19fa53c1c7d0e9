"""Every writer into a results folder holds that folder's run lock (store/runlock.py): while another process runs
a sweep into those results, `plot`, `report` and `readings` fail with one line and write nothing; a sweep's own
readings analysis is written inside the sweep's lock, so a second sweep can never swap its results in under it
(the race a concurrent-runs test caught: the analysis' ledger being written while the other run checked the
folder)."""

from __future__ import annotations

import subprocess
import sys

import pytest
import yaml

from wsemoe.cli import app
from wsemoe.store.runlock import lock_held
from wsemoe.sweep.run import run_sweep
from clicheck import one_line_error
from test_data_safety import GOOD, _snapshot

HOLD = ("import sys, time\nfrom wsemoe.store.runlock import RunLock\nlock = RunLock(sys.argv[1])\nlock.__enter__()\n"
        "print('held', flush=True)\ntime.sleep(120)\n")


@pytest.fixture()
def results(tmp_path, runner):
    f = tmp_path / "cfg.yaml"
    f.write_text(yaml.safe_dump(GOOD))
    out = tmp_path / "out"
    r = runner.invoke(app, ["sweep", str(f), "-o", str(out), "-q"])
    assert r.exit_code == 0, r.output
    return out


def _held_by_another_process(path):
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(path)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    return proc


@pytest.mark.parametrize("argv", [["plot", "{r}"], ["report", "{r}"], ["readings", "{r}"]])
def test_a_writer_into_results_another_run_holds_is_one_line_and_writes_nothing(results, runner, argv):
    before = _snapshot(results)
    proc = _held_by_another_process(results)
    try:
        one_line_error(runner.invoke(app, [a.format(r=results) for a in argv]), "another run")
        assert _snapshot(results) == before
    finally:
        proc.kill()
        proc.wait()
    assert not lock_held(results)
    r = runner.invoke(app, [a.format(r=results) for a in argv])
    assert r.exit_code == 0, r.output  # the lock gone, the same command writes


def test_a_sweeps_follow_up_runs_inside_its_own_lock(tmp_path):
    f = tmp_path / "cfg.yaml"
    f.write_text(yaml.safe_dump(GOOD))
    for force in (True, False):  # a run that writes, and one that finds its results up to date
        res = run_sweep(f, out_dir=tmp_path / "out", force=force, then=lambda r: str(lock_held(r.path)))
        assert res.note == "True", res.status
    assert not lock_held(tmp_path / "out")
