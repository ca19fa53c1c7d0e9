"""SRAM serving's structural terms once per unique combination (cost/wafer/unique.py) change no result: every output
column bit for bit (NaN positions and signed zeros included) with and without the deduplication and its cache, on
the shipped serving sweep and on random small frames; and the helper's own contracts, hand-checked."""

from __future__ import annotations

from types import SimpleNamespace as NS

import numpy as np
import pytest

from wsemoe.config.loader import load_config
from wsemoe.cost.wafer import geometry, traffic, unique
from wsemoe.store.block import Labels
from wsemoe.sweep import engine

SWEEPS = "sweeps"


def fresh():
    """Forget every structure and structural result (each evaluation starts cold)."""
    unique.clear()
    geometry.summary.cache_clear()
    traffic.layer_traffic.cache_clear()


def columns(cfg, monkeypatch, dedup: bool) -> dict:
    """Every column of the sweep's points, evaluated with the deduplication on or off."""
    monkeypatch.setattr(unique, "DEDUP", dedup)
    fresh()
    return engine.evaluate_block(cfg).columns


def same_bits(a, b) -> bool:
    """Equal arrays, floats compared by their bits (NaN where NaN, -0.0 apart from 0.0)."""
    if isinstance(a, Labels) or isinstance(b, Labels):
        return type(a) is type(b) and a.categories == b.categories and np.array_equal(a.codes, b.codes)
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.kind == "f":
        return np.array_equal(a.view(f"u{a.dtype.itemsize}"), b.view(f"u{b.dtype.itemsize}"))
    return np.array_equal(a, b)


def assert_identical(cfg, monkeypatch):
    ref = columns(cfg, monkeypatch, False)
    assert unique.stats["points"] == 0   # the reference evaluates every point
    got = columns(cfg, monkeypatch, True)
    assert 0 < unique.stats["rows"] < unique.stats["points"]   # fewer structures than points
    rows, hits = unique.stats["rows"], unique.stats["hits"]
    warm = engine.evaluate_block(cfg).columns   # from the results `got` left in the cache
    assert unique.stats["rows"] == rows and unique.stats["hits"] > hits
    assert list(got) == list(ref) == list(warm)
    differ = [c for c in ref if not same_bits(ref[c], got[c])]
    assert not differ, f"columns that differ with the deduplication: {differ}"
    differ = [c for c in ref if not same_bits(ref[c], warm[c])]
    assert not differ, f"columns that differ from the cache: {differ}"


def test_shipped_serving_sweep_is_bit_identical(monkeypatch):
    # cerebras_serving: three MoE models (GQA and MLA), wafers unset and fixed, both placements, GPUs beside.
    assert_identical(load_config(f"{SWEEPS}/cerebras_serving.yaml"), monkeypatch)


MODELS = ("qwen3-30b-a3b", "mixtral-8x7b", "llama-3.1-8b", "deepseek-v3", "gpt-oss-20b", "llama-4-maverick")


def random_space(seed: int) -> dict:
    """A small random serving frame: a model, a fabric, mapping options and a few values of the numeric axes the
    layouts depend on (batch, context, wafers, a link's latency, the expert popularity, speculation), and one they
    do not (a power figure: an input of the structural terms' arguments that adds an axis to them alone)."""
    rng = np.random.default_rng(seed)
    pick = lambda xs: xs[int(rng.integers(len(xs)))]  # noqa: E731
    model = MODELS[seed % len(MODELS)]   # every kind in turn: MoE (GQA, MLA, interleaved dense), dense
    axes = {"workload.B": sorted({int(x) for x in rng.integers(1, 300, 3)}),
            "workload.seq_len": sorted({int(x) for x in rng.integers(1, 64, 2) * 512}),
            "hardware.pipeline_wafers": sorted({int(x) for x in rng.integers(1, 40, 2)}),
            "hardware.inter_wafer_hop_latency_s": sorted({1e-6, float(pick([1e-6, 2e-6, 5e-7]))}),
            "hardware.static_power_w": [15000.0, 25000.0],   # read by the energy columns, not the structures
            "balance.zipf_s": sorted({float(x) for x in np.round(rng.uniform(0.0, 1.5, 2), 2)})}
    mode = "prefill" if seed % 4 == 3 else "decode"
    workload = {"mode": mode, "seq_len": 4096}
    if mode == "decode":
        workload.update(prompt_len=int(pick([512, 1024])))
        if seed % 2:   # speculative decoding
            workload.update(draft_tokens=3, accepted_tokens_per_step=float(pick([1.5, 2.5])))
    out = {"name": f"random_{seed}", "model": model,
           "hardware": {"preset": pick(["cs2", "cs3"]), "weight_source": "sram"},
           "workload": workload,
           "mapping": {"pe_placement": pick(["blocked", "interleaved"]), "pe_dispatch": pick(["multicast", "unicast"]),
                       "pe_reduction": pick(["tree", "chain", "ring"]), "pe_kernels": pick(["fused", "per_primitive"])},
           "balance": {"distribution": pick(["uniform", "zipf"])},
           "axes": axes}
    if out["balance"]["distribution"] == "uniform":   # a Zipf exponent only shapes Zipf popularity (config/applies.py)
        axes.pop("balance.zipf_s")
    return out


