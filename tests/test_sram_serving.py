"""SRAM serving across wafers: region bytes, stages, what fits, layouts, MLA at PE level, and the streaming pipeline's
formulas, hand-derived on tiny models and fabrics."""

from __future__ import annotations

from types import SimpleNamespace as NS

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wsemoe.config import presets
from wsemoe.cost.wafer import fabric, ladder, mla, regions, serving
from wsemoe.specs import BalanceSpec, MappingSpec, WorkloadSpec

# A tiny MoE: H 4, 2 query heads and 1 KV head of width 2, 2 experts (top-1) of width 4, vocabulary 8.
TINY = dict(hidden_size=4, num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1, head_dim=2,
            moe_intermediate_size=4, num_experts=2, num_experts_per_tok=1, vocab_size=8, attention="gqa",
            qkv_bias=False, qk_norm=False, n_shared_experts=0, shared_expert_intermediate_size=None,
            shared_expert_gate=False, router_bias=False, first_k_dense_replace=0, intermediate_size=0,
            tie_word_embeddings=False)


def tiny(**changes):
    return NS(**{**TINY, **changes})


def workload(**changes):
    return NS(**{**WorkloadSpec(mode="decode").model_dump(), **changes})


def test_region_bytes_by_hand():
    # attention: QKV 4·(2 + 2)·2 = 32, output 2·2·4 = 16, norms 2·4 = 8, router 4·2 = 8: 64 weights = 128 B;
    # KV per token 2·1·2 values × 2 B = 8 B, 3 sequences × 10 tokens → 240 B. Expert 3·4·4 = 48 weights = 96 B.
    # Embedding 8·4·2 = 64 B; head (8 + 1)·4·2 = 72 B (the final norm with it). A MoE layer: 368 + 2·96 = 560.
    b = regions.region_bytes(tiny(), workload(seq_len=10), 3)
    assert b["attention"] == 128 + 240 and b["expert"] == 96 and b["shared"] == 0
    assert b["embedding"] == 64 and b["head"] == 72 and b["moe"] == 368 + 192


def test_stage_layers_by_hand():
    # 5 layers, the first 3 dense (FFN width 8), B 3 at S 10: a dense layer is attention 56 weights (no router) +
    # FFN 3·4·8 = 96, 304 B, + 240 B of KV = 544 B; a MoE layer 368 + 2·96 = 560 B; embedding 64, head 72; 2,888 B.
    # Over 2 stages the least peak cuts after the dense layers: [64 + 3·544] = 1,696, [2·560 + 72] = 1,192 (after
    # two dense layers it would be 1,152 and 1,736; the even split of layers, 2 + 3, also gave 1,736).
    m = tiny(num_hidden_layers=5, first_k_dense_replace=3, intermediate_size=8)
    nb = regions.region_bytes(m, workload(seq_len=10), 3)
    assert nb["dense"] == 544 and nb["moe"] == 560
    dense, moe = regions.stage_layers(m, 2, nb)
    assert dense.tolist() == [3.0, 0.0] and moe.tolist() == [0.0, 2.0]
    assert float(regions.stage_peak(m, 2, nb)) == 1696.0


def tiny_pe(**changes):
    # A 4 × 5 fabric with no margin (20 PEs), 1000 B per PE of which the program takes 100.
    return NS(**{**presets.load_hardware("cs3").pe.model_dump(), "fabric_rows": 4, "fabric_cols": 5,
                 "kernel_margin_rows": 0, "kernel_margin_cols": 0, "sram_per_pe_bytes": 1000.0,
                 "program_bytes_per_pe": 100.0, **changes})


