"""Messages that mislead, fixed by kind: a results root named where a results folder is expected says what it
holds; `ls` of a results folder lists it; a column spelled in another case gets a did-you-mean; comparing runs
that answer different questions warns before the ratio; every command that writes prints relative paths."""

from __future__ import annotations

import pytest

from wsemoe.cli import app
from wsemoe.sweep.run import run_sweep


@pytest.fixture
def root(tmp_path, monkeypatch, small_config):
    monkeypatch.chdir(tmp_path)
    run_sweep(small_config, out_root="results")
    run_sweep({**small_config, "name": "small_cs3", "hardware": "cs3"}, out_root="results")
    run_sweep({**small_config, "name": "small_prefill", "workload": {"mode": "prefill", "seq_len": 8192}},
              out_root="results")
    return tmp_path / "results"


@pytest.mark.parametrize("command", [["show"], ["eval", "--point", "0"], ["report"]])
def test_a_results_root_is_named_as_one(runner, root, command):
    r = runner.invoke(app, [command[0], "results", *command[1:]])
    assert r.exit_code != 0 and r.output.startswith("error: [results] a results root holding small"), r.output
    assert "re-run" not in r.output and "wsemoe ls results" in r.output


def test_plot_of_a_results_root_plots_every_folder_in_it_or_none(runner, root):
    """`wsemoe plot results/` draws every results folder under the root, each into its own plots/; a file in one
    folder's plots/ it did not write (where a figure goes) refuses the run before any folder gets a figure."""
    assert runner.invoke(app, ["plot", "results/small_cs3", "--only", "pareto"]).exit_code == 0
    mine = root / "small_cs3" / "plots" / "pareto.png"
    mine.write_bytes(b"my own figure")   # changed by hand: no longer the figure plot wrote
    r = runner.invoke(app, ["plot", "results", "--only", "pareto"])
    assert r.exit_code != 0 and "pareto.png" in r.output, r.output
    assert mine.read_bytes() == b"my own figure"
    assert not (root / "small" / "plots").exists() and not (root / "small_prefill" / "plots").exists()
    mine.unlink()
    r = runner.invoke(app, ["plot", "results", "--only", "pareto"])
    assert r.exit_code == 0, r.output
    for name in ("small", "small_cs3", "small_prefill"):
        assert (root / name / "plots" / "pareto.png").is_file() and f"results/{name}/plots/pareto.png" in r.output


def test_ls_of_a_results_folder_lists_it(runner, root):
    r = runner.invoke(app, ["ls", "results/small"], env={"COLUMNS": "200"})
    assert r.exit_code == 0 and "no results" not in r.output
    assert " small " in r.output and "small_cs3" not in r.output


@pytest.mark.parametrize("where,meant", [("MFU > 0.3", "mfu"), ("Tokens_Per_S > 1", "tokens_per_s"),
                                         ("mfuu > 0.3", "mfu"), ("Workload.B == 1", "workload.B")])
def test_where_suggests_the_column_in_any_case(runner, root, where, meant):
    r = runner.invoke(app, ["show", "results/small", "--all", "--where", where])
    assert r.exit_code != 0 and f"did you mean '{meant}'?" in r.output, r.output


def test_compare_warns_when_the_runs_answer_different_questions(runner, root):
    related = runner.invoke(app, ["compare", "results/small", "results/small_cs3", "--no-readings"])
    assert related.exit_code == 0 and "warning" not in related.output
    other = runner.invoke(app, ["compare", "results/small", "results/small_prefill", "--no-readings"],
                          env={"COLUMNS": "300"})
    assert other.exit_code == 0
    first = other.output.splitlines()[0]
    # names and values in one order: small trains, small_prefill prefills
    assert first.startswith("warning: small and small_prefill differ in workload.mode (workload.mode train vs prefill")


def test_compare_warns_when_a_side_pools_model_variants_the_other_does_not(runner, root, small_config):
    """The best of a row is over every value of an axis the folders do not share: one side's over E = 32 and 128,
    the other's over top-k 8 and 4 at E = 128, is no one design change; the warning names each field with the
    values on each side, first folder first. Sweeping E on both sides (a shared axis) is one question."""
    plain = {k: v for k, v in small_config.items() if k != "sparsity"}
    run_sweep({**plain, "name": "experts", "axes": {**plain["axes"], "model.num_experts": [32, 128]}},
              out_root="results")
    run_sweep({**plain, "name": "topk", "axes": {**plain["axes"], "model.num_experts_per_tok": [8, 4]}},
              out_root="results")
    run_sweep({**plain, "name": "experts_cs3", "hardware": "cs3",
               "axes": {**plain["axes"], "model.num_experts": [32, 128]}}, out_root="results")
    run_sweep({**plain, "name": "fixed"}, out_root="results")
    cases = {("experts", "topk"): "differ in model.num_experts and model.num_experts_per_tok (model.num_experts "
                                  "32, 128 vs 128; model.num_experts_per_tok 8 vs 8, 4)",
             ("fixed", "experts"): "differ in model.num_experts (model.num_experts 128 vs 32, 128)"}
    for (a, b), said in cases.items():
        r = runner.invoke(app, ["compare", f"results/{a}", f"results/{b}", "--no-readings"], env={"COLUMNS": "300"})
        assert r.exit_code == 0, r.output
        assert r.output.startswith(f"warning: {a} and {b} {said}: the ratio compares different questions"), r.output
    same = runner.invoke(app, ["compare", "results/experts", "results/experts_cs3", "--no-readings"])
    assert same.exit_code == 0 and "warning" not in same.output, same.output


def test_plot_prints_relative_paths_as_report_does(runner, root):
    plotted = runner.invoke(app, ["plot", "results/small", "--only", "pareto"])
    reported = runner.invoke(app, ["report", "results/small"])
    assert plotted.exit_code == 0 and reported.exit_code == 0
    lines = plotted.output.split() + reported.output.split()
    assert lines and all(ln.startswith("results/small/") for ln in lines), lines