@pytest.mark.parametrize("seed", range(8))
def test_random_frames_are_bit_identical(seed, monkeypatch):
    assert_identical(load_config(random_space(seed)), monkeypatch)


def test_a_replaced_constant_is_never_met_stale(monkeypatch):
    # The cache is keyed by the cost model's module state too: with the batch ladder switched off (SIZED_STEPS 0)
    # DeepSeek-V3 at B 1 loses the layouts sized for larger batches, and the cached results must not answer.
    from wsemoe.cost.wafer import serving

    cfg = load_config({"name": "ladder", "model": "deepseek-v3", "hardware": {"preset": "cs3", "weight_source": "sram"},
                       "workload": {"mode": "decode", "seq_len": 8192, "attn_weight_format": "fp8",
                                    "expert_weight_format": "fp8"},
                       "axes": {"workload.B": [1, 64], "hardware.pipeline_wafers": [24]}})
    before = columns(cfg, monkeypatch, True)
    monkeypatch.setattr(serving, "SIZED_STEPS", 0)
    after = engine.evaluate_block(cfg).columns
    monkeypatch.setattr(unique, "DEDUP", False)
    ref = engine.evaluate_block(cfg).columns
    assert all(same_bits(ref[c], after[c]) for c in ref)
    assert not same_bits(before["tokens_per_s_per_user"], after["tokens_per_s_per_user"])


# ---- the helper itself ----

def elementwise(x, pair, ns):
    """A structural function of rows: a scalar, an output per row, one with a leading axis, an integer one."""
    y = x * pair[0] + ns.c
    return {"y": y, "const": 2.0, "lead": np.stack([y, -y]), "code": (x > 1).astype(np.int64),
            "ones": np.ones((3, 1))}


def test_once_gathers_every_row_back():
    x = np.array([[1.0, 2.0, 1.0], [2.0, 2.0, 1.0]])   # 2 distinct values
    w = np.array([10.0, 10.0, 20.0])                      # 2 distinct: 3 distinct rows of 6
    calls = []

    def fn(x_, pair, ns):
        calls.append(np.shape(x_))
        return elementwise(x_, pair, ns)

    unique.clear()
    out = unique.once(fn, x, (w, "label"), NS(c=0.5, name="n"))
    ref = elementwise(x, (w, "label"), NS(c=0.5, name="n"))
    assert calls == [(3,)]   # evaluated on the distinct rows only
    assert out["const"] == 2.0 and np.array_equal(out["y"], ref["y"]) and np.array_equal(out["code"], ref["code"])
    assert out["code"].dtype == np.int64
    assert out["lead"].shape == (2, 2, 3) and np.array_equal(out["lead"], ref["lead"])
    assert np.shape(out["ones"]) == (3, 1, 1)


def test_cache_is_keyed_by_rows_and_constants():
    calls = []

    def fn(x_, c):
        calls.append(1)
        return x_ * c

    unique.clear()
    x = np.array([1.0, 2.0, 2.0])
    assert list(unique.once(fn, x, 3.0)) == [3.0, 6.0, 6.0]
    assert list(unique.once(fn, x[::-1].copy()[::-1], 3.0)) == [3.0, 6.0, 6.0] and len(calls) == 1   # same rows
    assert list(unique.once(fn, x, 4.0)) == [4.0, 8.0, 8.0] and len(calls) == 2   # another constant
    assert list(unique.once(fn, np.array([1.0, 3.0]), 3.0)) == [3.0, 9.0] and len(calls) == 3   # other rows