def test_room_by_hand():
    # free = 1000 − 100 = 900 B. Buffers are sized at the regions' weights alone (their smallest): the attention
    # region (128 B) packs to side √(128/900) < 1 → 1: its buffers hold one token's input (H 4) and output (QKV 8,
    # wider than E 2) slices, double-buffered, at 2 B: 2·(4 + 8)·2 = 48 B. Experts: 2·(4 + 2·4)·2 = 48; embedding
    # 2·(4 + 4)·2 = 32; head 2·(4 + 8)·2 = 48. Room = 900 − 48 = 852 B per PE; reserve = (100 + 48) / 1000.
    room, reserve = regions.room(tiny_pe(), tiny(), workload(seq_len=10))
    assert float(room) == 852.0 and float(reserve) == pytest.approx(0.148)
    assert float(regions.region_bytes(tiny(), workload(seq_len=10), 0)["attention"]) == 128.0


def test_what_fits_never_grows_with_the_batch():
    # DeepSeek-V3 (FP8) at 8,192 tokens on 18 CS-3: one sequence does not fit. When the room was sized at each
    # batch's own regions, 12 sequences' caches widened the attention region, shrank its buffers (its output is
    # 73,728 values wide) and fitted where one sequence did not. Feasibility is now a prefix of the batches.
    from wsemoe.config.loader import load_config
    from wsemoe.sweep import engine

    def feasible(model, fmt, wafers, batches=16):
        hardware = {"preset": "cs3", "weight_source": "sram", "pipeline_wafers": wafers}
        cfg = load_config({"name": "fit", "hardware": hardware, "model": model,
                           "workload": {"mode": "decode", "seq_len": 8192, "attn_weight_format": fmt,
                                        "expert_weight_format": fmt},
                           "axes": {"workload.B": list(range(1, batches + 1))}})
        return np.asarray(engine.evaluate_block(cfg).columns["feasible"], dtype=bool)

    assert not feasible("deepseek-v3", "fp8", 18).any()
    # Qwen3-235B needs 13 CS-3 at 8K (12 before its regions were whole tiles: test_tile_lattice.py), 19 sequences
    qwen = feasible("qwen3-235b-a22b", "bf16", 13, 20)
    assert qwen[0] and not qwen[-1] and np.all(np.diff(qwen.astype(int)) <= 0), qwen.astype(int)


def test_kv_fit_sequences_is_what_the_wafers_hold_whatever_the_batch():
    # DeepSeek-V3 (FP8) at 8,192 tokens on 19 CS-3: batches up to 48 fit (feasible), 49 does not. The column counted
    # the room the split of the point's own batch leaves, 26 sequences at B = 1 and 38 at B = 26, while that
    # batch's split moves (experts cross to the next wafer as the caches grow) and 48 fit. It is now the most
    # sequences a re-balanced split holds, the same at every batch and the edge of `feasible`. With its regions whole
    # tiles (test_tile_lattice.py) DeepSeek-V3 needs 20 CS-3 at B 1 (8 sequences fit) and 21 hold 56, 57 not.
    from wsemoe.config.loader import load_config
    from wsemoe.sweep import engine

    cfg = load_config({"name": "kvfit", "hardware": {"preset": "cs3", "weight_source": "sram", "pipeline_wafers": 21},
                       "model": "deepseek-v3",
                       "workload": {"mode": "decode", "seq_len": 8192, "attn_weight_format": "fp8",
                                    "expert_weight_format": "fp8"},
                       "axes": {"workload.B": [1, 26, 56, 57]}})
    cols = engine.evaluate_block(cfg).columns
    assert np.asarray(cols["feasible"], dtype=bool).tolist() == [True, True, True, False]
    assert np.asarray(cols["kv_fit_sequences"], dtype=float).tolist() == [56.0] * 4


