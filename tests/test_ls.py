"""`wsemoe ls`: every sweep with size, points, date and state (up to date, config changed, damaged); partial
folders runs left are reported and `--clean` removes only the stale ones a run marked as its own."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from wsemoe.cli import app
from wsemoe.errors import ResultsError
from wsemoe.store import inventory
from wsemoe.store import partial
from wsemoe.sweep.run import run_sweep

CFG = {"name": "one", "hardware": "cs2", "model": "qwen3-30b-a3b", "workload": {"seq_len": 2048},
       "axes": {"workload.G": [1, 2]}}


def _sweep(tmp_path, name, **change):
    f = tmp_path / f"{name}.yaml"
    f.write_text(yaml.safe_dump({**CFG, "name": name, **change}))
    return f, run_sweep(f, out_root=tmp_path / "results")


def test_ls_reports_state_size_points_and_date(tmp_path, runner):
    same, _ = _sweep(tmp_path, "same")
    changed, _ = _sweep(tmp_path, "changed")
    _, dmg = _sweep(tmp_path, "damaged")
    run_sweep({**CFG, "name": "frompython"}, out_root=tmp_path / "results")
    changed.write_text(yaml.safe_dump({**CFG, "name": "changed", "axes": {"workload.G": [1, 2, 4]}}))
    part = next((dmg.path / "points.parquet").iterdir())
    part.write_bytes(part.read_bytes()[:-10])
    (tmp_path / "results" / "notours").mkdir()
    states = {r.name: r.status for r in inventory.results_in(tmp_path / "results")}
    assert states["same"] == "up to date"
    assert states["changed"].startswith("config changed")
    assert states["damaged"].startswith("damaged:")
    assert states["frompython"].startswith("config unknown")
    assert "notours" not in states
    r = runner.invoke(app, ["ls", str(tmp_path / "results")], env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    for name in ("same", "changed", "damaged", "frompython"):
        assert name in r.output
    assert "up to date" in r.output and "config changed" in r.output and "2 " in r.output and "kB" in r.output


def test_a_model_file_named_relatively_is_up_to_date_as_sweep_finds_it(tmp_path, monkeypatch):
    """A sweep file's relative hf_config path names the same model from any folder: `ls` (which reads the file
    by its absolute path) and `sweep` run from another folder find the results up to date, as `sweep` does."""
    hf = Path(__file__).parent / "data" / "hf"
    work = tmp_path / "n2"
    work.mkdir()
    shutil.copy(hf / "olmoe-1b-7b-0924.json", work / "olmoe.json")
    (tmp_path / "hf").mkdir()
    shutil.copy(hf / "deepseek-v3.json", tmp_path / "hf")
    for name, model in (("here", "olmoe.json"), ("up", "../hf/deepseek-v3.json")):
        (work / f"{name}.yaml").write_text(yaml.safe_dump({**CFG, "name": name, "model": {"hf_config": model}}))
    monkeypatch.chdir(work)
    for name in ("here", "up"):
        assert run_sweep(f"{name}.yaml").status == "written"
        assert run_sweep(f"{name}.yaml").status == "up to date"
    assert {r.name: r.status for r in inventory.results_in("results")} == {"here": "up to date", "up": "up to date"}
    monkeypatch.chdir(tmp_path)
    assert run_sweep("n2/here.yaml", out_root="n2/results").status == "up to date"


def _partial(tmp_path, target="one", marked=True):
    """A partial folder as a killed run leaves it: marker, one whole part."""
    run = partial.PartialRun(tmp_path / "results" / target, "0123456789abcdef", resume=False)
    (run.parts / "part-000000000000-000000000001.parquet").write_bytes(b"x" * 100)
    if not marked:
        (run.path / partial.MARKER).unlink()
    return run.path


def test_stale_partials_are_reported_and_cleaned(tmp_path, runner):
    (tmp_path / "results").mkdir()
    stale = _partial(tmp_path, "one")
    lookalike = _partial(tmp_path, "two", marked=False)  # no marker: not ours, never removed
    user = tmp_path / "results" / ".one.partial-notahash"
    user.mkdir()
    r = runner.invoke(app, ["ls", str(tmp_path / "results")], env={"COLUMNS": "200"})
    assert r.exit_code == 0 and "partial run of 'one'" in r.output and "stale" in r.output and "--clean" in r.output
    assert "'two'" not in r.output
    r = runner.invoke(app, ["ls", str(tmp_path / "results"), "--clean"], env={"COLUMNS": "200"})
    assert r.exit_code == 0 and f"removed stale partial folder {stale}" in r.output
    assert not stale.exists() and lookalike.exists() and user.exists()
    assert not (tmp_path / "results" / ".one.lock").exists()


def test_clean_keeps_whole_a_partial_folder_holding_a_file_wsemoe_did_not_write(tmp_path, runner):
    """Nothing of a stale partial folder is removed while it holds a file of the user's (at its top or among the
    parts): `ls --clean` says so in one line naming that file, and `ls` keeps listing the folder."""
    (tmp_path / "results").mkdir()
    noted = _partial(tmp_path, "one")
    (noted / "NOTES.txt").write_text("note\n")
    deep = _partial(tmp_path, "two")
    (deep / "chunks" / "mine.txt").write_text("x")
    clear = _partial(tmp_path, "three")
    held = {p: sorted(f.relative_to(p) for f in p.rglob("*")) for p in (noted, deep)}
    r = runner.invoke(app, ["ls", str(tmp_path / "results"), "--clean"], env={"COLUMNS": "300"})
    assert r.exit_code == 0, r.output
    assert f"removed stale partial folder {clear}" in r.output and not clear.exists()
    for p, name in ((noted, "'NOTES.txt'"), (deep, "'chunks/mine.txt'")):
        lines = [ln for ln in r.output.splitlines() if p.name in ln]
        assert len(lines) == 1 and name in lines[0] and "did not write" in lines[0] and "kept" in lines[0], r.output
        assert sorted(f.relative_to(p) for f in p.rglob("*")) == held[p]  # whole: parts, chunks, marker
    r = runner.invoke(app, ["ls", str(tmp_path / "results")], env={"COLUMNS": "300"})
    assert noted.name in r.output and deep.name in r.output and "'NOTES.txt'" in r.output


def test_a_new_run_never_empties_a_partial_folder_holding_a_users_file(tmp_path):
    """A run without --resume clears its config's old partial folder only when it holds nothing but what wsemoe
    wrote there; another config's is kept whole too."""
    (tmp_path / "results").mkdir()
    mine = _partial(tmp_path, "one")
    (mine / "NOTES.txt").write_text("note\n")
    before = sorted(f.relative_to(mine) for f in mine.rglob("*"))
    with pytest.raises(ResultsError, match="NOTES.txt"):
        partial.PartialRun(tmp_path / "results" / "one", "0123456789abcdef", resume=False)
    partial.PartialRun(tmp_path / "results" / "one", "fedcba9876543210", resume=False)
    assert sorted(f.relative_to(mine) for f in mine.rglob("*")) == before


