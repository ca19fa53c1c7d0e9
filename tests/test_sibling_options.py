"""Rules one command kept and its siblings did not: an option's bad value refused in the same words everywhere,
the same short flag for the same option, a list of known names without repeats."""

from __future__ import annotations

from pathlib import Path

import pytest

import wsemoe
from wsemoe.cli import app


@pytest.fixture
def results(tmp_path, monkeypatch, small_config):
    from wsemoe.sweep.run import run_sweep

    monkeypatch.chdir(tmp_path)
    return run_sweep(small_config, out_root="results").path


@pytest.mark.parametrize("args,line", [
    (["plot", "{results}", "--format", "gif"], "error: [--format] 'gif' is not one of png, svg, pdf"),
    (["sensitivity", "{config}", "--method", "sobl"], "error: [--method] 'sobl' is not one of sobol, morris"),
    (["new", "x", "--hardware", "cs2", "--model", "qwen3-30b-a3b", "--mode", "serve"],
     "error: [--mode] 'serve' is not one of train, prefill, decode"),
    (["show", "{results}", "--format", "xml"], "error: [--format] 'xml' is not one of table, csv, json, markdown"),
    # invariants named its table 'text', where every other -F names it 'table'
    (["invariants", "{config}", "--format", "text"], "error: [--format] 'text' is not one of table, json"),
])
def test_a_bad_option_value_is_refused_in_one_wording(runner, results, small_config, tmp_path, args, line):
    """`plot --format gif` said "unknown format 'gif'; use png, svg, pdf" and `sensitivity --method sobl` "method
    must be one of sobol, morris" (not naming what was typed), where `show --format xml` and `new --mode` say
    "'xml' is not one of ...": one rule, `wsemoe.arguments.choice`, for every option with a fixed set of values."""
    import yaml

    config = tmp_path / "small.yaml"
    config.write_text(yaml.safe_dump(small_config))
    r = runner.invoke(app, [a.format(results=results, config=config) for a in args])
    assert r.exit_code == 2 and r.output.strip() == line, r.output


def test_every_format_option_takes_f(runner):
    """Every command's --format takes -F, but `invariants --format` alone did not (`invariants -F json`: "No such
    option: -F")."""
    r = runner.invoke(app, ["invariants", "--list", "-F", "json"])
    assert r.exit_code == 0 and r.output.lstrip().startswith("["), r.output


def test_plot_only_lists_each_known_name_once(runner, results):
    """`plot --only bogus` listed 'pareto, pareto' and 'roofline, roofline': a family and its figure share a name."""
    r = runner.invoke(app, ["plot", str(results), "--only", "zzzzzz"])
    known = r.output.split("known: ", 1)[1].strip().split(", ")
    assert r.exit_code == 2 and len(known) == len(set(known)) and "pareto" in known, r.output


@pytest.mark.parametrize("command", [["eval"], ["export", "traffic"], ["columns"], ["readings"]])
def test_a_missing_sweep_or_results_folder_is_named_as_either(runner, tmp_path, monkeypatch, command):
    """eval, export, columns and readings take a sweep YAML or a results folder; a mistyped results folder was
    "[results/quikstart] YAML file not found", as if only a YAML could be meant."""
    monkeypatch.chdir(tmp_path)
    r = runner.invoke(app, [*command, "results/quikstart"])
    assert r.exit_code == 2 and r.output.strip() == \
        "error: [results/quikstart] no such sweep YAML or results folder", r.output


@pytest.mark.parametrize("args,what", [
    (["sweep", "{config}", "-o", "{mine}"], "results"),
    (["export", "traffic", "--hardware", "wsc-b200-8x8", "--model", "deepseek-v3", "-o", "{mine}"], "traffic export"),
    (["calibrate", "-o", "{mine}", "--samples", "2"], "calibration")])
def test_a_folder_of_yours_is_refused_naming_what_would_go_there(runner, tmp_path, small_config, args, what):
    """`export traffic -o DIR` and `calibrate -o DIR` refused a folder of the user's as "(not a wsemoe results
    folder)", as if a results folder were expected there: each says what it writes."""
    import yaml

    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "keep.txt").write_text("mine")
    config = tmp_path / "small.yaml"
    config.write_text(yaml.safe_dump(small_config))
    r = runner.invoke(app, [a.format(config=config, mine=mine) for a in args])
    assert r.exit_code == 2 and f"(not a wsemoe {what} folder)" in r.output, r.output
    assert (mine / "keep.txt").read_text() == "mine"


