"""Nothing left behind, nothing stuck: every failure of a folder write (an OSError such as the file-size limit,
Ctrl-C) removes its hidden build folder, or says truthfully that it could not; a sweep whose final swap fails
leaves a partial folder `ls --clean` removes and `--resume` takes up."""

from __future__ import annotations

import errno
import os

import pytest
import yaml

from wsemoe.cli import app
from wsemoe.errors import ResultsError
from wsemoe.store import atomic, partial, store, writer
from wsemoe.sweep.run import run_sweep


def _hidden(folder):
    return sorted(p.name for p in folder.iterdir() if ".wsemoe-" in p.name)


def _failing_after(monkeypatch, n: int, exc):
    """atomic_bytes as the writer calls it, failing on its n-th call (0-based) with `exc`."""
    real, calls = writer.atomic_bytes, []

    def fake(path, data, *a, **k):
        calls.append(path)
        if len(calls) > n:
            raise exc
        return real(path, data, *a, **k)
    monkeypatch.setattr(writer, "atomic_bytes", fake)


FILES = {"a.csv": b"1\n", "sub/b.csv": b"2\n", "sub/c.csv": b"3\n"}


@pytest.mark.parametrize("n", [0, 1, 2, 3, 4])
@pytest.mark.parametrize("exc", [OSError(errno.EFBIG, "File too large"), KeyboardInterrupt()])
def test_a_failed_folder_write_leaves_no_build_folder(tmp_path, monkeypatch, n, exc):
    _failing_after(monkeypatch, n, exc)
    with pytest.raises((ResultsError, KeyboardInterrupt)) as info:
        writer.write_folder(tmp_path / "out", FILES, "export")
    assert _hidden(tmp_path) == [] and not (tmp_path / "out").exists()
    if isinstance(exc, OSError):
        assert "EFBIG" in str(info.value) and "could not be removed" not in str(info.value)


def test_a_build_folder_that_cannot_be_emptied_is_named_in_the_error(tmp_path, monkeypatch):
    """Something the writer did not make appears in its build folder: it stays, and the message says where."""
    real = writer.atomic_bytes

    def fake(path, data, *a, **k):
        (path.parent / "theirs.txt").write_text("not ours")
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(writer, "atomic_bytes", fake)
    with pytest.raises(ResultsError) as info:
        writer.write_folder(tmp_path / "out", FILES, "export")
    left = _hidden(tmp_path)
    assert len(left) == 1 and (tmp_path / left[0] / "theirs.txt").read_text() == "not ours"
    assert "ENOSPC" in str(info.value) and left[0] in str(info.value) and "could not be removed" in str(info.value)
    monkeypatch.setattr(writer, "atomic_bytes", real)


def test_a_failed_plots_folder_leaves_no_build_folder(tmp_path, monkeypatch):
    _failing_after(monkeypatch, 0, OSError(errno.EFBIG, "File too large"))
    with pytest.raises(ResultsError):
        writer.make_folder(tmp_path / "plots", "plot")
    assert _hidden(tmp_path) == []


CFG = {"name": "sw", "hardware": "cs2", "model": "qwen3-30b-a3b", "workload": {"mode": "train", "seq_len": 2048},
       "axes": {"workload.G": [1, 2, 3, 4]}}


def test_a_failed_final_swap_leaves_a_partial_that_clean_and_resume_recover(tmp_path, monkeypatch, runner):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sw.yaml").write_text(yaml.safe_dump(CFG))
    real = partial.swap_in

    def busy(*a, **k):
        raise OSError(errno.EBUSY, "Device or resource busy")
    monkeypatch.setattr(partial, "swap_in", busy)
    with pytest.raises(ResultsError, match="EBUSY"):
        run_sweep("sw.yaml", out_root="results", chunk_size=2)
    target = tmp_path / "results" / "sw"
    assert partial.stale_partials(target)  # marked ours again: found, not stuck
    monkeypatch.setattr(partial, "swap_in", real)
    r = runner.invoke(app, ["sweep", "sw.yaml", "--resume", "--chunk-size", "2"])
    assert r.exit_code == 0, r.output
    assert store.load_manifest(target)["points"] == 4 and not partial.stale_partials(target)
    # and the same failure again, this time cleaned up by `ls --clean`
    monkeypatch.setattr(partial, "swap_in", busy)
    with pytest.raises(ResultsError):
        run_sweep("sw.yaml", out_root="results", chunk_size=2, out_dir=tmp_path / "results" / "sw2")
    assert partial.stale_partials(tmp_path / "results" / "sw2")
    monkeypatch.setattr(partial, "swap_in", real)
    r = runner.invoke(app, ["ls", "results", "--clean"])
    assert r.exit_code == 0, r.output
    assert not partial.stale_partials(tmp_path / "results" / "sw2") and _hidden(tmp_path / "results") == []


def test_a_users_file_named_like_a_part_is_never_deleted_nor_made_part_of_results(tmp_path, monkeypatch, runner):
    # the tool goes by what its manifest lists, not by a file's name: a user's file named like a part, in a
    # finished results folder or among an interrupted run's parts, stops every command that would replace or
    # adopt it, and stays as it was
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sw.yaml").write_text(yaml.safe_dump(CFG))
    assert runner.invoke(app, ["sweep", "sw.yaml", "-q"]).exit_code == 0
    mine = tmp_path / "results" / "sw" / "points.parquet" / "part-000000001792-000000002000.parquet"
    mine.write_text("my notes\n")
    for extra in (["--resume"], ["-f"]):
        r = runner.invoke(app, ["sweep", "sw.yaml", *extra])
        assert r.exit_code == 2 and mine.name in r.output, r.output
        assert mine.read_text() == "my notes\n"
    mine.unlink()
    real = partial.swap_in

    def busy(*a, **k):
        raise OSError(errno.EBUSY, "Device or resource busy")
    monkeypatch.setattr(partial, "swap_in", busy)
    with pytest.raises(ResultsError):
        run_sweep("sw.yaml", out_root="results", chunk_size=2, out_dir=tmp_path / "results" / "sw2", force=True)
    monkeypatch.setattr(partial, "swap_in", real)
    stray = next(iter(partial.stale_partials(tmp_path / "results" / "sw2"))) / "points.parquet" / "part-zzz.parquet"
    stray.write_text("mine too\n")
    argv = ["sweep", "sw.yaml", "-o", "results/sw2", "--resume", "--chunk-size", "2"]
    r = runner.invoke(app, argv)
    assert r.exit_code == 2 and "part-zzz.parquet" in r.output and stray.read_text() == "mine too\n", r.output
    stray.unlink()
    assert runner.invoke(app, argv).exit_code == 0
    assert store.load_manifest(tmp_path / "results" / "sw2")["points"] == 4
