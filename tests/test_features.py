"""Features no other test exercised: user constraints, narrow outputs, the rest of feasibility, chunked
evaluation, hardware axes and damaged results (recompute policies and the memory model: test_recompute.py).
Expected values are derived here from unconstrained runs or from docs/cost-model.md, never recorded."""

from __future__ import annotations

import math

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import yaml
from hypothesis import given, settings, strategies as st

import wsemoe
from wsemoe.cli import app
from wsemoe.errors import ConfigError
from wsemoe.sweep import chunked
from wsemoe.sweep.engine import Outputs, Rows
from wsemoe.sweep.feasibility import REASONS, feasibility
from clicheck import one_line_error

REL = 1e-12

# Qwen3-30B-A3B at top-2 on cs2 holding its kept activations in SRAM: a 2×5 grid whose points are
# bound by MFU, step time or memory.
CS2_SRAM = {"preset": "cs2", "kept_activations": "node"}
BASE = {
    "name": "feat", "hardware": CS2_SRAM, "model": {"preset": "qwen3-30b-a3b", "num_experts_per_tok": 2},
    "workload": {"mode": "train", "seq_len": 8192, "attn_kernel": "materialized"},  # every head's scores: attention
    # memory binds at B = 5 in this grid (B = 2 at 5 bytes a score, with attention dropout), so each kind of
    # constraint is the worst violation somewhere
    "axes": {"workload.B": [1, 5], "workload.G": [1, 2, 4, 8, 16]},
}
STEP_MAX, MFU_MIN = 1.0, 0.2
CONSTRAINTS = [{"column": "step_time_s", "max": STEP_MAX}, {"column": "mfu", "min": MFU_MIN}]


@pytest.fixture(scope="module")
def free():
    """The unconstrained sweep: every expectation below is derived from its values."""
    return wsemoe.evaluate(BASE)


def _ratio_text(ratio: float, up: bool) -> str:
    """Three significant digits, rounded away from the limit (up above it, down below it)."""
    step = 10.0 ** (math.floor(math.log10(ratio)) - 2)
    q = ratio / step
    return f"{(math.ceil(q - 1e-9) if up else math.floor(q + 1e-9)) * step:.3g}"


def _reason_text(col: str, g: float, bounds: dict) -> str:
    if col in REASONS:
        return REASONS[col].format(r=_ratio_text(g + 1, True))
    base, side = col.removeprefix("g_").rsplit("_", 1)
    ratio = g + 1 if side == "max" else 1 - g
    return f"{base} is {_ratio_text(ratio, side == 'max')}× its configured {'maximum' if side == 'max' else 'minimum'} " \
           f"({bounds[col]:g})"


def _expected_feasibility(g: dict[str, np.ndarray], bounds: dict):
    """feasible = every g ≤ 0; the reason names the largest g (first on ties) of an infeasible row,
    with the bound it broke."""
    cols = list(g)
    stack = np.column_stack([g[c] for c in cols])
    feasible = np.all(stack <= 0, axis=1)
    reasons = [None if ok else _reason_text(cols[int(np.argmax(row))], float(np.max(row)), bounds)
               for ok, row in zip(feasible, stack)]
    return feasible, reasons


def _reasons(df) -> list:
    return [None if pd.isna(r) else r for r in df["infeasible_reason"].astype(object)]


def _write(tmp_path, cfg) -> str:
    path = tmp_path / "cfg.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return str(path)



# ------------------------------------------------------------------ user constraints

def test_user_constraints_sign_convention_feasibility_and_reason(free):
    df = wsemoe.evaluate({**BASE, "constraints": CONSTRAINTS})
    g_step = (free["step_time_s"].to_numpy() - STEP_MAX) / STEP_MAX
    g_mfu = (MFU_MIN - free["mfu"].to_numpy()) / MFU_MIN
    np.testing.assert_allclose(df["g_step_time_s_max"], g_step, rtol=REL)
    np.testing.assert_allclose(df["g_mfu_min"], g_mfu, rtol=REL)
    feasible, reasons = _expected_feasibility({"g_mem_attn": free["g_mem_attn"].to_numpy(),
                                               "g_mem_moe": free["g_mem_moe"].to_numpy(),
                                               "g_step_time_s_max": g_step, "g_mfu_min": g_mfu},
                                              {"g_step_time_s_max": STEP_MAX, "g_mfu_min": MFU_MIN})
    assert df["feasible"].tolist() == feasible.tolist()
    assert _reasons(df) == reasons
    # the grid is chosen so that each kind of constraint is the worst violation somewhere
    assert {r.split(" is ")[0] if " is " in r else r.split(" needs ")[0] for r in reasons if r} >= \
        {"mfu", "step_time_s", "attention-stage memory"}
    assert feasible.sum() >= 1 and (free["feasible"].to_numpy() & ~feasible).any()
    # a constraint changes feasibility only: every model output stays as it was
    for col in ("step_time_s", "mfu", "mem_peak_node_bytes", "g_mem_attn", "g_mem_moe"):
        np.testing.assert_array_equal(df[col], free[col])


