"""Calibration and sensitivity: known parameters recovered; indices of irrelevant and sole parameters."""

from __future__ import annotations

import numpy as np
import pytest

from wsemoe.analysis import calibrate, sensitivity, unknowns
from wsemoe.analysis.unknowns import Unknown

SMALL = {"name": "small_cal", "hardware": "cs2", "model": "qwen3-30b-a3b",
         "workload": {"mode": "train", "seq_len": 8192},
         "sparsity": {"vary": "num_experts", "values": [8, 128], "hold": "active"},
         "axes": {"workload.B": [1, 2], "workload.G": [1, 8, 32]},
         "compare": {"name": "uniform", "baseline": {"workload.G": 1}}}
EFF = Unknown("matmul_efficiency", ("hardware.matmul_efficiency",), 0.3, 0.7, 0.5)
BW = Unknown("io_bandwidth", ("hardware.io_in_bw_bytes_per_s", "hardware.io_out_bw_bytes_per_s"), 1e11, 3e11, 1.5e11,
             "log")
HALF = Unknown("expert_half_tokens", ("hardware.expert_half_tokens",), 0.0, 256.0, 64.0)


@pytest.mark.parametrize("truth", [(0.42, 2.2e11), (0.61, 1.2e11)])
def test_calibration_recovers_known_parameters(truth):
    """Targets generated from known values (BTA and uniform tokens/s per point) are fitted back."""
    from wsemoe.analysis.sampled import Sampled

    q = Sampled(SMALL, [EFF, BW]).evaluate(np.array([truth]))
    targets = [calibrate.Target(f"{col} {g}", "synthetic", "test",
                                (lambda c, g: lambda qs, x: qs["s"][c][:, g])(col, g), float(q[col][0, g]), sigma=0.01)
               for col in ("best_tokens_per_s", "baseline_tokens_per_s") for g in range(2)]
    seen = []
    fit = calibrate.fit({"s": SMALL}, targets, [EFF, BW], samples=256, seed=3,
                        on_progress=lambda done, total, what: seen.append((done, total)))
    assert fit.best["matmul_efficiency"] == pytest.approx(truth[0], rel=0.03)  # labelled by the unknown's name
    assert fit.best["io_bandwidth"] == pytest.approx(truth[1], rel=0.03)
    assert (fit.spread["low"] <= fit.best).all() and (fit.best <= fit.spread["high"]).all()
    assert seen[-1] == (512, 512) and [d for d, _ in seen] == sorted(d for d, _ in seen)  # both stages counted
    assert fit.residuals["residual_sigma"].abs().max() < 3


def test_indices_of_irrelevant_and_sole_parameter(tmp_path, monkeypatch):
    """A streaming-bound uniform baseline depends on the I/O bandwidth only: its index ≈ 1, matmul
    efficiency's ≈ 0 (expert_half_tokens likewise)."""
    cfg = {**SMALL, "sparsity": {"vary": "num_experts", "values": [128], "hold": "active"},
           "axes": {"workload.B": [2], "workload.G": [1, 2]}}
    path = tmp_path / "u.yaml"
    path.write_text("cs2:\n"
                    "  matmul_efficiency: {paths: [hardware.matmul_efficiency], range: [0.45, 0.55], nominal: 0.5}\n"
                    "  io_bandwidth: {paths: [hardware.io_in_bw_bytes_per_s], range: [1.0e+11, 2.0e+11], nominal: 1.5e+11}\n"
                    "  expert_half_tokens: {paths: [hardware.expert_half_tokens], range: [0, 32], nominal: 16}\n")
    r = sensitivity.analyse(cfg, samples=800, unknowns_file=path)
    idx = r.indices[(r.indices["quantity"] == "baseline_tokens_per_s")].set_index("parameter")
    assert idx.loc["io_bandwidth", "ST"] == pytest.approx(1.0, abs=0.05)
    assert idx.loc["io_bandwidth", "S1"] == pytest.approx(1.0, abs=0.1)
    for p in ("matmul_efficiency", "expert_half_tokens"):
        assert abs(idx.loc[p, "ST"]) < 0.02 and abs(idx.loc[p, "S1"]) < 0.05
    band = r.bands[r.bands["quantity"] == "baseline_tokens_per_s"].iloc[0]
    assert band["q05"] <= band["nominal"] <= band["q95"]