def test_ls_and_clean_read_a_sweep_folder_and_a_root_alike(tmp_path, runner):
    """A results folder as the argument is that sweep, with or without --clean (which removes only its partial
    folders); a folder holding results folders is a root whatever else it holds: a stray manifest.json there is
    one line, not a damaged sweep hiding the others. A status is never cut short of its last ')'."""
    for name in ("alpha", "beta", "gamma"):
        _sweep(tmp_path, name)
    root = tmp_path / "results"
    (root / "gamma" / "manifest.json").write_text("junk\n")
    mine, theirs = _partial(tmp_path, "alpha"), _partial(tmp_path, "beta")
    env = {"COLUMNS": "300"}
    for clean in ([], ["--clean"]):
        r = runner.invoke(app, ["ls", *clean, str(root / "alpha")], env=env)
        assert r.exit_code == 0 and "no results" not in r.output, r.output
        assert "alpha" in r.output and "up to date" in r.output and "beta" not in r.output and "gamma" not in r.output
    assert not mine.exists() and theirs.exists()
    (root / "manifest.json").write_text("junk\n")
    for clean in ([], ["--clean"]):
        r = runner.invoke(app, ["ls", *clean, str(root)], env=env)
        assert r.exit_code == 0, r.output
        assert all(name in r.output for name in ("alpha", "beta", "gamma")) and "up to date" in r.output, r.output
        assert "(char 0)" in r.output  # gamma's damage, whole
        stray = [ln for ln in r.output.splitlines() if str(root / "manifest.json") in ln]
        assert len(stray) == 1 and "did not write" in stray[0], r.output
    assert not theirs.exists()


def test_a_partial_a_run_holds_is_left_alone(tmp_path):
    (tmp_path / "results").mkdir()
    held = _partial(tmp_path, "busy")
    with partial.RunLock(tmp_path / "results" / "busy"):
        assert [p.running for p in inventory.partials_in(tmp_path / "results")] == [True]
        assert inventory.clean(tmp_path / "results") == []
    assert held.exists()
    assert [p.running for p in inventory.partials_in(tmp_path / "results")] == [False]


