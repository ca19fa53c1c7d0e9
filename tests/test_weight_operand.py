"""The SRAM-fed MAC rate reads a stored weight at its own format's bytes: an FP8 weight is 1 B of a MAC's SRAM traffic
(with the 2 + 2 B of the 16-bit accumulator read and written), not the 2 B of a 16-bit one. Hand derivations on
CS-3 (21 PB/s / 900,000 PEs / 1.1 GHz = 21.21 B per cycle, 8-wide 16-bit SIMD, 3 SRAM operands a MAC)."""

from __future__ import annotations

import math
from types import SimpleNamespace as NS

import pytest

from wsemoe.config import presets
from wsemoe.config.loader import load_config
from wsemoe.cost.wafer import layer, operands, operators, serving
from wsemoe.cost.wafer.fabric import memory_cycles

BPC = 2.1e16 / 9e5 / 1.1e9   # CS-3's SRAM bytes per PE-cycle
COLL = {"pattern": "tree", "levels": 2}


def cs3_pe(**changes):
    return NS(**{**presets.load_hardware("cs3").pe.model_dump(), **changes})


def test_gemv_reads_its_weight_at_the_weight_format():
    # One PE's block of 64 × 128 (k × n): 64 vector FMACs over 128 outputs. SIMD: 64 × ⌈128 / 8⌉ = 1,024 cycles.
    # SRAM, BF16 weights: 64·128 MACs × (2 + 2 + 2) B = 49,152 B / 21.21 = 2,317.2 → 2,318 cycles (SRAM-bound).
    # SRAM, FP8 weights:  64·128 × (1 + 2 + 2) B = 40,960 B / 21.21 = 1,931.0 → 1,931 cycles, 17% fewer.
    pe = cs3_pe()
    bf16 = operators.gemv(64, 128, 1, 1, pe, 1, 2, output="none", weight_bytes=2)
    fp8 = operators.gemv(64, 128, 1, 1, pe, 1, 2, output="none", weight_bytes=1)
    assert float(bf16["compute_cycles"]) == math.ceil(64 * 128 * 6 / BPC) == 2318
    assert float(fp8["compute_cycles"]) == math.ceil(64 * 128 * 5 / BPC) == 1931
    assert float(fp8["weight_bytes_per_pe"]) == 64 * 128 * 1 and float(bf16["weight_bytes_per_pe"]) == 64 * 128 * 2
    # unset, the weight is an activation's size: bit for bit the BF16 number
    assert float(operators.gemv(64, 128, 1, 1, pe, 1, 2, output="none")["compute_cycles"]) == 2318
    # 4-bit weights (0.5 B): 64·128 × 4.5 B = 36,864 B → 1,738 cycles; the SIMD reading has no SRAM bound at all
    assert float(memory_cycles(64, 128, pe, 2, 0.5)) == math.ceil(64 * 128 * 4.5 / BPC) == 1738
    assert float(operators.gemv(64, 128, 1, 1, cs3_pe(mac_memory_operands=0), 1, 2, output="none",
                                weight_bytes=1)["compute_cycles"]) == 1024


def test_routed_experts_read_the_expert_format_and_shared_the_attention_format():
    # Expert region of 32 × 32 PEs, H 2,048, F 768, one token. up/gate: block 64 × 48, SRAM 64·48·6 = 18,432 B → 869
    # cycles at BF16, 64·48·5 = 15,360 B → 725 at FP8; down: 24 × 64, 9,216 B → 435, 7,680 B → 363. The routed
    # expert in FP8 saves (869 − 725) + (435 − 363) = 216 cycles; the shared expert (attention format BF16) none.
    m = NS(hidden_size=2048, moe_intermediate_size=768, n_shared_experts=1, shared_expert_intermediate_size=768)
    g = NS(side=32.0, shared_rows=32.0, shared_cols=32.0)
    pe = cs3_pe()
    bf16 = layer.expert_regions(m, g, pe, 1.0, 1.0, 2, COLL)
    fp8 = layer.expert_regions(m, g, pe, 1.0, 1.0, operands.Operands(2, 2, 1, 2, 2), COLL)
    saved = (math.ceil(18432 / BPC) - math.ceil(15360 / BPC)) + (math.ceil(9216 / BPC) - math.ceil(7680 / BPC))
    assert saved == 216
    assert float(bf16["routed"]["compute_cycles"]) - float(fp8["routed"]["compute_cycles"]) == saved
    assert float(fp8["shared"]["compute_cycles"]) == float(bf16["shared"]["compute_cycles"])


def test_the_workload_names_each_operand_and_fp8_serving_gets_faster(monkeypatch):
    # DeepSeek-V3 in FP8 on SRAM (cerebras_serving's row): weights 1 B, activations, cache, router and head 2 B.
    # Read with every weight at 2 B (the old reading), its per-user speed is lower: the SRAM-bound MACs read more.
    cfg = load_config({"name": "fp8", "hardware": {"preset": "cs3", "weight_source": "sram", "pipeline_wafers": 48},
                       "model": "deepseek-v3",
                       "workload": {"mode": "decode", "seq_len": 8192, "B": 1, "attn_weight_format": "fp8",
                                    "expert_weight_format": "fp8"}})
    assert operands.of_workload(cfg.workload) == operands.Operands(2.0, 1.0, 1.0, 2.0, 2.0)
    fast = float(serving.evaluate(cfg.hardware, cfg.model, cfg.workload, cfg.mapping)["tokens_per_s_per_user"])
    wide = lambda wl: operands.Operands(*([wl.bytes_per_act] * 5))  # noqa: E731
    monkeypatch.setattr(operands, "of_workload", wide)
    slow = float(serving.evaluate(cfg.hardware, cfg.model, cfg.workload, cfg.mapping)["tokens_per_s_per_user"])
    assert fast > slow
    assert fast / slow == pytest.approx(1.0, abs=0.17)   # at most the 17% of 6 B → 5 B per MAC
