"""SRAM serving, interleaved placement: every collective of the attention region whose line runs across its
columns is stretched (the columns lie apart), collective by collective. Before, only whole ops listed as
horizontal were (GQA's score and o), so the context split's softmax and p·V reductions along a KV head's span of
columns, and the layer hop's broadcast along the next region's columns, ran on the plain fabric. Hand-derived on
Qwen3-235B-A22B at 131,072 tokens of context on 48 CS-3 (1 hop cycle, 1.1 GHz)."""

from __future__ import annotations

from types import SimpleNamespace as NS

import numpy as np
import pytest

from wsemoe.config import presets
from wsemoe.cost.wafer import layer
from wsemoe.cost.wafer.fabric import pe_facts

S, SIDE, STRETCH = 131072.0, 423.0, 14.0 / 9.0   # the chosen layout: a 423 × 423 attention region, stretch 14/9
EXTRA = STRETCH - 1.0                           # cycles a hop adds when its line is stretched (1 cycle a hop)


def setting():
    pe = pe_facts(NS(**presets.load_hardware("cs3").model_dump()))
    return pe, NS(**presets.load_model("qwen3-235b-a22b").model_dump())


def ops(stretch):
    pe, m = setting()
    return layer.attention(m, SIDE, SIDE, S, pe, 1.0, 2, {"pattern": "tree", "levels": 2}, stretch)


def test_every_cross_column_collective_is_stretched_by_hand():
    # 4 KV heads over 423 columns: a head spans ⌈423/4⌉ = 106 of them, and at 131K the context split holds whole
    # heads on each. A two-level tree on 106 PEs: groups of ⌈√106⌉ = 11, depth 5 hops in the first round and
    # 5 × 11 = 55 in the second (⌈106/11⌉ = 10 members), 60 hops; the broadcast back from the middle 53.
    # softmax: two all-reduces along the span, 2 × (60 + 53) = 226 hops; p·V: one reduce along it, 60 hops; the
    # layer hop's broadcast along the 423 columns from the middle: 211 hops. Each hop costs 14/9 − 1 cycles more.
    plain, wide = ops(1.0), ops(STRETCH)
    extra = {k: float(wide[k]["latency_cycles"] - plain[k]["latency_cycles"]) for k in plain}
    assert extra["softmax"] == pytest.approx(226 * EXTRA, rel=1e-12)
    assert extra["pv"] == pytest.approx(60 * EXTRA, rel=1e-12)
    pe, m = setting()
    hop = [layer.hop(m, pe, SIDE, SIDE, 100.0, 1.0, 2, layer.stretched(pe, s)) for s in (1.0, STRETCH)]
    assert float(hop[1]["latency_cycles"] - hop[0]["latency_cycles"]) == pytest.approx(211 * EXTRA, rel=1e-12)
    # the score's query broadcast along the span (53 hops) was stretched before too; the norms' and the QKV
    # GEMV's reductions run down the columns and are not
    assert extra["score"] == pytest.approx(53 * EXTRA, rel=1e-12)
    assert extra["qkv"] == 0.0 and extra["rope"] == 0.0
    for k in plain:   # nothing but latency moves
        for t in ("compute_cycles", "link_cycles", "overhead_cycles"):
            assert np.array_equal(wide[k][t], plain[k][t]), (k, t)


def test_qwen3_235b_interleaved_at_131k_by_hand():
    # The whole point (B 1, 48 wafers, interleaved): per layer (226 + 60 + 211) hops × 5/9 cycle = 276.1 cycles,
    # 251.0 ns, over 94 layers 23.59 µs: t1 2.77691 → 2.80051 ms, 360.11 → 357.08 tokens/s per user (−0.84%).
    # Since a wafer hop pays one block's width of fabric path, not two (test_wafer_boundary.py), the 47 hops take
    # 658 cycles each less: t1 2.77691 − 0.02812 = 2.74880 ms before the stretch, 2.77239 ms with it, 360.70 tokens/s.
    # With regions in whole tiles (test_tile_lattice.py) that layout (16,932 B a PE, 47² tiles, a 423² attention
    # region) no longer fit 48 wafers, and the next √2 rung took it (23,946 B a PE, 39² tiles, 351², stretch 14/9,
    # 334.84 tokens/s). Since a rung whose tiles do not fit stands in as the sparsest finer rung that does
    # (ladder.sparsest, December 2026), the layout is 17,400 B a PE: 47² tiles, attention 8 × 8 tiles = 376²,
    # stretch 7/4. Its 4 KV heads span ⌈376/4⌉ = 94 columns: a two-level tree in groups of ⌈√94⌉ = 10, 5 + 5 × 10
    # = 55 hops, the broadcast back from the middle 47; softmax 2 × (55 + 47) = 204, p·V 55, the layer hop along 376
    # columns from the middle 188: 94 × 447 × 3/4 cycle = 28.65 µs of t1's 2.80343 ms, 356.705 tokens/s per user.
    # On the fixed fine ladder 2^(j/256) B a PE (lattice.fine; it was u_fill · 2^(j/16), 4.4% apart) the sparsest
    # rung that fits is 17,109.4 B a PE (was 17,400): the same 47² tiles, 376² attention and stretch 7/4, so the
    # stretch's 28.65 µs stands; t1 2.803435 → 2.803400 ms (−35 ns), 356.710 tokens/s per user.
    from wsemoe.config.loader import load_config
    from wsemoe.sweep import engine

    side, stretch = 376.0, 1.75
    extra = stretch - 1.0
    pe, m = setting()
    plain, wide = (layer.attention(m, side, side, S, pe, 1.0, 2, {"pattern": "tree", "levels": 2}, s)
                   for s in (1.0, stretch))
    assert float(wide["softmax"]["latency_cycles"] - plain["softmax"]["latency_cycles"]) == pytest.approx(204 * extra)
    assert float(wide["pv"]["latency_cycles"] - plain["pv"]["latency_cycles"]) == pytest.approx(55 * extra)
    hop = [layer.hop(m, pe, side, side, 100.0, 1.0, 2, layer.stretched(pe, s)) for s in (1.0, stretch)]
    assert float(hop[1]["latency_cycles"] - hop[0]["latency_cycles"]) == pytest.approx(188 * extra, rel=1e-12)
    cfg = load_config({"name": "interleave", "hardware": {"preset": "cs3", "weight_source": "sram",
                                                          "pipeline_wafers": 48},
                       "model": "qwen3-235b-a22b", "mapping": {"pe_placement": "interleaved"},
                       "workload": {"mode": "decode", "seq_len": 131072, "B": 1, "prompt_len": 1024}})
    cols = engine.evaluate_block(cfg).columns
    row = {k: float(np.asarray(cols[k]).ravel()[0]) for k in ("pipeline_latency_s", "tokens_per_s_per_user",
                                                             "placement_stretch", "attn_region_pes",
                                                             "expert_region_side")}
    assert row["placement_stretch"] == pytest.approx(stretch) and row["attn_region_pes"] == side ** 2
    assert row["expert_region_side"] == 47.0
    added = 94 * (204 + 55 + 188) * extra / 1.1e9
    assert added == pytest.approx(28.65e-6, rel=1e-3)
    assert row["pipeline_latency_s"] == pytest.approx(2.803400e-3, rel=1e-6)
    assert row["tokens_per_s_per_user"] == pytest.approx(356.710, abs=1e-3)
