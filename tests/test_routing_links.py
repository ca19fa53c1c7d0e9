"""A dispatch's busiest link carries a step's random copies: its time is the expected maximum over the step's
routing of the links' copies (fabric/spread.py, routing.busiest_carrier), not the hottest link's expected load.
Hand case: a 2 × 2 mesh, 4 experts (one a die), top-1, one token a die (T = 4), XY routing."""

import numpy as np
import pytest
from scipy.stats import binom

import wsemoe

H, BYTES, LINK_BW = 7168, 2, 9.0e11   # DeepSeek-V3's hidden size, 16-bit activations, wsc-b200-8x8's die link


def test_each_link_of_a_small_mesh_is_a_binomial_and_the_step_waits_for_the_busiest():
    """Dies 0 1 / 2 3, XY routing (along the row, then the column). A token picks each expert with chance 1/4. The
    east link 0→1 carries die 0's token when it picks die 1 or 3: one token, one pick, Bernoulli(1/2) (mean 1/2;
    the model took two independent pieces of 1/4, Binomial(2, 1/4)); the four row links alike. The south link 0→2
    carries the tokens of dies 0 and 1 that pick die 2: two tokens, Binomial(2, 1/4); the four column links alike.
    The busiest is E[max] = Σ_x (1 − F(x)) = (1 − (1/2)^4·(9/16)^4) + (1 − (15/16)^4) = 1.2213 copies (it read
    1.3933), 2.44× the hottest link's expected 1/2. With the ports and latencies out of the way (port bandwidth
    1e18, no hop or call latency) the dispatch and the combine each take 1.2213 copies × 7,168 × 2 B / 900 GB/s =
    19.45 ns (the expected load read 0.5 copies: 7.96 ns)."""
    x = np.arange(3)
    most = float((1.0 - binom.cdf(x, 1, 0.5) ** 4 * binom.cdf(x, 2, 0.25) ** 4).sum())
    assert most == pytest.approx((1 - (1 / 2) ** 4 * (9 / 16) ** 4) + (1 - (15 / 16) ** 4), rel=1e-12)
    assert most == pytest.approx(1.2213, abs=1e-4)
    cfg = {"name": "links", "model": {"preset": "deepseek-v3", "num_experts": 4, "num_experts_per_tok": 1},
           "hardware": {"preset": "wsc-b200-8x8", "rows": 2, "cols": 2, "port_bw_bytes_per_s": 1e18,
                        "hop_latency_s": 0.0, "alltoall_latency_s": 0.0, "collective_latency_s": 0.0},
           "workload": {"mode": "decode", "seq_len": 4096, "B": 1}, "mapping": {"tp": 1, "strategy": "er"}}
    row = wsemoe.evaluate(cfg).iloc[0]
    assert row["tokens_per_microbatch"] == 4
    # the column reports the busiest link's bytes the time waits for (it read the expected 0.5 copies: 14,336 B)
    assert row["dispatch_max_link_bytes"] == pytest.approx(most * H * BYTES, rel=1e-6)
    assert row["combine_max_link_bytes"] == pytest.approx(most * H * BYTES, rel=1e-6)
    want = most * H * BYTES / LINK_BW
    assert row["moe_dispatch_s"] == pytest.approx(want, rel=1e-6)
    assert row["moe_combine_s"] == pytest.approx(want, rel=1e-6)
    assert row["dispatch_bound"] == "link"


def test_many_tokens_bring_the_busiest_link_to_its_expected_load():
    """The same mesh at 4,096 tokens a die: the row links' copies are Binomial(4,096, 1/2) (σ 32), the column
    links' Binomial(8,192, 1/4) (σ 39), mean 2,048; their maximum's excess over the mean shrinks as 1/√T (here
    1.025×, scipy; 1.028× with every link Binomial(8,192, 1/4)), and the factor on the link term with it."""
    n = 2 * 4096
    x = np.arange(n + 1)
    most = float((1.0 - binom.cdf(x, n // 2, 0.5) ** 4 * binom.cdf(x, n, 0.25) ** 4).sum())
    assert most / (n / 4) == pytest.approx(1.025, abs=1e-3)
    cfg = {"name": "links", "model": {"preset": "deepseek-v3", "num_experts": 4, "num_experts_per_tok": 1},
           "hardware": {"preset": "wsc-b200-8x8", "rows": 2, "cols": 2, "port_bw_bytes_per_s": 1e18,
                        "hop_latency_s": 0.0, "alltoall_latency_s": 0.0, "collective_latency_s": 0.0},
           "workload": {"mode": "prefill", "seq_len": 4096, "B": 1}, "mapping": {"tp": 1, "strategy": "er"}}
    row = wsemoe.evaluate(cfg).iloc[0]
    assert row["tokens_per_microbatch"] == 4 * 4096
    assert row["moe_dispatch_s"] == pytest.approx(most * H * BYTES / LINK_BW, rel=1e-4)