def test_fewest_wafers_by_hand():
    # Per wafer 20 PEs × 852 B = 17,040 B. With B 3 at S 10 a layer is 560 B: everything is 2·560 + 64 + 72 =
    # 1,256 B, one wafer. At S 1000 the KV cache is 3·1000·8 = 24,000 B per layer: a layer alone exceeds a wafer.
    # At S 300 (7,200 B of KV, a layer 7,520 B): 2 layers + embedding + head = 15,176 B would fit one wafer, but the
    # regions are whole tiles (here one PE each): attention ⌈7,328/852⌉ = 9, a layer 11, 24 tiles > 20: two wafers
    # (test_tile_lattice.py). The counts in tiles at S 10: attention 1, a layer 3, 8 tiles; at S 1000 attention
    # ⌈24,128/852⌉ = 29 tiles (6 × 5) alone exceed a wafer.
    pe, m = tiny_pe(), tiny()
    assert float(regions.fewest_wafers(pe, m, workload(B=3, seq_len=10))) == 1.0
    assert np.isnan(regions.fewest_wafers(pe, m, workload(B=3, seq_len=1000)))
    wl = workload(B=3, seq_len=300)
    assert float(regions.fewest_wafers(pe, m, wl)) == 2.0
    # at S 400 (9,600 B of KV, a layer 9,920 B) two layers need 19,976 B: two wafers, one layer each, the first
    # with the embedding (9,984 B), the second with the head (9,992 B); in tiles 1 + 14 and 14 + 1 (attention
    # ⌈9,728/852⌉ = 12, 4 × 3)
    wl = workload(B=3, seq_len=400)
    assert float(regions.fewest_wafers(pe, m, wl)) == 2.0
    nb = regions.region_bytes(m, wl, 3)
    assert float(regions.stage_peak(m, 2, nb)) == 9920 + 72


def test_densities_by_hand():
    # From 3,000 B per PE (the fullest stage spread over every PE) up by √2 while a PE holds it (≤ 10,000):
    # 3,000, 4,243, 6,000, 8,485; a layout that does not fit keeps only the sparsest (35,000 > 30,000).
    u = ladder.densities(np.array([10000.0, 30000.0]), np.array([3000.0, 35000.0]))
    assert np.allclose(u[:, 0], [3000, 3000 * 2 ** 0.5, 6000, 6000 * 2 ** 0.5])
    assert set(u[:, 1].tolist()) == {35000.0}


@settings(max_examples=200, deadline=None)
@given(st.floats(100, 60000), st.floats(100, 60000), st.floats(1.0, 4.0))
def test_more_pes_or_sram_only_add_candidate_layouts(pack, fill, more_sram):
    # The ladder starts at u_fill: more SRAM (higher u_pack) only adds rungs; twice the PEs (u_fill halved) adds
    # two sparser rungs below the old ones. Why more of either is never slower (the best over a larger set).
    if pack < fill:
        return
    before = set(np.round(ladder.densities(pack, fill).ravel(), 6).tolist())
    for after in (ladder.densities(pack * more_sram, fill), ladder.densities(pack, fill / 2)):
        assert before <= set(np.round(after.ravel(), 6).tolist())


def test_mla_macs_on_one_pe_by_hand():
    # On a 1 × 1 region every GEMV is local MACs: rows × ⌈length / w⌉ cycles (w = 8 FP16 FMACs, CS-3).
    # A DeepSeek-like MLA cut down: H 16, 2 heads, r_q 8, r_kv 8, d_nope 4, d_rope 2, d_v 4; context 3.
    m = NS(hidden_size=16, num_attention_heads=2, q_lora_rank=8, kv_lora_rank=8, qk_nope_head_dim=4,
           qk_rope_head_dim=2, v_head_dim=4)
    pe = NS(**{**presets.load_hardware("cs3").pe.model_dump(), "mac_memory_operands": 0})   # the simd reading
    ops = mla.attention(m, 1, 1, 3, pe)
    macs = {k: float(v["compute_cycles"]) for k, v in ops.items()}
    assert macs["q_down"] == 16 * 1            # 16 rows × ⌈8/8⌉
    assert macs["q_up"] == 8 * 2               # 8 × ⌈2·(4 + 2)/8⌉ = ⌈12/8⌉ = 2
    assert macs["kv_down"] == 16 * 2           # 16 × ⌈(8 + 2)/8⌉
    assert macs["absorb_k"] == 2 * 4 * 1       # 2 heads one after another on one row: 4 × ⌈8/8⌉ each
    assert macs["absorb_v"] == 2 * 8 * 1       # 2 heads × 8 × ⌈4/8⌉
    assert macs["o"] == 8 * 2                  # 2·4 = 8 rows × ⌈16/8⌉
    assert macs["score"] == 20 * 1 + 1         # q·c: 2·(8 + 2) = 20 rows over ⌈3 keys / 8⌉, then the scale: ⌈3·2/8⌉
    assert macs["pv"] == 3 * 2 * 1             # p·c_kv: 3 keys × 2 heads, ⌈(2·8/2)/8⌉ = 1