def test_constraint_on_an_input_column(free):
    df = wsemoe.evaluate({**BASE, "constraints": [{"column": "workload.G", "max": 4}]})
    G = free["workload.G"].to_numpy(dtype=float)
    np.testing.assert_allclose(df["g_workload.G_max"], (G - 4) / 4, rtol=REL)
    assert df["feasible"].tolist() == (free["feasible"].to_numpy() & (G <= 4)).tolist()
    feasible, reasons = _expected_feasibility({"g_mem_attn": free["g_mem_attn"].to_numpy(),
                                               "g_mem_moe": free["g_mem_moe"].to_numpy(),
                                               "g_workload.G_max": (G - 4) / 4}, {"g_workload.G_max": 4})
    assert _reasons(df) == reasons
    assert "workload.G is 2× its configured maximum (4)" in reasons


def test_min_and_max_in_one_constraint_and_a_negative_bound(free):
    """Normalised by |bound|: a negative bound keeps the sign convention (g > 0 violated)."""
    df = wsemoe.evaluate({**BASE, "constraints": [{"column": "g_mem_attn", "max": -0.3, "min": -0.6}]})
    x = free["g_mem_attn"].to_numpy()
    np.testing.assert_allclose(df["g_g_mem_attn_max"], (x + 0.3) / 0.3, rtol=REL)
    np.testing.assert_allclose(df["g_g_mem_attn_min"], (-0.6 - x) / 0.6, rtol=REL)
    assert df["feasible"].tolist() == ((x <= -0.3) & (x >= -0.6) & (free["g_mem_moe"].to_numpy() <= 0)).tolist()
    assert df["feasible"].any() and not df["feasible"].all()


def test_a_zero_bound_is_satisfied_at_equality_and_violated_beyond(free):
    """max: 0 cannot divide by |0|; the sign still decides (g = 0 at the bound is satisfied)."""
    df = wsemoe.evaluate({**BASE, "constraints": [{"column": "moe_comm_s", "max": 0},
                                                  {"column": "mfu", "max": 0}]})
    assert (free["moe_comm_s"] == 0).all()
    assert (df["g_moe_comm_s_max"] == 0).all()
    assert (df["g_mfu_max"] > 0).all() and np.isfinite(df["g_mfu_max"]).all()
    # the excess itself (was mfu / 1e-300, 7.8e297: a column no one could read or plot)
    np.testing.assert_allclose(df["g_mfu_max"], free["mfu"], rtol=REL)
    assert not df["feasible"].any()


def test_unknown_constraint_column_is_one_line_naming_its_index(runner, tmp_path):
    cfg = {**BASE, "constraints": [CONSTRAINTS[0], {"column": "step_tme_s", "max": 1}]}
    with pytest.raises(ConfigError) as exc:
        wsemoe.evaluate(cfg)
    assert exc.value.loc == ("constraints", "1", "column")
    res = runner.invoke(app, ["sweep", _write(tmp_path, cfg), "--results", str(tmp_path / "res")])
    one_line_error(res, "[constraints -> 1 -> column]", "unknown constraint column 'step_tme_s'", "did you mean")
    assert not (tmp_path / "res").exists() or not any((tmp_path / "res").iterdir())  # no partial left to resume


def test_constraints_shape_the_pareto_front_and_the_comparison(tmp_path, free):
    cfg = {**BASE, "constraints": CONSTRAINTS, "compare": {"name": "uniform", "baseline": {"workload.G": 1}}}
    res = wsemoe.run_sweep(cfg, out_dir=tmp_path / "out")
    ok = ((free["step_time_s"] <= STEP_MAX) & (free["mfu"] >= MFU_MIN) & free["feasible"]).to_numpy()
    assert res.manifest["feasible"] == int(ok.sum())
    assert set(res.pareto.index) <= set(free.index[ok])
    # every baseline (G = 1) point misses the MFU floor: no speedup can be formed
    assert not (ok & (free["workload.G"] == 1).to_numpy()).any()
    assert res.comparison["speedup_vs_uniform"].isna().all()
    best = free[ok]["tokens_per_s"].max()
    assert res.comparison["best_tokens_per_s"].tolist() == [best]


