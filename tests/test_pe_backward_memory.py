"""Training memory of weight streaming at PE level (hardware.pe_fabric): what an expert region holds through the
backward (weights, their gradients, the busiest region's token copies and their deltas) and the attention
backward's dP beside the scores, hand-derived on bta_topk_pe's points."""

from __future__ import annotations

import numpy as np
import pytest

from wsemoe.config.loader import load_config
from wsemoe.sweep import engine

BASE = {"name": "pe", "hardware": {"preset": "cs2", "pe_fabric": True}, "model": "qwen3-30b-a3b",
        "workload": {"mode": "train", "seq_len": 8192, "attn_kernel": "per_head", "recompute": "full"}}


def test_the_expert_regions_hold_their_weight_gradients_and_deltas_in_training():
    # Point 596 of sweeps/bta_topk_pe.yaml (B 1, G 50, k 8, unicast): T = 50 · 8,192 = 409,600 tokens; each of 128
    # uniform experts takes Binomial(409,600, 1/16) copies (mean 25,600), the busiest of them E[max] = 26,002.8
    # (routing.py: a step's busiest region; scipy here). Its region holds 3 · 2048 · 768 = 4,718,592 weights at 2
    # bytes (9,437,184 B), in training as many gradients at bytes_per_grad 2 (its PEs keep their blocks while the
    # copies pass, so each block's Σ x·dy is held until the last one), its tokens 26,002.8 · (2·2048 + 6·768) +
    # 3,200 · (2·2048 + 2·2048) B and, through the backward, the deltas dy of its copies and g of its 3,200 home
    # tokens: (26,002.8 + 3,200) · 2 · 2048 B. Beside the program (48,000 − 1,152 = 46,848 B) and the attention
    # weights held over 994 · 750 PEs (37,757,440 / 745,500 = 50.647 B) a tile needs 8,355.9 PEs, more than
    # 745,500 / 128 = 5,824.2: it fits no tile (5,724.9 at the expected share without the deltas, the 5,797-PE
    # tile it took).
    from scipy.stats import binom

    def busiest(T, p, lo, hi):
        x = np.arange(lo, hi)
        return float(x[0] + (1.0 - binom.cdf(x, T, p) ** 128).sum())

    held, room = 37_757_440.0 / 745_500.0, 46_848.0
    free = room - held
    W = 9_437_184.0

    def need(G):
        T = G * 8_192.0
        n = busiest(T, 1 / 16, int(T / 20), int(T / 12))
        return n, (2 * W + n * (2 * 2048 + 6 * 768) + T / 128 * 4 * 2048 + (n + T / 128) * 2 * 2048) / free

    n50, pes = need(50)
    assert n50 == pytest.approx(26_002.8, abs=0.05) and pes == pytest.approx(8_355.9, abs=0.05)
    row = engine.evaluate_points(load_config({**BASE, "workload": {**BASE["workload"], "B": 1, "G": 50},
                                              "mapping": {"pe_dispatch": "unicast"}})).iloc[0]
    assert not bool(row["feasible"]) and row["g_pe_sram_moe"] > 0
    assert row["expert_tokens"] == pytest.approx(n50, rel=1e-5)
    # The cap on B·G at B = 1 (k 8): G = 33 takes 17,223.4 copies at its busiest region and needs 5,668.8 PEs (the
    # 31 × 187 tile of a 32 × 4 grid holds it); G = 34 (17,740.3 copies) needs 5,827.0 > 5,824.2. Without the
    # deltas and at the expected share G = 50 fit.
    for G, fits in ((33, True), (34, False)):
        n, pes = need(G)
        assert pes == pytest.approx({33: 5_668.8, 34: 5_827.0}[G], abs=0.05)
        row = engine.evaluate_points(load_config({**BASE, "workload": {**BASE["workload"], "B": 1, "G": G},
                                                  "mapping": {"pe_dispatch": "unicast"}})).iloc[0]
        assert bool(row["feasible"]) is fits
        area, T = row["expert_region_pes"], G * 8_192.0
        assert row["expert_tokens"] == pytest.approx(n, rel=1e-5)
        assert row["pe_mem_expert_deltas_bytes"] == pytest.approx((n + T / 128) * 4_096.0 / area, rel=1e-5)
        assert row["pe_mem_expert_grads_bytes"] == pytest.approx(W / area, rel=1e-12)
    inference = {k: v for k, v in BASE["workload"].items() if k != "recompute"}   # training's (config/applies.py)
    prefill = engine.evaluate_points(load_config({**BASE, "workload": {**inference, "mode": "prefill", "B": 1, "G": 50},
                                                  "mapping": {"pe_dispatch": "unicast"}})).iloc[0]
    assert prefill["pe_mem_expert_grads_bytes"] == 0.0 and prefill["pe_mem_expert_deltas_bytes"] == 0.0


