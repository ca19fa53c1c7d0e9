"""Readings as a reader meets them: `sensitivity`, `sweep`, `show`, `compare` and the report carry one robustness
line per comparison (or say how to compute what is not stored), `readings` lists the registry and refuses a bad
option in one line before any work, the figure's and tables' labels and units, and the API refusing as the CLI
does. The analysis by hand: tests/test_readings.py."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml
from test_readings import SMALL

import wsemoe
from wsemoe.analysis.uncertainty import readings as rd
from wsemoe.analysis.uncertainty import robustness
from wsemoe.cli import app
from wsemoe.report.html import page
from wsemoe.store import store


def test_sensitivity_prints_the_readings_and_the_hinge(runner, tmp_path):
    r = runner.invoke(app, ["sensitivity", "sweeps/bta_topk.yaml", "-n", "8", "--results", str(tmp_path)],
                      env={"COLUMNS": "1000"})
    assert r.exit_code == 0, r.output
    assert "readings of bta_topk: 18 combinations" in r.output
    assert "speedup_vs_uniform: 1.27× as configured at num_experts_per_tok=1" in r.output   # 1.03× before the deltas
    assert "hinges on attn_kernel" in r.output and "sensitivity of speedup_vs_uniform" in r.output
    assert (tmp_path / "bta_topk" / "readings" / "values.csv").is_file()


def test_sweep_show_and_report_carry_the_robustness_line(runner, tmp_path):
    path = tmp_path / "small.yaml"
    path.write_text(yaml.safe_dump(SMALL))
    r = runner.invoke(app, ["sweep", str(path), "--results", str(tmp_path)], env={"COLUMNS": "1000"})
    assert r.exit_code == 0, r.output
    line = next(x for x in r.output.splitlines() if x.startswith("speedup_vs_uniform:"))
    assert "as configured" in line and "hinges on" in line
    shown = runner.invoke(app, ["show", str(tmp_path / "small")], env={"COLUMNS": "1000"})
    assert line in shown.output
    narrow = runner.invoke(app, ["show", str(tmp_path / "small")], env={"COLUMNS": "80"})
    assert max(map(len, narrow.output.splitlines())) <= 80 and "speedup_vs_uniform:" in narrow.output
    html = "".join(page.readings_section(tmp_path / "small", store.load_manifest(tmp_path / "small")))
    assert "Robustness over the readings" in html and line.split(";")[0] in html
    assert [p.name for p in wsemoe.plot(tmp_path / "small", only=["readings"])] == \
        ["readings_robustness.png", "readings_robustness.svg", "readings_robustness.txt"]  # .txt: its caption
    caption = (tmp_path / "small" / "plots" / "readings_robustness.txt").read_text()
    from wsemoe.report.figures import fig_readings

    assert caption.rstrip("\n").endswith("Claim tested: " + fig_readings.CLAIMS["readings_robustness"].rstrip(".") + ".") and line.split(";")[0] in caption
    # without the readings analysis, show says how to get it; `readings RESULTS` computes it from config.yaml
    runner.invoke(app, ["sweep", str(path), "--results", str(tmp_path), "--force", "--no-readings"])
    shown = runner.invoke(app, ["show", str(tmp_path / "small")], env={"COLUMNS": "200"})
    assert "robustness over readings: not computed; `wsemoe readings" in shown.output
    # the report says it as show does, not by leaving the section out
    html = "".join(page.readings_section(tmp_path / "small", store.load_manifest(tmp_path / "small")))
    assert "Robustness over the readings" in html and "not computed; `wsemoe readings" in html
    again = runner.invoke(app, ["readings", str(tmp_path / "small"), "--only", "attn_kernel"], env={"COLUMNS": "1000"})
    assert again.exit_code == 0 and "held as configured (not in --only)" in again.output
    # ... a what-if (--only) is printed, labelled, and not stored: show still says how to get the answer
    assert "what-if (" in again.output and "not stored" in again.output
    assert "robustness over readings: not computed" in runner.invoke(app, ["show", str(tmp_path / "small")],
                                                                     env={"COLUMNS": "1000"}).output
    full = runner.invoke(app, ["readings", str(tmp_path / "small")], env={"COLUMNS": "1000"})
    assert full.exit_code == 0 and "what-if" not in full.output
    assert "combinations of attn_kernel" in runner.invoke(app, ["show", str(tmp_path / "small")],
                                                          env={"COLUMNS": "1000"}).output


def test_readings_command_lists_and_refuses_in_one_line(runner):
    r = runner.invoke(app, ["readings"], env={"COLUMNS": "200"})
    assert r.exit_code == 0 and "attn_kernel" in r.output and "per_head*" in r.output and "as_gpu*" in r.output
    flat = " ".join(r.output.split())   # where a reading applies is said in words (YAML null: a field left unset)
    assert "hardware.attention_kernel unset" in flat and "None" not in flat
    # a reading asked to vary where it cannot is said in one line (calibrate's --reading as readings' --only)
    r = runner.invoke(app, ["readings", "sweeps/moentwine_vs_nvl72.yaml", "--only", "attn_kernel"])
    assert r.exit_code == 2 and r.output.startswith("error: [--only -> attn_kernel] attn_kernel is not applicable")
    r = runner.invoke(app, ["calibrate", "--hardware", "nvl72", "--reading", "attn_kernel", "-o", "never-written"])
    assert r.exit_code == 2 and "nothing to vary" in r.output and not os.path.exists("never-written")
    r = runner.invoke(app, ["readings", "sweeps/bta_topk.yaml", "--set", "attn_kernel"])
    assert r.exit_code == 2 and r.output.strip() == \
        "error: [--set] 'attn_kernel' is not name=option (e.g. attn_kernel=flash)"


@pytest.mark.parametrize("n", [3, 18])
def test_robustness_groups_are_labelled_so_they_do_not_collide(n):
    """Groups named by the same settings: each tick only its values and the axis label names the settings once,
    slanted when many (18 full labels, slanted or upright, overlapped or crushed the panels; five full
    'tokens/device N' labels ran into one another)."""
    import pandas as pd
    from matplotlib.figure import Figure

    from wsemoe.report.figures import fig_readings

    groups = [f"model=m{k % 2}, tokens_per_device={2 ** (k // 2)}" for k in range(n)]
    summary = pd.DataFrame({"quantity": "q", "group": groups, "low": 0.5, "high": 2.0, "configured": 1.0,
                            "default": 1.1})
    ax = Figure().add_subplot()
    fig_readings._right(ax, summary, "q", {})
    ticks = [t.get_text() for t in ax.get_xticklabels()]
    assert ticks[:3] == ["m0 · 1", "m1 · 1", "m0 · 2"] and ax.get_xlabel() == "model · tokens/device"
    assert (ax.get_xticklabels()[0].get_rotation() > 0) == (n > 5)


def test_a_quantity_with_a_unit_says_it_in_its_table_title():
    """A best value over the readings is printed in its unit's plain numbers (74,747): the title names the unit;
    a ratio's cells carry their own ×."""
    from wsemoe.analysis.uncertainty import robustness
    from wsemoe.report.terminal import readings as shown

    result = wsemoe.robustness("sweeps/quickstart.yaml")
    summary = robustness.summarize(result)
    titles = {q: shown.table(result, summary, q).title for q in dict.fromkeys(summary["quantity"])}
    assert titles["best_tokens_per_s"] == "best_tokens_per_s [tokens/s] over the readings"
    assert titles["speedup_vs_uniform"] == "speedup_vs_uniform over the readings"