def test_validate_silicon_refuses_a_pipe_as_a_sweep_file_is(tmp_path):
    """`check FIFO` refuses a pipe ("is not a regular file"), but `validate --silicon FIFO` handed it to pandas,
    which waited on it for ever: the CSV is read as every user-named input is (size-capped, regular files only)."""
    import os
    import subprocess
    import sys

    fifo = tmp_path / "runs.csv"
    os.mkfifo(fifo)
    r = subprocess.run([sys.executable, "-m", "wsemoe.cli", "validate", "--silicon", str(fifo)], capture_output=True,
                       text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert r.returncode == 2 and "is not a regular file" in r.stderr, r.stderr


def test_show_shows_the_columns_a_question_sorts_or_filters_by(runner, results):
    """`show --all --sort mfu` (mfu no objective of the sweep) listed rows in mfu order without an mfu column, and
    `--where "energy_per_token_j < 1"` kept rows by a column it did not show: the default view adds them."""
    import io

    import pandas as pd

    man = __import__("json").loads((results / "manifest.json").read_text())
    assert "energy_per_token_j" not in man["objectives"] and "step_time_s" not in man["objectives"]
    r = runner.invoke(app, ["show", str(results), "--all", "--sort", "-step_time_s", "--where",
                            "energy_per_token_j < 1", "--format", "csv"])
    got = pd.read_csv(io.StringIO(r.output), index_col=0)
    assert {"step_time_s", "energy_per_token_j"} <= set(got.columns), r.output
    assert got["step_time_s"].is_monotonic_decreasing
    asked = runner.invoke(app, ["show", str(results), "--all", "--sort", "-step_time_s", "--columns", "mfu",
                                "--format", "csv"])
    assert asked.output.splitlines()[0] == "point,mfu"   # columns asked for are the columns shown


@pytest.mark.parametrize("args,line", [
    (["schema", "-o", "schema.md"], "error: [--output -> schema.md] name a .json file"),
    (["schema", "--format", "markdown", "-o", "config.json"], "error: [--output -> config.json] name a .md file"),
    (["invariants", "--junit", "report.txt"], "error: [--junit -> report.txt] name a .xml file"),
    # `new -o ok.txt` wrote a sweep file into it, and `new -o folder/` said the folder "exists" as a file
    (["new", "ok", "--hardware", "cs2", "--model", "qwen3-30b-a3b", "-o", "ok.txt"],
     "error: [--output -> ok.txt] name a .yaml or .yml file"),
])
def test_a_file_option_writes_what_its_name_says(runner, tmp_path, monkeypatch, args, line):
    """`report -o x.pdf` and `compare --plot x.txt` refuse a name that says another kind of file, but `schema -o
    schema.md` wrote JSON into it, `schema --format markdown -o config.json` Markdown, and `invariants --junit
    report.txt` XML: every option naming an output file checks its kind (before anything runs)."""
    monkeypatch.chdir(tmp_path)
    r = runner.invoke(app, args)
    assert r.exit_code == 2 and r.output.strip() == line, r.output
    assert not list(tmp_path.iterdir())


def test_every_command_that_writes_prints_the_path_relative(runner, results, tmp_path):
    """report and plot print what they wrote relative to the current folder, but `schema -o s.json` printed
    /abs/path/s.json, and new, export traffic and compare --plot printed the path as typed (absolute stayed
    absolute): all go through shown_path."""
    import shutil

    shutil.copytree(results, tmp_path / "results" / "again")   # compare takes two different folders
    for args, want in [(["schema", "-o", str(tmp_path / "s.json")], "s.json"),
                       (["new", "n", "--hardware", "cs2", "--model", "qwen3-30b-a3b", "-o", str(tmp_path / "n.yaml")],
                        "wrote n.yaml; check it with `wsemoe check n.yaml`"),
                       (["export", "traffic", "--hardware", "wsc-b200-8x8", "--model", "deepseek-v3", "-o",
                         str(tmp_path / "ex")], "ex: "),
                       (["compare", str(results), "results/again", "--no-readings", "--format", "csv", "--plot",
                         str(tmp_path / "c.svg")], "c.svg")]:
        r = runner.invoke(app, args)
        assert r.exit_code == 0 and str(tmp_path) not in r.output and want in r.output, (args, r.output)


def test_a_refusal_names_the_path_relative_not_absolute(runner, results, tmp_path):
    """`show nonexist` names '[nonexist]', but a refused write named the absolute path the writer works on:
    `schema -o mine.json` said '[/home/.../mine.json] exists and wsemoe did not write it'."""
    (tmp_path / "mine.json").write_text("mine")
    r = runner.invoke(app, ["schema", "-o", "mine.json"])
    assert r.exit_code == 2 and r.output.startswith("error: [mine.json] exists and wsemoe did not write it"), r.output
    (tmp_path / "mine.html").write_text("mine")
    r = runner.invoke(app, ["report", "results/small", "-o", "mine.html"])
    assert r.exit_code == 2 and r.output.startswith("error: [mine.html] exists"), r.output


def test_validate_silicon_csv_is_one_table_on_stdout_as_every_commands_csv(runner, tmp_path):
    """A CSV reader takes stdout whole: the runs, one header, nothing else; the MAPE tables and the overall line
    (once concatenated after the runs, so a reader saw 'system' as a run id) go to stderr."""
    import io
    from pathlib import Path

    import pandas as pd

    given = Path(__file__).parent / "data" / "silicon" / "silicon_given.csv"
    runs = tmp_path / "runs.csv"
    runs.write_text("".join(given.read_text().splitlines(keepends=True)[:4]))   # the header and three runs
    r = runner.invoke(app, ["validate", "--silicon", str(runs), "--format", "csv"])
    assert r.exit_code == 0, r.stderr
    got = pd.read_csv(io.StringIO(r.stdout))
    assert got["id"].tolist() == pd.read_csv(runs)["id"].tolist() and got["pred_ttft_ms"].notna().all()
    assert "MAPE per system × model (%)" in r.stderr and "MAPE TTFT" in r.stderr


@pytest.mark.parametrize("args,line", [
    (["validate", "--silicon", "runs.csv", "--only", "bta"],
     "error: --only picks families of published rows; --silicon FILE reports measured runs instead (give one of them)"),
    (["invariants", "small.yaml", "-n", "2", "-v", "-q"],
     "error: [--quiet] --verbose prints the full table and --quiet nothing; give one of them"),
])
def test_options_that_cannot_both_hold_are_refused_not_one_dropped(runner, tmp_path, monkeypatch, small_config, args,
                                                                    line):
    """`validate --silicon F --only bta` ignored --only (while --holdout without --silicon is refused), and
    `invariants -v -q` printed the full table though -q says "print nothing": a pair one of which would be dropped
    unsaid is refused in one line, before anything runs."""
    import yaml

    monkeypatch.chdir(tmp_path)
    (tmp_path / "small.yaml").write_text(yaml.safe_dump(small_config))
    (tmp_path / "runs.csv").write_text("id\n")
    r = runner.invoke(app, args)
    assert r.exit_code == 2 and r.output.strip() == line, r.output


def test_a_wrong_kind_of_name_is_said_before_whose_file_it_is(tmp_path, runner, monkeypatch):
    # every writer checks the name's kind first: `schema -o fig.svg` over a figure another command wrote says to
    # name a .json file, never to pass --force (which then still would not write JSON into an .svg)
    monkeypatch.chdir(tmp_path)
    runs = Path(wsemoe.__file__).parents[1] / "tests" / "data" / "silicon" / "silicon_given.csv"
    assert runner.invoke(app, ["validate", "--silicon", str(runs), "--plot", "fig.svg"]).exit_code == 0
    for argv in (["schema", "-o", "fig.svg"], ["invariants", "--junit", "fig.svg"]):
        r = runner.invoke(app, argv)
        assert r.exit_code == 2 and "--force" not in r.output and ("json" in r.output or "xml" in r.output), r.output