def test_reason_of_any_other_g_column_and_of_an_unknown_value():
    """Any g_* column counts as a constraint; a NaN g is not satisfied (it cannot be shown ≤ 0), and its reason says
    the constraint cannot be checked there rather than printing a ratio it does not have."""
    out = {"g_mem_attn": np.array([-1.0, 0.5, np.nan, 0.2]), "g_custom": np.array([0.0, 1.0, -1.0, 0.2]),
           "step_time_s": np.array([1.0, 1.0, 1.0, 1.0])}
    extra, _ = feasibility(SimpleNamespace(constraints=[]), Outputs(4, [(Rows(np.arange(4)), out)]), {})
    assert extra["feasible"].tolist() == [True, False, False, False]
    assert list(extra["infeasible_reason"].values()) == [None, "constraint g_custom violated (2× its limit)",
                                                         "no mem_attn at this point, so its constraint cannot be checked",
                                                         REASONS["g_mem_attn"].format(r="1.2")]


def test_two_bounds_on_one_column_both_apply(free):
    df = wsemoe.evaluate({**BASE, "constraints": [{"column": "step_time_s", "max": 0.83},
                                                  {"column": "step_time_s", "max": 5.0}]})
    want = free["feasible"].to_numpy() & (free["step_time_s"].to_numpy() <= 0.83)
    assert want.sum() < free["feasible"].sum()  # the 0.83 s bound does bind
    assert df["feasible"].tolist() == want.tolist()


def test_constraint_on_a_text_column_is_a_config_error(runner, tmp_path):
    cfg = {**BASE, "constraints": [{"column": "bound", "max": 1}]}
    res = runner.invoke(app, ["sweep", _write(tmp_path, cfg), "--results", str(tmp_path / "res")])
    one_line_error(res, "constraints -> 0 -> column")


def test_a_constraint_without_bounds_is_refused():
    with pytest.raises(ConfigError):
        wsemoe.load_config({**BASE, "constraints": [{"column": "mfu"}]})


def test_constraint_columns_on_inputs_are_documented(tmp_path):
    res = wsemoe.run_sweep({**BASE, "constraints": [{"column": "workload.G", "max": 4}]}, out_dir=tmp_path / "o")
    doc = res.manifest["columns"]["g_workload.G_max"]["doc"]
    assert "constraint" in doc


def test_unknown_compare_metric_is_one_line(runner, tmp_path):
    cfg = {**BASE, "compare": {"baseline": {"workload.G": 1}, "metric": "tokens_per_sec"}}
    res = runner.invoke(app, ["sweep", _write(tmp_path, cfg), "--results", str(tmp_path / "res")])
    one_line_error(res, "compare", "tokens_per_sec")


def test_objective_on_a_text_column_is_one_line(runner, tmp_path):
    cfg = {**BASE, "objectives": {"bound": "max"}}
    res = runner.invoke(app, ["sweep", _write(tmp_path, cfg), "--results", str(tmp_path / "res")])
    one_line_error(res, "objectives", "bound")


def test_a_baseline_value_outside_its_axis_is_refused():
    cfg = {**BASE, "compare": {"baseline": {"workload.G": 3}}}
    with pytest.raises(ConfigError):
        wsemoe.evaluate(cfg)


# ------------------------------------------------------------------ output.columns

NARROW = {**BASE, "compare": {"name": "uniform", "baseline": {"workload.G": 1}},
          "objectives": {"tokens_per_s": "max", "mem_peak_node_bytes": "min", "step_time_s": "min"}}


@pytest.fixture(scope="module")
def full_and_narrow(tmp_path_factory):
    root = tmp_path_factory.mktemp("narrow")
    full = wsemoe.run_sweep(NARROW, out_dir=root / "full")
    narrow = wsemoe.run_sweep({**NARROW, "output": {"columns": ["mfu", "moe_layer_time_s"]}}, out_dir=root / "narrow")
    return full, narrow


def test_narrow_output_keeps_exactly_the_contract(full_and_narrow):
    full, narrow = full_and_narrow
    points = pd.read_parquet(narrow.path / "points.parquet")
    want = {"workload.B", "workload.G", "feasible", "infeasible_reason", "bound", "tokens_per_s",
            "mem_peak_node_bytes", "step_time_s", "speedup_vs_uniform", "mfu", "moe_layer_time_s",
            "energy_per_token_j"}   # the comparison's energy beside its speedup
    assert set(points.columns) == want
    assert set(narrow.manifest["columns"]) == want
    every = pd.read_parquet(full.path / "points.parquet")
    assert len(every.columns) > 3 * len(want)
    pd.testing.assert_frame_equal(points.sort_index(), every[points.columns].sort_index())


