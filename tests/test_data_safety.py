"""Data safety: a sweep never touches what is not its own, damaged results are noticed, and two runs never
share a folder.

Numbers in the test names refer to the cases of the data-safety review (issue 8).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest
import yaml

import wsemoe
import wsemoe.sweep.chunked
import wsemoe.config.loader
import wsemoe.sweep.run
import wsemoe.store.store
from wsemoe.cli import app
from wsemoe.errors import WsemoeError
from clicheck import one_line_error

GOOD = {"name": "fs", "hardware": "cs2", "model": "qwen3-30b-a3b",
        "workload": {"mode": "train", "seq_len": 2048}, "axes": {"workload.G": [1, 2]}}


def _snapshot(root: Path) -> dict:
    """Every file below `root` (symlinks not followed) with its bytes' hash: what must not change."""
    out = {}
    for p in sorted(root.rglob("*")):
        if p.is_symlink():
            out[str(p.relative_to(root))] = "link->" + os.readlink(p)
        elif p.is_file():
            out[str(p.relative_to(root))] = hashlib.sha256(p.read_bytes()).hexdigest()
        else:
            out[str(p.relative_to(root))] = "dir"
    return out


def _user_files(root: Path) -> None:
    (root / "myproject" / "src").mkdir(parents=True)
    (root / "myproject" / "src" / "main.py").write_text("print('mine')\n")
    (root / "myproject" / "thesis.tex").write_text("\\documentclass{article}\n")
    (root / "data").mkdir()
    (root / "data" / "a.csv").write_text("1,2\n")
    (root / "link").symlink_to(root / "data")
    (root / "notes.txt").write_text("notes\n")



@pytest.fixture
def workdir(tmp_path, monkeypatch):
    _user_files(tmp_path)
    cfg = tmp_path / "fs.yaml"
    cfg.write_text(yaml.safe_dump(GOOD))
    monkeypatch.chdir(tmp_path)
    return tmp_path


# ---------------------------------------------------------------- 1-3: data loss

REFUSED_TARGETS = {
    "a project folder": ("myproject", "not a wsemoe results folder"),
    "the current folder": (".", "current folder"),
    "the parent folder": ("..", "current folder or one of its parents"),
    "a symlink to data": ("link", "symbolic link"),
    "an existing file": ("notes.txt", "not a folder"),
    "the results root": ("results", "a results root"),
}


@pytest.mark.parametrize("case", sorted(REFUSED_TARGETS))
def test_1_2_sweep_refuses_targets_that_are_not_its_results(case, workdir, runner):
    target, needle = REFUSED_TARGETS[case]
    other = workdir / "results" / "other"
    assert runner.invoke(app, ["sweep", "fs.yaml", "-o", str(other), "-q"]).exit_code == 0
    before = _snapshot(workdir)
    result = runner.invoke(app, ["sweep", "fs.yaml", "-o", target])
    one_line_error(result, needle)
    assert _snapshot(workdir) == before


def test_1_results_folder_with_user_files_is_not_replaced(workdir, runner):
    assert runner.invoke(app, ["sweep", "fs.yaml", "-o", "out", "-q"]).exit_code == 0
    (workdir / "out" / "my-notes.md").write_text("keep me\n")
    before = _snapshot(workdir)
    one_line_error(runner.invoke(app, ["sweep", "fs.yaml", "-o", "out", "--force"]), "my-notes.md")
    assert _snapshot(workdir) == before


def test_1_other_sweeps_results_need_force(workdir, runner):
    assert runner.invoke(app, ["sweep", "fs.yaml", "-o", "out", "-q"]).exit_code == 0
    other = dict(GOOD, name="another")
    (workdir / "another.yaml").write_text(yaml.safe_dump(other))
    before = _snapshot(workdir)
    one_line_error(runner.invoke(app, ["sweep", "another.yaml", "-o", "out"]), "holds results of sweep 'fs'", "--force")
    assert _snapshot(workdir) == before
    assert runner.invoke(app, ["sweep", "another.yaml", "-o", "out", "--force", "-q"]).exit_code == 0
    assert wsemoe.store.store.read_manifest(workdir / "out")["name"] == "another"


def test_1_same_sweep_replaces_its_own_results(workdir, runner):
    assert runner.invoke(app, ["sweep", "fs.yaml", "-o", "out", "-q"]).exit_code == 0
    changed = dict(GOOD, axes={"workload.G": [1, 2, 4]})
    (workdir / "fs.yaml").write_text(yaml.safe_dump(changed))
    r = runner.invoke(app, ["sweep", "fs.yaml", "-o", "out", "-q"])
    assert r.exit_code == 0, r.output
    assert wsemoe.store.store.read_manifest(workdir / "out")["points"] == 3
    assert not [p for p in workdir.iterdir() if p.name.startswith(".out.")]


def test_1_empty_folder_is_a_valid_target(workdir, runner):
    (workdir / "empty").mkdir()
    assert runner.invoke(app, ["sweep", "fs.yaml", "-o", "empty", "-q"]).exit_code == 0
    assert (workdir / "empty" / "manifest.json").is_file()


