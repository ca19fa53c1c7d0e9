"""Verified reads (issue 18): every reader and the up-to-date check refuse a part changed in place, once
hashed a part is not hashed again until it changes, and `--resume` recomputes just the damaged part."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

from wsemoe.cli import app
from wsemoe.store import ledger
from wsemoe.store import store
from wsemoe.store import verified
from wsemoe.sweep.run import run_sweep
from clicheck import one_line_error

CFG = {"name": "tv", "hardware": "cs2", "model": "qwen3-30b-a3b", "workload": {"mode": "train", "seq_len": 2048},
       "axes": {"workload.G": list(range(1, 13)), "workload.B": [1, 2]},
       "compare": {"name": "uniform", "baseline": {"workload.G": 1}}}


@pytest.fixture
def results(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tv.yaml").write_text(yaml.safe_dump(CFG))
    assert run_sweep("tv.yaml", out_root="results", chunk_size=8).manifest["chunks"] == 3
    return tmp_path / "results" / "tv"


def _flip(part: Path, at: int = 64) -> None:
    """One byte changed inside the first column's data pages: same size, the parquet footer still reads."""
    data = bytearray(part.read_bytes())
    data[at] ^= 0x5A
    part.write_bytes(bytes(data))



READERS = [["show", "results/tv"], ["show", "results/tv", "--all", "-F", "csv"], ["plot", "results/tv"],
           ["plot", "results/tv", "--only", "roofline"], ["report", "results/tv"],
           ["compare", "results/tv", "results/tv"], ["eval", "results/tv", "--point", "3"], ["readings", "results/tv"],
           ["export", "traffic", "results/tv", "--point", "3", "-o", "ex"]]


def test_a_part_changed_in_place_is_refused_by_every_reader_and_the_up_to_date_check(results, runner):
    part = results / "points.parquet" / store.part_name(8, 16)
    import pyarrow.parquet as pq

    rows = pq.read_metadata(part).num_rows
    _flip(part)
    assert pq.read_metadata(part).num_rows == rows  # the footer is intact: only the checksum can tell
    for argv in READERS:
        one_line_error(runner.invoke(app, argv), part.name, "wsemoe sweep", "--resume")
    ls = runner.invoke(app, ["ls", "results"])
    assert "damaged" in ls.output and part.name in "".join(ls.output.split()), ls.output  # (wrapped to the width)
    assert not store.is_up_to_date(results, store.read_manifest(results)["config_hash"])
    r = runner.invoke(app, ["sweep", "tv.yaml"])
    assert r.exit_code == 0 and "up to date" not in r.output, r.output


def test_a_readings_folder_changed_since_written_is_not_read(results, runner):
    """readings/ is read only while each file matches its ledger checksum: an edited one is not shown as the
    comparison's robustness (show says why), and the next run refuses to replace it."""
    from wsemoe.analysis.uncertainty import readings

    assert runner.invoke(app, ["readings", "results/tv"]).exit_code == 0  # the full analysis (a what-if is not stored)
    config_hash = store.read_manifest(results)["config_hash"]
    assert readings.load(results, config_hash) is not None
    values = results / "readings" / "values.csv"
    text = values.read_text()
    values.write_text(text.replace(",1.0", ",9.0", 1) if ",1.0" in text else text + "0,edited,x,9\n")
    assert readings.load(results, config_hash) is None
    shown = runner.invoke(app, ["show", "results/tv"]).output
    assert "not shown" in shown and "changed since wsemoe wrote it" in " ".join(shown.split()), shown
    one_line_error(runner.invoke(app, ["readings", "results/tv"]), "values.csv", "changed since")


@pytest.mark.parametrize("name", ["pareto.csv", "config.yaml", "comparison.csv"])
def test_a_small_file_changed_in_place_is_refused(name, results, runner):
    _flip(results / name, at=3)
    one_line_error(runner.invoke(app, ["show", "results/tv"]), name)


def _edit_manifest(results: Path) -> None:
    """A manifest edited so that it still passes its schema: other objectives (the parts, pareto.csv and
    comparison.csv are checked against it, so only its own recorded checksum can tell)."""
    man = json.loads((results / "manifest.json").read_text())
    man["objectives"] = {"mfu": "max"}
    (results / "manifest.json").write_text(json.dumps(man))


