"""Real processes killed mid-run: resume with other chunkings, workers die with their parent,
Dask clusters that fail or are not Dask at all. Every outcome is exact results or one line."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

from wsemoe.sweep.run import run_sweep

BIG = {
    "name": "big", "hardware": "cs2", "model": "qwen3-30b-a3b",
    "workload": {"mode": "train", "seq_len": 8192},
    "sparsity": {"vary": "num_experts", "values": [8, 32, 128]},
    "axes": {"workload.B": {"range": [1, 40]}, "workload.G": {"range": [1, 64]}},
    "compare": {"name": "uniform", "baseline": {"workload.G": 1}},
}
ENV = {**os.environ, "CI": "1"}


def _load(path):
    points = pd.read_parquet(Path(path) / "points.parquet").sort_index()
    return points, pd.read_csv(Path(path) / "pareto.csv", index_col=0), pd.read_csv(Path(path) / "comparison.csv")


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    return _load(run_sweep(BIG, out_root=tmp_path_factory.mktemp("ref")).path)


def _cmd(cfg: Path, out: Path, *extra) -> list[str]:
    return [sys.executable, "-m", "wsemoe.cli", "sweep", str(cfg), "--results", str(out), "-q", *extra]


def _parts(out: Path) -> list[Path]:
    return list(out.glob(".big.partial-*/points.parquet/part-*.parquet")) if out.exists() else []


def _start_and_kill(cmd, out: Path, after_parts: int, sig=signal.SIGKILL) -> subprocess.Popen:
    proc = subprocess.Popen(cmd, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 120
    while time.time() < deadline and len(_parts(out)) < after_parts and proc.poll() is None:
        time.sleep(0.01)
    proc.send_signal(sig)
    proc.wait(timeout=60)
    return proc


@pytest.mark.parametrize("kill_after,first,second", [
    (1, ["--chunk-size", "64"], ["--chunk-size", "997"]),
    (20, ["--chunk-size", "100"], []),                       # resumed at the default chunk size
    (3, ["--chunk-size", "2000"], ["--chunk-size", "64"]),   # the reverse: small chunks after big ones
    (40, ["--chunk-size", "64"], ["--workers", "2"]),        # workers pick their own chunk size
])
def test_4_resume_with_other_chunking_equals_uninterrupted(reference, tmp_path, kill_after, first, second):
    cfg = tmp_path / "big.yaml"
    cfg.write_text(yaml.safe_dump(BIG))
    out = tmp_path / "res"
    _start_and_kill(_cmd(cfg, out, *first), out, kill_after)
    partial = next(out.glob(".big.partial-*"))
    assert not (out / "big").exists() and not (partial / "manifest.json").exists()
    r = subprocess.run(_cmd(cfg, out, "--resume", *second), env=ENV, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    got = _load(out / "big")
    assert len(got[0]) == 7680 and not got[0].index.duplicated().any()
    for x, y in zip(reference, got):
        pd.testing.assert_frame_equal(x, y, check_categorical=False)
    assert not list(out.glob(".big.*")), list(out.iterdir())
    names = sorted(p.name for p in (out / "big" / "points.parquet").iterdir())
    assert all(n.startswith("part-") and n.endswith(".parquet") for n in names), names  # 17: no temp files


def test_13_sigterm_to_the_parent_is_one_line_and_resumable(reference, tmp_path):
    cfg = tmp_path / "big.yaml"
    cfg.write_text(yaml.safe_dump(BIG))
    out = tmp_path / "res"
    proc = _start_and_kill(_cmd(cfg, out, "--chunk-size", "64"), out, 5, signal.SIGTERM)
    err = proc.stderr.read().decode().strip()
    assert proc.returncode != 0 and err.startswith("error: ") and len(err.splitlines()) == 1, err
    r = subprocess.run(_cmd(cfg, out, "--resume"), env=ENV, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    pd.testing.assert_frame_equal(reference[0], _load(out / "big")[0], check_categorical=False)


def _children(pid: int) -> list[int]:
    out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True).stdout
    return [int(x) for x in out.split()]


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "\nState:\tZ" not in state  # a zombie has exited


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_13_workers_die_with_their_parent(tmp_path, sig):
    cfg = tmp_path / "big.yaml"
    cfg.write_text(yaml.safe_dump({**BIG, "axes": {"workload.B": {"range": [1, 400]}, "workload.G": {"range": [1, 64]}}}))
    out = tmp_path / "res"
    proc = subprocess.Popen(_cmd(cfg, out, "--workers", "2", "--chunk-size", "500"), env=ENV,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline, workers = time.time() + 60, []
    while time.time() < deadline and (len(workers) < 2 or len(_parts(out)) < 2):
        workers = _children(proc.pid)
        time.sleep(0.05)
    assert len(workers) >= 2, "the worker processes never started"
    proc.send_signal(sig)
    proc.wait(timeout=60)
    deadline = time.time() + 15
    while time.time() < deadline and any(_alive(w) for w in workers):
        time.sleep(0.1)
    assert not any(_alive(w) for w in workers), "workers outlived their parent"
    n = len(_parts(out))
    time.sleep(1.0)
    assert len(_parts(out)) == n, "parts still being written after the parent died"


# ---------------------------------------------------------------- 12: Dask clusters that fail

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _fake_server(reply: bytes | None):
    """A loopback server that accepts and either stays silent or answers like a web server."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    srv.settimeout(0.2)
    stop = threading.Event()
    conns = []

    def serve():
        while not stop.is_set():
            try:
                c, _ = srv.accept()
            except OSError:
                continue
            conns.append(c)
            if reply is not None:
                c.sendall(reply)
    t = threading.Thread(target=serve, daemon=True)
    t.start()
    return srv, stop, conns


