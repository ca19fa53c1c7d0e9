"""One crossover definition (wsemoe/sweep/crossing.py): every crossing of 1 is found, placed on log2 of the load
between the two swept loads either side, and named with its metric and reading; the figure marks each one and
validate's rows state all of them; no other module computes a crossover of its own."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from wsemoe.sweep import crossing

ROOT = Path(__file__).resolve().parents[1]
LOADS = [1, 2, 4, 8, 16, 32, 64, 128, 256]


def test_the_wafer_behind_at_small_loads_ahead_then_behind_has_both_crossings_named():
    """The issue's case: behind at 1–2, ahead in the middle, behind again from about 72."""
    r = pd.Series([0.9, 0.95, 1.2, 1.3, 1.2, 1.1, 1.03, 0.85, 0.76], index=LOADS)
    found = crossing.crossings(r)
    assert [c.to for c in found] == ["ahead", "behind"]
    assert (found[0].low, found[0].high) == (2, 4) and 2 < found[0].at < 4
    assert (found[1].low, found[1].high) == (64, 128) and 64 < found[1].at < 128
    # hand-derived: 1.03 at 64 and 0.85 at 128 cross 1 a sixth of the way on log2: 64·2^(0.03/0.18)
    assert found[1].at == pytest.approx(64 * 2 ** (0.03 / 0.18))
    text = crossing.statement(r, "per_device_tokens_per_s", "at the default readings", "wsc vs nvl72")
    assert text.startswith("wsc vs nvl72, per_device_tokens_per_s at the default readings: behind at 1–")
    assert "ahead from" in text and "behind from 72 (between 64 and 128)" in text


def test_no_crossing_says_which_side_at_every_load():
    assert crossing.sides(pd.Series([1.2, 1.1], index=[1, 2])) == "ahead at every load (1–2 tokens/device)"
    assert crossing.sides(pd.Series([0.8, 0.9], index=[1, 2])) == "behind at every load (1–2 tokens/device)"
    # An axis that is not a load in tokens is named before its values, never put where a unit goes
    assert crossing.sides(pd.Series([1.2, 1.1], index=[8192, 131072]), "", "seq len") == \
        "ahead at every seq len (8,192–131,072)"
    assert crossing.sides(pd.Series([1.2, 0.8], index=[8192, 16384]), "", "seq len") == \
        "ahead at seq len 8,192–11,585, behind from 11,585 (between 8,192 and 16,384)"
    assert crossing.first_behind(pd.Series([0.8, 0.9], index=[1, 2])) is None


def test_a_load_one_side_cannot_run_is_skipped():
    r = pd.Series([1.5, np.nan, 0.5], index=[1, 2, 4])
    (c,) = crossing.crossings(r)
    assert (c.low, c.high, c.to) == (1, 4, "behind")


@given(st.lists(st.floats(min_value=0.05, max_value=20, allow_nan=False), min_size=2, max_size=12))
def test_crossings_alternate_and_each_lies_between_loads_where_the_ratio_changes_side(values):
    r = pd.Series(values, index=[2 ** i for i in range(len(values))])
    found = crossing.crossings(r)
    sides = np.asarray(values) >= 1
    assert len(found) == int(np.sum(sides[1:] != sides[:-1]))
    for a, b in zip(found, found[1:]):
        assert a.to != b.to and a.at <= b.at
    for c in found:
        assert c.low <= c.at <= c.high
        assert (r[c.low] >= 1) != (r[c.high] >= 1)
        assert c.to == ("behind" if r[c.low] >= 1 else "ahead")


def test_no_module_defines_a_crossover_of_its_own():
    """One definition: no other function under wsemoe/ computes a crossing (a function named crossing(s), or a
    crossover returning a number rather than a figure)."""
    own = ROOT / "wsemoe" / "sweep" / "crossing.py"
    offenders = []
    for path in (ROOT / "wsemoe").rglob("*.py"):
        if path == own:
            continue
        for node in ast.parse(path.read_text()).body:  # module-level functions (a class's method is its own)
            if not isinstance(node, ast.FunctionDef):
                continue
            returns = ast.unparse(node.returns) if node.returns else ""
            if node.name in ("crossing", "crossings", "first_behind") or \
                    (node.name == "crossover" and "Figure" not in returns):
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}")
    assert not offenders, offenders


def test_validate_rows_state_every_crossing():
    from wsemoe.validate import versus

    r = pd.Series([0.9, 0.95, 1.2, 1.3, 1.2, 1.1, 1.03, 0.85, 0.76], index=LOADS)
    text = versus.per_load(r)
    assert "ahead from" in text and "behind from 72" in text and text.split("; ")[-1] == crossing.sides(r)


def test_show_and_compare_state_the_crossover_of_a_load_axis():
    """The comparison table's ratio along its load axis, per value of the other keys, in the one wording."""
    df = pd.DataFrame({"model": ["a"] * 4 + ["b"] * 4, "workload.tokens_per_device": [1, 2, 4, 8] * 2,
                       "speedup_vs_x": [0.9, 1.2, 1.1, 0.8, 1.5, 1.4, 1.3, 1.2]})
    lines = crossing.table_lines(df, ["model", "workload.tokens_per_device"], ["speedup_vs_x"])
    assert lines == ["crossover: " + crossing.statement(df.iloc[:4].set_index("workload.tokens_per_device")
                                                       ["speedup_vs_x"], "speedup_vs_x", "as configured", "model=a",
                                                       "tokens per device"),
                     "crossover: model=b, speedup_vs_x as configured: ahead at every load (1–8 tokens per device)"]
    assert "behind at 1–1.26, ahead from 1.26 (between 1 and 2), behind from" in lines[0]  # 2^(1/3)
    assert crossing.table_lines(df[df["workload.tokens_per_device"] < 4], ["model", "workload.tokens_per_device"],
                                ["speedup_vs_x"]) == []  # two loads are no axis to cross along


def test_compare_prints_the_crossover_of_its_ratio(runner, tmp_path, monkeypatch):
    from wsemoe.cli import app
    from wsemoe.sweep.run import run_sweep

    monkeypatch.chdir(tmp_path)
    base = {"name": "a", "hardware": "cs2", "model": "qwen3-30b-a3b", "workload": {"mode": "train", "seq_len": 2048},
            "axes": {"workload.seq_len": [1024, 2048, 4096, 8192], "workload.B": [1, 2]},
            "objectives": {"tokens_per_s": "max"}}
    run_sweep(base, out_root="results")
    run_sweep({**base, "name": "b", "hardware": {"preset": "cs3", "pe": {"mac_memory_operands": 0}}},   # SIMD rate
              out_root="results")
    r = runner.invoke(app, ["compare", "results/a", "results/b", "--no-readings"], env={"COLUMNS": "300"})
    assert r.exit_code == 0 and "crossover: b/a:tokens_per_s as configured: ahead at every seq len (1,024–8,192)" \
        in r.output, r.output
