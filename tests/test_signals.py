"""Signals (issue 18): any sequence of SIGINT and SIGTERM, to the parent or to the whole process group as a
terminal's Ctrl-C sends it, two within 100 ms included, ends the run and its workers promptly, in one line,
with the finished parts kept for `--resume`.

Before the fix, two SIGINTs 0–100 ms apart during `--workers 2` left the parent waiting forever in the
pool's shutdown with both workers alive (reproduced with this very harness: 9 of 12 timings hung).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from wsemoe.store import partial as partial_mod

LONG = {"name": "sig", "hardware": "cs2", "model": "qwen3-30b-a3b", "workload": {"mode": "train", "seq_len": 8192},
        "sparsity": {"vary": "num_experts", "values": [8, 32, 128]},
        "axes": {"workload.B": {"range": [1, 2000]}, "workload.G": {"range": [1, 64]}},
        "compare": {"name": "uniform", "baseline": {"workload.G": 1}}}
BOUND_S = 10  # the run and every worker end within this after the first signal


def _children(pid: int) -> list[int]:
    out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True).stdout
    return [int(x) for x in out.split()]


def _alive(pid: int) -> bool:
    try:
        return "\nState:\tZ" not in Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False


def _parts(out: Path) -> list[Path]:
    return list(out.glob(".sig.partial-*/points.parquet/part-*.parquet"))


SEQUENCES = {
    "two SIGINT at once, parent": ([signal.SIGINT, signal.SIGINT], [0.0], False),
    "two SIGINT 50 ms apart, group (Ctrl-C twice)": ([signal.SIGINT, signal.SIGINT], [0.05], True),
    "SIGTERM then SIGINT 20 ms later, parent": ([signal.SIGTERM, signal.SIGINT], [0.02], False),
    "two SIGTERM 90 ms apart, group": ([signal.SIGTERM, signal.SIGTERM], [0.09], True),
    "a burst of four, group": ([signal.SIGINT, signal.SIGTERM, signal.SIGINT, signal.SIGINT], [0.0, 0.03, 0.06], True),
}


@pytest.mark.parametrize("case", list(SEQUENCES))
def test_any_signal_sequence_ends_run_and_workers_promptly_keeping_progress(case, tmp_path):
    sigs, gaps, group = SEQUENCES[case]
    cfg = tmp_path / "sig.yaml"
    cfg.write_text(yaml.safe_dump(LONG))
    out = tmp_path / "res"
    cmd = [sys.executable, "-m", "wsemoe.cli", "sweep", str(cfg), "--results", str(out), "-q", "--workers", "2",
           "--chunk-size", "2000"]
    proc = subprocess.Popen(cmd, env={**os.environ, "CI": "1"}, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    try:
        deadline, workers = time.time() + 120, []
        while time.time() < deadline and (len(workers) < 2 or len(_parts(out)) < 2) and proc.poll() is None:
            workers = _children(proc.pid)
            time.sleep(0.02)
        assert proc.poll() is None and len(workers) >= 2, "the workers never started, or the run ended first"
        send = (lambda s: os.killpg(proc.pid, s)) if group else proc.send_signal
        t0 = time.time()
        for sig, gap in zip(sigs, [*gaps, None]):
            send(sig)
            if gap is not None:
                time.sleep(gap)
        proc.wait(timeout=BOUND_S)
        while time.time() - t0 < BOUND_S and any(_alive(w) for w in workers):
            time.sleep(0.05)
        assert not any(_alive(w) for w in workers), "workers outlived the run"
        assert time.time() - t0 < BOUND_S
    finally:
        if proc.poll() is None:
            for w in _children(proc.pid):
                os.kill(w, signal.SIGKILL)
            proc.kill()
            proc.wait()
    err = proc.stderr.read().decode().strip()
    assert proc.returncode != 0 and len(err.splitlines()) == 1 and err.startswith("error: interrupted"), err
    assert not (out / "sig").exists()
    partial = next(out.glob(".sig.partial-*"))
    kept = partial_mod.PartialRun(out / "sig", partial.name.rsplit("-", 1)[1], resume=True).reusable()
    assert kept, "no finished part was kept for --resume"


def test_two_signals_in_one_process_run_end_it_in_one_line(tmp_path):
    """No workers: the writer threads finish their chunk and the run ends."""
    cfg = tmp_path / "sig.yaml"
    cfg.write_text(yaml.safe_dump(LONG))
    out = tmp_path / "res"
    proc = subprocess.Popen([sys.executable, "-m", "wsemoe.cli", "sweep", str(cfg), "--results", str(out), "-q",
                             "--chunk-size", "2000"], env={**os.environ, "CI": "1"}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    deadline = time.time() + 120
    while time.time() < deadline and len(_parts(out)) < 2 and proc.poll() is None:
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=BOUND_S)
    err = proc.stderr.read().decode().strip()
    assert proc.returncode != 0 and err == ("error: interrupted; no file was left half-written (a sweep continues from its "
                                         "finished chunks with --resume)")
    assert _parts(out)


def test_an_interrupted_command_that_keeps_no_parts_does_not_point_at_resume(tmp_path):
    """`invariants`, `plot` or `validate` stopped by Ctrl-C said '(a sweep continues with --resume)': only a
    sweep keeps parts to resume from."""
    proc = subprocess.Popen([sys.executable, "-m", "wsemoe.cli", "invariants"], env={**os.environ, "CI": "1"},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    time.sleep(3.0)   # past start-up, into the checks (45 s of CPU in all)
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=BOUND_S)
    err = proc.stderr.read().decode().strip()
    assert proc.returncode == 130 and err == "error: interrupted; no file was left half-written", err


def test_an_interrupt_a_library_turns_into_another_error_still_ends_as_an_interrupt(capsys):
    # numpy's comparison of row views (np.unique(axis=0)) re-raises a KeyboardInterrupt that lands inside it as a
    # TypeError; the signal was ours, so the command ends as interrupted (exit 130, one line), not 'internal error'
    import typer

    from wsemoe import cli

    def interrupted_inside_numpy():
        cli._first_signal.append(time.monotonic())   # what the handler records before it raises
        raise TypeError("Cannot compare structured arrays unless they have a common dtype.")

    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        with pytest.raises(typer.Exit) as info:
            cli.guarded(interrupted_inside_numpy)()
    finally:   # the command ignores further signals on its way out; this test process must not
        for sig, handler in saved.items():
            signal.signal(sig, handler)
        cli._first_signal.clear()
    assert info.value.exit_code == 130
    assert "interrupted" in capsys.readouterr().err
