"""SRAM serving: a MoE layer whose routed experts continue on the next wafer. A token whose top-k experts lie on
both wafers passes through expert regions on each (dispatch, GEMVs, combine on the far wafer too); before, only
the first wafer's were in a token's time. Hand-derived: the chance a wafer holds one of a token's experts, a tiny
three-wafer split, and DeepSeek-V3 (FP8) at 8K on 20 CS-3."""

from __future__ import annotations

from math import comb

import numpy as np
import pytest

from wsemoe.cost.wafer import stagesplit


def hit(n, E, k):
    """The chance that n of E experts hold one of the k distinct ones a uniform router picks."""
    return 1.0 - comb(E - n, k) / comb(E, k)


def test_picked_is_the_hypergeometric_chance():
    # 1 of 4 experts, top-2: misses both picks in C(3,2)/C(4,2) = 3/6 of the pairs, so 1/2; 3 of 4: never missed;
    # 0 experts: never; DeepSeek-V3's 11 of 256 at top-8: 1 − C(245,8)/C(256,8) = 0.2998.
    got = stagesplit.picked(np.array([1.0, 3.0, 0.0, 11.0]), np.array([4.0, 4.0, 4.0, 256.0]),
                            np.array([2.0, 2.0, 2.0, 8.0]))
    assert got == pytest.approx([0.5, 1.0, 0.0, hit(11, 256, 8)], rel=1e-12)
    assert hit(11, 256, 8) == pytest.approx(0.29978, abs=1e-5)


def test_a_layer_over_three_wafers_by_hand():
    # Stages of 20 B: the embedding (0 B) and the MoE layer's attention part (10 B) leave room for 1 of its 4
    # experts (10 B each, 2 a stage); the other 3 go on: a wafer with 2, then one with 1 beside the head. Two
    # crossings. A top-2 token meets the first wafer's expert with chance 1/2, the next wafer's two with
    # 1 − C(2,2)/C(4,2) = 5/6, the last one's with 1/2: 1/2 + 5/6 + 1/2 − 1 = 5/6 wafers more than one.
    parts = {"d": 0.0, "a": 10.0, "e": 10.0, "E": 4.0, "emb": 0.0, "head": 10.0, "topk": 2.0}
    f = stagesplit.run([True], parts, np.array(20.0))
    assert float(f.stages) == 3.0 and float(f.cross) == 2.0
    assert float(f.visits) == pytest.approx(0.5 + 5.0 / 6.0 + 0.5 - 1.0, rel=1e-12)
    # a layer whose experts all fit its wafer adds nothing
    assert float(stagesplit.run([True], parts, np.array(60.0)).visits) == 0.0


def test_deepseek_v3_far_experts_by_hand():
    # DeepSeek-V3 (FP8) at 8,192 tokens, B 1, on 20 CS-3 (the fewest that hold it in whole tiles; 19 in bytes). Its
    # room is 41,772 B a PE; an expert's 44,040,192 B need ⌈√1,054.3⌉ = 33² PEs, a wafer ⌊1,170/33⌋·⌊755/33⌋ =
    # 35·22 = 770 tiles. The layout is sized for the caches of 8 sequences (the most that fit, serving.sized_for):
    # a MoE layer's attention and shared experts 7 tiles, a dense layer 15, the embedding and the head 41 each:
    # 41 + 3·15 + 58·(7 + 256) + 41 = 15,381 tiles ≤ 20·770 = 15,400, so every stage is full at 770. The first takes
    # the embedding, the 3 dense layers, 2 MoE layers and the third's attention and 151 experts (770), 105 going on;
    # each next one takes the f going on, 2 layers, the next attention and 237 − f experts, 19 + f going on (105,
    # 124 … 238); the ninth holds 238 + 2·263 = 764 (the next attention would overflow it); then the same from 0:
    # 19, 38 … 190. 18 layers split:
    far = list(range(105, 239, 19)) + list(range(19, 191, 19))
    assert len(far) == 18
    # A top-8 token meets the far wafer's experts with chance hit(n) and the near wafer's 256 − n with hit(256 − n):
    # Σ (hit(n) + hit(256 − n) − 1) wafers of experts beyond one per pass.
    visits = sum(hit(n, 256, 8) + hit(256 - n, 256, 8) - 1.0 for n in far)
    assert visits == pytest.approx(15.74203, abs=1e-5)
    # (the byte split on 19 CS-3 cut 16 layers: 80, 57, 34, 11, 246 … 16, 246 experts going on, 11.8189 visits)
    old = [80, 57, 34, 11, 246, 223, 200, 177, 154, 131, 108, 85, 62, 39, 16, 246]
    assert sum(hit(n, 256, 8) + hit(256 - n, 256, 8) - 1.0 for n in old) == pytest.approx(11.81894, abs=1e-5)
    from wsemoe.config.loader import load_config
    from wsemoe.sweep import engine

    cfg = load_config({"name": "split", "hardware": {"preset": "cs3", "weight_source": "sram"},
                       "model": "deepseek-v3",
                       "workload": {"mode": "decode", "seq_len": 8192, "B": 1, "attn_weight_format": "fp8",
                                    "expert_weight_format": "fp8"}})
    row = {k: float(np.asarray(v).ravel()[0]) for k, v in engine.evaluate_block(cfg).columns.items()
           if np.asarray(v).dtype.kind == "f"}
    assert row["wafers"] == 20.0 and row["layer_splits"] == len(far) and row["expert_region_side"] == 33.0
    # Each visit is the layer's dispatch, one routed expert's GEMVs (the experts op: the routed region is the slower
    # of it and the shared one), the combine and the sum (on 32² tiles at 19 wafers: 964.5 ns + 11.464 µs +
    # 1.0645 µs + 57.3 ns = 13.550 µs, the GEMVs 12,610 cycles with FP8 weights read at 5 bytes a MAC,
    # test_weight_operand.py); far_experts_s is the visits times it, and in t1.
    visit = sum(row[f"moe_op_{op}_s"] for op in ("dispatch", "experts", "combine", "moe_sum"))
    assert row["far_experts_s"] == pytest.approx(visits * visit, rel=1e-9)
    assert row["pipeline_latency_s"] > row["far_experts_s"] > 0.0
