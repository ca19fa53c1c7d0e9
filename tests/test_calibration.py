"""Calibration and sensitivity: known parameters recovered; indices of irrelevant and sole parameters."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from wsemoe.analysis.uncertainty import calibrate

from wsemoe.analysis.uncertainty import sensitivity

from wsemoe.analysis.uncertainty import unknowns
from wsemoe.analysis.uncertainty.unknowns import Unknown

QUICKSTART = Path(__file__).resolve().parents[1] / "sweeps" / "quickstart.yaml"   # runs on cs2

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
    from wsemoe.analysis.uncertainty.sampled import Sampled

    q = Sampled(SMALL, [EFF, BW]).evaluate(np.array([truth]))
    targets = [calibrate.Target(f"{col} {g}", "synthetic", "test",
                                (lambda c, g: lambda qs, x: qs["s"][c][:, g])(col, g), float(q[col][0, g]), sigma=0.01)
               for col in ("best_tokens_per_s", "baseline_tokens_per_s") for g in range(2)]
    fit = calibrate.fit({"s": SMALL}, targets, [EFF, BW], samples=256, seed=3)
    assert fit.identifiable.all()
    assert fit.best["matmul_efficiency"] == pytest.approx(truth[0], rel=0.03)  # labelled by the unknown's name
    assert fit.best["io_bandwidth"] == pytest.approx(truth[1], rel=0.03)
    assert (fit.spread["low"] <= fit.best).all() and (fit.best <= fit.spread["high"]).all()
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


def test_usable_fraction_range_starts_at_or_above_every_shipped_need():
    """A shipped micro-batch ran, so its peak fits node SRAM x memory_usable_fraction: the share it needs (peak /
    node SRAM, recomputed from the shipped configs on each weight-streaming preset the unknowns list) bounds the
    range from below at the default readings, the ones the calibrated preset is written for, and under every other
    reading under which all of them fit. The range's 0.66 let the fit write 0.703, below Mixtral-8x7B's 0.739."""
    import itertools

    import yaml

    from wsemoe.analysis.uncertainty.shipped import READINGS, shipped_needs
    from wsemoe.config import presets
    from wsemoe.config import readings as registry

    streaming = [h for h in yaml.safe_load(unknowns.DEFAULT.read_text())
                 if presets.load_hardware(h).weight_source == "streamed"]
    assert set(streaming) >= {"cs2", "cs3"}
    options = registry.load()
    for hardware in streaming:
        hw = presets.load_hardware(hardware)
        u = next(u for u in unknowns.load(hardware) if u.name == "memory_usable_fraction")
        assert u.low >= max(n.need for n in shipped_needs(hw)), hardware
        for choice in itertools.product(*(options[r].options for r in READINGS)):
            need = max(n.need for n in shipped_needs(hw, dict(zip(READINGS, choice))))
            assert need <= u.low or need > u.high, (hardware, choice, need)


def test_every_unknown_is_centred_on_the_value_its_preset_runs_with():
    """A sensitivity band is drawn around the unknowns' nominals: a nominal that is not the preset's value centres
    it on another model than the sweep's (nvl72's matmul_efficiency listed at 0.7 while its preset runs 0.4 put
    the sweep's own 368k tokens/s below the band's 5% quantile). The wafer-of-GPU-dies and NVL72 range is the
    measured-serving stack's pair of fitted GEMM shares."""
    import yaml

    from wsemoe.config import presets

    listed = yaml.safe_load(unknowns.DEFAULT.read_text())
    checked = 0
    for hardware in listed:
        for u in unknowns.load(hardware):
            preset = presets.raw("hardware", u.hardware or hardware)
            for path in u.paths:
                value = preset
                for key in path.removeprefix("hardware.").split(".") if path.startswith("hardware.") else ["?"]:
                    value = value.get(key) if isinstance(value, dict) else None
                if value is not None:
                    assert u.nominal == pytest.approx(value), (hardware, u.name, path, value, u.nominal)
                    checked += 1
    assert checked >= 20
    sglang = yaml.safe_load((unknowns.DEFAULT.parents[3] / "presets" / "gpu" / "stacks.yaml").read_text())
    shares = sglang["backends"]["sglang"]
    for hardware in ("wsc-b200-8x8", "nvl72"):
        u = next(u for u in unknowns.load(hardware) if u.name == "matmul_efficiency")
        assert (u.low, u.high) == (round(shares["eta_xmm"]["value"], 2), round(shares["eta_mm"]["value"], 2))