def test_mla_output_returns_to_the_residual_axis_by_hand():
    # DeepSeek-V3's attention on 128 × 96 PEs: o contracts on the rows (a head's d_v values on its row), so its
    # all-reduce along the rows leaves the 7,168 outputs split along the columns; the residual stream (and the
    # norm and router after it) is split along the rows. Each row broadcasts its slice ⌈7168/128⌉ = 56 along
    # its 96 PEs from an end: 56 wavelets + 95 hops + 1 relay (5 cycles) = 156 cycles beyond the GEMV, and one
    # more collective call under per-primitive overheads. Before, o stopped at the GEMV (the hidden vector on
    # the wrong axis for every op after it).
    from wsemoe.cost.wafer import operators

    m = NS(**presets.load_model("deepseek-v3").model_dump())
    pe = NS(**presets.load_hardware("cs3").pe.model_dump())
    coll = {"pattern": "tree", "levels": 2}
    o = mla.attention(m, 128, 96, 8192, pe, 1, 2, coll)["o"]
    gemv = operators.gemv(128 * 128, 7168, 128, 96, pe, 1, 2, **coll)
    assert float(o["link_cycles"]) == float(gemv["link_cycles"]) + 56
    assert float(o["latency_cycles"]) == float(gemv["latency_cycles"]) + 95 * 1 + 1 * 5
    assert float(o["overhead_cycles"]) == float(gemv["overhead_cycles"]) + 133
    assert float(o["cycles"]) == float(gemv["cycles"]) + 156 + 133


def cs3_sram(**changes):
    return NS(**{**presets.load_hardware("cs3").model_dump(), "weight_source": "sram", **changes})


@pytest.fixture(scope="module")
def qwen_points():
    m = NS(**presets.load_model("qwen3-30b-a3b").model_dump())
    wl = workload(B=np.array([1.0, 16.0, 256.0]), seq_len=4096.0, prompt_len=512.0, draft_tokens=3,
                  accepted_tokens_per_step=2.5)
    hw = cs3_sram(pipeline_wafers=4.0)
    mp, bal = NS(**MappingSpec().model_dump()), NS(**BalanceSpec().model_dump())
    return hw, m, wl, mp, bal, serving.evaluate(hw, m, wl, mp, bal)


def test_period_rates_and_speculation(qwen_points):
    # step = t1 + (q − 1)·β with q = draft + 1 = 4; period = max(step, B·q·β); a = 2.5 accepted per step.
    _, _, wl, _, _, out = qwen_points
    beta, t1 = out["busiest_stage_s"], out["pipeline_latency_s"]
    step = t1 + 3 * beta
    assert np.allclose(out["step_latency_s"], step, rtol=1e-12)
    assert np.allclose(out["pipeline_period_s"], np.maximum(step, wl.B * 4 * beta), rtol=1e-12)
    assert np.allclose(out["tpot_s"] * 2.5, out["pipeline_period_s"], rtol=1e-12)
    assert np.allclose(out["tokens_per_s"], wl.B * out["tokens_per_s_per_user"], rtol=1e-12)
    assert out["pipeline_period_s"][-1] > out["step_latency_s"][-1]   # 256 sequences: the stream binds


def test_latency_adds_up(qwen_points):
    # t1 = embedding + L·MoE layer + head + (W − 1)·wafer hop + crossings + far experts + token return, and its
    # five terms add up to it.
    _, m, _, _, _, out = qwen_points
    parts = (out["embedding_time_s"] + m.num_hidden_layers * out["moe_layer_time_s"] + out["head_time_s"]
             + 3 * out["wafer_hop_s"] + out["crossing_s"] + out["far_experts_s"] + out["token_return_s"])
    assert np.allclose(out["pipeline_latency_s"], parts, rtol=1e-12)
    terms = sum(out[c] for c in serving.TERM_COLUMNS)
    assert np.allclose(terms, out["pipeline_latency_s"], rtol=1e-12)
    ops = sum(v for k, v in out.items() if k.startswith("moe_op_"))
    assert np.allclose(ops, out["moe_layer_time_s"], rtol=1e-12)


