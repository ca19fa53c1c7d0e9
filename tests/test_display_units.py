"""A cell read with its header's unit is the value: every column of real sweeps (training, decode, SRAM serving),
shown in a terminal table, gives back its values when each cell is multiplied by the header's prefix; counts
(tokens, sequences) are shown whole; one value printed by `eval` reads as the same column does in a table."""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

import wsemoe
from wsemoe.report.terminal import formats

PREFIX = {"T": 1e12, "G": 1e9, "M": 1e6, "k": 1e3, "": 1.0}
TIME = {"s": 1.0, "ms": 1e-3, "µs": 1e-6, "ns": 1e-9}


def _factor(col: str, unit_shown: str) -> float:
    """What the header's unit says a cell is multiplied by, from the column's own unit."""
    unit = formats.unit_of(col)
    if unit == "s":
        return TIME[unit_shown]
    if unit in ("bytes", "bytes/s"):
        return PREFIX[unit_shown[:1]] if unit_shown[:1] in PREFIX and unit_shown[:1] != "B" else 1.0
    if unit_shown == unit or not unit_shown:
        return 1.0
    head = unit_shown[: len(unit_shown) - len(unit)].strip()
    return PREFIX[head]


def _check(df: pd.DataFrame) -> None:
    for col in df.columns:
        s = df[col]
        if not pd.api.types.is_numeric_dtype(s) or pd.api.types.is_bool_dtype(s):
            continue
        factor, shown = formats.display(col, s)
        assert math.isclose(_factor(col, shown), factor), (col, shown, factor)
        for v in s.dropna().tolist()[:50]:
            text = formats.cell(v, factor)
            if text == "–" or not np.isfinite(v):
                continue
            back = float(text.replace(",", "")) * factor
            assert math.isclose(back, float(v), rel_tol=1e-3, abs_tol=1e-12 * factor), (col, v, text, shown)
        if len(s.dropna()) and (s.dropna() == s.dropna().round()).all() and s.abs().max() < formats.WHOLE_BELOW \
                and formats.unit_of(col) not in ("s", "bytes", "bytes/s"):
            assert factor == 1.0, (col, shown)  # counts whole: '8,192', not '8.192 k'


@pytest.mark.parametrize("config,stop", [("sweeps/bta_topk_cs3.yaml", 400), ("sweeps/moentwine_mapping.yaml", 48),
                                         ("sweeps/cerebras_serving.yaml", 60)])
def test_every_column_of_a_sweep_reads_back_from_its_cells(config, stop):
    df = wsemoe.evaluate(config, start=0, stop=stop)
    df["workload.seq_len"] = df.get("workload.seq_len", pd.Series([8192] * len(df)))  # an integer axis, always
    _check(df)


@given(st.lists(st.integers(min_value=1, max_value=10**9), min_size=1, max_size=8),
       st.sampled_from(["tokens_per_microbatch", "workload.seq_len", "tokens_per_s", "mem_peak_node_bytes",
                        "step_time_s", "model_flops_per_step"]))
def test_integers_and_whole_floats_read_back(values, col):
    _check(pd.DataFrame({col: values}))
    _check(pd.DataFrame({col: [float(v) for v in values]}))


def test_eval_and_a_table_show_one_value_alike():
    """`eval` prints a value through quantity(); a one-row table through display() and cell(): the same text
    and unit, and a count stays whole ('65,536 tokens', not '65536 k tokens')."""
    number, unit = formats.quantity(65536, "tokens")
    assert (number, unit) == ("65,536", "tokens")
    for value in (65536, 65536.0, 8192, 1.5e5 + 0.5):
        factor, shown = formats.display("tokens_per_microbatch", pd.Series([value]))
        assert formats.quantity(value, "tokens") == (formats.cell(value, factor), shown)
    assert re.fullmatch(r"8,192", formats.cell(8192, formats.display("workload.seq_len", pd.Series([8192]))[0]))


def test_a_column_whose_median_is_small_keeps_its_large_cells_in_four_digits():
    """tokens/s of a prefill sweep, 1,649 to 105,200 (median under 10⁴): one prefix for the column, never
    '1.052e+05' beside '1649'; every cell reads back."""
    values = pd.Series([105200.5, 26350.2, 13180.1, 6594.3, 3298.7, 1649.9])
    factor, shown = formats.display("tokens_per_s", values)
    assert shown == "k tokens/s" and "e" not in "".join(formats.cell(v, factor) for v in values)
    _check(pd.DataFrame({"tokens_per_s": values}))


def test_every_numeric_model_field_has_a_unit_and_widths_share_one():
    """hidden_size read '1' and intermediate_size '' side by side: each numeric shape field now says what it
    counts, every width in elements."""
    import typing

    from wsemoe.config.reference import input_unit
    from wsemoe.specs.model import ModelSpec

    numeric = [f for f, fi in ModelSpec.model_fields.items()
               if {int, float} & {a for a in (fi.annotation, *typing.get_args(fi.annotation))}
               or any(int in typing.get_args(a) or float in typing.get_args(a) for a in typing.get_args(fi.annotation))]
    assert "hidden_size" in numeric and "vocab_size" in numeric
    assert all(input_unit(f"model.{f}") for f in numeric), [f for f in numeric if not input_unit(f"model.{f}")]
    widths = [f for f in numeric if f.endswith(("_size", "_dim", "_rank")) and f != "vocab_size"]
    assert {input_unit(f"model.{f}") for f in widths} == {"elements"}, widths


@given(st.lists(st.floats(min_value=1e-3, max_value=1e30, allow_nan=False), min_size=1, max_size=8),
       st.sampled_from(["tokens_per_s", "hardware.node_peak_flops", "model_flops_per_step", "mem_peak_node_bytes"]))
def test_any_spread_of_magnitudes_gets_a_unit(values, col):
    """A column of small typical values and one huge one (a swept peak of 1.5, 2.5 and 1e17 FLOP/s) takes the
    largest prefix rather than failing: every range of values a sweep may hold is shown."""
    factor, unit = formats.display(col, pd.Series(values))
    assert factor > 0 and isinstance(unit, str)


def test_sensitivity_of_a_sweep_without_a_comparison_shows_its_unit(runner, tmp_path):
    """Without a comparison, sensitivity studies each objective's best as `sweep_best_<objective>`; its band table
    read 'nominal 5% 95%' over bare numbers (3.8e+04): the unit lookup knew only the best_ and baseline_ prefixes."""
    import yaml

    from wsemoe.cli import app

    assert formats.unit_of("sweep_best_tokens_per_s") == formats.unit_of("tokens_per_s") == "tokens/s"
    path = tmp_path / "nc.yaml"
    path.write_text(yaml.safe_dump({"name": "nc", "hardware": "cs2", "model": "qwen3-30b-a3b",
                                    "workload": {"mode": "train", "seq_len": 2048},
                                    "axes": {"workload.G": [1, 2]}, "objectives": {"tokens_per_s": "max"}}))
    r = runner.invoke(app, ["sensitivity", str(path), "-n", "8", "--no-readings", "--results", str(tmp_path / "r")])
    assert r.exit_code == 0, r.output
    assert re.search(r"nominal \[k? ?tokens/s\]", r.output), r.output