def test_3_glob_characters_are_literal(workdir, runner):
    res = workdir / "res"
    res.mkdir()
    other = res / ".other.partial-0123456789abcdef"  # another sweep's resume progress
    other.mkdir()
    (other / "wsemoe-partial.json").write_text('{"target": "other"}')
    (other / "keep").write_text("progress")
    before = _snapshot(res)
    r = runner.invoke(app, ["sweep", "fs.yaml", "-o", "res/*", "-q"])
    assert r.exit_code == 0, r.output
    after = _snapshot(res)
    assert {k: v for k, v in after.items() if k in before} == before
    assert (res / "*" / "manifest.json").is_file()


def test_3_partials_without_our_marker_are_never_removed(workdir, runner):
    look_alike = workdir / ".out.partial-0123456789abcdef"
    look_alike.mkdir()
    (look_alike / "file").write_text("not wsemoe's")
    assert runner.invoke(app, ["sweep", "fs.yaml", "-o", "out", "-q"]).exit_code == 0
    assert (look_alike / "file").read_text() == "not wsemoe's"


def test_17_resume_after_config_change_removes_the_old_partial(workdir):
    from wsemoe.store import partial as partial_mod

    target = workdir / "out"
    old = partial_mod.PartialRun(target, "0" * 16, resume=False)
    assert old.path.is_dir()
    wsemoe.sweep.run.run_sweep(GOOD, out_dir=target, resume=True)
    assert not old.path.exists()
    assert sorted(p.name for p in workdir.iterdir() if p.name.startswith(".out")) == []


# ---------------------------------------------------------------- 5: damaged parts are noticed

def _parts(path: Path) -> list[Path]:
    return sorted((path / "points.parquet").iterdir())


@pytest.mark.parametrize("damage", ["delete", "truncate", "stray"])
def test_5_damaged_results_are_refused_by_show_plot_and_up_to_date(damage, workdir, runner):
    big = dict(GOOD, axes={"workload.G": list(range(1, 41))})
    (workdir / "fs.yaml").write_text(yaml.safe_dump(big))
    assert runner.invoke(app, ["sweep", "fs.yaml", "-o", "out", "-q", "--chunk-size", "10"]).exit_code == 0
    part = _parts(workdir / "out")[1]
    if damage == "delete":
        part.unlink()
    elif damage == "truncate":
        part.write_bytes(part.read_bytes()[:-100])
    else:
        (part.parent / "part-000000000099-000000000100.parquet").write_bytes(part.read_bytes())
    for cmd in (["show", "out"], ["plot", "out"]):
        one_line_error(runner.invoke(app, cmd), "out")
    if damage == "stray":   # listed in no manifest: not provably wsemoe's, so never replaced (move it out first)
        stray = part.parent / "part-000000000099-000000000100.parquet"
        one_line_error(runner.invoke(app, ["sweep", "fs.yaml", "-o", "out", "--chunk-size", "10"]), stray.name)
        assert stray.read_bytes() == part.read_bytes()
        stray.unlink()
    r = runner.invoke(app, ["sweep", "fs.yaml", "-o", "out", "--chunk-size", "10"])
    assert r.exit_code == 0 and ("up to date" not in r.output or damage == "stray"), r.output
    man = wsemoe.store.store.load_manifest(workdir / "out")
    assert man["points"] == 40 and sum(p["rows"] for p in man["parts"]) == 40


def test_5_a_part_replaced_by_a_link_gets_advice_that_works(workdir, runner):
    # the link is not a file wsemoe wrote, so the sweep will not replace it: show says to move it out first, and the
    # command it names then recomputes the part
    assert runner.invoke(app, ["sweep", "fs.yaml", "-o", "out", "-q"]).exit_code == 0
    part = _parts(workdir / "out")[0]
    kept = workdir / "kept.parquet"
    os.replace(part, kept)
    os.symlink(kept, part)
    text = runner.invoke(app, ["show", "out"]).output
    assert "move it out" in text and "--resume" in text, text
    part.unlink()
    assert runner.invoke(app, ["sweep", "fs.yaml", "-o", "out", "--resume"]).exit_code == 0
    assert runner.invoke(app, ["show", "out"]).exit_code == 0


