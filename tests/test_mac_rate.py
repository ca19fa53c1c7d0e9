"""One MAC rate per PE in every mode: the die-level peak of weight streaming follows the pe_mac_rate reading as the
PE-level SRAM serving model does, and node figures derived from PE facts follow those facts wherever they change
(a reading's option, a swept PE fact)."""

from __future__ import annotations

import pytest

import wsemoe
from wsemoe.config import presets
from wsemoe.config import readings as registry
from wsemoe.config.loader import load_config
from wsemoe.cost.wafer.fabric import mac_cycles
from wsemoe.specs.hardware import derive_node_figures, mac_rate

STREAMED = {"name": "rate", "hardware": "cs3", "model": "qwen3-30b-a3b",
            "workload": {"mode": "train", "seq_len": 2048, "B": 8, "G": 4}}


def _wafer_peak(name: str, **pe) -> float:
    hw = presets.load_hardware(name)
    facts = hw.pe.model_copy(update=pe)
    return derive_node_figures(facts, hw.rows, hw.cols)["node_peak_flops"] * hw.rows * hw.cols


def test_cs3_peak_by_hand_under_each_option():
    # sram_bound: 21 PB/s / 900,000 PEs / 1.1 GHz = 21.21 B per cycle over 3 operands of 2 B = 3.535 MACs per cycle;
    # 900,000 × 3.535 × 2 × 1.1 GHz = 7.0 PFLOP/s (the 21 PB/s over 6 B per MAC, times 2 FLOP). simd: 8-wide, 15.84.
    assert _wafer_peak("cs3") == pytest.approx(2.1e16 / 6 * 2, rel=1e-12)
    assert _wafer_peak("cs3", mac_memory_operands=0) == pytest.approx(900_000 * 8 * 2 * 1.1e9, rel=1e-12)
    # CS-2 keeps its SIMD rate (the reading applies to cs3): 850,000 × 4 × 2 × 1.1 GHz = 7.48 PFLOP/s
    assert _wafer_peak("cs2") == pytest.approx(850_000 * 4 * 2 * 1.1e9, rel=1e-12)


def test_the_die_peak_and_the_pe_model_read_one_rate():
    # A long vector on one PE: the PE model's cycles per MAC is the inverse of the rate the die peak is built from.
    pe = presets.load_hardware("cs3").pe
    n = 1_000_000
    assert float(mac_cycles(1, n, pe)) / n == pytest.approx(1.0 / float(mac_rate(pe)), rel=1e-5)


def test_the_simd_option_moves_weight_streaming():
    # Before, the reading set the PE fact while the die figures kept the 8-wide peak: both options gave one answer.
    cfg = load_config(STREAMED)
    bound = wsemoe.evaluate(registry.apply(cfg, {"pe_mac_rate": "sram_bound"}))
    simd = wsemoe.evaluate(registry.apply(cfg, {"pe_mac_rate": "simd"}))
    rate = 8 / (2.1e16 / 9e5 / 1.1e9 / 6)   # 8-wide SIMD over the 3.535 MACs the SRAM feeds
    assert simd["format_peak_flops"].iloc[0] / bound["format_peak_flops"].iloc[0] == pytest.approx(rate, rel=1e-9)
    assert simd["moe_compute_s"].iloc[0] == pytest.approx(bound["moe_compute_s"].iloc[0] / rate, rel=1e-9)
    assert bound["tokens_per_s"].iloc[0] == wsemoe.evaluate(cfg)["tokens_per_s"].iloc[0]   # the default option


def test_pe_facts_that_change_move_the_die_figures():
    # The invariants' variant frames set PE facts per point (hardware.pe.<fact>); the node figures derived from them
    # follow, as they do when the preset is edited by hand. Before, they stayed at the preset's facts.
    from wsemoe.sweep.outputs import namespaces

    hw = presets.load_hardware("cs2").model_dump()
    base = {s: {} for s in ("model", "workload", "mapping", "balance")} | {"hardware": hw}
    ns = namespaces(base, {}, {"hardware.pe.clock_hz": 0.55e9})["hardware"]
    edited = presets.load_hardware("cs2")
    raw = presets.raw("hardware", "cs2")
    by_hand = type(edited).model_validate({**raw, "pe": {**raw["pe"], "clock_hz": 0.55e9}})
    for k in ("node_peak_flops", "link_bw_bytes_per_s", "hop_latency_s", "port_bw_bytes_per_s"):
        assert getattr(ns, k) == pytest.approx(getattr(by_hand, k), rel=1e-12) != getattr(edited, k)
    assert ns.pe["clock_hz"] == 0.55e9


@pytest.mark.parametrize("source, fp8_gain", [("resident", 6 / 5), ("streamed", 1.0)])
def test_resident_fp8_weights_read_one_byte_a_mac_at_die_level_as_at_pe_level(source, fp8_gain):
    """CS-3's die peak is its SRAM-bound rate: 21.21 B a cycle over 3 operands of 2 B, 3.535 MACs a cycle. With
    FP8 weights resident in SRAM a MAC reads 1 + 2 + 2 = 5 B: 4.24 a cycle, 6/5 of it, as the PE-level SRAM path
    has (one PE's long GEMV, fabric.mac_cycles with weight_bytes 1). The die path ran every format at 6 B a MAC.
    A streamed weight arrives over the fabric: the SRAM operands are the activation and the partial sum, 6 B
    whatever its format, so weight streaming's rate stays."""
    from wsemoe.cost.node import formats

    point = {**STREAMED, "hardware": {"preset": "cs3", "weight_source": source, "kept_activations": "node"},
             "workload": {**STREAMED["workload"], "expert_weight_format": "fp8"}}
    row = wsemoe.evaluate(point).iloc[0]
    hw = load_config(point).hardware
    assert row["expert_peak_flops"] == pytest.approx(hw.node_peak_flops * fp8_gain, rel=1e-12)
    assert row["attention_peak_flops"] == pytest.approx(hw.node_peak_flops, rel=1e-12)   # 16-bit attention
    if source == "resident":
        n = 1_000_000
        pe_level = n / float(mac_cycles(1, n, hw.pe, 2, 1.0))
        assert float(mac_rate(hw.pe)) * formats.sram_weight_gain(hw, "fp8") == pytest.approx(pe_level, rel=1e-5)
