"""What each writer may replace (issue 18): its own file or folder, written and unchanged since, and nothing a
user made or edited, with --force or not; nor another sweep's results, nor what other commands made from a
sweep's results unasked; and a run refused by one file writes none. Every refusal is one line, non-zero, with
every file in the working folder byte-identical afterwards. The table of targets each writer refuses:
tests/test_writers.py.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from clicheck import one_line_error
from wsemoe.cli import app
from wsemoe.store import ledger
from writecheck import FS, WRITERS, snapshot, template, work  # noqa: F401 (template, work: fixtures)

FILE_WRITERS = {w: v for w, v in WRITERS.items() if v[1] and w != "new"}  # `new` replaces nothing (below)


@pytest.mark.parametrize("writer", list(FILE_WRITERS))
def test_a_file_writer_replaces_its_own_file_and_nothing_a_user_edited(writer, work, runner):
    argv, suffix = FILE_WRITERS[writer]
    target = f"out{suffix}"
    for _ in range(2):  # written, then replaced: its own, unchanged
        r = runner.invoke(app, argv(target))
        assert r.exit_code in (0, 1), r.output  # invariants exits 1 when one fails; the file is written either way
    entry = ledger.read(work).entry(target)
    name = {"compare --plot": "compare", "invariants --junit": "junit"}.get(writer, writer)
    assert entry and entry["writer"] == name and ledger.matches(work / target, entry)
    with open(target, "a") as fh:
        fh.write("\n<!-- my note -->\n")
    before = snapshot(work)
    one_line_error(runner.invoke(app, argv(target) + ["--force"]), target, "changed since wsemoe wrote it")
    assert snapshot(work) == before


def test_force_replaces_another_commands_file_but_never_a_users(work, runner):
    # two commands that write a file of one kind (an output's name must say its kind): both write SVG figures
    runs = Path(__file__).parent / "data" / "silicon" / "silicon_given.csv"
    assert runner.invoke(app, ["validate", "--silicon", str(runs), "--plot", "shared.svg"]).exit_code == 0
    before = snapshot(work)
    compare = ["compare", "results/fs", "results/other", "--plot", "shared.svg"]
    one_line_error(runner.invoke(app, compare), "wsemoe validate", "--force")
    assert snapshot(work) == before
    assert runner.invoke(app, compare + ["--force"]).exit_code == 0
    assert ledger.read(work).entry("shared.svg")["writer"] == "compare"
    before = snapshot(work)
    for force in ([], ["--force"]):  # a user's file that mentions the tool is still the user's
        one_line_error(runner.invoke(app, ["report", "results/fs", "-o", "notes.html", *force]), "notes.html")
    assert snapshot(work) == before


def test_calibrate_replaces_its_own_folder_only(work, runner):
    # how calibrate writes, not what it fits (tests/test_calibration.py): one reading varied, 2 fits, not 18
    argv = ["calibrate", "-o", "cal", "-n", "8", "--only", "matmul_efficiency", "--reading", "kept_activations"]
    assert runner.invoke(app, argv).exit_code == 0
    assert runner.invoke(app, argv).exit_code == 0  # its own: replaced
    (work / "cal" / "my-notes.md").write_text("keep\n")
    before = snapshot(work)
    one_line_error(runner.invoke(app, argv + ["--force"]), "my-notes.md")
    assert snapshot(work) == before
    (work / "cal" / "my-notes.md").unlink()
    one_line_error(runner.invoke(app, ["calibrate", "--hardware", "cs3", "-o", "cal", "-n", "8", "--only",
                                       "matmul_efficiency"]), "cs2", "--force")
    # another command's folder is never replaced, --force or not (the calibration stays whole)
    mesh = {"name": "mesh", "hardware": "wsc-b200-8x8", "model": "qwen3-30b-a3b", "workload": {"mode": "decode"}}
    (work / "mesh.yaml").write_text(yaml.safe_dump(mesh))
    assert runner.invoke(app, ["sweep", "mesh.yaml", "-q"]).exit_code == 0
    before = snapshot(work)
    for force in ([], ["--force"]):
        one_line_error(runner.invoke(app, ["export", "traffic", "results/mesh", "-o", "cal", *force]),
                       "wsemoe calibrate", "only that command rewrites")
    assert snapshot(work) == before


def test_new_writes_a_file_that_no_writer_ever_replaces(work, runner):
    """The sweep file `new` writes is the user's at once: listed in no ledger, so neither `new` again nor any
    other writer, even with --force, replaces it (nor, being listed nowhere, is it ever removed)."""
    argv = ["new", "fresh", "--hardware", "cs2", "--model", "qwen3-30b-a3b", "-o", "fresh.yaml"]
    assert runner.invoke(app, argv).exit_code == 0
    assert ledger.read(work).entry("fresh.yaml") is None
    before = snapshot(work)
    one_line_error(runner.invoke(app, argv), "fresh.yaml", "never replaces a file")
    one_line_error(runner.invoke(app, ["schema", "-o", "fresh.yaml", "--force"]), "fresh.yaml")   # (a .json file)
    assert snapshot(work) == before


def test_readings_replace_their_own_folder_only(work, runner):
    argv = ["readings", "fs.yaml", "--results", "results"]  # the full analysis: a what-if (--only) is not written
    assert runner.invoke(app, argv).exit_code == 0
    folder = work / "results" / "fs" / "readings"
    assert ledger.read(folder).owner["writer"] == "readings"
    assert runner.invoke(app, argv).exit_code == 0  # its own: replaced
    with open(folder / "values.csv", "a") as fh:
        fh.write("0,edited,by hand,1\n")
    before = snapshot(work)
    one_line_error(runner.invoke(app, argv + ["--force"]), "values.csv", "changed since wsemoe wrote it")
    assert snapshot(work) == before


def test_a_sweeps_own_readings_never_go_over_a_users_folder(work, runner):
    """`sweep` with a comparison writes its readings/ itself; a user's folder there is left alone, and the sweep
    (whose results are whole) says why its robustness is not written instead of failing."""
    (work / "cmp.yaml").write_text(yaml.safe_dump({**FS, "name": "cmp",
                                                    "compare": {"name": "uniform", "baseline": {"workload.G": 1}}}))
    r = runner.invoke(app, ["sweep", "cmp.yaml"])
    assert r.exit_code == 0 and ledger.read(work / "results" / "cmp" / "readings").owner["writer"] == "readings"
    assert runner.invoke(app, ["sweep", "cmp.yaml", "--force", "--no-readings"]).exit_code == 0
    mine = work / "results" / "cmp" / "readings"
    assert not mine.exists()  # the re-run replaced the whole results folder, its readings with it
    mine.mkdir()
    (mine / "notes.txt").write_text("mine\n")
    before = snapshot(work)
    r = runner.invoke(app, ["sweep", "cmp.yaml"])
    assert r.exit_code == 0 and "robustness over readings: not written" in r.output and "readings" in r.output, r.output
    assert snapshot(work) == before


@pytest.mark.parametrize("force", [[], ["--force"]])
def test_a_report_never_goes_into_another_sweeps_results(force, work, runner):
    # The report of one sweep written as another's report.html was listed, indexed and read as that sweep's.
    assert runner.invoke(app, ["report", "results/other"]).exit_code == 0
    before = snapshot(work)
    one_line_error(runner.invoke(app, ["report", "results/fs", "-o", "results/other/report.html", *force]), "other")
    assert snapshot(work) == before


def test_another_config_of_a_sweep_is_replaced_only_by_sweep_and_it_says_so(work, runner):
    """results/fs holds fs.yaml's results. A changed fs.yaml: `readings` refuses to replace them (one line, nothing
    touched); `sweep` replaces them and says so."""
    changed = {**FS, "axes": {**FS["axes"], "workload.B": [1, 3]}}
    (work / "fs.yaml").write_text(yaml.safe_dump(changed))
    before = snapshot(work)
    one_line_error(runner.invoke(app, ["readings", "fs.yaml", "--results", "results"]), "another config", "sweep")
    assert snapshot(work) == before
    r = runner.invoke(app, ["sweep", "fs.yaml", "--results", "results", "--no-readings"])
    assert r.exit_code == 0 and "replaced the results of an earlier config of fs" in r.output, r.output


def test_a_sweep_never_removes_what_other_commands_made_from_its_results_unasked(work, runner):
    """results/fs with plots/ and report.html made from it, and a changed fs.yaml: the sweep refuses in one line
    naming them (nothing touched; before, it removed them unasked); with --force it replaces them and says so."""
    for args in (["plot", "results/fs"], ["report", "results/fs"]):
        assert runner.invoke(app, args).exit_code == 0
    changed = {**FS, "axes": {**FS["axes"], "workload.B": [1, 3]}}
    (work / "fs.yaml").write_text(yaml.safe_dump(changed))
    before = snapshot(work)
    one_line_error(runner.invoke(app, ["sweep", "fs.yaml", "--results", "results", "--no-readings"]),
                   "plots/ (`wsemoe plot`)", "report.html (`wsemoe report`)", "--force")
    assert snapshot(work) == before
    r = runner.invoke(app, ["sweep", "fs.yaml", "--results", "results", "--no-readings", "--force"])
    assert r.exit_code == 0 and "removed plots/, report.html" in r.output, r.output
    assert not (work / "results/fs/plots").exists() and not (work / "results/fs/report.html").exists()


def test_a_plot_run_refused_by_one_figure_writes_none(work, runner):
    """A figure changed by hand stopped `plot` when it came to it, after the figures before it had been replaced:
    plots/ held new figures beside old ones (and a new PNG beside the refused SVG of the same figure)."""
    r = runner.invoke(app, ["plot", "results/fs"])
    assert r.exit_code == 0, r.output
    last = [ln.strip() for ln in r.output.splitlines() if ln.strip().endswith(".svg")][-1]
    assert len([ln for ln in r.output.splitlines() if ln.strip().endswith(".svg")]) > 1   # others come before it
    (work / last).write_text("<svg>edited by hand</svg>")
    plots = work / "results" / "fs" / "plots"
    before = snapshot(work), {p.name: os.stat(p).st_ino for p in plots.iterdir()}   # a rewrite is a new inode
    one_line_error(runner.invoke(app, ["plot", "results/fs"]), Path(last).name, "changed since wsemoe wrote it")
    assert (snapshot(work), {p.name: os.stat(p).st_ino for p in plots.iterdir()}) == before


def test_a_record_wsemoe_cannot_read_is_said_alike_by_every_writer(work, runner):
    # a malformed .wsemoe.json in a results folder: the sweep that would replace the folder and the plot that
    # would write into it say the same thing, and nothing changes
    (work / "results" / "fs" / ".wsemoe.json").write_text("{bad")
    before = snapshot(work)
    for argv in (["sweep", "fs.yaml", "-f"], ["plot", "results/fs"]):
        one_line_error(runner.invoke(app, argv), "is not the record wsemoe keeps there")
    assert snapshot(work) == before
