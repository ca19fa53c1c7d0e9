"""SRAM serving across wafers: the fabric path a token pays at a wafer boundary, hand-derived on the Llama-3.1-405B
point of the Cerebras rows (22 CS-3, batch 1, 2,048 tokens of context, 16-bit, fused kernels)."""

from __future__ import annotations

import numpy as np
import pytest

from wsemoe.cost.wafer import serving
from wsemoe.validate import cerebras


@pytest.fixture(scope="module")
def llama_405b():
    hw, m, wl, mp, bal = cerebras.namespaces(cerebras.models()["llama-3.1-405b"], "post")
    return hw, m, serving.evaluate(hw, m, wl, mp, bal)


def test_a_wafer_hop_pays_one_region_side(llama_405b):
    # A dense layer of 405B holds 3,187.7M weights (QKV and output 2·16,384² + 2·16,384·1,024, FFN 3·16,384·53,248,
    # two norms) = 6,375.4 MB and 2,048 tokens of KV at 4 KiB = 8.4 MB: 6,383.8 MB at the chosen 43,361 B per PE is
    # 147,225 PEs, a square of side 383. The stage's last layer pays its own layer hop, 383 PEs out of its region
    # towards the I/O edge; the wafer hop then adds the system link (32 KiB at 150 GB/s = 0.2185 µs, 2 µs) and the
    # next wafer's path from its edge to its first region, 383 hops of 1 cycle at 1.1 GHz = 0.3482 µs: 2.5667 µs.
    # Before, it charged both wafers' paths (2.9148 µs), the sending one a second time: 21 hops × 0.3482 µs = 7.31 µs
    # more in one token's pass.
    hw, m, out = llama_405b
    side = np.floor(np.sqrt(6_383.8e6 / float(out["sram_bytes_per_pe"])))
    assert side == 383.0
    clock, hop = hw.pe["clock_hz"], hw.pe["hop_cycles"]
    link = m.hidden_size * 2 / hw.inter_wafer_link_bw_bytes_per_s + hw.inter_wafer_hop_latency_s
    assert float(out["wafer_hops"]) == 21.0
    assert float(out["wafer_hop_s"]) == pytest.approx(link + side * hop / clock, rel=1e-12)
    assert float(out["wafer_hop_s"]) == pytest.approx(2.5666e-6, abs=1e-10)

    # The token return leaves the head, which pays no hop after its argmax: it crosses the last wafer's path to its
    # edge and the first wafer's path from its edge to the embedding, 2 µs + 2·383 cycles = 2.6964 µs (unchanged).
    assert float(out["token_return_s"]) == pytest.approx(hw.inter_wafer_hop_latency_s + 2 * side * hop / clock,
                                                         rel=1e-12)