def test_resume_reports_the_chunks_it_reused(tmp_path):
    cfg = {**CFG, "name": "big", "axes": {"workload.B": {"range": [1, 40]}, "workload.G": {"range": [1, 64]}}}
    f = tmp_path / "big.yaml"
    f.write_text(yaml.safe_dump(cfg))
    out = tmp_path / "results"
    cmd = [sys.executable, "-m", "wsemoe.cli", "sweep", str(f), "--results", str(out), "--chunk-size", "64"]
    env = {**os.environ, "CI": "1"}
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 120
    while time.time() < deadline and len(list(out.glob(".big.partial-*/points.parquet/part-*"))) < 3:
        time.sleep(0.01)
    proc.kill()
    proc.wait(timeout=60)
    listed = inventory.partials_in(out)
    assert len(listed) == 1 and listed[0].parts >= 3 and not listed[0].running
    r = subprocess.run([*cmd, "--resume"], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    line = next(ln for ln in r.stdout.splitlines() if ln.startswith("resumed:"))
    reused = int(line.split("reused ")[1].split(" of")[0])
    assert reused >= 3 and "of 40 chunks" in line and "points), evaluated the rest" in line
    assert inventory.partials_in(out) == []


def test_listing_never_checks_the_space_of_a_config_a_manifest_names(tmp_path, runner, monkeypatch):
    """ls and report --index learn a config's hash from its file; the rules over every combination of its axes
    (a run's cost) are never gone through, however large its space."""
    from wsemoe.config import checks

    same, _ = _sweep(tmp_path, "same")
    changed, _ = _sweep(tmp_path, "changed")
    changed.write_text(yaml.safe_dump({**CFG, "name": "changed", "axes": {"workload.G": list(range(1, 60_000))}}))

    def refuse(cfg):
        raise AssertionError("a listing went through the combinations of a config")
    monkeypatch.setattr(checks, "check_points", refuse)
    states = {r.name: r.status for r in inventory.results_in(tmp_path / "results")}
    assert states == {"same": "up to date", "changed": states["changed"]} and states["changed"].startswith("config changed")
    assert runner.invoke(app, ["report", str(tmp_path / "results"), "--index"]).exit_code == 0


def test_list_results_of_a_results_folder_lists_it_as_ls_does(tmp_path):
    """`wsemoe.list_results('results/x')` returned ([], []) where `wsemoe ls results/x` lists x."""
    import wsemoe
    from wsemoe.sweep.run import run_sweep

    path = run_sweep({"name": "one", "hardware": "cs2", "model": "qwen3-30b-a3b", "axes": {"workload.B": [1, 2]}},
                     out_root=tmp_path).path
    assert [r.name for r in wsemoe.list_results(path)[0]] == ["one"]
    assert [r.name for r in wsemoe.list_results(tmp_path)[0]] == ["one"]


def test_a_hidden_results_folder_is_listed_when_named(tmp_path, runner):
    """`wsemoe ls results/.old` said "no results in results/.old" of the results folder it named (a root's listing
    still skips hidden folders, as runs' partial folders are)."""
    import wsemoe

    _, res = _sweep(tmp_path, "one")
    hidden = res.path.rename(res.path.parent / ".old")
    r = runner.invoke(app, ["ls", str(hidden)], env={"COLUMNS": "200"})
    assert r.exit_code == 0 and "no results" not in r.output and ".old" in r.output, r.output
    assert [x.name for x in wsemoe.list_results(hidden)[0]] == ["one"]
    assert wsemoe.list_results(tmp_path / "results")[0] == []


def test_a_state_with_advice_after_its_parenthesis_keeps_both_and_no_stray_bracket():
    from wsemoe.report.terminal.tables import _split_status

    assert _split_status("damaged: manifest.json does not match its checksum (changed since the sweep wrote it); "
                         "move it out of the folder, then re-run the sweep") == (
        "damaged: manifest.json does not match its checksum",
        "changed since the sweep wrote it; move it out of the folder, then re-run the sweep")
    assert _split_status("stale (3 parts (of 9))") == ("stale", "3 parts (of 9)")
    assert _split_status("up to date") == ("up to date", "")


def test_a_new_run_replaces_its_configs_stale_partial_folder(tmp_path):
    # A sweep killed (SIGKILL) after making its partial folder left it stale; the same sweep run again without
    # --resume removed it, then looked for foreign entries in the folder it had just removed: "cannot prepare the
    # run's partial folder: no such file or folder (ENOENT)", until `ls --clean` or --resume.
    (tmp_path / "results").mkdir()
    old = _partial(tmp_path, "one")
    run = partial.PartialRun(tmp_path / "results" / "one", "0123456789abcdef", resume=False)
    assert run.path == old and run.parts.is_dir() and not any(run.parts.iterdir())   # made anew: the old part is gone