def test_an_edited_manifest_is_refused_by_every_reader(results, runner):
    """It was trusted: show titled the unchanged front 'best mfu first', plot and report drew it, compare blamed
    an option the user never gave."""
    _edit_manifest(results)
    for argv in READERS + [["columns", "results/tv"]]:
        one_line_error(runner.invoke(app, argv), "manifest.json", "changed since the sweep wrote it")
    assert "damaged" in runner.invoke(app, ["ls", "results"]).output


@pytest.mark.parametrize("name", ["pareto.csv", "config.yaml", "comparison.csv", "manifest.json"])
def test_the_way_back_from_a_changed_file_is_the_one_the_error_gives(name, results, runner, tmp_path):
    """`show` said 're-run the sweep', and the sweep refused to replace the changed file: a dead end. The error
    now says to move the file out first, and doing what it says gives readable results again."""
    _edit_manifest(results) if name == "manifest.json" else _flip(results / name, at=3)
    one_line_error(runner.invoke(app, ["show", "results/tv"]), name, "move it out of the folder, then re-run")
    assert runner.invoke(app, ["sweep", "tv.yaml", "--results", "results", "-q"]).exit_code != 0   # refused
    os.replace(results / name, tmp_path / f"moved-{name}")
    assert runner.invoke(app, ["sweep", "tv.yaml", "--results", "results", "-q"]).exit_code == 0
    assert runner.invoke(app, ["show", "results/tv"]).exit_code == 0


def test_resume_recomputes_just_the_damaged_part(results, runner):
    man = json.loads((results / "manifest.json").read_text())
    parts = sorted((results / "points.parquet").iterdir())
    kept = {p.name: os.stat(p).st_ino for p in parts}
    _flip(parts[1])
    r = runner.invoke(app, ["sweep", "tv.yaml", "--resume"])
    assert r.exit_code == 0 and "recomputed 1 damaged part (8 points)" in r.output, r.output
    assert json.loads((results / "manifest.json").read_text()) == man  # the same bytes again: nothing else moves
    now = {p.name: os.stat(p).st_ino for p in sorted((results / "points.parquet").iterdir())}
    assert {n for n in now if now[n] != kept[n]} == {parts[1].name}
    store.load_manifest(results)
    assert runner.invoke(app, ["show", "results/tv"]).exit_code == 0


