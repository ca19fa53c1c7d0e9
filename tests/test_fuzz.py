"""Hostile input: mutated sweep configs and YAML texts end in one clean line, never a traceback.

Example counts come from the hypothesis profile (tests/conftest.py): 100 derandomized examples per
test in `make test`, 10,000 randomized ones in `make fuzz`.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml
from hypothesis import given, strategies as st

from wsemoe.cli import app

BASE = {
    "name": "fz", "hardware": "cs2", "model": "qwen3-30b-a3b",
    "workload": {"mode": "train", "seq_len": 1024, "B": 2},
    "mapping": {}, "balance": {},
    "axes": {"workload.G": [1, 2]},
    "objectives": {"tokens_per_s": "max"},
    "compare": {"name": "uniform", "baseline": {"workload.G": 1}},
}

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**6, 10**12) | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3),
    max_leaves=6)

PATHS = [("name",), ("hardware",), ("model",), ("workload",), ("workload", "mode"), ("workload", "seq_len"),
         ("workload", "B"), ("workload", "G"), ("mapping", "tp"), ("mapping", "strategy"), ("balance", "balancer"),
         ("balance", "zipf_s"), ("axes",), ("axes", "workload.G"), ("axes", "model.num_experts"),
         ("axes", "hardware"), ("objectives",), ("compare",), ("compare", "baseline"), ("zip",), ("sparsity",),
         ("constraints",), ("output",), ("junk",), ("mapping", "placement"), ("workload", "bytes_per_act")]


def _mutate(cfg, path, value, delete):
    cfg = copy.deepcopy(cfg)
    node = cfg
    for p in path[:-1]:
        if not isinstance(node.get(p), dict):
            node[p] = {}
        node = node[p]
    if delete:
        node.pop(path[-1], None)
    else:
        node[path[-1]] = value
    return cfg


def _assert_clean(result, root: Path):
    text = result.output.strip()
    if result.exit_code == 0:
        return
    assert len(text.splitlines()) == 1, text
    assert text.startswith("error: ") and "internal error" not in text and "Traceback" not in text, text
    assert not any(p.is_dir() and (p / "manifest.json").exists() for p in root.glob("*")), "no complete-looking results"


@given(mutations=st.lists(st.tuples(st.sampled_from(PATHS), json_values, st.booleans()), min_size=1, max_size=3))
def test_mutated_configs_fail_cleanly(mutations, runner, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("fz")
    cfg = BASE
    for path, value, delete in mutations:
        cfg = _mutate(cfg, path, value, delete)
    f = tmp / "cfg.yaml"
    f.write_text(yaml.safe_dump(cfg, allow_unicode=True))
    result = runner.invoke(app, ["sweep", str(f), "--results", str(tmp / "res")])
    _assert_clean(result, tmp / "res")


@given(text=st.text(max_size=200))
def test_arbitrary_yaml_text_fails_cleanly(text, runner, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("fy")
    f = tmp / "cfg.yaml"
    f.write_text(text)
    result = runner.invoke(app, ["check", str(f)])
    _assert_clean(result, tmp)


@pytest.fixture(scope="module")
def small_results(tmp_path_factory):
    from wsemoe.sweep.run import run_sweep

    return run_sweep({**BASE, "name": "fzres"}, out_root=tmp_path_factory.mktemp("fzres")).path


WORDS = st.sampled_from(["mfu", "workload.G", "tokens_per_s", "bound", "'er'", "0.3", "1e9", "and", "or", "not", "in",
                         "[", "]", "(", ")", ">", "<=", "==", "+", "-", "*", "/", ",", "model", "x.y", "True", "'",
                         "0", "1000000000", "1e308", "feasible", "infeasible_reason", "**", "%", "lambda", "if"])


@given(where=st.one_of(st.text(max_size=60), st.lists(WORDS, max_size=10).map(" ".join)),
       columns=st.text(max_size=30), sort=st.text(max_size=20), limit=st.integers(-3, 5),
       fmt=st.sampled_from(["table", "csv", "json", "markdown", "xml"]), every=st.booleans())
def test_show_questions_fail_cleanly(where, columns, sort, limit, fmt, every, runner, small_results):
    args = ["show", str(small_results), "--where", where, "--columns", columns, "--sort", sort,
            "--limit", str(limit), "--format", fmt] + (["--all"] if every else [])
    _assert_clean(runner.invoke(app, args), small_results.parent / "none")


SET_PATHS = st.sampled_from(["workload.G", "workload.B", "workload.mode", "model", "hardware", "mapping.tp",
                             "model.num_experts", "balance.zipf_s", "workload.seq_len", "junk.x", "workload"])


@given(sets=st.lists(st.tuples(SET_PATHS, json_values), max_size=3), point=st.integers(-2, 3))
def test_eval_overrides_fail_cleanly(sets, point, runner, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("fe")
    f = tmp / "cfg.yaml"
    f.write_text(yaml.safe_dump(BASE))
    args = ["eval", str(f), "--point", str(point)]
    for path, value in sets:
        args += ["--set", f"{path}={yaml.safe_dump(value, default_flow_style=True).strip()}"]
    _assert_clean(runner.invoke(app, args), tmp / "none")


@given(text=st.one_of(st.text(max_size=60), st.lists(WORDS, max_size=12).map(" ".join)))
def test_filter_expressions_evaluate_or_fail_cleanly(text):
    """The --where grammar on its own, fast enough for many examples: a mask or a ConfigError, nothing else."""
    import pandas as pd

    from wsemoe.analysis.explain.where import Where
    from wsemoe.errors import ConfigError

    df = pd.DataFrame({"mfu": [0.1, 0.5], "workload.G": [1, 64], "tokens_per_s": [1e3, 1e6],
                       "bound": pd.Categorical(["a", "b"]), "model": ["m", "n"], "feasible": [True, False],
                       "infeasible_reason": pd.Categorical([None, "x"])})
    try:
        mask = Where(text, df.columns).mask(df)
    except ConfigError:
        return
    assert mask.dtype == bool and len(mask) == len(df)
