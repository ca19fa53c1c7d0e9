"""SRAM serving's tile lattice (cost/wafer/lattice.py): a MoE model's regions are whole square tiles, an expert tile
holds no more than a PE's room, and the stage split counts tiles against the ⌊R/s⌋·⌊C/s⌋ a wafer holds; hand-derived
on a tiny fabric and on Qwen3-235B, whose largest-square expert tile overflowed its PEs."""

from __future__ import annotations

from types import SimpleNamespace as NS

import numpy as np
import pytest

from wsemoe.config import presets
from wsemoe.cost.wafer import lattice, regions, serving
from wsemoe.specs import BalanceSpec, MappingSpec, WorkloadSpec

# The tiny MoE of test_sram_serving.py: H 4, 2 query heads and 1 KV head of width 2, 2 experts (top-1) of width 4.
TINY = dict(hidden_size=4, num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1, head_dim=2,
            moe_intermediate_size=4, num_experts=2, num_experts_per_tok=1, vocab_size=8, attention="gqa",
            qkv_bias=False, qk_norm=False, n_shared_experts=0, shared_expert_intermediate_size=None,
            shared_expert_gate=False, router_bias=False, first_k_dense_replace=0, intermediate_size=0,
            tie_word_embeddings=False)


def tiny_pe():
    # 4 × 5 PEs, no margin, 1,000 B a PE of which the program takes 100: room 852 B (test_sram_serving.test_room_by_hand)
    return NS(**{**presets.load_hardware("cs3").pe.model_dump(), "fabric_rows": 4, "fabric_cols": 5,
                 "kernel_margin_rows": 0, "kernel_margin_cols": 0, "sram_per_pe_bytes": 1000.0,
                 "program_bytes_per_pe": 100.0})


def workload(**changes):
    return NS(**{**WorkloadSpec(mode="decode").model_dump(), **changes})


def test_whole_tiles_on_a_tiny_fabric_need_a_second_wafer_the_bytes_did_not():
    # B 3 at S 300: attention 128 B of weights + 3·300·8 B of KV = 7,328 B; an expert 96 B; embedding 64, head 72.
    # Room 852 B: the tile side is ⌈√(96/852)⌉ = 1 (one PE), the wafer 4·5 = 20 tiles. Attention ⌈7,328/852⌉ =
    # ⌈8.6⌉ = 9 tiles, a 3 × 3 rectangle; a layer 9 + 2 = 11 tiles; the model 1 + 11 + 11 + 1 = 24 > 20: two wafers,
    # [embedding, layer 1] and [layer 2, head], 12 tiles each. Counted in bytes (15,176 ≤ 20 × 852 = 17,040) it was
    # one wafer, which no whole-PE layout holds (the attention region alone leaves 9·852 − 7,328 = 340 B unused).
    pe, m, wl = tiny_pe(), NS(**TINY), workload(B=3, seq_len=300)
    assert float(regions.room(pe, m, wl)[0]) == 852.0
    nb = regions.region_bytes(m, wl, 3)
    parts, held = regions.tile_parts(pe, m, nb, 852.0)
    assert (float(parts["a"]), float(parts["e"]), float(parts["emb"]), float(parts["head"]), float(held)) == \
        (9.0, 1.0, 1.0, 1.0, 20.0)
    assert float(regions.fewest_wafers(pe, m, wl)) == 2.0
    cap = regions.capacity(pe, m, wl, 1.0)
    assert float(cap["g_sram_wafers"]) == pytest.approx(24.0 / 20.0 - 1.0)   # 24 tiles on one wafer's 20


def test_an_attention_rectangle_takes_its_idle_tiles():
    # At S 250 the attention region is 128 + 6,000 = 6,128 B: ⌈6,128/852⌉ = 8 tiles, laid 3 × 3 (⌈√8⌉ = 3 rows,
    # ⌈8/3⌉ = 3 columns): 9 tiles taken, one idle.
    t = lattice.tiles({"expert": 96.0, "attention": 6128.0, "shared": 0.0, "dense": 0.0, "embedding": 64.0,
                       "head": 72.0}, 852.0)
    assert (float(t["side"]), float(t["a_r"]), float(t["a_c"]), float(t["attention"])) == (1.0, 3.0, 3.0, 9.0)