def test_pe_level_unknowns_are_listed_but_sampled_only_by_name():
    us = unknowns.load("cs3")
    pe = [u for u in us if u.pe_level]
    assert {u.name for u in pe} >= {"pe_clock_hz", "pe_hop_cycles", "pe_turn_cycles", "pe_relay_cycles"}
    assert all(u.source and u.low <= u.nominal <= u.high for u in pe)
    assert not any(u.pe_level for u in unknowns.select(us, []))
    assert [u.name for u in unknowns.select(us, ["pe_hop_cycles"])] == ["pe_hop_cycles"]


def test_a_pe_level_unknown_is_refused_by_a_sweep():
    from wsemoe.analysis.uncertainty.sampled import Sampled
    from wsemoe.config.presets import SWEEPS
    from wsemoe.errors import ConfigError

    hop = unknowns.select(unknowns.load("cs2"), ["pe_turn_cycles"])
    with pytest.raises(ConfigError, match="a sweep serving from SRAM"):
        Sampled(SWEEPS / "bta_topk.yaml", hop)


@pytest.mark.parametrize("text,where", [
    ("cs2: {x: {paths: [hardware.nope], range: [0, 1], nominal: 0.5}}", "paths"),
    ("cs2: {x: {paths: [hardware.pe.nope], range: [0, 1], nominal: 0.5}}", "paths"),
    ("cs2: {x: {paths: [hardware.matmul_efficiency], range: [1, 0], nominal: 0.5}}", "range"),
    ("cs2: {x: {paths: [hardware.matmul_efficiency], range: [0, 1], nominal: 5}}", "nominal"),
    ("cs2: {x: {paths: [hardware.matmul_efficiency], range: [0, 1], nominal: 0.5, color: red}}", "x"),
    ("nvl72: {}", "no calibration unknowns"),
    # a key YAML reads as a number was an internal error (sorting int beside str); booleans were read as numbers
    ("1: {}\ncs3: {}", "no calibration unknowns"),
    ("cs2: {x: {paths: [hardware.expert_half_tokens], range: [0, 256], nominal: true}}", "nominal: a number"),
    ("cs2: {x: {paths: [hardware.matmul_efficiency], range: [0.3, 0.7], nominal: 0.5, named_only: 'no'}}",
     "named_only: true or false"),
    # Past the field's own limits (sampling and fitting write past the spec's checks: calibrate fitted an
    # efficiency of 3.2 its loader then refused, and sensitivity reported throughput above peak):
    ("cs2: {x: {paths: [hardware.matmul_efficiency], range: [0.3, 5], nominal: 0.5}}", "less than or equal to 1"),
    ("cs2: {x: {paths: [hardware.pe.hop_cycles], range: [-1, 4], nominal: 1}}", "greater than or equal to 0"),
    ("cs2: {x: {paths: [hardware.io_in_bw_bytes_per_s], range: [1.0e+11, 1.0e+308], nominal: 1.5e+11}}",
     "magnitude at most"),
    ("cs2: {x: {paths: [workload.seq_len], values: [2048.5, 4096], nominal: 4096}}", "valid integer"),
    ("cs2: {x: {paths: [workload.seq_len], range: [2048, 4096], nominal: 4096}}", "whole number"),
    # two unknowns on one field: the second's samples overwrote the first's, whose indices read 0.00
    ("cs2: {x: {paths: [workload.seq_len], values: [2048, 2048, 4096], nominal: 4096}}", "listed twice"),
    ("cs2: {a: {paths: [hardware.matmul_efficiency], range: [0.3, 0.7], nominal: 0.5},\n"
     "     b: {paths: [hardware.matmul_efficiency], range: [0.4, 0.6], nominal: 0.5}}", "both set"),
])
@pytest.mark.parametrize("command", ["calibrate", "sensitivity"])
def test_bad_unknowns_file_is_one_line(tmp_path, runner, text, where, command):
    from wsemoe.cli import app

    path = tmp_path / "u.yaml"
    path.write_text(text)
    args = (["calibrate", "--hardware", "cs2", "-o", str(tmp_path / "out")] if command == "calibrate"
            else ["sensitivity", str(QUICKSTART), "--results", str(tmp_path / "out"), "-n", "8"])
    r = runner.invoke(app, [*args, "--unknowns", str(path)])
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
    assert {p.name for p in folder.iterdir()} == {"indices.csv", "bands.csv", "meta.json", ".wsemoe.json"}
    r = runner.invoke(app, ["show", str(root / "small_cal")])
    assert r.exit_code == 0 and "sensitivity of speedup_vs_uniform" in r.output
    r = runner.invoke(app, ["plot", str(root / "small_cal")])
    assert r.exit_code == 0 and "sensitivity_tornado.png" in r.output
    from wsemoe.report.figures.view import ResultsView

    view = ResultsView.load(root / "small_cal")
    assert view.band("best_tokens_per_s", "model.num_experts", [8, 128]) is not None