def test_resume_of_a_damaged_search_replays_it(tmp_path, runner, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cfg = {**CFG, "name": "ts", "compare": None, "search": {"evaluations": 12, "seed": 2, "population": 6}}
    (tmp_path / "ts.yaml").write_text(yaml.safe_dump({k: v for k, v in cfg.items() if v is not None}))
    res = run_sweep("ts.yaml", out_root="results", chunk_size=6)
    _flip(sorted((res.path / "points.parquet").iterdir())[0])
    r = runner.invoke(app, ["sweep", "ts.yaml", "--resume", "-q"])
    assert r.exit_code == 0, r.output
    assert store.load_manifest(res.path)["points"] == 12


def test_a_verified_part_is_hashed_once_until_it_changes(results, monkeypatch):
    calls = []
    real = ledger.sha256_file
    monkeypatch.setattr(ledger, "sha256_file", lambda p: calls.append(Path(p).name) or real(p))
    man = store.load_manifest(results)
    first = len(calls)
    assert first == len(man["parts"]) + len(man["files"])  # every part and small file, once
    store.load_manifest(results)
    assert len(calls) == first  # nothing hashed again: size, inode, times unchanged
    part = results / "points.parquet" / man["parts"][0]["file"]
    st = os.stat(part)
    _flip(part)
    os.utime(part, ns=(st.st_atime_ns, st.st_mtime_ns))  # the modification time put back: ctime still moved
    with pytest.raises(Exception, match="does not match its checksum"):
        store.load_manifest(results)


def test_the_cache_is_untrusted(results):
    man = store.load_manifest(results)
    cache = verified._cache_file(results)
    assert cache.is_file()
    body = json.loads(cache.read_text())
    part = man["parts"][0]["file"]
    _flip(results / "points.parquet" / part)
    st = os.stat(results / "points.parquet" / part)
    # A forged entry claiming the changed file verified is keyed by what the file was, not what it is now.
    body["files"][f"points.parquet/{part}"] = [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, 0,
                                               man["parts"][0]["sha256"]]
    cache.write_text(json.dumps(body))
    with pytest.raises(Exception, match="does not match its checksum"):
        store.load_manifest(results)
    for garbage in ("{", "[]", '{"folder": 1, "files": {}}', "x" * 100):
        cache.write_text(garbage)
        with pytest.raises(Exception, match="does not match its checksum"):
            store.load_manifest(results)
    other = results.with_name("copy")
    import shutil

    shutil.copytree(results, other)
    with pytest.raises(Exception, match="does not match its checksum"):
        store.load_manifest(other)  # another path: another cache entry, hashed afresh


def _swap_same_size(path: Path, at: int = 64) -> None:
    """Another file of the same size renamed over `path` (a new inode), as a writer racing a reader would."""
    data = bytearray(path.read_bytes())
    data[at] ^= 0x5A
    tmp = path.with_name(path.name + ".swap")
    tmp.write_bytes(bytes(data))
    os.replace(tmp, path)


def test_a_part_swapped_between_verify_and_read_is_refused(results):
    """Readers parse the bytes they verified: a part renamed over the verified one after `load_manifest` (which
    cached its state) is hashed as read and refused, by every reading function."""
    man = store.load_manifest(results)
    part = results / "points.parquet" / store.part_name(8, 16)
    _swap_same_size(part)
    for read in (lambda: store.read_points(results, man), lambda: list(store.iter_parts(results, man)),
                 lambda: store.read_rows(results, man, [9])):
        with pytest.raises(store.ResultsError, match="does not match its checksum"):
            read()
    _swap_same_size(part)  # the original bytes again (a new inode): hashed, and read
    assert len(store.read_points(results, man)) == 24


def test_a_small_file_swapped_between_verify_and_read_is_refused(results):
    man = store.load_manifest(results)
    _swap_same_size(results / "pareto.csv", at=3)
    with pytest.raises(store.ResultsError, match="pareto.csv does not match"):
        store.read_pareto(results, man)


def test_cache_entries_count_only_when_this_user_alone_owns_them(results, monkeypatch):
    """A cache folder (or entry) another user can write to vouches for nothing: every part is hashed again."""
    store.load_manifest(results)
    calls = []
    real = ledger.sha256_file
    monkeypatch.setattr(ledger, "sha256_file", lambda p: calls.append(Path(p).name) or real(p))
    store.load_manifest(results)
    assert calls == []  # our own cache: trusted
    entry = verified._cache_file(results)
    for target, mode in ((entry.parent, 0o777), (entry, 0o666), (entry.parent.parent, 0o777)):
        old = os.stat(target).st_mode & 0o777
        os.chmod(target, mode)
        try:
            calls.clear()
            store.load_manifest(results)
            assert len(calls) == 6, (target, calls)  # 3 parts, config.yaml, pareto.csv, comparison.csv: hashed again
        finally:
            os.chmod(target, old)
    monkeypatch.setattr(os, "getuid", lambda: os.geteuid() + 1)  # the entry's owner is someone else
    calls.clear()
    store.load_manifest(results)
    assert calls and not verified._load(entry, results)


def test_the_repair_hint_repairs_this_folder_from_anywhere(results, runner, tmp_path, monkeypatch):
    # The hint once named only the sweep file: run from another folder it built a new ./results/tv and left the
    # damaged one broken. It now names this folder (-o) and quotes every path.
    import shlex

    _flip(sorted((results / "points.parquet").iterdir())[1])
    folder = str(results.absolute())   # a folder named from elsewhere, as the user gave it
    line = runner.invoke(app, ["show", folder]).output
    hint = line.split("`")[1]
    assert hint.startswith(f"wsemoe sweep --resume -o {shlex.quote(folder)} "), hint
    elsewhere = tmp_path / "else where"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    r = runner.invoke(app, shlex.split(hint)[1:])
    assert r.exit_code == 0 and "recomputed 1 damaged part" in r.output, r.output
    assert runner.invoke(app, ["show", str(results)]).exit_code == 0 and not (elsewhere / "results").exists()