def test_an_expert_tile_is_the_smallest_square_that_holds_it_at_u_whatever_the_room():
    # Qwen3-235B's routed expert: 3 · 4,096 · 1,536 weights at 2 B = 37,748,736 B. CS-3's room is 45,832 B.
    # At the 12-wafer layout's 45,549.4 B a PE its 828.7 PEs' largest square is 28² = 784, which would hold
    # 37,748,736 / 784 = 48,149 B a PE: above the room and CS-3's 49,152 − 2,304 = 46,848 B. The tile is the
    # smallest square that holds it at no more than u: ⌈√(37,748,736 / 45,549.4)⌉ = ⌈28.79⌉ = 29 (44,886 B a PE).
    # At 40,000 B a PE: ⌈√943.7⌉ = ⌈30.72⌉ = 31 (39,282 B a PE), whatever the SRAM: the old rule, the largest square
    # ⌊30.72⌋ = 30 unless that overflowed the room, gave 30 at CS-3's room and 31 at a room of 41,000 B (30² PEs
    # hold 41,943 B a PE), so a layout's tiles, and its speed, moved with the SRAM.
    e = 37_748_736.0
    assert e / 28 ** 2 == pytest.approx(48_149, abs=0.5) and e / 28 ** 2 > 49_152 - 2_304
    assert float(lattice.side(e, 45_549.4)) == 29.0
    assert float(lattice.side(e, 40_000.0)) == 31.0 and e / 31 ** 2 <= 40_000.0 < e / 30 ** 2
    # CS-3's program rectangle, 1,170 × 755 PEs, holds ⌊1,170/29⌋ · ⌊755/29⌋ = 40 · 26 = 1,040 such tiles (10 rows
    # and 1 column idle), where its PEs × room over the expert's bytes counted 1,073 experts' worth
    assert float(lattice.slots(presets.load_hardware("cs3").pe, 29.0)) == 1040.0


def cs3_sram(**changes):
    return NS(**{**presets.load_hardware("cs3").model_dump(), "weight_source": "sram", **changes})


def test_qwen3_235b_at_8k_needs_13_cs3_not_12():
    # On 12 CS-3 the layout put 37.7 MB experts on 28² tiles (48,149 B a PE) and called it feasible. In whole tiles
    # of side 29 a wafer holds 1,040; a layer is 128 expert tiles and its attention's: 160,449,024 B (weights,
    # router and one sequence's 8K cache) at 45,832 B a PE on 29² PEs is ⌈4.16⌉ = 5 tiles, laid 3 × 2 = 6; the
    # embedding and the head ⌈32.3⌉ = 33 tiles each: 94 · 134 + 66 = 12,662 tiles, more than 12 wafers' 12,480,
    # so 13 wafers (the weights alone, 4 attention tiles a layer: 94 · 132 + 66 = 12,474, fit 12).
    m = NS(**presets.load_model("qwen3-235b-a22b").model_dump())
    wl = workload(B=1.0, seq_len=8192.0)
    pe = serving.pe_facts(cs3_sram())
    nb = regions.region_bytes(m, wl, 1.0)
    parts, held = regions.tile_parts(pe, m, nb, 45_832.0)
    total = 94 * (float(parts["a"]) + 128) + float(parts["emb"]) + float(parts["head"])
    assert (float(parts["a"]), float(parts["emb"]), float(held), total) == (6.0, 33.0, 1040.0, 12_662.0)
    assert float(regions.fewest_wafers(pe, m, wl)) == 13.0
    assert float(regions.fewest_wafers(pe, m, workload(B=0.0, seq_len=8192.0))) == 12.0
    out = serving.evaluate(cs3_sram(pipeline_wafers=12.0), m, wl, NS(**MappingSpec().model_dump()),
                           NS(**BalanceSpec().model_dump()))
    expert = float(nb["expert"]) / float(out["expert_region_pes"])
    room = float(regions.room(pe, m, wl)[0])
    fits = all(float(out[g]) <= 0 for g in ("g_sram_wafers", "g_sram_layer", "g_sram_pe"))
    assert not fits or expert <= room, (expert, room)


def test_the_tile_invariant_can_fail(monkeypatch):
    # With the largest square of an expert's PEs as its tile (the old rule), Qwen3-235B at 32K on 16 CS-3 lays
    # experts on tiles that hold more than the room at some batch of 1 … 64: the invariant must say so.
    from wsemoe.analysis.invariants.cases import Case
    from wsemoe.analysis.invariants.laws import REGISTRY
    from wsemoe.config.loader import load_config

    cfg = load_config({"name": "tiles", "hardware": {"preset": "cs3", "weight_source": "sram", "pipeline_wafers": 16},
                       "model": "qwen3-235b-a22b", "workload": {"mode": "decode", "seq_len": 32768},
                       "axes": {"workload.B": [1, 2, 4, 8, 16, 32, 64]}})
    law = REGISTRY["serving_tiles_hold_no_more_than_the_room"]
    assert law.run(Case(cfg)).status == "pass"
    monkeypatch.setattr(lattice, "side", lambda e, u: np.maximum(np.floor(np.sqrt(e / np.asarray(u))), 1.0))
    assert law.run(Case(cfg)).status == "fail"