def test_an_unknown_no_target_sees_is_unidentifiable_and_kept_at_nominal():
    """expert_half_tokens cannot move a target that reads only the streaming-bound uniform baseline: its total
    effect is exactly 0, so it is reported and not fitted; the bandwidth, which sets that baseline, is fitted."""
    from wsemoe.analysis.uncertainty.sampled import Sampled

    cfg = {**SMALL, "sparsity": {"vary": "num_experts", "values": [128], "hold": "active"},
           "axes": {"workload.B": [2], "workload.G": [1, 2]}}
    goal = float(Sampled(cfg, [BW]).evaluate(np.array([[2.0e11]]))["baseline_tokens_per_s"][0, 0])
    target = calibrate.Target("uniform", "synthetic", "test", lambda q, x: q["s"]["baseline_tokens_per_s"][:, 0], goal,
                              sigma=0.01)
    fit = calibrate.fit({"s": cfg}, [target], [HALF, BW], samples=64, seed=2)
    assert list(fit.identifiable) == [False, True]
    assert fit.index[0] == 0.0 and fit.index[1] > 1.0  # σ = 1%: the bandwidth moves the baseline by tens of σ
    assert fit.best.iloc[0] == HALF.nominal and fit.best.iloc[1] == pytest.approx(2.0e11, rel=0.03)


def test_leave_one_out_predicts_each_target_from_the_others():
    """One unknown u in [0, 1]; three targets want u = 0.3, 0.3 and 0.9 (σ = 0.05, residual (u − g)/σ). All
    three: χ² is least at their mean, 0.5. Without the first (or second): the others meet at 0.6, which misses
    it by (0.6 − 0.3)/0.05 = +6σ. Without the third: the first two meet at 0.3, which misses 0.9 by −12σ."""
    from wsemoe.analysis.uncertainty import fitting

    def residuals(U):
        return np.column_stack([(U[:, 0] - g) / 0.05 for g in (0.3, 0.3, 0.9)])

    s = fitting.search(residuals, 1, n=256, seed=1)
    assert s.U[s.best, 0] == pytest.approx(0.5, abs=0.01)
    assert fitting.leave_one_out(s) == pytest.approx([6.0, 6.0, -12.0], abs=0.2)