def shown_table(result):
    from wsemoe.report.terminal import readings as shown

    summary = robustness.summarize(result)
    return shown.table(result, summary, "speedup_vs_uniform").columns


def test_the_report_of_a_screened_design_counts_runs_not_combinations(monkeypatch, tmp_path):
    """The report's robustness table headed its counts "combinations" when the design was one reading at a time,
    and its note named a main effect no such design measures."""
    monkeypatch.setattr(rd, "MAX_COMBINATIONS", 2)
    wsemoe.run_sweep(SMALL, out_root=tmp_path)
    wsemoe.robustness(SMALL, write=True, out_root=tmp_path)
    html = "".join(page.readings_section(tmp_path / "small", store.load_manifest(tmp_path / "small")))
    head = html.split('id="robustness-table"', 1)[1].split("</thead>", 1)[0]
    assert "<th>runs</th>" in head and "combinations" not in head, head
    assert "effect alone" in html and "main effect" not in html
    result = wsemoe.robustness(SMALL)
    heads = [c.header for c in shown_table(result)]
    assert "hinges on (effect alone)" in heads and "hinges on (main effect)" not in heads


def test_a_reading_fixed_and_varied_is_refused_by_the_api_as_by_the_cli():
    """`wsemoe.robustness(cfg, only=['attn_kernel'], fixed={'attn_kernel': 'flash'})` returned an empty what-if
    where `wsemoe readings` refused: the check lives in the one plan both use."""
    import wsemoe
    from wsemoe.errors import ConfigError

    with pytest.raises(ConfigError, match="fixed by --set and varied"):
        wsemoe.robustness({"name": "r", "hardware": "cs2", "model": "qwen3-30b-a3b", "axes": {"workload.B": [1, 2]}},
                          only=["attn_kernel"], fixed={"attn_kernel": "flash"})


