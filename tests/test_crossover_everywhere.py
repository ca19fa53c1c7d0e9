"""The one crossover (sweep/crossing.py) is stated the same way by every command that shows a comparison:
`show`, `readings` (as configured, = the default readings here) and the HTML report, each naming the metric and
the reading; the report also states it under its readings section."""

from __future__ import annotations

import re

import pytest

from wsemoe.cli import app
from wsemoe.sweep.run import run_sweep

CFG = {"name": "x", "hardware": "wsc-b200-8x8", "model": "qwen3-30b-a3b",
       "workload": {"mode": "decode", "seq_len": 4096},
       "zip": [{"hardware": ["wsc-b200-8x8", "nvl72"]}],
       "axes": {"workload.tokens_per_device": [1, 2, 4, 8, 16]},
       "compare": {"name": "nvl72", "baseline": {"hardware": "nvl72"}, "candidate": {"hardware": "wsc-b200-8x8"},
                   "metric": "per_device_tokens_per_s"}}


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return run_sweep(CFG, out_root=tmp_path_factory.mktemp("x")).path


def _crossovers(text: str) -> list[str]:
    """The crossover lines of some output, each joined onto one line (a terminal wraps them)."""
    flat = re.sub(r"\s+", " ", text)
    return [m.strip() for m in re.findall(r"crossover: .*?(?:tokens per device\))|crossover: .*?tokens per device",
                                         flat)]


def test_show_readings_and_report_state_the_same_crossover(runner, folder):
    shown = runner.invoke(app, ["show", str(folder)], env={"COLUMNS": "300"})
    assert shown.exit_code == 0, shown.output
    lines = _crossovers(shown.output)
    assert lines and all("speedup_vs_nvl72 as configured: " in ln for ln in lines), shown.output
    read = runner.invoke(app, ["readings", str(folder)], env={"COLUMNS": "300"})
    assert read.exit_code == 0, read.output
    said = _crossovers(read.output)
    configured = [ln.replace(" (= the default readings)", "") for ln in said if " as configured" in ln]
    assert configured == lines and all(" as configured" in ln or " at the default readings: " in ln for ln in said)
    report = runner.invoke(app, ["report", str(folder)])
    assert report.exit_code == 0, report.output
    page = (folder / "report.html").read_text()
    found = re.findall(r'<p class="crossover">(.*?)</p>', page)
    assert found == lines + said  # the comparison's section as show, the readings' section as readings