def test_narrow_output_has_the_same_front_and_comparison(full_and_narrow):
    full, narrow = full_and_narrow
    assert narrow.pareto.index.tolist() == full.pareto.index.tolist()
    cols = [*NARROW["objectives"], "workload.B", "workload.G"]
    pd.testing.assert_frame_equal(narrow.pareto[cols], full.pareto[cols])
    pd.testing.assert_frame_equal(narrow.comparison, full.comparison)
    assert (narrow.path / "comparison.csv").read_text() == (full.path / "comparison.csv").read_text()
    assert narrow.manifest["feasible"] == full.manifest["feasible"]
    assert narrow.manifest["bounds"] == full.manifest["bounds"]


def test_narrow_output_keeps_a_custom_compare_metric(tmp_path):
    cfg = {**BASE, "compare": {"name": "u", "baseline": {"workload.G": 1}, "metric": "sequences_per_s"},
           "output": {"columns": []}}
    res = wsemoe.run_sweep(cfg, out_dir=tmp_path / "o")
    cols = set(pd.read_parquet(res.path / "points.parquet").columns)
    assert cols == {"workload.B", "workload.G", "feasible", "infeasible_reason", "bound", "tokens_per_s",
                    "mem_peak_node_bytes", "sequences_per_s", "speedup_vs_u", "energy_per_token_j"}


def test_unknown_output_column_is_one_line(runner, tmp_path):
    cfg = {**BASE, "output": {"columns": ["mfu", "tokens_per_sec"]}}
    res = runner.invoke(app, ["sweep", _write(tmp_path, cfg), "--results", str(tmp_path / "res")])
    one_line_error(res, "[output -> columns]", "unknown output column 'tokens_per_sec'")
    assert not (tmp_path / "res").exists() or not any((tmp_path / "res").iterdir())


# ------------------------------------------------------------------ chunked evaluation and comparisons

@settings(max_examples=120, deadline=None)
@given(st.integers(1, 300), st.integers(1, 64), st.lists(st.integers(0, 300), max_size=8), st.randoms())
def test_chunk_ranges_tile_exactly_what_is_not_done(total, size, cuts, rnd):
    """The chunks and the done ranges tile [0, total) without overlap; no chunk exceeds the size or
    crosses a done range."""
    edges = sorted({min(c, total) for c in cuts} | {0, total})
    gaps = list(zip(edges[:-1], edges[1:]))
    done = [g for g in gaps if rnd.random() < 0.5]
    rnd.shuffle(done)                                    # order of done ranges must not matter
    ranges = chunked.chunk_ranges(total, size, done)
    covered = np.zeros(total, dtype=int)
    for s, e in ranges + done:
        covered[s:e] += 1
    assert covered.tolist() == [1] * total
    assert all(0 < e - s <= size for s, e in ranges)
    assert ranges == sorted(ranges)


def test_speedup_without_a_group(free):
    """Only B and G are swept: one comparison group; speedup = metric / best feasible G = 1 point."""
    df = wsemoe.evaluate({**BASE, "compare": {"name": "uniform", "baseline": {"workload.G": 1}}})
    feas = free["feasible"].to_numpy()
    base_best = free["tokens_per_s"][feas & (free["workload.G"] == 1).to_numpy()].max()
    want = np.where(feas, free["tokens_per_s"] / base_best, np.nan)
    np.testing.assert_allclose(df["speedup_vs_uniform"], want, rtol=REL)
    assert np.nanmax(want) > 1


def test_speedup_is_nan_when_no_baseline_is_feasible():
    cfg = {**BASE, "constraints": [{"column": "workload.G", "min": 2}],
           "compare": {"name": "uniform", "baseline": {"workload.G": 1}}}
    df = wsemoe.evaluate(cfg)
    assert df["feasible"].any() and df["speedup_vs_uniform"].isna().all()


