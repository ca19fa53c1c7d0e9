"""The columnar path: rectangles tile ranges, broadcast rectangles equal per-point evaluation, parts
are standard parquet (pandas, pyarrow, DuckDB, Polars), CSVs and config.yaml read back exactly."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings, strategies as st

from wsemoe.config.loader import load_config
from wsemoe.sweep import engine
from wsemoe.store.block import factorize
from wsemoe.store import csvfile
from wsemoe.store.csvfile import csv_text
from wsemoe.sweep.run import run_sweep
from wsemoe.sweep.space import Grid, _split

MIXED = {"name": "mixed", "hardware": "wsc-b200-8x8", "model": "deepseek-v3",
         "workload": {"mode": "decode", "seq_len": 4096},
         "axes": {"mapping.strategy": ["block", "er"], "mapping.tp": [4, 16], "workload.B": [1, 7, 64],
                  "workload.expert_weight_format": ["bf16", "fp8"]},
         "zip": [{"model.num_experts_per_tok": [2, 8], "workload.G": [1, 3]}],
         "constraints": [{"column": "step_time_s", "max": 0.05}]}


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=0, max_size=4), st.data())
def test_rectangles_tile_any_range_in_point_order(shape, data):
    n = math.prod(shape)
    start = data.draw(st.integers(0, n - 1))
    stop = data.draw(st.integers(start + 1, n))
    rects = _split(start, stop, tuple(shape))
    assert len(rects) <= max(1, 2 * len(shape) - 1)
    strides = [math.prod(shape[i + 1:]) for i in range(len(shape))]
    got = [sum(d * s for d, s in zip(p, strides)) for r in rects for p in itertools.product(*(range(*x) for x in r))]
    assert got == list(range(start, stop))


@pytest.fixture(scope="module")
def mixed():
    cfg = load_config(MIXED)
    return cfg, engine.evaluate_block(cfg).to_frame()


@settings(max_examples=15, deadline=None)
@given(st.data())
def test_any_range_equals_the_same_points_one_by_one(mixed, data):
    cfg, whole = mixed
    start = data.draw(st.integers(0, len(whole) - 1))
    stop = data.draw(st.integers(start + 1, len(whole)))
    ranged = engine.evaluate_block(cfg, start, stop).to_frame()
    picked = data.draw(st.lists(st.integers(start, stop - 1), min_size=1, max_size=8))
    scattered = engine.evaluate_block(cfg, index=picked).to_frame()
    pd.testing.assert_frame_equal(ranged, whole.iloc[start:stop], check_categorical=False)
    pd.testing.assert_frame_equal(scattered, whole.loc[picked], check_categorical=False)
    one = pd.concat([engine.evaluate_block(cfg, i, i + 1).to_frame() for i in picked[:2]])
    pd.testing.assert_frame_equal(_plain(one), _plain(whole.loc[picked[:2]]), check_dtype=False)


def _plain(df: pd.DataFrame) -> pd.DataFrame:
    """Labels as plain objects (concatenated categoricals with other categories become strings)."""
    return df.astype({c: object for c in df.columns if not pd.api.types.is_numeric_dtype(df[c])})


def test_range_digits_equal_index_arithmetic():
    grid = Grid(load_config(MIXED))
    for start, stop in ((0, grid.size), (5, 37), (17, 18)):
        idx = np.arange(start, stop)
        for a, b in zip(grid.range_digits(start, stop), grid.digits(idx)):
            assert np.array_equal(a, b)
        assert np.array_equal(grid.index_of(grid.digits(idx)), idx)


@pytest.mark.parametrize("values", [["a", "b", "a", "c"], np.array(["x", "y", "x"]), [f"l{i % 40}" for i in range(90)]])
def test_factorize_keeps_first_appearance_order(values):
    codes, cats = factorize(values)
    assert [cats[c] for c in codes] == list(values)
    assert cats == list(dict.fromkeys(values))


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    return run_sweep(MIXED, out_root=tmp_path_factory.mktemp("mixed"), chunk_size=40)


def test_parts_are_standard_parquet_every_reader_agrees(written):
    folder = written.path / "points.parquet"
    pdf = pd.read_parquet(folder).sort_index()
    assert pdf.index.name == "point" and len(pdf) == written.manifest["points"]
    assert str(pdf["bound"].dtype) == "category" and pdf["mapping.strategy"].map(type).eq(str).all()
    meta = pq.ParquetFile(sorted(folder.iterdir())[0]).metadata
    encodings = {e for rg in range(meta.num_row_groups) for c in range(meta.num_columns)
                 for e in meta.row_group(rg).column(c).encodings}
    assert encodings <= {"PLAIN", "RLE", "RLE_DICTIONARY", "BYTE_STREAM_SPLIT", "DELTA_BINARY_PACKED"}, encodings
    duckdb = pytest.importorskip("duckdb")
    polars = pytest.importorskip("polars")
    glob = str(folder / "*.parquet")
    dk = duckdb.sql(f"select point, mfu, bound, \"mapping.strategy\" from read_parquet('{glob}') order by point").df()
    pl = polars.read_parquet(glob).sort("point")
    assert np.array_equal(dk["mfu"].to_numpy(), pdf["mfu"].to_numpy())
    assert np.array_equal(pl["mfu"].to_numpy(), pdf["mfu"].to_numpy())
    assert list(dk["bound"]) == list(pdf["bound"].astype(str)) == pl["bound"].cast(polars.String).to_list()
    assert list(pl["mapping.strategy"]) == list(pdf["mapping.strategy"])


def test_csv_reads_back_as_pandas_wrote_it(tmp_path, monkeypatch):
    df = pd.DataFrame({"f": [1.0, 2.5, np.nan, np.inf, -1e300, 1e16, 123456789012345678.0, 0.1],
                       "i": range(8), "b": [True, False] * 4, "t": ["a", 'q"uote', "c,omma", None, "x", "y", "z", "w"],
                       "c": pd.Categorical(["l", "m"] * 4), "tup": [(1, 2)] * 8}, index=pd.Index(range(10, 18), name="point"))
    monkeypatch.setattr(csvfile, "ARROW_ROWS", 0)  # the arrow path even for 8 rows
    (tmp_path / "a.csv").write_text(csv_text(df))
    df.to_csv(tmp_path / "b.csv")
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "a.csv", index_col=0), pd.read_csv(tmp_path / "b.csv", index_col=0))
    (tmp_path / "c.csv").write_text(csv_text(df, index=False))
    df.to_csv(tmp_path / "d.csv", index=False)
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "c.csv"), pd.read_csv(tmp_path / "d.csv"))


def test_config_yaml_keeps_integer_ranges_and_loads_to_the_same_hash(written):
    cfg = {**MIXED, "axes": {**MIXED["axes"], "workload.B": {"range": [3, 9000, 3]}, "workload.G": [1, 2, 3]}}
    cfg["zip"] = []
    loaded = load_config(cfg)
    data = loaded.resolved()
    assert data["axes"]["workload.B"] == {"range": [3, 9000, 3]} and data["axes"]["workload.G"] == [1, 2, 3]
    assert load_config(data).config_hash() == loaded.config_hash()
    assert load_config(written.path / "config.yaml").config_hash() == written.manifest["config_hash"]


def test_compacted_candidates_keep_every_value_and_only_the_labels_present(small_config):
    """A chunk's candidate rows are written with only the reasons and bounds they carry (`Block.compacted`):
    every value reads back the same, text inputs keep their axis values."""
    from wsemoe.store.block import Labels, Text

    cfg = load_config({**small_config, "axes": {**small_config["axes"], "hardware": ["cs2", "cs3"]},
                       "constraints": [{"column": "step_time_s", "max": 1e-6}]})  # every point infeasible
    blk = engine.evaluate_block(cfg)
    rows = np.arange(0, len(blk), 7)[:3]
    assert len(blk["infeasible_reason"].categories) > 3 and any(isinstance(c, Text) for c in blk.columns.values())
    part = blk.take(rows)
    small = part.compacted()
    pd.testing.assert_frame_equal(small.to_frame().astype(object), part.to_frame().astype(object))
    for name, col in small.columns.items():
        assert type(col) is type(part[name])
        if type(col) is Labels:
            assert sorted(col.categories) == sorted(set(col.values()) - {None})
        elif isinstance(col, Text):
            assert col.categories == part[name].categories


def test_a_frame_evaluated_for_some_columns_equals_those_of_the_whole_frame(small_config):
    from wsemoe.sweep import frames, space

    cfg = load_config(small_config)
    frame = space.build_frame(cfg)
    whole = frames.evaluate_frame(cfg, frame)
    some = frames.evaluate_frame(cfg, frame, columns={"feasible", "mfu", "step_time_s", "infeasible_reason", "nope"})
    assert set(some.columns) == {"mfu", "step_time_s", "feasible", "infeasible_reason"}  # "nope" is no output
    pd.testing.assert_frame_equal(some, whole[list(some.columns)])


def test_shared_groups_reuse_a_group_of_equal_inputs_and_nothing_else(small_config, monkeypatch):
    """Within `frames.shared_groups` a group whose inputs equal an earlier one's is not evaluated again, and the
    frame it gives equals a fresh evaluation; a group whose inputs changed is evaluated anew."""
    from wsemoe.config.loader import load_config
    from wsemoe.sweep import frames, space

    cfg = load_config(small_config)
    frame = space.build_frame(cfg)
    changed = frame.assign(**{"hardware.node_peak_flops": 1e12})
    fresh = [frames.evaluate_frame(cfg, f) for f in (frame, changed, frame)]
    calls = []
    real = frames.evaluate_group
    monkeypatch.setattr(frames, "evaluate_group", lambda c, ns: calls.append(1) or real(c, ns))
    with frames.shared_groups():
        shared = [frames.evaluate_frame(cfg, f) for f in (frame, changed, frame)]
    groups = len(list(frames.iter_groups(cfg, frame)))
    assert len(calls) == 2 * groups   # the third frame, equal to the first, evaluated nothing
    for a, b in zip(fresh, shared):
        pd.testing.assert_frame_equal(a, b)
    assert not fresh[0].equals(fresh[1])   # the change moved some output: the second frame was not reused
    calls.clear()
    frames.evaluate_frame(cfg, frame)   # outside: no memo
    assert len(calls) == groups


def test_label_columns_keep_one_dtype_whatever_the_chunking(small_config, tmp_path):
    """`bound` came back a category from one chunk and strings from several (pd.concat of categoricals whose
    categories differ), in `evaluate`, in the points of a results folder and in `query`: the same sweep read back
    differently by its --chunk-size. Now every frame equals the one-chunk frame, dtypes and categories included."""
    import wsemoe
    from wsemoe.store import store

    one = wsemoe.evaluate(small_config)
    assert isinstance(one["bound"].dtype, pd.CategoricalDtype) and one["bound"].nunique() > 1
    for chunk in (1, 5):
        pd.testing.assert_frame_equal(wsemoe.evaluate(small_config, chunk_size=chunk), one)
    runs = {chunk: run_sweep(small_config, out_dir=tmp_path / f"c{chunk}", chunk_size=chunk).path for chunk in (None, 5)}
    for reader in (lambda p: store.read_points(p, store.load_manifest(p)),
                   lambda p: wsemoe.query(p, every_point=True, limit=0).rows):
        whole, chunked = (reader(p) for p in runs.values())
        assert isinstance(whole["bound"].dtype, pd.CategoricalDtype)
        pd.testing.assert_frame_equal(chunked, whole)


def test_parts_whose_first_label_sorts_last_read_back_sorted():
    """A first part holding only 'y' put it first in pyarrow's merged dictionary: categories [y, x] where one chunk
    gives [x, y]."""
    import pyarrow as pa

    from wsemoe.store.block import concat_frames, sorted_categories

    parts = [pd.DataFrame({"b": pd.Categorical(v)}) for v in (["y"], ["x", "y"])]
    assert list(concat_frames(parts)["b"].cat.categories) == ["x", "y"]
    merged = pa.concat_tables([pa.Table.from_pandas(p) for p in parts]).to_pandas()
    assert list(sorted_categories(merged)["b"].cat.categories) == ["x", "y"]
