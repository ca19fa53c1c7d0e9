"""A token is quantized to the expert matmul's format before it is dispatched and comes back at 16 bits
(cost/node/formats.dispatch_bytes): hand-derived bytes per element, and the node model's dispatch and combine
calls and the energy model's routed bytes that follow from them."""

from __future__ import annotations

from types import SimpleNamespace as NS

import pytest

from wsemoe.config import presets
from wsemoe.cost.node import formats


@pytest.mark.parametrize("hardware,fmt,expected", [
    ("nvl72", "fp8", 1.0 + 4 / 128),       # E4M3 and one FP32 scale per 128 (MXFP8's 7,392 bytes a 7,168 token)
    ("nvl72", "fp8_block", 1.0 + 4 / 128),  # DeepSeek-V3's checkpoint multiplies in FP8
    ("nvl72", "nvfp4", 0.5 + 1 / 16),       # NVFP4's 4,032 bytes a 7,168 token
    ("nvl72", "bf16", 2.0),
    ("nvl72", "int4_wo", 2.0),              # weight-only: dequantized to a 16-bit matmul, nothing sent early
    ("h100-sxm", "nvfp4", 2.0),             # no FP4 peak: the matmul runs at 16 bits
    ("cs3", "fp8", 2.0),                    # the PEs' SIMD is FP16
])
def test_bytes_of_a_dispatched_element(hardware, fmt, expected):
    hw = presets.load_hardware(hardware)
    assert formats.dispatch_bytes(hw, NS(expert_weight_format=fmt, bytes_per_act=2.0)) == pytest.approx(expected)


def test_never_more_than_the_activation_as_stored():
    hw = presets.load_hardware("nvl72")
    assert formats.dispatch_bytes(hw, NS(expert_weight_format="fp8", bytes_per_act=1.0)) == 1.0


def _calls(expert_format: str) -> tuple[float, float]:
    from wsemoe.config.single import parse_sets, point_mapping
    from wsemoe.sweep.chunked import evaluate

    sets = ["hardware.cols=64", "workload.mode=decode", "workload.tokens_per_device=512", "workload.seq_len=2048",
            f"workload.expert_weight_format={expert_format}", "mapping.tp=1"]
    r = evaluate(point_mapping("nvl72", "deepseek-v3", parse_sets(sets), "t")).iloc[0]
    return float(r["moe_dispatch_s"]), float(r["moe_combine_s"])


def test_the_dispatch_call_sends_fp8_and_the_combine_16_bits():
    hw = presets.load_hardware("nvl72")
    fixed = hw.alltoall_latency_s + hw.hop_latency_s
    port = 512 * 8 * 7168 * 63 / 64 / hw.port_bw_bytes_per_s     # elements through the busiest port
    dispatch, combine = _calls("fp8")
    assert dispatch == pytest.approx(fixed + port * (1 + 4 / 128), rel=1e-6)
    assert combine == pytest.approx(fixed + port * 2.0, rel=1e-6)
    assert _calls("bf16") == pytest.approx((combine, combine), rel=1e-9)


def test_the_energy_models_routed_bytes_follow_the_dispatch():
    from wsemoe.cost.energy.traffic import comm_bytes
    from wsemoe.specs import MappingSpec, WorkloadSpec

    hw, m = presets.load_hardware("nvl72"), presets.load_model("deepseek-v3")
    mp = MappingSpec(tp=1)
    fp8, bf16 = (comm_bytes(hw, m, WorkloadSpec(mode="decode", B=64, seq_len=2048, expert_weight_format=f), mp, {})
                 for f in ("fp8", "bf16"))
    # routed bytes: (dispatched + returned) elements; at 16 bits both ways 4 bytes, FP8 out 3.03125
    assert fp8[0] / bf16[0] == pytest.approx((1 + 4 / 128 + 2.0) / 4.0, rel=1e-9)


def test_the_energy_models_output_reduction_runs_only_where_tokens_are_replicated():
    """A MoE layer's output reduction all-reduces the partial expert outputs of replicated tokens; sliced tokens
    (a switch, token_source slice) come back whole to their owner and reduce nothing (fabric/collectives.py), but
    the energy model charged the reduction on every MoE layer. By hand on a 4 × 4 die mesh at TP 4: a TP
    all-reduce moves 2(tp − 1)·T·H·2 bytes; replicated tokens add one per MoE layer, sliced ones none."""
    from wsemoe.cost.energy.traffic import comm_bytes
    from wsemoe.specs import MappingSpec, WorkloadSpec

    hw, m = presets.load_hardware("wsc-b200-8x8"), presets.load_model("deepseek-v3")
    wl = WorkloadSpec(mode="decode", B=16, seq_len=2048)
    out = {"dispatch_mean_hops": 3.0, "dispatch_inter_wafer_share": 0.0}   # the same routed part for both
    (rep, _), (sl, _) = (comm_bytes(hw, m, wl, MappingSpec(tp=4, token_source=s), out) for s in ("nearest", "slice"))
    T, L, Lm = 16 * (64 // 4), m.num_hidden_layers, 58   # 16 sequences a group, 16 groups; 3 dense + 58 MoE layers
    assert rep - sl == pytest.approx(2 * 3 * T * m.hidden_size * 2 * Lm, rel=1e-12)
    nvl = presets.load_hardware("nvl72")   # a switch slices: TP all-reduces only (every layer, dense FFNs again)
    wl = WorkloadSpec(mode="decode", B=8, seq_len=2048)
    hops, _ = comm_bytes(nvl, m, wl, MappingSpec(tp=4), {})
    T, H, k = 8 * 72 // 4, m.hidden_size, m.num_experts_per_tok          # 8 sequences in each of 18 groups
    routed = T * k * (2 * H + 2 * H) * Lm * (1 - 1 / 72)                 # dispatch and combine at 16 bits, 1 hop
    assert hops == pytest.approx(routed + 2 * 3 * T * H * 2 * (L + (L - Lm)), rel=1e-9)