def test_ttft_streams_the_prompts(qwen_points):
    # TTFT = t1 at context P + (B·P − 1)·β at context P (the layout the decode point chose)
    hw, m, wl, mp, bal, out = qwen_points
    one = serving.evaluate(hw, m, workload(B=wl.B, seq_len=512.0, mode="prefill"), mp, bal)
    assert np.all(out["ttft_s"] > out["pipeline_latency_s"])
    assert np.all(np.diff(out["ttft_s"]) > 0)
    assert np.allclose(one["ttft_s"], one["pipeline_latency_s"] + (wl.B * 512 - 1) * one["busiest_stage_s"],
                       rtol=1e-12)


def test_a_prompt_s_tokens_skip_the_head():
    # Qwen3-30B-A3B on 2 CS-3, 4 sequences at context 1,024: decoding, the head region paces the stream (each token's
    # vocabulary-wide logits), but a prompt's tokens never reach the head (only its last token does, in t1), so the
    # prompt streams at the pace of the busiest other stage. An independent hand derivation of this point: TTFT
    # 630.2 µs + 4,095 × 1.8436 µs (the attention region) = 8.18 ms, where pacing it by the head gave 23 ms. In whole
    # tiles (test_tile_lattice.py) the layout sized for 16 sequences at 41,857 B a PE no longer fits 2 wafers; it is
    # packed at the room, 45,832 B a PE (15² expert tiles either way, a smaller attention region): 643.46 µs +
    # 4,095 × 2.0664 µs = 9.105 ms.
    m = NS(**presets.load_model("qwen3-30b-a3b").model_dump())
    mp, bal = NS(**MappingSpec().model_dump()), NS(**BalanceSpec().model_dump())
    dec = serving.evaluate(cs3_sram(pipeline_wafers=2.0), m, workload(B=4.0, seq_len=1024.0, prompt_len=1024), mp,
                           bal)
    assert str(dec["busiest_stage"]) == "head region"
    assert dec["prompt_busiest_stage_s"] < dec["busiest_stage_s"]
    assert dec["ttft_s"] == pytest.approx(dec["prompt_latency_s"] + 4095 * dec["prompt_busiest_stage_s"], rel=1e-12)
    assert dec["ttft_s"] == pytest.approx(643.46e-6 + 4095 * 2.0664e-6, rel=1e-3)
    pre = serving.evaluate(cs3_sram(pipeline_wafers=2.0), m, workload(B=4.0, seq_len=1024.0, mode="prefill"), mp, bal)
    assert str(pre["busiest_stage"]) != "head region"


def test_what_does_not_fit_says_so():
    # 4 wafers cannot hold Qwen3-235B (about 470 GB at 16 bits on 4 × 42 GB): g_sram_wafers > 0, bound SRAM.
    m = NS(**presets.load_model("qwen3-235b-a22b").model_dump())
    out = serving.evaluate(cs3_sram(pipeline_wafers=4.0), m, workload(B=1.0, seq_len=2048.0),
                           NS(**MappingSpec().model_dump()), NS(**BalanceSpec().model_dump()))
    assert out["g_sram_wafers"] > 0 and str(out["bound"]) == "SRAM"
    assert out["wafers_needed"] > 4 and out["wafers"] == 4


def test_program_rectangle_pes():
    assert float(regions.wafer_pes(presets.load_hardware("cs3").pe)) == 1170 * 755
    assert fabric.program_rectangle(presets.load_hardware("cs2").pe) == (994, 750)