def test_speedup_per_group_with_zipped_tiling():
    """A zip of (B, G) against a grid of top-k: baselines are found per k in the baseline sub-sweep."""
    cfg = {"name": "z", "hardware": "cs2", "model": "qwen3-30b-a3b", "workload": {"mode": "train", "seq_len": 8192},
           "axes": {"model.num_experts_per_tok": [1, 8]},
           "zip": [{"workload.B": [1, 2, 1, 1], "workload.G": [1, 1, 4, 8]}],
           "compare": {"name": "uniform", "baseline": {"workload.G": 1}}}
    cfg_obj = wsemoe.load_config(cfg)
    sub = chunked.baseline_config(cfg_obj)
    assert sub.zip == [{"workload.B": [1, 2], "workload.G": [1, 1]}] and sub.compare is None
    assert sub.axes == cfg_obj.axes
    df = wsemoe.evaluate(cfg)
    for k in (1, 8):
        rows = df[df["model.num_experts_per_tok"] == k]
        base = rows[rows["feasible"] & (rows["workload.G"] == 1)]["tokens_per_s"].max()
        want = np.where(rows["feasible"], rows["tokens_per_s"] / base, np.nan)
        np.testing.assert_allclose(rows["speedup_vs_uniform"], want, rtol=REL)
    # chunked evaluation with one-point chunks gives the same speedups (baselines are global)
    pd.testing.assert_series_equal(wsemoe.evaluate(cfg, chunk_size=1)["speedup_vs_uniform"], df["speedup_vs_uniform"])


# ------------------------------------------------------------------ hardware axes

def test_a_swept_grid_size_means_what_the_base_field_means():
    swept = wsemoe.evaluate({**BASE, "axes": {"hardware.rows": [6]}}).iloc[0]
    based = wsemoe.evaluate({**BASE, "hardware": {**CS2_SRAM, "rows": 6}, "axes": {}}).iloc[0]
    for col in ("mem_capacity_node_bytes", "mfu", "step_time_s"):
        assert swept[col] == pytest.approx(based[col], rel=REL), col


def test_a_swept_mapping_seed_means_what_the_base_field_means():
    """The random strategy's seed is structural: as an axis it builds one placement per value (it once
    reached the structure cache as an array and failed)."""
    cfg = {"name": "seed", "hardware": "wsc-b200-8x8", "model": "deepseek-v3",
           "workload": {"mode": "decode", "seq_len": 4096}, "mapping": {"strategy": "random", "tp": 4},
           "axes": {"mapping.seed": [0, 3], "workload.B": [1, 8]}}
    swept = wsemoe.evaluate(cfg)
    for seed in (0, 3):
        fixed = wsemoe.evaluate({**cfg, "mapping": {"strategy": "random", "tp": 4, "seed": seed},
                                 "axes": {"workload.B": [1, 8]}})
        mine = swept[swept["mapping.seed"] == seed]
        np.testing.assert_allclose(mine["step_time_s"], fixed["step_time_s"], rtol=REL)
        np.testing.assert_allclose(mine["dispatch_max_link_bytes"], fixed["dispatch_max_link_bytes"], rtol=REL)
    assert swept.groupby("mapping.seed")["dispatch_max_link_bytes"].first().nunique() == 2  # two placements


# ------------------------------------------------------------------ damaged results folders

@pytest.fixture
def written(tmp_path):
    res = wsemoe.run_sweep({**BASE, "output": {"columns": ["mfu"]}}, out_dir=tmp_path / "out", chunk_size=4)
    return res.path


def _show_error(runner, path, *needles):
    res = runner.invoke(app, ["show", str(path)])
    one_line_error(res, f"[{path}]", *needles)


def test_a_part_damaged_in_place_is_one_line(runner, written):
    """Same size, so the cheap size check passes; its checksum does not, and the line says how to recompute it."""
    part = sorted((written / "points.parquet").iterdir())[1]
    part.write_bytes(b"\0" * part.stat().st_size)
    _show_error(runner, written, "does not match its checksum", "--resume")


def test_a_part_with_other_rows_than_its_range_is_one_line(runner, written):
    """A part rewritten with fewer rows (its size and checksum re-recorded) is still caught."""
    import json

    part = sorted((written / "points.parquet").iterdir())[0]
    pd.read_parquet(part).iloc[:2].to_parquet(part)
    man = json.loads((written / "manifest.json").read_text())
    for p in man["parts"]:
        if p["file"] == part.name:
            p["bytes"] = part.stat().st_size
    (written / "manifest.json").write_text(json.dumps(man))
    _show_error(runner, written, "does not match its checksum")


def test_an_unreadable_pareto_csv_is_one_line(runner, written):
    (written / "pareto.csv").write_bytes(b"point,tokens_per_s\n\xff\xfe,1\n")
    _show_error(runner, written, "pareto.csv has 24 bytes, the manifest says")
