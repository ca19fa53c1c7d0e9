"""Single kernels of the node model against measured ones (validate/gpu_kernels.py): the 8-GPU NVLink all-reduce
against nccl-tests on 8 H100 SXM (rows gpu.allreduce: the call the rows read is the port term plus the fixed costs,
derived by hand from the h100-sxm preset; the measured times follow from nccl-tests' bus bandwidth) and the KV-cache
read against FlashMLA's measured bandwidth (gpu.hbm); a 2× error in the port or the HBM bandwidth fails them."""

from __future__ import annotations

import pytest

from wsemoe.config import presets
from wsemoe.validate import gpu_kernels as ar
from wsemoe.validate import perturb
from wsemoe.validate.deviations import classify

M, N = 2 ** 31, 8


def test_the_message_is_2_gib_and_the_calls_are_the_port_term_plus_the_fixed_costs():
    hw = presets.load_hardware("h100-sxm")   # port 450 GB/s, hop 0.5 µs, per call 4.5 µs
    assert presets.load_model(ar.MODEL).hidden_size * 2 * 32768 * N == M
    ring = hw.collective_latency_s + 2 * (N - 1) * hw.hop_latency_s + 2 * (N - 1) / N * M / hw.port_bw_bytes_per_s
    nvls = hw.collective_latency_s + 2 * hw.hop_latency_s + M / hw.port_bw_bytes_per_s
    # by hand: 4.5 + 14 × 0.5 µs + 1.75 × 2^31 B / 450 GB/s = 8.3628 ms;
    # 4.5 + 2 × 0.5 µs + 2^31 B / 450 GB/s = 4.7777 ms
    assert ring == pytest.approx(8.3628e-3, rel=1e-4) and nvls == pytest.approx(4.7777e-3, rel=1e-4)
    assert ar.allreduce_s(False) == pytest.approx(ring, rel=1e-6)
    assert ar.allreduce_s(True) == pytest.approx(nvls, rel=1e-6)


def test_the_measured_time_is_the_message_over_the_algorithm_bandwidth():
    # busbw = algbw × 2(n−1)/n: 367.5 GB/s (Ring) is 210.0 GB/s of algbw, 2^31 B in 10.226 ms;
    # 480 (NVLS) is 274.3, 7.829 ms
    assert ar.measured_s(367.5) == pytest.approx(10.226e-3, rel=1e-4)
    assert ar.measured_s(480.0) == pytest.approx(7.829e-3, rel=1e-4)


def test_the_ring_row_holds_and_the_nvls_row_is_a_pinned_known_deviation():
    rows = {r["id"]: r for r in classify(ar.allreduce_rows())}
    assert rows["gpu.allreduce:ring"]["value"] == pytest.approx(8.3628 / 10.226, rel=1e-3)   # 0.82×
    assert rows["gpu.allreduce:nvls"]["value"] == pytest.approx(4.7777 / 7.829, rel=1e-3)    # 0.61×
    assert rows["gpu.allreduce:ring"]["status"] == "yes" and rows["gpu.allreduce:nvls"]["status"] == "no"


@pytest.mark.parametrize("factor", [2.0, 0.5])
def test_a_2x_error_in_the_nvlink_port_fails_both_rows(factor):
    with perturb.perturbed("h100-sxm", "port_bw_bytes_per_s", factor):
        statuses = {r["id"]: r["status"] for r in classify(ar.allreduce_rows())}
    assert statuses == {"gpu.allreduce:ring": "FAILS", "gpu.allreduce:nvls": "FAILS"}


def test_the_hbm_row_reads_the_added_kv_cache_at_the_presets_bandwidth():
    # 128 sequences × 4,096 added tokens × 1,152 bytes (576 16-bit values) = 604.0 MB a layer: at 3.35 TB/s
    # 180.3 µs, at FlashMLA's 3,000 GB/s 201.3 µs; 3,000 / 3,350 = 0.896×
    read = 128 * 4096 * 1152
    assert read == pytest.approx(604.0e6, rel=1e-4)
    assert ar.attention_hbm_s(8192) - ar.attention_hbm_s(4096) == pytest.approx(read / 3.35e12, rel=1e-6)
    r = classify([ar.hbm_row()])[0]
    assert r["value"] == pytest.approx(3000 / 3350, rel=1e-6) and r["status"] == "yes"