GOLDEN = [   # (model, wafers, B, placement) -> tokens/s per user, TTFT (1,024-token prompt), wafers, bound
    # Issue 26 moved them (1,313 / 1,197 / 1,097 before): one overhead per fused operator chain (pe_kernels: fused),
    # top-k as one merged collective, the logits reduced (not all-reduced), CS-3's MAC rate bounded by its SRAM
    # bandwidth (pe_mac_rate: sram_bound) and regions sized for the caches of larger batches too (serving.sized_for).
    # The byte-balanced stage split moved the 16-wafer points (1,869.5 / 1,864.9 before): 48 layers over 16 wafers
    # balance their bytes by cutting 10–12 MoE layers between wafers, each such hop carrying a second vector.
    # The batch ladder of sized regions went from 1, 4 … 256 to 1, 2, 4 … 4,096, every batch up to the largest rung
    # that fits taking that rung's layout: the 16-wafer points moved from 1,856.3 and 1,845.1 tokens/s per user
    # (TTFT 7.6 and 7.3 ms) to 1,861.9 and 1,867.7 (6.8 ms); the 2-wafer point stayed.
    # A prompt's tokens skip the head (only its last token reaches it): TTFT 6.8 → 3.5 ms at 16 wafers and
    # 23.2 → 8.2 ms at 2, where the head region had paced the prompts' stream; per-user decode unchanged.
    # A token meets its experts on both wafers of a split MoE layer (the far wafer's dispatch, GEMVs and combine,
    # weighted by the chance one of its top-8 lies there; test_split_layer.py): the interleaved point keeps its
    # layout (13 split layers) and adds 22.43 µs, t1 535.41 → 557.84 µs, 1,867.7 → 1,792.6 tokens/s per user;
    # the blocked one (13 split layers, t1 537.09 µs) now takes a layout with none (attention 4× its share,
    # t1 554.96 µs): 1,861.9 → 1,801.9, TTFT 3.50 → 2.66 ms.
    # The layer hop's broadcast along the next attention region's 172 columns is stretched by the interleaved
    # placement too (test_interleave_stretch.py): 86 hops × (2.5 − 1) = 129 cycles a layer, 48 layers: t1 557.84 →
    # 563.47 µs, 1,792.6 → 1,774.7 tokens/s per user.
    # A wafer hop pays one block's width of fabric path, not two (the stage's last layer already pays its layer hop
    # out of its region; test_wafer_boundary.py): 15 hops × 504 PEs (blocked) and × 516 (interleaved) at 1.1 GHz,
    # t1 554.96 → 548.09 µs and 563.47 → 556.44 µs, 1,801.9 → 1,824.5 and 1,774.7 → 1,797.1 tokens/s per user;
    # the 2-wafer point one hop × 195 PEs, 1,118.46 → 1,118.68.
    # Regions in whole tiles of one lattice, split in tiles against ⌊R/s⌋·⌊C/s⌋ a wafer (test_tile_lattice.py): a
    # ladder's sparsest rung fills every PE in bytes, so it rarely fits in tiles. Blocked: 36² tiles at 7,150 B a PE
    # (attention 4× its share) → the next rung, 30² at 10,112 B (4×), t1 548.09 → 551.76 µs, 1,824.5 → 1,812.4
    # tokens/s per user, TTFT 2.66 → 2.79 ms; interleaved: 43² at 4,884 B, attention 1×, 13 split layers → the same
    # 30² layout with none, t1 556.44 → 559.01 µs, 1,797.1 → 1,788.9, TTFT 3.52 → 2.80 ms. 2 wafers: the layout
    # sized for 16 sequences at 41,857 B → at the room, 45,832 B (15² tiles both), t1 893.9 → 924.1 µs, 1,118.7 →
    # 1,082.1, TTFT 8.18 → 9.11 ms (test_a_prompt_s_tokens_skip_the_head).
    # An expert tile is the smallest square that holds it at u, ⌈√(e/u)⌉, whatever the SRAM, and a rung whose tiles
    # do not fit stands in as the sparsest fine rung u_fill·2^(j/16) that does, not the densest layout (which moved
    # with the SRAM: test_tile_lattice.test_twice_the_sram_keeps_every_layout_that_fitted). Blocked, at the same
    # 10,112 B a PE (4×): 9,437,184 / 10,112 = 933.3 PEs, side ⌊30.55⌋ = 30 (10,486 B a PE, above u) → ⌈30.55⌉ = 31
    # (9,820 B), t1 551.76 → 549.73 µs, 1,812.4 → 1,819.1 tokens/s per user, TTFT 2.79 → 2.85 ms; interleaved: the
    # fine rung at 6,253 B a PE (39², attention 1×, 12 split layers) beats 10,112 B (30², 4×), t1 559.01 → 558.09 µs,
    # 1,788.9 → 1,791.8, TTFT 2.80 → 3.15 ms. The 2-wafer point: 45,832 → 45,646 B a PE, the same 15² tiles and times.
    # The fine ladder is fixed, 2^(j/256) B a PE (lattice.fine), not u_fill · 2^(j/16), and no candidate sits at the
    # room (it moved with the SRAM: test_tile_lattice.test_more_sram_keeps_every_candidate_layout). Interleaved: the
    # sparsest fitting rung 6,253 → 6,215.1 B a PE (39² tiles, attention 1×, 12 split layers), t1 558.085 → 558.084
    # µs, 1,791.818 → 1,791.844 tokens/s per user; the 2-wafer point 45,646 → 45,470.9 B (15²), the same times.
    (("qwen3-30b-a3b", 16.0, 4.0, "blocked"), (1819.0605189784144, 0.002854710685043988, 16.0, "hop latency")),
    (("qwen3-30b-a3b", 16.0, 4.0, "interleaved"), (1791.844479358127, 0.00314700233003523, 16.0, "hop latency")),
    (("qwen3-30b-a3b", None, 4.0, "blocked"), (1082.102844240039, 0.009105216579393938, 2.0, "local MACs")),
]


