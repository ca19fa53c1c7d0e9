"""CLI contracts through typer's runner: sweep, show, check, eval, presets, validate, up-to-date."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import yaml

from wsemoe.cli import app


def _write(tmp_path, cfg):
    p = tmp_path / "cfg.yaml"
    p.write_text(yaml.safe_dump(cfg))
    return p


def test_sweep_writes_complete_results_and_is_up_to_date(runner, tmp_path, small_config):
    cfg = _write(tmp_path, small_config)
    res = tmp_path / "res"
    r = runner.invoke(app, ["sweep", str(cfg), "--results", str(res)])
    assert r.exit_code == 0, r.output
    out = res / "small"
    assert f"wrote {out}/: config.yaml, manifest.json, points.parquet/, pareto.csv, comparison.csv" in r.output
    for f in ("config.yaml", "manifest.json", "points.parquet", "pareto.csv", "comparison.csv"):
        assert (out / f).exists(), f
    man = json.loads((out / "manifest.json").read_text())
    points = pd.read_parquet(out / "points.parquet")
    assert man["points"] == len(points) == 16
    assert set(points.columns) <= set(man["columns"]), "every column documented"
    assert all(man["columns"][c]["doc"] for c in points.columns)
    assert man["columns"]["step_time_s"]["unit"] == "s"
    assert "numpy" in man["dependencies"] and man["version"]
    assert not [p for p in res.iterdir() if p.name.startswith(".")], "no temp folders left"
    r2 = runner.invoke(app, ["sweep", str(cfg), "--results", str(res)])
    assert r2.exit_code == 0 and "up to date" in r2.output
    r3 = runner.invoke(app, ["sweep", str(cfg), "--results", str(res), "--force"])
    assert r3.exit_code == 0 and "up to date" not in r3.output


def test_changed_config_reruns(runner, tmp_path, small_config):
    res = tmp_path / "res"
    runner.invoke(app, ["sweep", str(_write(tmp_path, small_config)), "--results", str(res)])
    small_config["axes"]["workload.G"] = [1, 2]
    r = runner.invoke(app, ["sweep", str(_write(tmp_path, small_config)), "--results", str(res)])
    assert "up to date" not in r.output
    assert json.loads((res / "small" / "manifest.json").read_text())["points"] == 8


def test_output_option_and_show(runner, tmp_path, small_config):
    out = tmp_path / "elsewhere"
    r = runner.invoke(app, ["sweep", str(_write(tmp_path, small_config)), "-o", str(out), "-q"])
    assert r.exit_code == 0 and str(out) in r.output
    r = runner.invoke(app, ["show", str(out)])
    assert r.exit_code == 0 and "feasible" in r.output and "speedup" in r.output


def test_show_missing_results_is_one_line(runner, tmp_path):
    r = runner.invoke(app, ["show", str(tmp_path / "none")])
    assert r.exit_code != 0 and r.output.count("\n") == 1 and "no such results folder" in r.output


def test_check_counts_and_estimates_on_request(runner, tmp_path, small_config):
    r = runner.invoke(app, ["check", str(_write(tmp_path, small_config))])
    assert r.exit_code == 0 and "16 points" in r.output and "estimated time" not in r.output
    r = runner.invoke(app, ["check", "--estimate", str(_write(tmp_path, small_config))])
    assert r.exit_code == 0 and "16 points" in r.output and "estimated time" in r.output
    assert not (tmp_path / "results").exists()


def test_check_counts_one_point_and_one_value_in_the_singular(runner, tmp_path, small_config):
    # `check` of a one-point sweep printed "valid; 1 points" and "axis workload.B: 1 values".
    one = {**small_config, "axes": {"workload.B": [4]}}
    one.pop("sparsity", None), one.pop("compare", None)
    r = runner.invoke(app, ["check", str(_write(tmp_path, one))])
    assert r.exit_code == 0 and "valid; 1 point\n" in r.output and "workload.B: 1 value\n" in r.output, r.output


def test_eval_breaks_point_into_terms(runner, tmp_path, small_config):
    r = runner.invoke(app, ["eval", str(_write(tmp_path, small_config)), "--point", "5"])
    assert r.exit_code == 0, r.output
    for term in ("moe_compute_s", "moe_weights_s", "attention_compute_s", "mem_attn_transient_node_bytes",
                 "g_mem_attn", "bound", "expert_flops"):
        assert term in r.output
    r = runner.invoke(app, ["eval", str(_write(tmp_path, small_config)), "--set", "workload.G=3"])
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["eval", str(_write(tmp_path, small_config)), "--point", "99"])
    assert r.exit_code != 0 and "out of range" in r.output


def test_presets_lists_everything(runner):
    r = runner.invoke(app, ["presets"])
    assert r.exit_code == 0
    for name in ("cs2", "cs3", "qwen3-30b-a3b", "qwen3-235b-a22b", "deepseek-v3"):
        assert name in r.output
    # the PE fabric of cs2: fabric and program rectangle (fabric less the host-I/O margin), cycles per
    # hop / turn / relay stage, routable colours and those left free
    assert "PE fabric" in r.output and "757×996 (750×994)" in r.output
    assert "1/0/5" in r.output and "24 (21)" in r.output


def test_python_api_matches_cli(tmp_path, small_config):
    import wsemoe

    df = wsemoe.evaluate(small_config)
    assert len(df) == 16 and "workload.G" in df and "speedup_vs_uniform" in df
    df2 = wsemoe.evaluate(_write(tmp_path, small_config))
    pd.testing.assert_frame_equal(df, df2)


def test_resolved_config_reloads_to_the_same_run(runner, tmp_path, small_config):
    from wsemoe.config.loader import load_config

    res = tmp_path / "res"
    runner.invoke(app, ["sweep", str(_write(tmp_path, small_config)), "--results", str(res)])
    again = res / "small" / "config.yaml"
    assert load_config(again).config_hash() == json.loads((res / "small" / "manifest.json").read_text())["config_hash"]
    r = runner.invoke(app, ["sweep", str(again), "--results", str(res)])
    assert r.exit_code == 0 and "up to date" in r.output


def test_every_column_of_every_shipped_sweep_is_documented():
    import wsemoe
    from wsemoe.sweep.columns import describe, documented

    for f in ("bta_topk", "moentwine_balance", "moentwine_mapping", "moentwine_scale", "moentwine_scale_balance",
              "moentwine_vs_nvl72"):
        for c in wsemoe.evaluate(f"sweeps/{f}.yaml", start=0, stop=2).columns:
            assert documented(c), c
            assert describe(c)[0] is not None


def test_sweep_says_where_it_wrote_relative_to_the_current_folder(runner, tmp_path, small_config, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cfg = _write(tmp_path, small_config)
    r = runner.invoke(app, ["sweep", cfg.name])
    assert r.exit_code == 0 and "wrote results/small/:" in r.output and str(tmp_path) not in r.output
    r = runner.invoke(app, ["sweep", cfg.name])
    assert "up to date (results/small)" in r.output


@pytest.mark.parametrize("args", [["presets"], ["schema"], ["check", "sweeps/quickstart.yaml"]])
def test_a_closed_standard_output_is_one_line_and_does_nothing(args):
    """Started with stdout closed (`>&-`), commands printed a traceback (presets, schema), an internal error (show)
    or exited 0 with their answer lost (check, sweep -q). One line on stderr, exit 1, nothing done."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    r = subprocess.run([sys.executable, "-c", "from wsemoe.cli import app; app()", *args], cwd=root,
                       stderr=subprocess.PIPE, text=True, preexec_fn=lambda: os.close(1), timeout=120)
    assert r.returncode == 1 and r.stderr.startswith("error: standard output is closed"), r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_invariants_list_as_json_and_a_bad_file_among_several_is_named(tmp_path, runner):
    """`invariants --list --format json` printed the text listing; an error in the second of two files did not
    say which file it was in."""
    from clicheck import one_line_error

    r = runner.invoke(app, ["invariants", "--list", "--format", "json"])
    listed = json.loads(r.output)
    assert r.exit_code == 0 and listed and all(set(x) == {"name", "statement", "reason"} for x in listed)
    (tmp_path / "bad.yaml").write_text("name: bad\nhardware: nope\nmodel: qwen3-30b-a3b\n")
    quickstart = str(Path(__file__).resolve().parents[1] / "sweeps" / "quickstart.yaml")
    one_line_error(runner.invoke(app, ["invariants", quickstart, str(tmp_path / "bad.yaml")]),
                   f"[{tmp_path / 'bad.yaml'} -> hardware]")
