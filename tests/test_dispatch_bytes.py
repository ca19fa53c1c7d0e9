"""A token is quantized to the expert matmul's format before it is dispatched and comes back at 16 bits
(cost/node/formats.dispatch_bytes): hand-derived bytes per element, and the node model's dispatch and combine
calls and the energy model's routed bytes that follow from them."""

from __future__ import annotations

from types import SimpleNamespace as NS

import pytest

from wsemoe.config import presets
from wsemoe.cost.node import formats

from routingnoise import noise


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
    # elements through the busiest port: a GPU's port takes its 4 experts' copies from the other 63 GPUs' tokens
    # (512 a GPU), the busiest of 64 1.0365× their mean 4,032 (routingnoise; fabric/spread.py)
    port = 512 * 8 * 7168 * 63 / 64 * noise(64, 512, senders=63) / hw.port_bw_bytes_per_s
    dispatch, combine = _calls("fp8")
    assert dispatch == pytest.approx(fixed + port * (1 + 4 / 128), rel=1e-6)
    assert combine == pytest.approx(fixed + port * 2.0, rel=1e-6)
    assert _calls("bf16") == pytest.approx((combine, combine), rel=1e-9)


def _row(hardware: str, workload: dict, mapping: dict):
    import wsemoe

    return wsemoe.evaluate({"name": "e", "hardware": hardware, "model": "deepseek-v3", "workload": workload,
                            "mapping": mapping}).iloc[0]


def test_the_energy_models_routed_bytes_follow_the_dispatch():
    """NVL72, TP 1 (72 groups of one), 64 sequences each: a copy leaves its GPU unless its expert is there
    (1 in 72), one GPU-switch-GPU path; dispatched in the experts' format (FP8: 1 + 4/128 bytes a value), combined
    at 16 bits. The energy model's fabric tier prices exactly what the phases move."""
    wl = {"mode": "decode", "B": 64, "seq_len": 2048}
    fp8, bf16 = (_row("nvl72", {**wl, "expert_weight_format": f}, {"tp": 1}) for f in ("fp8", "bf16"))
    copies = 72 * 64 * 8 * 7168 * 71 / 72                 # values that leave their GPU, each way
    assert fp8["dispatch_hop_bytes"] == pytest.approx(copies * (1 + 4 / 128), rel=1e-9)
    assert bf16["dispatch_hop_bytes"] == pytest.approx(copies * 2, rel=1e-9)
    assert fp8["combine_hop_bytes"] == bf16["combine_hop_bytes"] == pytest.approx(copies * 2, rel=1e-9)
    hw, Lm = presets.load_hardware("nvl72"), 58
    fabric = Lm * (copies * (1 + 4 / 128) + copies * 2) * hw.energy_hop_j_per_byte / (72 * 64)  # TP 1: no all-reduce
    assert fp8["energy_fabric_per_token_j"] == pytest.approx(fabric, rel=1e-9)


def test_the_energy_models_output_reduction_runs_only_where_tokens_are_replicated():
    """A MoE layer's output reduction all-reduces the partial expert outputs of replicated tokens; sliced tokens
    (more than one group on a switch, token_source slice) come back whole to their owner and reduce nothing
    (fabric/collectives.py), but the energy model charged the reduction on every MoE layer. On the 8 × 8 mesh at
    TP 4 the reduction is the attention all-reduce's ring reversed (one tile: the same bytes); on NVL72 at TP 4
    (18 groups, sliced) there is none, and each all-reduce goes through the switch once a GPU: 72 paths of the
    group's message, 8 tokens × 7168 × 2 bytes."""
    wl = {"mode": "decode", "B": 16, "seq_len": 2048}
    rep, sl = (_row("wsc-b200-8x8", wl, {"tp": 4, "token_source": s}) for s in ("nearest", "slice"))
    assert rep["reduce_hop_bytes"] > 0 and rep["reduce_hop_bytes"] == pytest.approx(rep["allreduce_hop_bytes"], rel=1e-12)
    assert sl["reduce_hop_bytes"] == 0
    nvl = _row("nvl72", {"mode": "decode", "B": 8, "seq_len": 2048}, {"tp": 4})
    assert nvl["token_flow"] == "slice" and nvl["reduce_hop_bytes"] == 0
    assert nvl["allreduce_hop_bytes"] == pytest.approx(72 * 8 * 7168 * 2, rel=1e-12)