def test_twice_the_sram_keeps_every_layout_that_fitted():
    # Qwen3-30B-A3B at 32K, B 256 on 24 CS-3: a 32K cache of 256 sequences fits only densely, so a candidate whose
    # tiles did not fit stood in as the densest layout, u_pack, the room (45,832 B a PE). With twice the SRAM that
    # layout was gone (u_pack 94,552 B) and the point ran 1.34x slower (2.085 ms against 1.556 ms a period). The
    # stand-in is now the sparsest rung of a fine ladder u_fill · 2^(j/16) whose tiles fit, a function of u alone
    # (lattice.side), so more SRAM keeps it.
    m, wl = NS(**presets.load_model("qwen3-30b-a3b").model_dump()), workload(B=256.0, seq_len=32768.0)
    mp, bal = NS(**MappingSpec().model_dump()), NS(**BalanceSpec().model_dump())
    base = cs3_sram(pipeline_wafers=24.0)
    more = cs3_sram(pipeline_wafers=24.0, pe={**base.pe, "sram_per_pe_bytes": 2 * base.pe["sram_per_pe_bytes"]})
    periods = [float(serving.evaluate(hw, m, wl, mp, bal)["pipeline_period_s"]) for hw in (base, more)]
    assert periods[1] <= periods[0] * (1.0 + 1e-12), periods


def test_capacity_is_counted_at_the_densest_fixed_rung_the_room_holds():
    # CS-3's room for Qwen3-30B-A3B is 45,832 B a PE (49,152 − 2,304 program − buffers). The fine ladder is
    # 2^(j/256) B a PE whatever the SRAM: log2 45,832 = 15.48407, ×256 = 3,963.92, so rung 3,963 = 2^15.48047 =
    # 45,717.8 B (0.25% below the room) is where what fits is counted, and twice the SRAM's room (94,552 B) still
    # has that rung on its ladder. At the room itself (the old rule) the densest layout moved with the SRAM.
    j = int(np.floor(256 * np.log2(45_832.0)))
    assert j == 3963 and 2 ** (j / 256) <= 45_832.0 < 2 ** ((j + 1) / 256)
    assert float(lattice.densest(45_832.0)) == pytest.approx(2 ** (3963 / 256), rel=1e-15)
    assert float(lattice.densest(45_832.0)) == pytest.approx(45_717.81, abs=0.01)
    m, wl = NS(**presets.load_model("qwen3-30b-a3b").model_dump()), workload(B=1.0, seq_len=8192.0)
    pe = serving.pe_facts(cs3_sram())
    assert float(regions.room(pe, m, wl)[0]) == 45_832.0
    assert float(regions.capacity(pe, m, wl, 2.0)["u_dense"]) == float(lattice.densest(45_832.0))


def test_more_sram_keeps_every_candidate_layout():
    # Qwen3-30B-A3B at 128K, B 64 on 24 CS-3 (its fewest): the candidates were the sparsest fine rung that fits and
    # the densest layout at the room, 45,832 B a PE, the faster (1.2296 ms a period against 1.2403). With twice
    # the SRAM the room is 94,552 B, that layout was gone and the point ran 0.9% slower (1.2403 ms). No candidate
    # sits at the room now: every (bytes per PE, attention share) offered at CS-3's SRAM is offered with twice it,
    # and the period is no longer.
    m, wl = NS(**presets.load_model("qwen3-30b-a3b").model_dump()), workload(B=64.0, seq_len=131072.0,
                                                                            prompt_len=1024.0)
    mp, bal = NS(**MappingSpec().model_dump()), NS(**BalanceSpec().model_dump())
    base = cs3_sram(pipeline_wafers=24.0)
    more = cs3_sram(pipeline_wafers=24.0, pe={**base.pe, "sram_per_pe_bytes": 2 * base.pe["sram_per_pe_bytes"]})

    def offered(hw):
        _, _, (u, w, _, _), *_ = serving.layout(hw, m, wl, mp, bal)
        return set(zip(np.round(u.ravel(), 6).tolist(), w.ravel().tolist()))

    assert offered(base) <= offered(more), offered(base) - offered(more)
    periods = [float(serving.evaluate(hw, m, wl, mp, bal)["pipeline_period_s"]) for hw in (base, more)]
    assert periods[1] <= periods[0] * (1.0 + 1e-12), periods
