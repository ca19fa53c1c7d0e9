"""The router's weight gradient in training: every member of a TP group holds the whole gate and routes its own
slice of the tokens, so the group sums the gate's gradient with a ring all-reduce over its own ring, once per MoE
layer (Megatron-Core: the router weight is marked sequence_parallel and such grads are all-reduced over the TP
group, megatron/core/distributed/finalize_model_grads.py, _allreduce_non_tensor_model_parallel_grads). Expected
values derived by hand from the model's shape and the hardware preset."""

from __future__ import annotations

import pytest

import wsemoe
from wsemoe.cost.energy.traffic import comm_bytes
from wsemoe.specs.workload import WorkloadSpec

REL = 1e-9
# Qwen3-30B-A3B (tests/data/hf/qwen3-30b-a3b.json): H 2048, 128 experts, no router bias, 48 layers, all MoE, q/k
# norms of d_h 128. One all-reduce a step sums the sequence-parallel gradients (params.tp_summed_params): 48 gates
# (2048·128), 48 × 2 RMSNorms (2·2048) and q/k norms (2·128), the final norm (2048), a MoE layer's share at
# bytes_per_grad 2: (262,144 + 4,096 + 256 + 2048/48) · 2 = 533,077.33 B (the gate alone 524,288 B)
GATE_BYTES = (2048 * 128 + 2 * 2048 + 2 * 128 + 2048 / 48) * 2.0
# wsc-b200-8x8 (wsemoe/presets/hardware): 900 GB/s a link, 200 ns a hop, 4.5 µs a collective call.
LINK, HOP, CALL = 9.0e11, 2.0e-7, 4.5e-6


def _row(hardware="wsc-b200-8x8", model="qwen3-30b-a3b", **sets):
    sets = {"workload.mode": "train", "workload.seq_len": 4096, "workload.B": 1, "workload.G": 1, **sets}
    return wsemoe.evaluate(wsemoe.point_config(hardware, model, [f"{k}={v}" for k, v in sets.items()])).iloc[0]


def test_a_tp4_block_sums_the_gate_gradient_over_its_ring():
    """TP 4 blocks of 2×2 dies: each ring's four edges join grid neighbours (1 hop, links no other ring uses). A ring
    all-reduce of M = 533,077.33 B (a MoE layer's share) puts 2·(4−1)/4·M = 799,616 B on each edge in 2·(4−1) = 6
    rounds: 799,616 / 9e11 = 0.88846 µs of bytes per MoE layer. Megatron-Core flattens the step's sequence-parallel
    gradients into one all-reduce, so the step pays one call's 6 · 200 ns + 4.5 µs = 5.7 µs, 0.11875 µs a MoE layer:
    1.00721 µs per MoE layer, 48.35 µs a step. It was not charged at all (no column, no time); then the gates alone
    (786,432 B an edge, 0.99256 µs), without the norms' gradients."""
    row = _row(**{"mapping.tp": 4, "mapping.strategy": "block"})
    edge = 2 * 3 / 4 * GATE_BYTES
    assert edge == pytest.approx(799_616, rel=1e-15)
    assert row["router_gradient_max_link_bytes"] == pytest.approx(edge, rel=REL)
    assert row["moe_gradient_s"] == pytest.approx(edge / LINK + (6 * HOP + CALL) / 48, rel=REL)
    assert 48 * row["moe_gradient_s"] == pytest.approx(48 * 799_616 / 9e11 + 5.7e-6, rel=REL)
    assert row["moe_gradient_s"] == pytest.approx(1.0072122222e-6, rel=1e-9)
    assert row["router_gradient_fixed_s"] == pytest.approx(CALL / 48, rel=REL)
    # the MoE stage pays it after its roofline, beside dispatch, combine and the output reduction
    comm = sum(row[f"moe_{p}_s"] for p in ("dispatch", "combine", "reduce", "gradient"))
    core = max(row["moe_compute_s"], row["moe_hbm_s"]) + row["moe_launch_s"]
    assert row["moe_time_s"] == pytest.approx(core + comm, rel=REL)
    # 16 rings × 4 edges × 786,432 B × 1 hop of byte-hops per MoE layer, which the energy model counts 48 times
    assert row["router_gradient_hop_bytes"] == pytest.approx(16 * 4 * edge, rel=REL)
    wl = WorkloadSpec(mode="train", seq_len=4096, B=1, G=1)
    m = wsemoe.load_model("qwen3-30b-a3b")
    with_it = comm_bytes(m, wl, dict(row))[0]
    without = comm_bytes(m, wl, {k: v for k, v in row.items() if not k.startswith("router_gradient")})[0]
    assert with_it - without == pytest.approx(48 * 16 * 4 * edge, rel=REL)


def test_the_router_gradient_is_charged_only_where_a_group_replicates_the_gate():
    """At TP 4 it moves; at TP 1 each node is its own group (nothing to sum inside it: no bytes, no call); in
    inference there is no gradient; on a weight-streaming wafer the whole wafer is one attention group with no TP
    replicas of the gate, whose gradient leaves over the wafer I/O with the MoE stage's (one per parameter)."""
    assert _row(**{"mapping.tp": 4, "mapping.strategy": "block"})["moe_gradient_s"] > 0
    one = _row(**{"mapping.tp": 1})
    assert one["moe_gradient_s"] == 0 and one["router_gradient_max_link_bytes"] == 0
    assert _row(**{"mapping.tp": 4, "workload.mode": "decode"}).get("moe_gradient_s", 0.0) == 0
    cs2 = _row(hardware="cs2")
    assert cs2.get("moe_gradient_s", 0.0) == 0
    experts = 128 * 3 * 2048 * 768
    assert cs2["moe_io_out_bytes"] == pytest.approx((experts + 2048 * 128) * 2.0, rel=REL)