@pytest.mark.parametrize("point,expected", GOLDEN)
def test_golden_serving_points(point, expected):
    # Pinned outputs of the whole model (context 8,192 on cs3): any change to a formula, a preset or a layout
    # rule moves them and must be explained (the Cerebras validate rows pin the dense models likewise).
    model, wafers, batch, placement = point
    m = NS(**presets.load_model(model).model_dump())
    wl = workload(B=batch, seq_len=8192.0, prompt_len=1024)
    mp = NS(**{**MappingSpec().model_dump(), "pe_placement": placement})
    out = serving.evaluate(cs3_sram(pipeline_wafers=wafers), m, wl, mp, NS(**BalanceSpec().model_dump()))
    per_user, ttft, used, bound = expected
    assert float(out["tokens_per_s_per_user"]) == pytest.approx(per_user, rel=1e-9)
    assert float(out["ttft_s"]) == pytest.approx(ttft, rel=1e-9)
    assert float(out["wafers"]) == used and str(out["bound"]) == bound


def test_the_capacity_invariant_can_fail(monkeypatch):
    # A model that always fills the wafer (no denser candidate layouts) gets slower with more PEs where spreading
    # hurts: the invariant must say so. Qwen3-30B-A3B on 48 wafers: its regions already spread ~10×.
    from wsemoe.analysis.invariants.cases import Case
    from wsemoe.analysis.invariants.laws import REGISTRY
    from wsemoe.config.loader import load_config

    cfg = load_config({"name": "spread", "hardware": {"preset": "cs3", "weight_source": "sram"},
                       "model": "qwen3-30b-a3b", "workload": {"mode": "decode", "seq_len": 8192},
                       "axes": {"hardware.pipeline_wafers": [16, 48], "workload.B": [1, 4]}})
    assert REGISTRY["serving_more_pes_or_sram_never_hurt"].run(Case(cfg)).status == "pass"
    monkeypatch.setattr(ladder, "layouts", lambda m, W, nb, pack, cap, *shares, **pe: (
        (regions.stage_peak(m, W, nb) / cap)[None] + 0.0 * np.asarray(pack), np.ones((1,) + np.shape(pack)),
        regions.split(m, W, nb)["crossings"][None] + 0.0 * np.asarray(pack),
        regions.split(m, W, nb)["visits"][None] + 0.0 * np.asarray(pack)))
    assert REGISTRY["serving_more_pes_or_sram_never_hurt"].run(Case(cfg)).status == "fail"