def test_unknown_maps_unit_interval():
    u = Unknown("s", ("workload.seq_len",), 2048, 8192, 8192, values=(2048.0, 4096.0, 8192.0))
    assert list(u.value(np.array([0.0, 0.4, 0.99]))) == [2048, 4096, 8192]
    assert BW.value(np.array([0.0, 1.0])) == pytest.approx([1e11, 3e11])
    assert BW.unit(BW.value(0.3)) == pytest.approx(0.3)


def test_shipped_unknowns_load_with_sources():
    us = unknowns.load("cs2")
    assert {u.name for u in us} >= {"matmul_efficiency", "expert_half_tokens", "memory_usable_fraction",
                                    "io_bandwidth", "seq_len"}
    assert all(u.source and u.low <= u.nominal <= u.high for u in us)


@pytest.mark.parametrize("text,where", [
    ("cs2: {x: {paths: [hardware.nope], range: [0, 1], nominal: 0.5}}", "paths"),
    ("cs2: {x: {paths: [hardware.matmul_efficiency], range: [1, 0], nominal: 0.5}}", "range"),
    ("cs2: {x: {paths: [hardware.matmul_efficiency], range: [0, 1], nominal: 5}}", "nominal"),
    ("cs2: {x: {paths: [hardware.matmul_efficiency], range: [0, 1], nominal: 0.5, color: red}}", "x"),
    ("nvl72: {}", "no calibration unknowns"),
])
def test_bad_unknowns_file_is_one_line(tmp_path, runner, text, where):
    from wsemoe.cli import app

    path = tmp_path / "u.yaml"
    path.write_text(text)
    r = runner.invoke(app, ["calibrate", "--unknowns", str(path), "-o", str(tmp_path / "out")])
    assert r.exit_code != 0 and "Traceback" not in r.output
    assert where in r.output and not (tmp_path / "out").exists()


def test_sensitivity_show_plot_end_to_end(tmp_path, runner):
    """CLI: sensitivity writes results/<name>/sensitivity/; show prints it; plot draws bands and the tornado."""
    import yaml

    from wsemoe.cli import app

    cfg = tmp_path / "small_cal.yaml"
    cfg.write_text(yaml.safe_dump({**SMALL, "axes": {"workload.B": [1, 2], "workload.G": [1, 8, 32]}}))
    root = tmp_path / "results"
    r = runner.invoke(app, ["sensitivity", str(cfg), "-n", "64", "--results", str(root), "--only", "matmul_efficiency",
                            "--only", "io_bandwidth"])
    assert r.exit_code == 0, r.output
    # groups named by what varies between them (E; its zipped expert width says the same), values with units
    text = " ".join(r.output.split())
    assert "num_experts=8 " in text and "num_experts=128 " in text and "moe_intermediate_size" not in text
    assert "sensitivity of best_tokens_per_s [k tokens/s]" in text and "nominal [k tokens/s]" in text
    assert "e+0" not in text  # no 7.46e+04 without a unit
    folder = root / "small_cal" / "sensitivity"
    assert {p.name for p in folder.iterdir()} == {"indices.csv", "bands.csv", "meta.json"}
    r = runner.invoke(app, ["show", str(root / "small_cal")])
    assert r.exit_code == 0 and "sensitivity of speedup_vs_uniform" in r.output
    r = runner.invoke(app, ["plot", str(root / "small_cal")])
    assert r.exit_code == 0 and "sensitivity_tornado.png" in r.output
    from wsemoe.report.figures.view import ResultsView

    view = ResultsView.load(root / "small_cal")
    assert view.band("best_tokens_per_s", "model.num_experts", [8, 128]) is not None


def test_calibrate_writes_beside_original_and_leaves_preset(tmp_path, runner):
    from wsemoe.cli import app
    from wsemoe.config import presets

    before = presets.raw("hardware", "cs2")
    out = tmp_path / "cal"
    r = runner.invoke(app, ["calibrate", "-o", str(out), "-n", "16", "--only", "matmul_efficiency"])
    assert r.exit_code == 0, r.output
    assert {p.name for p in out.iterdir()} == {"cs2.yaml", "cs2-calibrated.yaml", "cs2-calibrated.diff", "fit.csv",
                                               "residuals.csv", "fit.json"}
    assert "+matmul_efficiency:" in (out / "cs2-calibrated.diff").read_text()
    assert presets.raw("hardware", "cs2") == before
    from wsemoe.config.yamlio import load
    from wsemoe.specs import HardwareSpec

    fitted = HardwareSpec(**load(out / "cs2-calibrated.yaml"))  # a valid hardware spec
    assert 0.3 <= fitted.matmul_efficiency <= 0.7