def test_deltas_cap_b_times_g_at_top_1():
    # k 1, F 6,144 (the sweep's k = 1 point, active parameters held): W = 3 · 2048 · 6144 · 2 = 75,497,472 B and as
    # many gradient bytes; the busiest of 128 regions takes E[max] of Binomial(B·G·8,192, 1/128) copies n (scipy
    # here), each 4,096 + 36,864 B, its T/128 home tokens 8,192 B each, and the deltas (n + T/128) · 4,096 B.
    # B·G = 31 (2,100.1 copies) needs 5,769.5 PEs and fits the 5,797-PE tile; 32 (2,165.9) needs 5,849.7 > 5,824.2
    # and does not (without the deltas and at the expected share B·G 38 fit, the old best point).
    from scipy.stats import binom

    model = {"preset": "qwen3-30b-a3b", "num_experts_per_tok": 1, "moe_intermediate_size": 6144}
    free = 46_848.0 - 37_757_440.0 / 745_500.0
    for B, G, fits, pes in ((1, 31, True, 5_769.5), (2, 16, False, 5_849.7), (1, 38, False, 6_330.3)):
        T = B * G * 8_192.0
        x = np.arange(int(T / 180), int(T / 90))
        n = float(x[0] + (1.0 - binom.cdf(x, T, 1 / 128) ** 128).sum())
        need = (2 * 75_497_472.0 + n * (4_096 + 36_864) + T / 128 * 8_192 + (n + T / 128) * 4_096) / free
        assert need == pytest.approx(pes, abs=0.05)
        row = engine.evaluate_points(load_config({**BASE, "model": model, "workload": {**BASE["workload"], "B": B,
                                                  "G": G}, "mapping": {"pe_dispatch": "unicast"}})).iloc[0]
        assert bool(row["feasible"]) is fits


def test_the_attention_backward_holds_dp_beside_the_scores_on_the_pes():
    # B 4 (one tile of the G 8), one head at a time: Q = 4 · 8,192 = 32,768 query rows of S = 8,192 keys on the
    # 994 × 750 program rectangle: ⌈32,768 / 994⌉ · ⌈8,192 / 750⌉ = 33 · 11 = 363 blocks a PE (the other way
    # 44 · 9 = 396). Each holds its score (2 B) and, in training, the backward's dP = dO·Vᵀ of the same shape beside
    # it (2 B), read together by dS = P ⊙ (dP − rowsum(dO ⊙ O)): 1,452 B a PE (726 without the backward, as in
    # prefill).
    assert min(-(-32_768 // 994) * -(-8_192 // 750), -(-32_768 // 750) * -(-8_192 // 994)) == 363
    train = engine.evaluate_points(load_config({**BASE, "workload": {**BASE["workload"], "B": 4, "G": 8}})).iloc[0]
    assert train["pe_mem_scores_bytes"] == pytest.approx((2 + 2) * 363, rel=1e-12)
    inference = {k: v for k, v in BASE["workload"].items() if k != "recompute"}
    prefill = engine.evaluate_points(load_config({**BASE, "workload": {**inference, "mode": "prefill", "B": 4,
                                                                       "G": 8}})).iloc[0]
    assert prefill["pe_mem_scores_bytes"] == pytest.approx(2 * 363, rel=1e-12)
