"""A synchronous all-to-all waits for its busiest carrier of every kind, so each takes a step's expected maximum
over its routing (routing.busiest_carrier on fabric/spread.carriers), as the busiest link does: the expert side's
ports, a switch's NIC pools and per-copy device NICs, both their directions. Hand cases of top-1 routing over 4
experts, one a device, where each carrier is exactly a binomial: E[max] = Σ_x (1 − Π_j P(X_j ≤ x)).
"""

from __future__ import annotations

from fractions import Fraction as Q

import pytest

import wsemoe
from wsemoe.config import presets

H, B16 = 7168, 2   # DeepSeek-V3's hidden size; the combine returns 16-bit outputs


def _expected_max(*groups: tuple) -> Q:
    """E[max] of independent counts, `groups` of (CDF as a list, cdf[x] = P(X ≤ x), how many carriers)."""
    top = max(len(cdf) for cdf, _ in groups)
    at = lambda cdf, x: cdf[x] if x < len(cdf) else 1   # noqa: E731
    total = Q(0)
    for x in range(top):
        below = Q(1)
        for cdf, n in groups:
            below *= at(cdf, x) ** n
        total += 1 - below
    return total


def _binomial_cdf(n: int, p: Q) -> list:
    from math import comb
    pmf = [comb(n, x) * p ** x * (1 - p) ** (n - x) for x in range(n + 1)]
    return [sum(pmf[:x + 1]) for x in range(n + 1)]


def test_the_hot_expert_port_of_a_mesh_is_the_ports_own_maximum():
    """2 × 2 mesh, tp 1, 4 experts one a die, top-1, one token a die. Die d's ejection port carries the copies of
    its expert from the 3 other dies, Binomial(3, 1/4) (its own token's copy stays local): over 4 ports
    E[max] = (1 − (27/64)⁴) + (1 − (54/64)⁴) + (1 − (63/64)⁴) = 1.5225 copies. The model took the busiest node's
    factor instead, E[max of 4 Binomial(4, 1/4)] / 1 = 1.8967 (local copies counted), on the port's expected 3/4:
    1.4225 copies. With the links 10⁶× faster and no latencies, the combine's injection at the experts binds:
    1.5225 × 7,168 × 2 B / 100 GB/s."""
    most = _expected_max((_binomial_cdf(3, Q(1, 4)), 4))
    assert float(most) == pytest.approx((1 - (27 / 64) ** 4) + (1 - (54 / 64) ** 4) + (1 - (63 / 64) ** 4), rel=1e-12)
    assert float(most) == pytest.approx(1.5225, abs=1e-4)
    port = 1.0e11
    row = wsemoe.evaluate({"name": "port", "model": {"preset": "deepseek-v3", "num_experts": 4, "num_experts_per_tok": 1},
                           "hardware": {"preset": "wsc-b200-8x8", "rows": 2, "cols": 2, "port_bw_bytes_per_s": port,
                                        "link_bw_bytes_per_s": 1e17, "hop_latency_s": 0.0, "alltoall_latency_s": 0.0,
                                        "collective_latency_s": 0.0},
                           "workload": {"mode": "decode", "seq_len": 4096, "B": 1},
                           "mapping": {"tp": 1, "strategy": "er"}}).iloc[0]
    assert row["tokens_per_microbatch"] == 4
    assert row["combine_bound"] == "inject"
    assert row["moe_combine_s"] == pytest.approx(float(most) * H * B16 / port, rel=1e-9)


def _switch(tokens: int, dispatch: str, size: int) -> tuple:
    """dgx-b200-x32 cut to 4 GPUs in servers of `size`, DeepSeek-V3 with 4 experts (one a GPU), top-1."""
    spec = {"preset": "dgx-b200-x32", "cols": 4, "scale_up_size": size}
    row = wsemoe.evaluate({"name": "nic", "hardware": spec,
                           "model": {"preset": "deepseek-v3", "num_experts": 4, "num_experts_per_tok": 1},
                           "workload": {"mode": "decode", "seq_len": 4096, "tokens_per_device": tokens},
                           "mapping": {"tp": 1, "scale_out_dispatch": dispatch}}).iloc[0]
    full = presets.load_hardware("dgx-b200-x32")
    return row, full.alltoall_latency_s + full.scale_out_latency_s, full.scale_out_bw_bytes_per_s


def test_a_per_copy_gpus_own_nic_waits_for_the_busiest_gpu_of_the_step():
    """4 servers of 1 GPU, 2 tokens a GPU. GPU d's NIC receives its expert's copies from the other 3 GPUs' 6
    tokens, Binomial(6, 1/4), and sends its own 2 tokens' copies but those that pick its own expert, Binomial(2, 3/4)
    (its local count Binomial(2, 1/4) has that variance; the 3 remote experts' pieces, each taken by itself, would
    read it 3× larger: fabric/spread.py); both means 1.5. The busiest of the 8 directions:
    E[max] = Σ_x (1 − F₆(x)⁴ F₂(x)⁴) = 2.6827 copies, × 7,168 × 2 B at the GPU's 400 GB/s: 96.1 ns of the combine
    (the model charged the expected 1.5 copies: 53.8 ns)."""
    most = _expected_max((_binomial_cdf(6, Q(1, 4)), 4), (_binomial_cdf(2, Q(3, 4)), 4))
    assert float(most) == pytest.approx(2.6827, abs=1e-4)
    row, fixed, bw = _switch(2, "per_copy", 1)
    assert row["tokens_per_microbatch"] == 8
    assert row["combine_bound"] == "latency"     # the 29 µs of the calls; the volume term is the NIC's
    assert row["moe_combine_s"] - fixed == pytest.approx(float(most) * H * B16 / bw, rel=1e-9)


def test_a_servers_nic_pool_waits_for_the_busiest_server_of_the_step():
    """2 servers of 2 GPUs, per server (a token crosses to the GPU of its own index: the pool binds). Top-1 dedupes
    nothing (crossing share 1): server a receives the copies of its two experts from the other server's 4 tokens
    (2 a GPU), each reaching it with chance r = 1 − C(2, 1)/C(4, 1) = 1/2, Binomial(4, 1/2); it sends its own 4
    tokens' crossings, the same. Over the 4 directions E[max] = Σ_x (1 − F(x)⁴) = 2.9946 copies (F = 1/16, 5/16,
    11/16, 15/16), × 14,336 B / 400 GB/s = 107.3 ns (the expected 2 copies: 71.7 ns)."""
    most = _expected_max((_binomial_cdf(4, Q(1, 2)), 4))
    assert most == sum(1 - f ** 4 for f in (Q(1, 16), Q(5, 16), Q(11, 16), Q(15, 16)))
    assert float(most) == pytest.approx(2.9946, abs=1e-4)
    row, fixed, bw = _switch(2, "per_server", 2)
    assert row["dispatch_scale_out_share"] == 1.0
    assert row["moe_combine_s"] - fixed == pytest.approx(float(most) * H * B16 / bw, rel=1e-9)