@pytest.mark.parametrize("reply", [None, b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"])
def test_12_a_server_that_is_not_dask_is_one_line(tmp_path, reply):
    pytest.importorskip("distributed")
    srv, stop, conns = _fake_server(reply)
    try:
        cfg = tmp_path / "fs.yaml"
        cfg.write_text(yaml.safe_dump({**BIG, "axes": {"workload.G": [1, 2]}}))
        t0 = time.time()
        r = subprocess.run(_cmd(cfg, tmp_path / "res", "--scheduler", f"tcp://127.0.0.1:{srv.getsockname()[1]}"),
                           env=ENV, capture_output=True, text=True, timeout=120)
        assert time.time() - t0 < 60
        err = r.stderr.strip()
        assert r.returncode != 0 and err.startswith("error: ") and len(err.splitlines()) == 1, err
        assert "Allocate" not in err and "Traceback" not in err
        assert not (tmp_path / "res").exists() or not any((tmp_path / "res").iterdir())
    finally:
        stop.set()
        srv.close()
        for c in conns:
            c.close()


def test_12_scheduler_killed_mid_run_is_one_line_and_keeps_progress(reference, tmp_path):
    pytest.importorskip("distributed")
    port = _free_port()
    dask = str(Path(sys.executable).with_name("dask"))
    sched = subprocess.Popen([dask, "scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    worker = subprocess.Popen([dask, "worker", f"tcp://127.0.0.1:{port}", "--nworkers", "1", "--nthreads", "1",
                               "--no-dashboard"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        cfg = tmp_path / "big.yaml"
        cfg.write_text(yaml.safe_dump(BIG))
        out = tmp_path / "res"
        proc = subprocess.Popen(_cmd(cfg, out, "--scheduler", f"tcp://127.0.0.1:{port}", "--chunk-size", "64"),
                                env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.time() + 120
        while time.time() < deadline and len(_parts(out)) < 3 and proc.poll() is None:
            time.sleep(0.05)
        assert len(_parts(out)) >= 3, proc.stderr.read() if proc.poll() is not None else "no progress"
        sched.kill()
        _, err = proc.communicate(timeout=120)
        err = err.decode().strip()
        assert proc.returncode != 0 and err.startswith("error: ") and len(err.splitlines()) == 1, err
        assert "--resume" in err
        assert _parts(out), "progress was lost"
        r = subprocess.run(_cmd(cfg, out, "--resume"), env=ENV, capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        pd.testing.assert_frame_equal(reference[0], _load(out / "big")[0], check_categorical=False)
    finally:
        for p in (worker, sched):
            p.kill()
            p.wait()


def test_14_concurrent_runs_never_corrupt_each_other(tmp_path):
    cfg = tmp_path / "fs.yaml"
    cfg.write_text(yaml.safe_dump({**BIG, "axes": {"workload.B": {"range": [1, 40]}, "workload.G": [1, 2]}}))
    out = tmp_path / "res"
    for _ in range(3):
        procs = [subprocess.Popen(_cmd(cfg, out, "--force", "--chunk-size", "20"), env=ENV, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for _ in range(2)]
        results = [(p.wait(timeout=120), p.stderr.read().strip()) for p in procs]
        assert any(code == 0 for code, _ in results), results
        for code, err in results:
            assert code == 0 or (err.startswith("error: ") and "another run" in err and len(err.splitlines()) == 1), err
        from wsemoe.store import store

        man = store.load_manifest(out / "big")
        store.verify(out / "big", man)
        assert man["points"] == 240
    assert sorted(p.name for p in out.iterdir()) == ["big"]


def test_a_folder_made_by_a_concurrent_run_between_look_and_mkdir_is_the_folder_wanted(tmp_path, monkeypatch):
    """Two runs into a missing results root: both looked, one made it, the other's mkdir met EEXIST and the run
    failed with 'cannot make the folder' (1 in 10 runs of test_14). A folder there is what it wanted; a file or
    a link there is still refused."""
    from wsemoe.errors import WsemoeError
    from wsemoe.store import placement

    target = tmp_path / "res" / "big"
    real = os.path.isdir
    looks = []

    def racing(path):   # the first look sees no folder; the concurrent run makes it right after
        if not looks:
            looks.append(path)
            os.mkdir(path)
            return False
        return real(path)

    monkeypatch.setattr(placement.os.path, "isdir", racing)
    placement.ensure_parent(target)
    assert real(tmp_path / "res")
    other = tmp_path / "other" / "big"
    looks.clear()

    def racing_file(path):   # a file appears there instead: refused in one line
        if not looks:
            looks.append(path)
            open(path, "w").close()
            return False
        return real(path)

    monkeypatch.setattr(placement.os.path, "isdir", racing_file)
    with pytest.raises(WsemoeError):
        placement.ensure_parent(other)


def test_an_empty_path_is_refused_in_one_line():
    """The writer's path check names an empty path; the split of store/placement.py had lost its error's import,
    so the refusal became a NameError (an internal error)."""
    from wsemoe.errors import ResultsError
    from wsemoe.store import placement

    with pytest.raises(ResultsError, match="empty path"):
        placement.checked_path("  ")


def test_a_resumed_run_recomputes_a_chunk_whose_counts_or_candidates_were_changed(reference, tmp_path):
    """--resume adds up each kept chunk's counts and Pareto candidates into the manifest and pareto.csv, which
    nothing checks after: a chunk whose stats or candidates file does not match what its run wrote is computed
    again (it was trusted: an edited count or a swapped candidates file came out in the results as written). A
    file wsemoe did not write in the partial folder stops the resume in one line (it was read as a part)."""
    import json

    cfg = tmp_path / "big.yaml"
    cfg.write_text(yaml.safe_dump(BIG))
    out = tmp_path / "res"
    _start_and_kill(_cmd(cfg, out, "--chunk-size", "64"), out, 4)
    partial = next(out.glob(".big.partial-*"))
    metas = sorted((partial / "chunks").glob("*.json"))
    cands = sorted((partial / "chunks").glob("*.candidates.parquet"))
    assert len(metas) >= 2 and len(cands) >= 2
    stats = json.loads(metas[0].read_text())
    metas[0].write_text(json.dumps({**stats, "feasible": 999, "bounds": {"x": "y"}}))
    cands[0].write_bytes(cands[1].read_bytes())
    (partial / "points.parquet" / "junk.parquet").write_bytes(b"junk\n")
    r = subprocess.run(_cmd(cfg, out, "--resume"), env=ENV, capture_output=True, text=True, timeout=300)
    err = r.stderr.strip()
    assert r.returncode != 0 and "points.parquet/junk.parquet" in err and len(err.splitlines()) == 1, err
    (partial / "points.parquet" / "junk.parquet").unlink()
    r = subprocess.run(_cmd(cfg, out, "--resume"), env=ENV, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    for x, y in zip(reference, _load(out / "big")):
        pd.testing.assert_frame_equal(x, y, check_categorical=False)
    manifest = json.loads((out / "big" / "manifest.json").read_text())
    points = reference[0]
    assert manifest["feasible"] == int(points["feasible"].sum()) and "x" not in manifest["bounds"]
    assert sum(manifest["bounds"].values()) == manifest["feasible"]
