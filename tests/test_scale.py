"""Scale and robustness: determinism across chunk sizes and executors, resume after kill -9, size limit."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import yaml

from wsemoe.cli import app
from wsemoe.sweep.run import run_sweep

BIG = {
    "name": "big", "hardware": "cs2", "model": "qwen3-30b-a3b",
    "workload": {"mode": "train", "seq_len": 8192},
    "sparsity": {"vary": "num_experts", "values": [8, 32, 128]},
    "axes": {"workload.B": {"range": [1, 40]}, "workload.G": {"range": [1, 64]}},
    "compare": {"name": "uniform", "baseline": {"workload.G": 1}},
}


def _load(path):
    points = pd.read_parquet(Path(path) / "points.parquet").sort_index()
    pareto = pd.read_csv(Path(path) / "pareto.csv", index_col=0)
    comparison = pd.read_csv(Path(path) / "comparison.csv")
    return points, pareto, comparison


def _same(a, b):
    for x, y in zip(a, b):
        pd.testing.assert_frame_equal(x, y, check_categorical=False)


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    root = tmp_path_factory.mktemp("ref")
    res = run_sweep(BIG, out_root=root)
    return _load(res.path)


@pytest.mark.parametrize("chunk", [997, 4096])
def test_identical_across_chunk_sizes(reference, tmp_path, chunk):
    res = run_sweep(BIG, out_root=tmp_path, chunk_size=chunk)
    assert res.manifest["chunks"] == -(-7680 // chunk)
    _same(reference, _load(res.path))


def test_identical_with_worker_processes(reference, tmp_path):
    res = run_sweep(BIG, out_root=tmp_path, chunk_size=1500, workers=2)
    _same(reference, _load(res.path))


def test_identical_on_a_dask_local_cluster(reference, tmp_path):
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=None) as cluster:
        res = run_sweep(BIG, out_root=tmp_path, chunk_size=2000, scheduler=cluster.scheduler_address)
    _same(reference, _load(res.path))


def test_size_limit_refuses_without_force(runner, tmp_path, monkeypatch):
    import wsemoe.sweep.plan as plan

    monkeypatch.setattr(plan, "MAX_POINTS", 1000)
    cfg = tmp_path / "big.yaml"
    cfg.write_text(yaml.safe_dump(BIG))
    r = runner.invoke(app, ["sweep", str(cfg), "--results", str(tmp_path / "res")])
    assert r.exit_code != 0 and "exceed the limit" in r.output and r.output.count("\n") == 1
    assert not (tmp_path / "res").exists() or not list((tmp_path / "res").iterdir())
    r = runner.invoke(app, ["check", str(cfg)])
    assert r.exit_code == 0 and "7,680 points" in r.output and "needs --force" in r.output


def test_manifest_provenance(tmp_path):
    res = run_sweep(BIG, out_root=tmp_path)
    man = res.manifest
    assert man["config_hash"] and man["points"] == 7680
    import json
    on_disk = json.loads((res.path / "manifest.json").read_text())
    assert on_disk["version"] and on_disk["dependencies"]["numpy"] and on_disk["dependencies"]["pyarrow"]


def test_name_cannot_escape_results(tmp_path):
    from wsemoe.errors import WsemoeError

    with pytest.raises(WsemoeError):
        run_sweep({**BIG, "name": "../escape"}, out_root=tmp_path / "res")
    assert not (tmp_path / "escape").exists()


@pytest.mark.parametrize("threads", [0, 1, 2])
def test_identical_whether_written_in_this_thread_or_by_writers(reference, tmp_path, monkeypatch, threads):
    from wsemoe.sweep import executors

    monkeypatch.setattr(executors, "writer_threads", lambda: threads)
    res = run_sweep(BIG, out_root=tmp_path, chunk_size=1000)
    _same(reference, _load(res.path))


@pytest.mark.parametrize("elsewhere, threads", [(0.0, 2), (0.6, 1), (1.0, 1), (2.0, 0), (7.0, 0)])
def test_writer_threads_follow_the_cores_idle_now(monkeypatch, elsewhere, threads):
    """One writer per core no other process runs on at this instant (at most WRITERS), on a 2-core machine."""
    from wsemoe.sweep import executors

    monkeypatch.setattr(executors.os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    monkeypatch.setattr(executors, "_running_elsewhere", lambda: elsewhere)
    assert executors.writer_threads() == min(threads, executors.WRITERS)


def test_writer_threads_fall_back_on_the_load_average(monkeypatch):
    from wsemoe.sweep import executors

    monkeypatch.setattr(executors.os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    monkeypatch.setattr(executors, "_running_elsewhere", lambda: None)
    monkeypatch.setattr(executors.os, "getloadavg", lambda: (1.5, 0.0, 0.0))
    assert executors.writer_threads() == 0
    monkeypatch.setattr(executors.os, "getloadavg", lambda: (0.2, 0.0, 0.0))
    assert executors.writer_threads() == 1
