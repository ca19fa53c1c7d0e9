"""Every command that writes, against every kind of target a user may point it at (issue 18).

The table runs each writer (sweep -o, report -o, schema -o, compare --plot, invariants --junit,
calibrate -o, export traffic -o, new -o, and the slots plot, sensitivity, readings and report fill inside a
results folder) against each
kind of target: a user's file or folder, a results root, symbolic links (to a file, to a folder, or a
folder of the path), the sweep's own files, read-only folders and files, a missing parent, the current
folder and its parent, a partial folder, a FIFO, a hard link. Every case must end in one line, non-zero,
naming the path, with every file in the working folder byte-identical afterwards; a link is never written
through. What each writer may replace of what it wrote itself: tests/test_writers_replace.py.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
import yaml

from clicheck import one_line_error
from wsemoe.cli import app
from writecheck import FS, PARTIAL, WRITERS, snapshot, template, work  # noqa: F401 (template, work: fixtures)

PART = "results/fs/points.parquet/part-000000000000-000000000002.parquet"
# kind -> (target for a writer of suffix `s`, a fragment the error line must name)
TARGETS = {
    "a user's file": (lambda s: f"notes{s or '.txt'}", "notes"),
    "a user's folder": (lambda s: "project", "project"),
    "the results root": (lambda s: "results", "results"),
    "a symlink to a user's file": (lambda s: f"link-file{s or '.txt'}", "link-file"),
    "a symlink to a user's folder": (lambda s: "link-dir", "link-dir"),
    "a path through a symlinked folder": (lambda s: f"link-dir/new{s}", "link-dir"),
    "a hard link to a user's file": (lambda s: f"hard{s or '.txt'}", "hard"),
    "a FIFO": (lambda s: f"pipe{s or '.txt'}", "pipe"),
    "the sweep's config.yaml": (lambda s: "results/fs/config.yaml", "config.yaml"),
    "the sweep's manifest.json": (lambda s: "results/fs/manifest.json", "manifest.json"),
    "the sweep's pareto.csv": (lambda s: "results/fs/pareto.csv", "pareto.csv"),
    "the sweep's ledger": (lambda s: "results/fs/.wsemoe.json", ".wsemoe.json"),
    "a part file": (lambda s: PART, "points.parquet"),
    "the parts folder": (lambda s: "results/fs/points.parquet", "points.parquet"),
    "a new file in the parts folder": (lambda s: f"results/fs/points.parquet/new{s}", "points.parquet"),
    "a new file in a results folder": (lambda s: f"results/fs/new{s}", "new"),
    "a new folder in a results folder": (lambda s: f"results/fs/mine/new{s}", "mine"),
    "a new plots folder in a results folder": (lambda s: f"results/fs/plots/new{s}", "plots"),
    "a new folder in the parts folder": (lambda s: f"results/fs/points.parquet/mine/new{s}", "points.parquet"),
    "another sweep's results folder": (lambda s: "results/other", "other"),
    "a new file in a partial folder": (lambda s: f"{PARTIAL}/new{s}", "partial"),
    "a new file in a read-only folder": (lambda s: f"ro/new{s}", "ro"),
    "a read-only file": (lambda s: f"ro-file{s or '.txt'}", "ro-file"),
    "a missing parent": (lambda s: f"missing/deeper/new{s}", "missing"),
    "the current folder": (lambda s: ".", ".]"),   # named as typed ("[.]", "[--output -> .]"), as every path is
    "the parent folder": (lambda s: "..", ""),
    "a path into a file": (lambda s: f"notes.txt/new{s}", "notes.txt"),
    "a folder holding a user's .wsemoe.json": (lambda s: f"hasjson/new{s}", ".wsemoe.json"),
    "a user's .wsemoe.json": (lambda s: "hasjson/.wsemoe.json", ".wsemoe.json"),
}


@pytest.mark.parametrize("kind", list(TARGETS))
@pytest.mark.parametrize("writer", list(WRITERS))
def test_every_writer_refuses_every_target_it_cannot_prove_is_its_own(writer, kind, work, runner):
    argv, suffix = WRITERS[writer]
    target, named = TARGETS[kind]
    path = target(suffix)
    before = snapshot(work)
    result = runner.invoke(app, argv(path))
    one_line_error(result, named)
    assert snapshot(work) == before


# ---------------------------------------------------------------- the slots inside a results folder

SLOTS = {
    "plot": (["plot", "results/fs"], "plots"),
    "sensitivity": (["sensitivity", "fs.yaml", "--results", "results", "-n", "8", "--only", "matmul_efficiency"],
                    "sensitivity"),
    "report": (["report", "results/fs"], "report.html"),
    "readings": (["readings", "fs.yaml", "--results", "results"], "readings"),
}
SLOT_KINDS = {
    "a user's file": lambda p: p.write_text("mine\n"),
    "a user's folder": lambda p: (p.mkdir(), (p / "mine.txt").write_text("mine\n")),
    "a symlink to a user's folder": lambda p: os.symlink(Path("../../project").as_posix(), p),
    "a symlink to a user's file": lambda p: os.symlink(Path("../../notes.txt").as_posix(), p),
    "a read-only results folder": lambda p: p.parent.chmod(0o555),
}


@pytest.mark.parametrize("kind", list(SLOT_KINDS))
@pytest.mark.parametrize("writer", list(SLOTS))
def test_slots_inside_results_refuse_what_wsemoe_did_not_write(writer, kind, work, runner):
    argv, slot = SLOTS[writer]
    SLOT_KINDS[kind](work / "results" / "fs" / slot)
    before = snapshot(work)
    one_line_error(runner.invoke(app, argv), "read-only" if "read-only" in kind else slot)
    assert snapshot(work) == before


def test_plot_leaves_a_users_file_in_plots_alone_and_refuses_one_it_would_replace(work, runner):
    assert runner.invoke(app, ["plot", "results/fs", "--only", "pareto"]).exit_code == 0
    plots = work / "results" / "fs" / "plots"
    (plots / "mine.png").write_bytes(b"mine")
    assert runner.invoke(app, ["plot", "results/fs", "--only", "pareto"]).exit_code == 0  # replaces its own
    assert (plots / "mine.png").read_bytes() == b"mine"
    (plots / "pareto.svg").write_text("<svg>edited by hand</svg>")
    before = snapshot(work)
    one_line_error(runner.invoke(app, ["plot", "results/fs", "--only", "pareto", "--force"]), "pareto.svg",
                   "changed since wsemoe wrote it")
    assert snapshot(work) == before
    (plots).chmod(0o555)
    one_line_error(runner.invoke(app, ["plot", "results/fs", "--only", "pareto"]), "plots", "read-only")


def test_a_partial_folder_that_is_a_link_is_never_written_through(work, runner):
    (work / "linked.yaml").write_text(yaml.safe_dump({**FS, "name": "linked"}))
    from wsemoe.config.loader import load_config

    link = work / f".linked.partial-{load_config(work / 'linked.yaml').config_hash()}"
    os.symlink("project", link)
    before = snapshot(work)
    one_line_error(runner.invoke(app, ["sweep", "linked.yaml", "-o", "linked"]), "partial")
    assert snapshot(work) == before


def test_a_missing_folder_one_level_deep_is_made_never_a_tree(work, runner):
    assert runner.invoke(app, ["schema", "-o", "made/schema.json"]).exit_code == 0
    assert (work / "made" / "schema.json").is_file()
    one_line_error(runner.invoke(app, ["schema", "-o", "a/b/schema.json"]), "does not exist")
    assert not (work / "a").exists()


@pytest.mark.parametrize("argv", [["sweep", "fs.yaml", "--results", "link-dir"],
                                  ["readings", "fs.yaml", "--results", "link-dir"],
                                  ["sensitivity", "fs.yaml", "--results", "link-dir", "-n", "8", "--only",
                                   "matmul_efficiency"],
                                  ["sweep", "fs.yaml", "--results", "link-dir/deeper"],
                                  ["ls", "--clean", "link-dir"]])
def test_a_results_root_given_through_a_link_is_never_written_through(argv, work, runner):
    # `--results` named a root that was resolved into its target and written there (and `ls --clean` removed a
    # stale partial folder through it), while every `-o` refused the same link.
    before = snapshot(work)
    one_line_error(runner.invoke(app, argv), "link-dir")
    assert snapshot(work) == before


@pytest.mark.parametrize("writer", list(SLOTS))
def test_a_link_where_wsemoe_names_the_folder_itself_is_told_to_go_not_given_again(writer, work, runner):
    # A link at readings/ (or any slot, or results/<name>) was told "give the real path", a path the user
    # never gave and cannot give: wsemoe names it. The link itself must go; a link the user named keeps its hint.
    argv, slot = SLOTS[writer]
    os.symlink(Path("../../project").as_posix(), work / "results" / "fs" / slot)
    before = snapshot(work)
    one_line_error(runner.invoke(app, argv), slot, "remove the link")
    assert snapshot(work) == before
    assert "give the real path" not in runner.invoke(app, argv).output


def test_a_link_at_a_sweeps_own_results_folder_is_told_to_go(work, runner):
    shutil.move(work / "results" / "fs", work / "moved")
    os.symlink("../moved", work / "results" / "fs")
    before = snapshot(work)
    one_line_error(runner.invoke(app, ["sweep", "fs.yaml", "--force"]), "results/fs", "remove the link")
    assert snapshot(work) == before
    one_line_error(runner.invoke(app, ["sweep", "fs.yaml", "--results", "link-dir"]), "give the real path")
