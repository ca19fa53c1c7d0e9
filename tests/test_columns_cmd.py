"""`wsemoe columns RESULTS|CONFIG` lists every output column with its unit and meaning: all the columns a results
folder holds (as its manifest documents them), or all a sweep would write (one point evaluated)."""

from __future__ import annotations

from io import StringIO

import pandas as pd

import wsemoe
from wsemoe.cli import app
from wsemoe.sweep.run import run_sweep


def _listed(output: str) -> pd.DataFrame:
    return pd.read_csv(StringIO(output)).set_index("column")


def test_columns_of_a_results_folder_are_every_column_it_holds(runner, tmp_path, small_config):
    path = run_sweep(small_config, out_root=tmp_path).path
    r = runner.invoke(app, ["columns", str(path), "--format", "csv"])
    assert r.exit_code == 0, r.output
    listed = _listed(r.output)
    held = pd.read_parquet(path / "points.parquet").columns
    assert set(held) <= set(listed.index)
    assert listed["meaning"].notna().all() and (listed.loc["tokens_per_s", "unit"] == "tokens/s")


def test_columns_of_a_config_are_every_column_its_sweep_writes(runner, tmp_path):
    r = runner.invoke(app, ["columns", "sweeps/moentwine_mapping.yaml", "--format", "csv"])
    assert r.exit_code == 0, r.output
    listed = _listed(r.output)
    written = wsemoe.evaluate("sweeps/moentwine_mapping.yaml", start=0, stop=1).columns
    assert list(listed.index) == list(written)
    assert listed["meaning"].notna().all()


def test_a_table_of_columns_fits_the_terminal(runner, tmp_path, small_config):
    path = run_sweep(small_config, out_root=tmp_path).path
    r = runner.invoke(app, ["columns", str(path)], env={"COLUMNS": "80"})
    assert r.exit_code == 0 and max(map(len, r.output.splitlines())) <= 80


def test_each_readable_pattern_name_is_a_name_its_own_pattern_matches():
    # Two readable names were once swapped against their patterns: docs/config.md and `wsemoe columns` described
    # <stage>_traffic_bytes as a compute roof in FLOP/s. '<stage>_<allreduce|dispatch>_s' → 'moe_allreduce_s'.
    import re

    from wsemoe.sweep import columns

    def example(name):
        return re.sub(r"<([^>]+)>", lambda m: m.group(1).split("|")[0] if "|" in m.group(1) else "moe", name)

    for name, (pattern, _, _) in zip(columns._PATTERN_NAMES, columns._PATTERNS, strict=True):
        assert re.match(pattern, example(name)), (name, pattern)
