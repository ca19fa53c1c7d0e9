"""The node model's 8-GPU NVLink all-reduce against nccl-tests on 8 H100 SXM (validate/gpu_collectives.py, rows
gpu.allreduce): the call the rows read is the port term plus the fixed costs, derived by hand from the h100-sxm
preset; the measured times follow from nccl-tests' bus bandwidth; a 2× error in the port fails both rows."""

from __future__ import annotations

import pytest

from wsemoe.config import presets
from wsemoe.validate import gpu_collectives as ar
from wsemoe.validate import perturb
from wsemoe.validate.deviations import classify

M, N = 2 ** 31, 8


def test_the_message_is_2_gib_and_the_calls_are_the_port_term_plus_the_fixed_costs():
    hw = presets.load_hardware("h100-sxm")   # port 450 GB/s, hop 0.5 µs, per call 4.5 µs
    assert presets.load_model(ar.MODEL).hidden_size * 2 * 32768 * N == M
    ring = hw.collective_latency_s + 2 * (N - 1) * hw.hop_latency_s + 2 * (N - 1) / N * M / hw.port_bw_bytes_per_s
    nvls = hw.collective_latency_s + 2 * hw.hop_latency_s + M / hw.port_bw_bytes_per_s
    # by hand: 4.5 + 14 × 0.5 µs + 1.75 × 2^31 B / 450 GB/s = 8.3628 ms; 4.5 + 2 × 0.5 µs + 2^31 / 450 GB/s = 4.7777 ms
    assert ring == pytest.approx(8.3628e-3, rel=1e-4) and nvls == pytest.approx(4.7777e-3, rel=1e-4)
    assert ar.allreduce_s(False) == pytest.approx(ring, rel=1e-6)
    assert ar.allreduce_s(True) == pytest.approx(nvls, rel=1e-6)


def test_the_measured_time_is_the_message_over_the_algorithm_bandwidth():
    # busbw = algbw × 2(n−1)/n: 367.5 GB/s (Ring) is 210.0 GB/s of algbw, 2^31 B in 10.226 ms; 480 (NVLS) 274.3, 7.829 ms
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