def test_a_deferred_output_picks_what_the_gathered_one_would():
    rng = np.random.default_rng(3)
    x = rng.integers(0, 3, (4, 5)).astype(float)   # 4 candidates × 5 points, 3 distinct values
    out, where = unique.distinct(lambda v: {"y": v * 10.0 + 1.0}, x)
    assert where.count == 3
    best = rng.integers(0, 4, (1, 5))
    full = unique.scatter(out, where.inverse, where.shape, where.count)["y"]
    picked = unique.deferred(out, where)["y"].pick(best, (4, 5))
    assert np.array_equal(picked, np.take_along_axis(full, best, axis=0)[0])
    assert np.array_equal(picked, np.take_along_axis(x * 10.0 + 1.0, best, axis=0)[0])


def test_signed_zero_and_nan_payloads_stay_apart():
    nan2 = np.array([0x7FF8000000000001], dtype=np.uint64).view(np.float64)[0]
    x = np.array([0.0, -0.0, np.nan, nan2, 0.0])
    first, inverse = unique.rows([x])
    assert len(first) == 4 and inverse[0] == inverse[4] and len(set(inverse[:4])) == 4
    with np.errstate(divide="ignore"):
        out = unique.once(lambda v: 1.0 / np.where(np.isnan(v), 1.0, v), x)
    assert list(out[:2]) == [np.inf, -np.inf]


def test_rows_are_exact_when_the_hash_collides(monkeypatch):
    # Every row hashed alike: the exact fallback still parts rows that differ in any column.
    monkeypatch.setattr(unique, "mix", lambda words: np.zeros(len(words[0]), dtype=np.uint64))
    a, b = np.array([1.0, 1.0, 2.0, 2.0, 1.0]), np.array([5, 6, 5, 5, 5])
    first, inverse = unique.rows([a, b])
    assert len(first) == 3
    assert inverse[0] == inverse[4] and inverse[2] == inverse[3] and len({inverse[0], inverse[1], inverse[2]}) == 3
    assert np.array_equal(a[first][inverse], a) and np.array_equal(b[first][inverse], b)


def test_ordered_rows_follow_numpy_unique():
    rng = np.random.default_rng(1)
    a, b = rng.integers(0, 4, 50).astype(float), rng.integers(0, 3, 50).astype(float)
    keys, inverse = np.unique(np.stack([a, b], axis=1), axis=0, return_inverse=True)
    first, inv = unique.rows([a, b], ordered=True)
    assert np.array_equal(np.stack([a[first], b[first]], axis=1), keys) and np.array_equal(inv, inverse.ravel())


def test_opaque_arrays_are_evaluated_whole():
    class Holder:
        def __init__(self, v):
            self.v = v

    calls = []

    def fn(h):
        calls.append(np.shape(h.v))
        return h.v * 2.0

    out = unique.once(fn, Holder(np.array([1.0, 1.0, 1.0])))
    assert calls == [(3,)] and list(out) == [2.0, 2.0, 2.0]


def test_a_non_elementwise_output_fails_loudly():
    with pytest.raises(ValueError, match="over 2 rows"):
        unique.once(lambda v: np.zeros(5), np.array([1.0, 2.0, 1.0]))


@pytest.mark.parametrize("axis,values", [("model.num_experts", [64, 128]), ("model.num_experts_per_tok", [4, 8]),
                                         ("hardware.inter_wafer_link_bw_bytes_per_s", [7.5e10, 1.5e11])])
def test_a_swept_routing_or_system_link_gives_each_point_what_it_gives_alone(axis, values):
    # The expert count and top-k key the layer structures, and the system link is read per point: swept, they are
    # arrays (they once failed here with an internal error), and each point must equal the point evaluated alone.
    base = {"name": "axis", "model": "qwen3-30b-a3b", "hardware": {"preset": "cs3", "weight_source": "sram",
                                                                     "pipeline_wafers": 4},
            "workload": {"mode": "decode", "seq_len": 8192, "B": 1}}
    swept = engine.evaluate_block(load_config({**base, "axes": {axis: values}})).columns
    section, field = axis.split(".")
    for i, v in enumerate(values):
        alone = engine.evaluate_block(load_config({**base, section: {**(base.get(section) or {}), field: v}}
                                                  if section != "model" else
                                                  {**base, "model": {"preset": "qwen3-30b-a3b", field: v}})).columns
        numeric = [c for c in alone if not isinstance(alone[c], Labels) and np.asarray(alone[c]).dtype.kind == "f"]
        assert "tokens_per_s_per_user" in numeric and "wafers_needed" in numeric
        for col in numeric:
            np.testing.assert_allclose(np.asarray(swept[col])[i], np.asarray(alone[col])[0], rtol=1e-12,
                                       err_msg=f"{col} at {axis}={v}")
    assert np.asarray(swept["tokens_per_s_per_user"])[0] != np.asarray(swept["tokens_per_s_per_user"])[1]