def test_search_reaches_a_minimum_on_a_bound_and_inside():
    """Residuals (u₀ − 1)/0.02 and (u₁ − 0.37)/0.02: χ² is 0 at (1, 0.37), u₀ on its bound. A scrambled Sobol
    sample never takes u₀ = 1 exactly; the fit's best must be within 1/128 of each (χ² below (1/128/0.02)² · 2
    ≈ 0.31), and no neighbour 1/128 away along either unknown may beat it."""
    from wsemoe.analysis.uncertainty import fitting

    def residuals(U):
        return np.column_stack([(U[:, 0] - 1.0) / 0.02, (U[:, 1] - 0.37) / 0.02])

    s = fitting.search(residuals, 2, n=32, seed=1)
    u = s.U[s.best]
    assert u[0] == 1.0 and u[1] == pytest.approx(0.37, abs=1 / 128)
    chi2 = lambda x: float((residuals(np.atleast_2d(x)) ** 2).sum())   # noqa: E731
    for k in range(2):
        for step in (-1 / 128, 1 / 128):
            x = u.copy()
            x[k] = min(max(x[k] + step, 0.0), 1.0)
            assert chi2(x) >= s.chi2[s.best] - 1e-12


def test_total_effects_zero_for_an_inert_unknown_and_one_for_the_sole_one():
    """Residuals 3·u₁ and u₁² move with u₁ alone: u₀ and u₂ have no effect (exactly 0), u₁ all of it (index 1).
    The RMS effect of u₁ on 3·u₁: √(E[(3a − 3b)²]/2) = 3·√(Var u) = 3/√12 ≈ 0.87σ for independent uniform a, b."""
    from wsemoe.analysis.uncertainty import fitting

    effect, idx = fitting.total_effects(lambda U: np.column_stack([3 * U[:, 1], U[:, 1] ** 2]), d=3, n=64, seed=4)
    assert np.all(idx[0] == 0) and np.all(idx[2] == 0) and np.all(effect[0] == 0)
    assert idx[1] == pytest.approx([1.0, 1.0], abs=0.15)
    assert effect[1, 0] == pytest.approx(3 / np.sqrt(12), rel=0.15)


