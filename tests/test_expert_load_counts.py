"""Auxiliary-loss-free load balancing in training: DeepSeek-V3 moves each expert's correction bias by ±γ from its
load over the batch (arXiv:2412.19437 §2.1.2), so every step sums the per-expert token counts of every rank.
Megatron-Core counts each rank's tokens in a float32 buffer (megatron/core/transformer/moe/router.py,
local_tokens_per_expert) and all-reduces every MoE layer's, stacked, once a step over the tensor × data ×
context-parallel group (megatron/core/distributed/finalize_model_grads.py, _update_router_expert_bias;
moe_utils.py, get_updated_expert_bias). It was not charged. Expected values derived by hand."""

from __future__ import annotations

import pytest

import wsemoe
from wsemoe.cost.energy.traffic import comm_bytes
from wsemoe.cost.node import params
from wsemoe.specs.workload import WorkloadSpec

REL = 1e-9
# wsc-b200-8x8 (wsemoe/presets/hardware): 900 GB/s a link, 200 ns a hop, 4.5 µs a collective call.
LINK, HOP, CALL = 9.0e11, 2.0e-7, 4.5e-6


def _row(model="deepseek-v3", **sets):
    sets = {"workload.mode": "train", "workload.seq_len": 4096, "workload.B": 1, "workload.G": 1,
            "mapping.tp": 4, "mapping.strategy": "block", **sets}
    return wsemoe.evaluate(wsemoe.point_config("wsc-b200-8x8", model, [f"{k}={v}" for k, v in sets.items()])).iloc[0]


def test_deepseek_v3_sums_its_expert_counts_over_every_rank_once_a_step():
    """DeepSeek-V3: 58 MoE layers × 256 experts = 14,848 float32 counts, 59,392 B a step, 1,024 B a MoE layer.
    TP 4 blocks of 2×2 dies on the 8×8 mesh (16 groups): the group's ring all-reduce (2 steps of 3/4 · 1,024 B on
    one-hop edges, 3 rounds each), then rank i of every group sums over its ring of 16 (one step of
    2·15/16 · 1,024 = 1,920 B an edge, 30 rounds; rank 0's ring runs 0, 2, 4, 6, 16, … 54 and back, its longest edge
    12 hops from die (6, 6) to (0, 0); two rings' edges share a link: 3,840 B). A MoE layer pays the bytes,
    (768 + 768 + 3,840) / 9e11 = 5.973 ns, and a 58th of one call's latency: 2·3 · 1 · 200 ns + 30 · 12 · 200 ns +
    4.5 µs = 77.7 µs, 1.33966 µs; 1.34563 µs a MoE layer, 78.05 µs a step, in the MoE stage."""
    row = _row()
    assert row.get("expert_load_max_link_bytes", 0.0) == pytest.approx(1.5 * 1024 + 3840, rel=REL)
    v3 = wsemoe.load_model("deepseek-v3")
    assert params.expert_load_counts(v3) == 58 * 256 == 14_848
    volume = (768 + 768 + 3840) / LINK
    latency = 2 * 3 * HOP + 30 * 12 * HOP + CALL
    assert row["moe_load_s"] == pytest.approx(volume + latency / 58, rel=REL)
    assert 58 * row["moe_load_s"] == pytest.approx(78.046e-6, rel=1e-4)
    assert row["expert_load_fixed_s"] == pytest.approx(CALL / 58, rel=REL)
    comm = sum(row[f"moe_{p}_s"] for p in ("dispatch", "combine", "reduce", "gradient", "load"))
    core = max(row["moe_compute_s"], row["moe_hbm_s"]) + row["moe_launch_s"]
    assert row["moe_time_s"] == pytest.approx(core + comm, rel=REL)
    # byte-hops a MoE layer: 16 rings × 4 one-hop edges × 1.5 · 1,024 B, and 4 rings of 60 hops × 1,920 B
    assert row["expert_load_hop_bytes"] == pytest.approx(16 * 4 * 1536 + 4 * 60 * 1920, rel=REL)
    wl = WorkloadSpec(mode="train", seq_len=4096, B=1, G=1)
    with_it = comm_bytes(v3, wl, dict(row))[0]
    without = comm_bytes(v3, wl, {k: v for k, v in row.items() if not k.startswith("expert_load")})[0]
    assert with_it - without == pytest.approx(58 * (16 * 4 * 1536 + 4 * 60 * 1920), rel=REL)


def test_only_a_correction_bias_sums_counts():
    """gpt-oss's router bias is learned (its gradient rides the TP group's all-reduce), Qwen3 has none: no counts.
    Serving updates no bias."""
    assert params.expert_load_counts(wsemoe.load_model("gpt-oss-120b")) == 0
    assert params.expert_load_counts(wsemoe.load_model("qwen3-30b-a3b")) == 0
    for row in (_row("gpt-oss-120b"), _row("qwen3-30b-a3b"), _row(**{"workload.mode": "decode"})):
        assert row.get("moe_load_s", 0.0) == 0
