"""SRAM serving: a MoE layer whose routed experts continue on the next wafer. A token whose top-k experts lie on
both wafers passes through expert regions on each (dispatch, GEMVs, combine on the far wafer too); before, only
the first wafer's were in a token's time. Hand-derived: the chance a wafer holds one of a token's experts, a tiny
three-wafer split, and DeepSeek-V3 (FP8) at 8K on 19 CS-3."""

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
    # DeepSeek-V3 (FP8) at 8,192 tokens, B 1, on 19 CS-3 (the fewest that hold it). The chosen layout's split
    # cuts 16 of the 58 MoE layers, leaving these many of each one's 256 experts on the next wafer (the split
    # itself is tested in test_stagesplit.py):
    far = [80, 57, 34, 11, 246, 223, 200, 177, 154, 131, 108, 85, 62, 39, 16, 246]
    # A top-8 token meets the far wafer's experts with chance hit(n) and the near wafer's 256 − n with hit(256 − n):
    # Σ (hit(n) + hit(256 − n) − 1) = 11.8189 wafers of experts beyond one per pass.
    visits = sum(hit(n, 256, 8) + hit(256 - n, 256, 8) - 1.0 for n in far)
    assert visits == pytest.approx(11.81894, abs=1e-5)
    from wsemoe.config.loader import load_config
    from wsemoe.sweep import engine

    cfg = load_config({"name": "split", "hardware": {"preset": "cs3", "weight_source": "sram"},
                       "model": "deepseek-v3",
                       "workload": {"mode": "decode", "seq_len": 8192, "B": 1, "attn_weight_format": "fp8",
                                    "expert_weight_format": "fp8"}})
    row = {k: float(np.asarray(v).ravel()[0]) for k, v in engine.evaluate_block(cfg).columns.items()
           if np.asarray(v).dtype.kind == "f"}
    assert row["wafers"] == 19.0 and row["layer_splits"] == len(far)
    # Each visit is the layer's dispatch 964.5 ns + one routed expert's GEMVs 11.464 µs (the experts op: the routed
    # region is the slower of it and the shared one) + combine 1.0645 µs + the sum 57.3 ns = 13.550 µs. The GEMVs were
    # 13.307 µs (14,638 cycles) with the weights read at 2 bytes; 12,168 of those cycles are SRAM-bound MACs, which
    # read 5 bytes a MAC at 1-byte FP8 weights, not 6 (test_weight_operand.py): 14,638 − 12,168/6 = 12,610 cycles.
    visit = sum(row[f"moe_op_{op}_s"] for op in ("dispatch", "experts", "combine", "moe_sum"))
    assert row["moe_op_experts_s"] == pytest.approx(12610 / 1.1e9, rel=1e-4)
    assert visit == pytest.approx(13.5500e-6, rel=1e-4)
    # t1 is 6.0906 ms without them (160.27 tokens/s per user at 2-byte weights, every other term hand-derived in stop
    # 59's audit): now 6.0906 + 0.16015 = 6.2507 ms, 159.98 tokens/s per user (2.6% slower). A wafer hop pays one
    # block's width of fabric path, not two (test_wafer_boundary.py): 18 hops × 512 PEs at 1.1 GHz = 8.378 µs less,
    # 6.0822 + 0.16015 = 6.2424 ms, 160.20 tokens/s per user.
    assert row["pipeline_latency_s"] == pytest.approx(6.0906e-3 - 18 * 512 / 1.1e9 + visits * 13.5500e-6, rel=2e-5)
    assert row["tokens_per_s_per_user"] == pytest.approx(160.20, abs=0.01)
    assert row["far_experts_s"] == pytest.approx(visits * visit, rel=1e-9)   # 160.15 µs