def test_calibrate_per_reading_with_loo_and_bounds_on_a_small_run(tmp_path, runner):
    """χ² per reading (one reading varied: 3 fits), leave-one-out per target, every fitted value inside its
    sourced range, the preset untouched and the fitted preset a file beside it."""
    from wsemoe.cli import app
    from wsemoe.config import presets

    before = presets.raw("hardware", "cs2")
    out = tmp_path / "cal"
    r = runner.invoke(app, ["calibrate", "-o", str(out), "-n", "8", "--only", "matmul_efficiency",
                            "--only", "io_bandwidth", "--reading", "attn_kernel"], env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    assert {p.name for p in out.iterdir()} - {".wsemoe.json"} == {"cs2.yaml", "cs2-calibrated.yaml", "cs2-calibrated.diff", "fit.csv",
                                               "residuals.csv", "readings.csv", "fit.json"}
    assert "χ² per reading" in r.output and "leave-one-out" in r.output
    per = pd.read_csv(out / "readings.csv")
    assert sorted(per["attn_kernel"]) == ["flash", "materialized", "per_head"]
    assert per["delta_chi2"].min() == 0 and (per["chi2"] == per["chi2_bta"] + per["chi2_shipped"]).all()
    # every head's scores held fails Cerebras' shipped micro-batches: by far the largest shipped misfit
    assert per.set_index("attn_kernel").loc["materialized", "chi2_shipped"] > 50
    res = pd.read_csv(out / "residuals.csv")
    assert res["loo_sigma"].notna().all() and set(res["reading"]) == set(
        f"attn_kernel={k}" for k in ("per_head", "materialized", "flash"))
    fit = pd.read_csv(out / "fit.csv")
    assert ((fit["fitted"] >= fit["range_low"]) & (fit["fitted"] <= fit["range_high"])).all()
    assert fit.set_index("unknown").loc["io_bandwidth", "range_high"] == 1.5e11  # the spec bounds the fit
    assert presets.raw("hardware", "cs2") == before
    from wsemoe.config.yamlio import load
    from wsemoe.specs import HardwareSpec

    fitted = HardwareSpec(**load(out / "cs2-calibrated.yaml"))  # a valid hardware spec
    assert 0.3 <= fitted.matmul_efficiency <= 0.75  # inside its sourced range


def test_calibration_table_shows_each_unknown_in_its_unit():
    """io_bandwidth in bytes/s: 1.5e11 nominal, 1.308e11 fitted, range 1.2e11–1.5e11 read as 150, 130.8 and
    120 – 150 GB/s (÷ 1e9), in the unknowns' table and in the per-reading one; a fraction stays as it is."""
    import io
    from types import SimpleNamespace

    import pandas as pd
    from rich.console import Console

    from wsemoe.report.terminal import tables

    fit = pd.DataFrame([
        {"unknown": "io_bandwidth", "unit": "bytes/s", "nominal": 1.5e11, "fitted": 1.308e11, "spread_low": 1.3e11,
         "spread_high": 1.35e11, "range_low": 1.2e11, "range_high": 1.5e11, "identifiable": True, "at_edge": False,
         "effect_sigma": 0.17, "low_source": "80% of line rate", "high_source": "line rate"},
        {"unknown": "memory_usable_fraction", "unit": "1", "nominal": 0.85, "fitted": 0.87, "spread_low": 0.86,
         "spread_high": 0.9, "range_low": 0.64, "range_high": 0.95, "identifiable": True, "at_edge": False,
         "effect_sigma": 0.27, "low_source": "shipped", "high_source": "assumption"}])
    residuals = pd.DataFrame({"target": ["t"], "published": ["1×"], "nominal": [1.0], "fitted": [1.0],
                              "residual_sigma": [0.0], "loo_sigma": [0.0]})
    per_reading = pd.DataFrame({"chi2": [1.0], "chi2_bta": [1.0], "chi2_shipped": [0.0], "delta_chi2": [0.0],
                                "fitted": ["io_bandwidth 1.308e+11"], "unidentifiable": [""]})
    out = io.StringIO()
    one = SimpleNamespace(chi2=1.0, residuals=residuals, best=[1.308e11, 0.87], identifiable=[True, True],
                          unknowns=[SimpleNamespace(name="io_bandwidth", paths=["hardware.io_in_bw_bytes_per_s"]),
                                    SimpleNamespace(name="memory_usable_fraction",
                                                    paths=["hardware.memory_usable_fraction"])])
    Console(file=out, width=200, color_system=None).print(tables.calibration([({}, one)], fit, per_reading))
    text = out.getvalue()
    row = next(line for line in text.splitlines() if line.startswith("│ io_bandwidth"))
    assert "GB/s" in row and "│ 150 " in row and "130.8" in row and "120 – 150" in row and "e+11" not in row
    frac = next(line for line in text.splitlines() if line.startswith("│ memory_usable_fraction"))
    assert "0.87" in frac and "0.64 – 0.95" in frac
    assert "io_bandwidth: low 120 GB/s (80% of line rate); high 150 GB/s (line rate)" in text
    # the per-reading table names each fitted unknown in its unit too, not as a raw SI number
    assert "io_bandwidth 130.8 GB/s; memory_usable_fraction 0.87" in text and "e+11" not in text


@pytest.mark.parametrize("seed", [-1, 1.5, None, True])
def test_a_seed_that_is_not_a_whole_number_from_0_is_one_line(seed, tmp_path):
    """The API passed -1, 1.5 or None to numpy (ValueError, TypeError from deep inside the run)."""
    import wsemoe
    from wsemoe.errors import ConfigError

    with pytest.raises(ConfigError, match="whole number from 0"):
        wsemoe.calibrate("cs2", samples=8, seed=seed, out_dir=tmp_path / "c")
    with pytest.raises(ConfigError, match="whole number from 0"):
        wsemoe.sensitivity(QUICKSTART, samples=8, seed=seed, out_root=tmp_path)
    assert not list(tmp_path.iterdir())