def test_the_api_takes_readings_as_a_mapping_and_a_model_by_name():
    """`apply_readings(cfg, None)` and `robustness(cfg, fixed=['attn_kernel'])` were AttributeError/ValueError from
    inside; `parameter_counts('qwen3-30b-a3b')` an AttributeError (it takes a name as load_model does now)."""
    import wsemoe
    from wsemoe.errors import ConfigError

    cfg = {"name": "r", "hardware": "cs2", "model": "qwen3-30b-a3b", "axes": {"workload.B": [1, 2]}}
    with pytest.raises(ConfigError, match="a mapping of reading to option"):
        wsemoe.apply_readings(cfg, None)
    with pytest.raises(ConfigError, match="a mapping of reading to option"):
        wsemoe.robustness(cfg, fixed=["attn_kernel"])
    assert wsemoe.parameter_counts("qwen3-30b-a3b") == wsemoe.parameter_counts(wsemoe.load_model("qwen3-30b-a3b"))
    with pytest.raises(ConfigError, match="a ModelSpec"):
        wsemoe.parameter_counts(None)


def test_the_reports_robustness_table_says_its_ratios_are_ratios(tmp_path):
    """The robustness table's configured, default, low and high columns are the compared ratio (0.8777, 1.058):
    their headers had no unit, beside a flips column that writes '1.76×'. Each now says [×]."""
    wsemoe.run_sweep(SMALL, out_root=tmp_path)
    wsemoe.robustness(SMALL, write=True, out_root=tmp_path)
    html = "".join(page.readings_section(tmp_path / "small", store.load_manifest(tmp_path / "small")))
    head = html.split('id="robustness-table"', 1)[1].split("</thead>", 1)[0]
    for col in ("configured", "default", "low", "high"):
        assert f"<th>{col}<br><small>[×]</small></th>" in head, head


@pytest.mark.parametrize("option", [["--only", "bogus"], ["--set", "bogus=1"], ["--set", "attn_kernel=bogus"]])
def test_a_bad_reading_option_is_refused_before_the_sweep_runs(option, tmp_path, runner):
    # the refusal comes before any work: no results folder is made for a command that says no
    sweep = tmp_path / "s.yaml"
    sweep.write_text((Path(wsemoe.__file__).parents[1] / "sweeps" / "quickstart.yaml").read_text())
    result = runner.invoke(app, ["readings", str(sweep), *option, "--results", str(tmp_path / "r")])
    assert result.exit_code == 2 and result.output.startswith("error: ")
    assert not (tmp_path / "r").exists()