def test_5_resume_reverifies_reused_parts(workdir):
    from wsemoe.store import partial as partial_mod

    big = dict(GOOD, axes={"workload.G": list(range(1, 41))})
    ref = wsemoe.sweep.run.run_sweep(big, out_dir=workdir / "ref")
    cfg = wsemoe.config.loader.load_config(big)
    run = partial_mod.PartialRun(workdir / "out", cfg.config_hash(), resume=False)
    for start, stop in ((0, 10), (10, 20)):
        res = wsemoe.sweep.chunked.run_chunk(cfg, start, stop, wsemoe.sweep.chunked.baseline_best(cfg))
        partial_mod.write_chunk(run.path, res.points, res.candidates, res.stats)
    bad = run.parts / wsemoe.store.store.part_name(10, 20)
    data = bytearray(bad.read_bytes())
    data[len(data) // 2] ^= 0xFF  # same size, different bytes: only the checksum can tell
    bad.write_bytes(bytes(data))
    assert partial_mod.PartialRun(workdir / "out", cfg.config_hash(), resume=True).reusable() == [(0, 10)]
    res = wsemoe.sweep.run.run_sweep(big, out_dir=workdir / "out", resume=True, chunk_size=7)
    assert res.manifest["chunks_reused"] == 1
    _, got, _ = wsemoe.store.store.load_results(res.path)
    _, want, _ = wsemoe.store.store.load_results(ref.path)
    import pandas as pd

    pd.testing.assert_frame_equal(got, want, check_categorical=False)


def test_5_verify_with_checksums_finds_flipped_bytes(workdir):
    res = wsemoe.sweep.run.run_sweep(GOOD, out_dir=workdir / "out")
    part = _parts(res.path)[0]
    data = bytearray(part.read_bytes())
    data[8] ^= 0xFF  # inside the first column chunk: the footer (row counts) still reads
    part.write_bytes(bytes(data))
    man = wsemoe.store.store.read_manifest(res.path)
    with pytest.raises(WsemoeError, match="checksum"):  # sizes and footers agree: every read checks the bytes
        wsemoe.store.store.verify(res.path, man)


# ---------------------------------------------------------------- 14: two runs, one folder

def test_14_second_run_is_refused_while_the_first_holds_the_lock(tmp_path, runner):
    from wsemoe.store.partial import RunLock

    f = tmp_path / "cfg.yaml"
    f.write_text(yaml.safe_dump(GOOD))
    with RunLock(tmp_path / "out"):
        one_line_error(runner.invoke(app, ["sweep", str(f), "-o", str(tmp_path / "out")]), "another run")
    assert runner.invoke(app, ["sweep", str(f), "-o", str(tmp_path / "out"), "-q"]).exit_code == 0
    assert not list(tmp_path.glob(".out.lock"))


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write into read-only folders")
def test_17_read_only_results_are_refused_before_running(tmp_path, runner):
    res = wsemoe.sweep.run.run_sweep(GOOD, out_dir=tmp_path / "out")
    (res.path / "points.parquet").chmod(0o555)
    try:
        f = tmp_path / "fs.yaml"
        f.write_text(yaml.safe_dump(GOOD))
        one_line_error(runner.invoke(app, ["sweep", str(f), "-o", str(res.path), "--force"]), "not writable")
        assert sorted(p.name for p in tmp_path.iterdir()) == ["fs.yaml", "out"]
    finally:
        (res.path / "points.parquet").chmod(0o755)


@pytest.mark.parametrize("inside", ["config.yaml", "points.parquet/*", "plots/pareto.png"])
def test_a_folder_writer_never_replaces_a_read_only_file_inside_the_folder(tmp_path, runner, inside):
    """`sweep --force` swaps in a new folder: a file in the old one whose write bits are cleared (results, a part,
    a figure `plot` itself would refuse to replace) is refused in one line as the file writers refuse it, and stays
    (it read exit 0 and replaced or deleted it). Write bits cleared refuse even root."""
    res = wsemoe.sweep.run.run_sweep(GOOD, out_dir=tmp_path / "out")
    assert runner.invoke(app, ["plot", str(res.path), "--only", "pareto", "-F", "png"]).exit_code == 0
    target = next(res.path.glob(inside))
    target.chmod(0o444)
    try:
        before = _snapshot(res.path)
        f = tmp_path / "fs.yaml"
        f.write_text(yaml.safe_dump(GOOD))
        one_line_error(runner.invoke(app, ["sweep", str(f), "-o", str(res.path), "--force"]), "file is read-only")
        assert _snapshot(res.path) == before
    finally:
        target.chmod(0o644)


def test_5_a_damaged_part_is_recomputed_alone_in_a_fresh_process(tmp_path, monkeypatch, runner):
    """A part's bytes are a function of its points alone: the pandas metadata of every part came from the first
    chunk a process encoded (its label columns' category counts), so a part recomputed by `--resume` in a new
    process came out different, failed the manifest's checksum, and the whole sweep was run again (3.1 M points
    for one damaged part). Here chunk 0 is feasible (bound: 1 category, infeasible_reason: 0) and chunk 1 is not
    (1 and 2): its repair must give the recorded bytes."""
    from wsemoe.store import partfile

    monkeypatch.chdir(tmp_path)
    cfg = {**GOOD, "name": "fr", "axes": {"workload.B": [1, 512], "workload.G": [1, 2]}}
    (tmp_path / "fr.yaml").write_text(yaml.safe_dump(cfg))
    res = wsemoe.sweep.run.run_sweep("fr.yaml", out_root="results", chunk_size=2)
    part = _parts(res.path)[1]
    data = bytearray(part.read_bytes())
    data[64] ^= 0x5A
    part.write_bytes(bytes(data))
    partfile._SCHEMAS.clear()   # what a new process starts with
    r = runner.invoke(app, ["sweep", "fr.yaml", "--resume"])
    assert r.exit_code == 0 and "recomputed 1 damaged part (2 points)" in r.output, r.output