def test_cerebras_rows_hold_and_the_capacity_fit_sits_at_its_boundary():
    """The Cerebras validate rows at the preset: every check inside its band, the 20B row fitted; one 16-byte line
    more per PE's program and the 20B model no longer fits one CS-3 (the fit is the largest value that fits)."""
    from wsemoe.validate.cerebras import cerebras_rows, fit_program_bytes, models, wafers_needed

    from wsemoe.validate.deviations import KNOWN

    rows = {r["id"]: r for r in cerebras_rows()}
    assert all(r["ok"] or r["id"] in KNOWN for r in rows.values()), [r["id"] for r in rows.values() if not r["ok"]]
    assert rows["cerebras.wafers:dense-20b"]["kind"] == "fitted"
    assert {rows[f"cerebras.wafers:{n}"]["value"] for n in ("llama-3.1-8b", "llama-3.1-70b")} == {0.0}
    fit = fit_program_bytes()
    assert wafers_needed(models()["dense-20b"], fit) == 1.0
    assert wafers_needed(models()["dense-20b"], fit + 16.0) == 2.0


def test_a_swept_balance_reaches_the_layouts():
    # A balance field as an axis (zipf_s) gives every point its own popularity: the geometry's and the candidates'
    # shapes follow it (it once failed to broadcast). Zipf 0 is uniform: each of 128 experts draws Binomial(B, 8/128)
    # of a decode step's B tokens, the busiest E[max] = Σ_x (1 − F(x)^128) (routing.py): 15.996× the mean at B = 1
    # (one copy where the mean is 1/16), 2.438× at 64; zipf 1.5 loads one expert more than that.
    from scipy.stats import binom

    from wsemoe.config.loader import load_config
    from wsemoe.sweep import engine

    cfg = load_config({"name": "balance_axis", "model": "qwen3-30b-a3b",
                       "hardware": {"preset": "cs3", "weight_source": "sram"},
                       "workload": {"mode": "decode", "seq_len": 4096}, "balance": {"distribution": "zipf"},
                       "axes": {"workload.B": [1, 64], "balance.zipf_s": [0.0, 1.5]}})
    cols = engine.evaluate_block(cfg).columns
    zipf, imbalance, batch = cols["balance.zipf_s"], cols["expert_imbalance"], cols["workload.B"]
    most = {b: (1.0 - binom.cdf(np.arange(b + 1), b, 1 / 16) ** 128).sum() / (b / 16) for b in (1, 64)}
    assert most[1] == pytest.approx(15.996, abs=1e-3) and most[64] == pytest.approx(2.438, abs=1e-3)
    assert np.allclose(imbalance[zipf == 0.0], [most[b] for b in batch[zipf == 0.0]], rtol=1e-6)
    assert np.all(imbalance[zipf == 1.5] > imbalance[zipf == 0.0])


def test_more_wafers_than_layers_is_not_called_an_sram_limit():
    # Qwen3-30B-A3B's 48 layers on 49 CS-3: everything fits in SRAM (g_sram_wafers, _layer, _pe all ≤ 0), the
    # pipeline has a wafer too many (g_sram_stages > 0); bound read 'SRAM (it does not fit)', now the time's largest
    # term as for any other infeasible point, and infeasible_reason names the stage count
    m = NS(**presets.load_model("qwen3-30b-a3b").model_dump())
    out = serving.evaluate(cs3_sram(pipeline_wafers=49.0), m, workload(B=1.0, seq_len=8192.0),
                           NS(**MappingSpec().model_dump()), NS(**BalanceSpec().model_dump()))
    assert max(float(out[c]) for c in ("g_sram_wafers", "g_sram_layer", "g_sram_pe")) <= 0 < float(out["g_sram_stages"])
    assert str(out["bound"]) != "SRAM"
