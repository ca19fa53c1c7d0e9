"""The node model's expert-parallel calls against measured kernels (validate/gpu.py): on NVL72 against TensorRT-LLM
blog 18's (rows gpu.a2a and gpu.a2a.fixed), over InfiniBand against DeepEP's (gpu.ib). Each call the rows read is
the hand-derived fixed cost plus the bytes through the busiest port or the servers' NICs, the rows carry the
published figures, and they fail when the bandwidth or the per-call cost is wrong by 2x."""

from __future__ import annotations

import pytest

from wsemoe.config import presets
from wsemoe.validate import gpu
from wsemoe.validate.deviations import classify
from wsemoe.validate.perturb import perturbed

from routingnoise import nic_noise, noise

TOKEN_BYTES = 7168 * 2   # DeepSeek-V3's hidden size in BF16
TOP_K = 8


def hand_call_s(ep: int, per_rank: int) -> float:
    """Per-call cost + one switch traversal + the busiest port's bytes: each token goes to min(EP, k) ranks and
    the copy to its own rank (one in EP of them, routing spread evenly) stays local; a rank's port takes the other
    EP − 1 ranks' tokens' copies, and a step's busiest port `noise` times their mean (1.556× at EP 8 and 1 token a
    rank, 1.0117× at 2,048; fabric/spread.py)."""
    hw = presets.load_hardware("nvl72")
    port = per_rank * min(ep, TOP_K) * TOKEN_BYTES * (ep - 1) / ep * noise(ep, per_rank, senders=ep - 1)
    return hw.alltoall_latency_s + hw.hop_latency_s + port / hw.port_bw_bytes_per_s


@pytest.mark.parametrize("ep,per_rank", [(8, 1), (8, 2048), (16, 256), (64, 256), (64, 2048)])
def test_the_call_is_the_fixed_cost_plus_the_busiest_ports_bytes(ep, per_rank):
    assert gpu.a2a_call_s(ep, per_rank) == pytest.approx(hand_call_s(ep, per_rank), rel=1e-6)


def test_the_rows_compare_with_the_mean_of_dispatch_and_combine():
    rows = {r["id"]: r for r in gpu.a2a_rows()}
    assert set(rows) == {"gpu.a2a.fixed:nvl72", "gpu.a2a.quant:mxfp8", "gpu.a2a.quant:nvfp4"} | {
        f"gpu.a2a:ep{e}-b{b}" for e in (8, 16, 32, 64) for b in (256, 2048)}
    assert rows["gpu.a2a.fixed:nvl72"]["kind"] == "fitted"
    one_token = [sum(m[1]) / 2 for m in gpu.A2A_MEASURED.values()]
    assert rows["gpu.a2a.fixed:nvl72"]["value"] == pytest.approx(
        sum(gpu.a2a_call_s(e, 1) for e in gpu.A2A_MEASURED) / 1e-6 / sum(one_token))
    assert rows["gpu.a2a:ep64-b2048"]["value"] == pytest.approx(gpu.a2a_call_s(64, 2048) / ((399.2 + 372.1) / 2e6))
    assert {r["status"] for r in classify(list(rows.values()))} == {"yes", "fitted"}


@pytest.mark.parametrize("field,factor", [("port_bw_bytes_per_s", 2.0), ("port_bw_bytes_per_s", 0.5),
                                          ("alltoall_latency_s", 2.0), ("alltoall_latency_s", 0.5)])
def test_a_2x_error_in_the_port_or_the_call_cost_fails_a_row(field, factor):
    with perturbed("nvl72", field, factor):
        rows = gpu.a2a_rows()
    assert "FAILS" in {r["status"] for r in classify(rows)}, [(r["id"], r["value"]) for r in rows]


def hand_ib_call_s(ep: int, element_bytes: float) -> float:
    """Per-call cost + one scale-out traversal + the bytes through a step's busiest GPU NIC, at 1/8 of its server's
    network: each of a GPU's 128 tokens goes to 8 GPUs, (EP − 8)/EP of them in other servers, and a step's busiest
    GPU NIC direction takes `nic_noise` times that mean (1.091× at EP 16, 1.078× at 64, 1.089× at 256)."""
    hw = presets.load_hardware("h100-sxm")
    leaving = 8 * gpu.IB_TOKENS * TOP_K * (ep - 8) / ep * nic_noise(ep, gpu.IB_TOKENS) * 7168 * element_bytes
    return hw.alltoall_latency_s + hw.scale_out_latency_s + leaving / hw.scale_out_bw_bytes_per_s


@pytest.mark.parametrize("ep", [16, 64, 256])
def test_the_infiniband_calls_send_fp8_out_and_16_bits_back(ep):
    dispatch, combine = gpu.ib_calls_s(ep)
    assert dispatch == pytest.approx(hand_ib_call_s(ep, 1 + 4 / 128), rel=1e-6)
    assert combine == pytest.approx(hand_ib_call_s(ep, 2.0), rel=1e-6)


def test_the_infiniband_rows_fail_with_the_scale_out_bandwidth_wrong_by_2x():
    assert {r["status"] for r in classify(gpu.ib_rows())} == {"yes"}
    for factor in (2.0, 0.5):
        with perturbed("h100-sxm", "scale_out_bw_bytes_per_s", factor):
            assert "FAILS" in {r["status"] for r in classify(gpu.ib_rows())}


@pytest.mark.parametrize("fmt", ["fp8", "nvfp4"])
def test_the_quantized_dispatch_sends_the_blogs_bytes_a_token(fmt):
    """MXFP8 7,392 and NVFP4 4,032 bytes for a 7,168-wide token (tech blog 18): the model's FP8 and FP4 experts
    take their tokens in exactly those bytes."""
    recipe, token_bytes, _ = gpu.QUANT_MEASURED[fmt]
    hw = presets.load_hardware("nvl72")
    hand = hw.alltoall_latency_s + hw.hop_latency_s + 2048 * TOP_K * token_bytes * 7 / 8 * noise(8, 2048, senders=7) \
        / hw.port_bw_bytes_per_s
    row = gpu.quant_row(fmt, gpu.QUANT_MEASURED[fmt])
    assert row["value"] * 1e-6 * gpu.QUANT_MEASURED[fmt][2] == pytest.approx(hand, rel=1e-6)
    assert classify([row])[0]["status"] == "yes"
