"""Search: deterministic with a seed, every row equals the grid's row of its index, categories only
from the axis lists, the exact front of a small space found, resume replays, CLI and Python."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import yaml
from hypothesis import given, settings, strategies as st

from wsemoe.cli import app
from wsemoe.config.loader import load_config
from wsemoe.store import partial as partial_mod
from wsemoe.sweep import searchrun
from wsemoe.store import store
from wsemoe.sweep.run import run_sweep
from wsemoe.sweep.search import Variation
from wsemoe.sweep.space import Grid

SPACE = {"name": "space", "hardware": {"preset": "cs2", "kept_activations": "node"}, "model": "qwen3-30b-a3b", "workload": {"mode": "train", "seq_len": 8192},
         "axes": {"workload.attn_kernel": ["materialized", "flash"], "model.num_experts": [8, 32, 64, 128],
                  "workload.B": {"range": [1, 16]}, "workload.G": {"range": [1, 16]}},
         "objectives": {"tokens_per_s": "max", "mem_peak_node_bytes": "min"}}


def _search(evaluations, seed=1, **extra):
    return {**SPACE, "name": "searched", "search": {"evaluations": evaluations, "seed": seed, "population": 40}, **extra}


def _points(path):
    return pd.read_parquet(path / "points.parquet").sort_index()


@pytest.fixture(scope="module")
def grid(tmp_path_factory):
    res = run_sweep(SPACE, out_root=tmp_path_factory.mktemp("grid"))
    return res, _points(res.path)


def test_same_seed_same_points_other_seed_other_points(tmp_path):
    a = run_sweep(_search(300, seed=3), out_dir=tmp_path / "a")
    b = run_sweep(_search(300, seed=3), out_dir=tmp_path / "b")
    c = run_sweep(_search(300, seed=4), out_dir=tmp_path / "c")
    pd.testing.assert_frame_equal(pd.read_parquet(a.path / "points.parquet"), pd.read_parquet(b.path / "points.parquet"))
    assert a.manifest["search"] == b.manifest["search"]
    assert set(_points(a.path).index) != set(_points(c.path).index)


def test_every_row_equals_the_grid_row_of_its_index(grid, tmp_path):
    res = run_sweep(_search(500), out_dir=tmp_path / "s")
    got = _points(res.path)
    assert len(got) == res.manifest["points"] == 500 and got.index.is_unique
    pd.testing.assert_frame_equal(got, grid[1].loc[got.index], check_categorical=False)
    assert res.manifest["search"]["space_points"] == 2048 and res.manifest["search"]["stopped"] == "budget"


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_finds_the_exact_front_of_a_small_space(tmp_path, seed):
    one = {"pareto": {"group_by": []}}  # one front over every point
    exact = run_sweep({**SPACE, **one}, out_dir=tmp_path / "g")
    res = run_sweep({**_search(600, seed=seed), **one}, out_dir=tmp_path / "s")  # 29% of the points
    assert set(res.pareto.index) == set(exact.pareto.index)


def _fronts(front) -> set:
    return set(map(tuple, front[["model.num_experts", *SPACE["objectives"]]].to_numpy().tolist()))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_finds_the_front_of_every_group(grid, tmp_path, seed):
    """By default each E has its own front (a model axis); the search ranks points within their group, so it
    finds every group's front, not only the front of the E that wins overall. Ties may be found through
    another point of the tie, so the fronts are compared by group and objective values."""
    assert grid[0].manifest["pareto_fronts"] == 4
    res = run_sweep(_search(900, seed=seed), out_dir=tmp_path / "s")  # 44% of the points
    assert _fronts(res.pareto) == _fronts(grid[0].pareto)


def test_budget_beyond_the_space_evaluates_each_point_once(tmp_path):
    cfg = {**_search(10_000), "axes": {"workload.attn_kernel": ["materialized", "flash"], "workload.B": [1, 2, 3],
                                       "workload.G": {"range": [1, 8]}}}
    res = run_sweep(cfg, out_dir=tmp_path / "s")
    got = _points(res.path)
    assert got.index.is_unique and len(got) <= 48 and res.manifest["search"]["budget"] == 48


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 9), st.booleans()), min_size=1, max_size=5), st.integers(0, 2**31))
def test_bred_children_are_in_range_new_and_distinct(factors, seed):
    axes = [{f"f{i}": [f"v{j}" for j in range(n)] if cat else list(range(1, n + 1))} for i, (n, cat) in enumerate(factors)]
    grid = Grid(SimpleNamespace(factors=lambda: axes))
    var = Variation(grid)
    rng = np.random.default_rng(seed)
    pop = np.floor(rng.random((12, len(grid.shape))) * np.asarray(grid.shape)).astype(np.int64)
    var.seen = np.unique(var.key(pop))
    child = var.breed(pop, np.zeros(12), rng.integers(0, 3, 12).astype(float), rng.random(12), 20, rng)
    keys = var.key(child)
    assert np.all((child >= 0) & (child < np.asarray(grid.shape)))
    assert len(np.unique(keys)) == len(keys) and not np.isin(keys, var.seen).any()
    assert len(child) <= min(20, grid.size - len(var.seen))
    if grid.size - len(var.seen) >= 40:  # plenty of room: a whole generation is bred
        assert len(child) == 20


def test_categorical_values_come_only_from_the_axis_lists(tmp_path):
    cfg = {**_search(400), "axes": {"workload.recompute": ["none", "selective", "full"],
                                    "workload.attn_kernel": ["materialized", "flash"],
                                    "model.num_experts": [8, 32, 128], "workload.B": {"range": [1, 12]},
                                    "workload.G": {"range": [1, 12]}}}
    got = _points(run_sweep(cfg, out_dir=tmp_path / "s").path)
    assert set(got["workload.recompute"]) <= {"none", "selective", "full"}
    assert set(got["workload.attn_kernel"]) <= {"materialized", "flash"}
    assert set(got["model.num_experts"]) <= {8, 32, 128}
    assert len(set(got["workload.recompute"])) == 3  # every category gets tried


def test_resume_replays_keeps_matching_parts_and_rewrites_the_rest(tmp_path):
    want = run_sweep(_search(500), out_dir=tmp_path / "ref", chunk_size=64)
    cfg = load_config(_search(500))
    run = partial_mod.PartialRun(tmp_path / "out", cfg.config_hash(), resume=False)
    searchrun.run_search(cfg, None, run.path, 64)
    parts = sorted(run.parts.iterdir())
    parts[-1].unlink()  # killed before the last part was renamed into place
    other = run.parts / store.part_name(64, 128)  # a part from a run that went another way
    other.write_bytes((run.parts / store.part_name(0, 64)).read_bytes())
    res = run_sweep(_search(500), out_dir=tmp_path / "out", chunk_size=100, resume=True)
    assert res.manifest["points"] == 500
    pd.testing.assert_frame_equal(_points(res.path), _points(want.path))
    store.verify(res.path, res.manifest)


def test_search_from_the_cli_and_refused_with_workers(runner, tmp_path):
    cfg = tmp_path / "s.yaml"
    cfg.write_text(yaml.safe_dump(_search(200)))
    r = runner.invoke(app, ["sweep", str(cfg), "--results", str(tmp_path / "res")])
    assert r.exit_code == 0 and "nsga2" in r.output and "200 of 2,048" in r.output, r.output
    r = runner.invoke(app, ["sweep", str(cfg), "--results", str(tmp_path / "res"), "-f", "--workers", "2"])
    assert r.exit_code != 0 and r.output.count("\n") == 1 and "--workers" in r.output
    r = runner.invoke(app, ["check", str(cfg)])
    assert r.exit_code == 0 and "2,048 points" in r.output and "200 evaluations" in r.output


@pytest.mark.parametrize("search,needle", [({"evaluations": 0}, "evaluations"), ({"evaluations": 10, "algo": "x"}, "algo"),
                                           ({"evaluations": 10, "algorithm": "cmaes"}, "algorithm"),
                                           ({"evaluations": 10, "population": 2}, "population"),
                                           ({"evaluations": True}, "evaluations"), ({"evaluations": 5}, "axis")])
def test_bad_search_settings_are_one_line(runner, tmp_path, search, needle):
    cfg = tmp_path / "s.yaml"
    cfg.write_text(yaml.safe_dump({**SPACE, "search": search, **({"axes": {}} if needle == "axis" else {})}))
    r = runner.invoke(app, ["sweep", str(cfg), "--results", str(tmp_path / "res")])
    assert r.exit_code != 0 and r.output.count("\n") == 1 and needle in r.output, r.output
    assert not (tmp_path / "res").exists() or not any((tmp_path / "res").iterdir())


# ---------------------------------------------------------------- any space: numeric, categorical, mixed (issue 18)

KINDS = {
    "numeric only": {"workload.B": {"range": [1, 16]}, "workload.G": {"range": [1, 16]}},
    "categorical only": {"workload.attn_kernel": ["materialized", "flash"], "workload.recompute": ["full", "none"]},
    "mixed": {"workload.attn_kernel": ["materialized", "flash"], "workload.G": {"range": [1, 16]}},
}


@pytest.mark.parametrize("kind", list(KINDS))
def test_search_over_any_kind_of_axes_equals_the_grid(kind, tmp_path):
    """Each row of a search equals the grid's row of its index, whatever the axes; a budget below the space
    searches (numeric-only axes used to fail with IndexError in the engine), one at or above enumerates."""
    space = {**SPACE, "name": "k", "axes": KINDS[kind]}
    grid = _points(run_sweep(space, out_dir=tmp_path / "grid").path)
    n = len(grid)
    for budget in sorted({max(1, n // 2), n, 10 * n}):
        res = run_sweep({**space, "name": f"k{budget}", "search": {"evaluations": budget, "seed": 1, "population": 4}},
                        out_dir=tmp_path / f"s{budget}")
        got = _points(res.path)
        search = res.manifest["search"]
        assert len(got) == min(budget, n) and got.index.is_unique
        pd.testing.assert_frame_equal(got, grid.loc[got.index], check_categorical=False)
        assert search["enumerated"] == (budget >= n)
        if budget >= n:  # every point, in grid order, and the manifest says why
            assert list(got.index) == list(range(n)) and search["evaluated"] == n
            assert "enumerated" in search["stopped"] and search["generations"] == 0
        else:
            assert search["stopped"] == "budget" and search["evaluated"] == budget


def test_numeric_only_search_from_the_cli_and_the_shipped_wide_bta_topk(tmp_path, runner):
    cfg = yaml.safe_load(open("sweeps/bta_topk.yaml"))
    cfg.update(name="wide", axes={"workload.B": {"range": [1, 64]}, "workload.G": {"range": [1, 256]}},
               search={"evaluations": 300, "seed": 1})
    cfg.pop("sparsity")
    cfg.pop("compare")
    (tmp_path / "wide.yaml").write_text(yaml.safe_dump(cfg))
    r = runner.invoke(app, ["sweep", str(tmp_path / "wide.yaml"), "--results", str(tmp_path / "res"), "-q"])
    assert r.exit_code == 0, r.output
    assert store.load_manifest(tmp_path / "res" / "wide")["points"] == 300