@pytest.mark.parametrize("factor", [2.0, 0.5])
def test_a_2x_error_in_the_hbm_bandwidth_fails_the_hbm_row(factor):
    with perturb.perturbed("h100-sxm", "node_memory_bw_bytes_per_s", factor):
        assert classify([ar.hbm_row()])[0]["status"] == "FAILS"


def test_the_latency_bound_all_reduce_is_two_traversals_and_the_call():
    # 2 H100s with the in-switch reduction, one Qwen3-235B token a GPU (8,192 B each: a 16 KiB message):
    # 4.5 µs + 2 × 0.5 µs + 16,384 B / 450 GB/s = 5.5364 µs, over nccl-tests' 5.56 µs (2 GPUs, NVLS, 128 B) = 0.9958×
    hw = presets.load_hardware("h100-sxm")
    by_hand = hw.collective_latency_s + 2 * hw.hop_latency_s + 2 * 8192 / hw.port_bw_bytes_per_s
    assert by_hand == pytest.approx(5.5364e-6, rel=1e-4)
    assert ar.allreduce_s(True, 2, 0) == pytest.approx(by_hand, rel=1e-6)
    r = classify([ar.small_allreduce_row()])[0]
    assert r["value"] == pytest.approx(5.5364 / 5.56, rel=1e-4) and r["status"] == "fitted"


@pytest.mark.parametrize("constant, factor, expected", [
    ("hop_latency_s", 2.0, 6.5364 / 5.56), ("hop_latency_s", 0.5, 5.0364 / 5.56),   # 1.18×, 0.91×
    ("collective_latency_s", 2.0, 10.0364 / 5.56), ("collective_latency_s", 0.5, 3.2864 / 5.56)])   # 1.81×, 0.59×
def test_a_2x_error_in_the_hop_or_the_call_fails_the_latency_bound_row(constant, factor, expected):
    with perturb.perturbed("h100-sxm", constant, factor):
        r = classify([ar.small_allreduce_row()])[0]
    assert r["value"] == pytest.approx(expected, rel=1e-4) and r["status"] == "FAILS"


def test_the_format_row_reads_the_ratio_of_the_fp8_and_fp4_peaks():
    # nvl72: FP8 5.0, FP4 10.0 PFLOP/s dense; the routed experts' GEMMs at 16,384 prefill tokens a GPU run at
    # matmul_efficiency of each (it cancels), the router (4,096 × 128 a token, 16-bit at 2.5 PFLOP/s) in both:
    # time ratio = (E/5 + R/2.5) / (E/10 + R/2.5) with R/E = 4,096·128 / (8 · 3 · 4,096 · 1,536) = 1/288
    hw = presets.load_hardware("nvl72")
    e, r = 1.0, 1.0 / 288
    by_hand = (e / hw.node_peak_flops_fp8 + r / hw.node_peak_flops) / (e / hw.node_peak_flops_fp4
                                                                       + r / hw.node_peak_flops)
    assert by_hand == pytest.approx(1.9863, rel=1e-4)
    wide, narrow = (ar.expert_matmul_s(f) for f in ar.GEMM_FORMATS)
    assert wide / narrow == pytest.approx(by_hand, rel=1e-3)
    row = classify([ar.gemm_row()])[0]
    assert row["value"] == pytest.approx(by_hand / 2.3, rel=1e-3) and row["status"] == "yes"   # 0.86×


@pytest.mark.parametrize("constant", ["node_peak_flops_fp8", "node_peak_flops_fp4"])
@pytest.mark.parametrize("factor", [2.0, 0.5])
def test_a_2x_error_in_the_fp8_or_fp4_peak_fails_the_format_row(constant, factor):
    with perturb.perturbed("nvl72", constant, factor):
        assert classify([ar.gemm_row()])[0]["status"] == "FAILS"
