"""Sensitivity says what it will cost and what it cannot tell: the default design stays within a budget of
samples × points (bta_topk's documented command no longer asks for 470 M evaluations and is refused), its run
time is measured on the design's first samples and said before the work, each Sobol index carries its 95%
confidence interval, and a side tuned to its axis end in some samples is named (with the unknown that drives it)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from wsemoe.analysis.uncertainty import sensitivity as sens
from wsemoe.cli import app
from wsemoe.config.loader import load_config

SMALL = {"name": "small_sens", "hardware": "cs2", "model": "qwen3-30b-a3b",
         "workload": {"mode": "train", "seq_len": 2048}, "axes": {"workload.B": [1, 2, 4], "workload.G": [1, 8]},
         "compare": {"name": "uniform", "baseline": {"workload.G": 1}, "metric": "tokens_per_s"},
         "objectives": {"tokens_per_s": "max"}}


@pytest.mark.parametrize("d,points", [(5, 32_768), (5, 100), (12, 1_000_000), (3, 1)])
def test_the_default_design_stays_within_its_budget_or_is_the_smallest(d, points):
    samples = sens.default_samples(d, "sobol", points)
    rows = sens.design_rows(d, "sobol", samples)
    smallest = sens.design_rows(d, "sobol", 1)
    assert rows * points <= sens.DEFAULT_EVALUATIONS or rows == smallest
    assert samples <= sens.DEFAULT_SAMPLES
    if sens.design_rows(d, "sobol", sens.DEFAULT_SAMPLES) * points <= sens.DEFAULT_EVALUATIONS:
        assert samples == sens.DEFAULT_SAMPLES  # a small sweep keeps the full design
    else:  # the next larger design would pass the budget
        assert sens.design_rows(d, "sobol", 2 * samples) * points > sens.DEFAULT_EVALUATIONS


def test_the_documented_command_s_default_design_is_accepted():
    """`wsemoe sensitivity sweeps/bta_topk.yaml` (docs/findings.md): prepared without --samples, within budget."""
    sampled, U = sens.prepare("sweeps/bta_topk.yaml")
    assert len(U) * sampled.points <= sens.DEFAULT_EVALUATIONS


def test_the_estimate_is_measured_and_scales_with_the_design():
    prepared = sens.prepare(SMALL, samples=64, only=("matmul_efficiency",))
    seconds, each = sens.estimate(prepared)
    assert each > 0 and seconds == pytest.approx(each * (len(prepared[1]) + 1) * prepared[0].points)


def test_a_side_tuned_to_its_axis_end_is_named_with_the_unknown_that_drives_it():
    cfg = load_config(SMALL)
    sampled = SimpleNamespace(cfg=cfg, unknowns=[SimpleNamespace(name="seq_len"), SimpleNamespace(name="io")])
    U = np.array([[0.1, 0.5], [0.9, 0.4], [0.2, 0.6], [0.8, 0.5]])
    # the reach (B over the largest B, 4) of each side's tied design nearest the interior, per sample
    Y = {"baseline_reach_B": np.array([[1.0], [0.5], [1.0], [0.25]]),
         "best_reach_B": np.array([[0.5], [0.5], [0.25], [0.5]])}
    assert sens.axis_ends(sampled, U, Y) == [
        "note: baseline workload.B at its largest swept value (4) in 2 of 4 samples (1 of 1 groups); mostly where "
        "seq_len is low: the axis, not the system, may cap it there, and the band measures the axis"]


def test_the_command_says_its_estimate_first_and_shows_confidence_intervals(runner, tmp_path):
    import yaml

    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(SMALL))
    r = runner.invoke(app, ["sensitivity", str(path), "-n", "32", "--no-readings", "--results", str(tmp_path),
                            "--only", "matmul_efficiency", "--only", "io_bandwidth"], env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert lines[0].startswith("sensitivity of small_sens: ") and " s (timed on its first samples)" in lines[0]
    text = " ".join(r.output.split())
    assert "total index ± 95% CI (first-order ± 95% CI)" in text and "estimated beforehand:" in text
    assert any("±" in ln and ln.lstrip().startswith("matmul_efficiency") for ln in lines), r.output


def test_readings_of_a_sweep_with_no_axes(tmp_path, runner):
    """One point, no axis: `wsemoe readings` was an internal error (ValueError: cannot reshape array of size 0)."""
    import yaml

    from wsemoe.cli import app

    path = tmp_path / "pt.yaml"
    path.write_text(yaml.safe_dump({"name": "pt", "hardware": "cs2", "model": "qwen3-30b-a3b"}))
    r = runner.invoke(app, ["readings", str(path), "--results", str(tmp_path / "out")])
    assert r.exit_code == 0 and "attn_kernel" in r.output, r.output


def test_sensitivity_refuses_the_unknowns_of_a_system_the_sweep_does_not_hold():
    """`wsemoe.sensitivity(cs2 sweep, hardware='nvl72')` applied NVL72's ranges to the CS-2 points and stored the
    result as the sweep's uncertainty; a system of the sweep (cerebras_serving's nvl72) is still accepted."""
    from wsemoe.analysis.uncertainty import sensitivity as sens
    from wsemoe.errors import ConfigError

    ROOT = Path(__file__).resolve().parents[1]
    with pytest.raises(ConfigError, match="not a system of this sweep"):
        sens.prepare(ROOT / "sweeps" / "quickstart.yaml", hardware="nvl72", samples=8)
    assert sens.prepare(ROOT / "sweeps" / "cerebras_serving.yaml", hardware="nvl72", method="morris",
                        samples=4)[0].unknowns
