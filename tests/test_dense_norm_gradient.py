"""A model without MoE layers still sums its sequence-parallel gradients over the TP group in training: every rank
holds the RMSNorms whole and forms their gradients from its slice of the tokens, and Megatron-Core all-reduces them
over the TP group whenever TP > 1 with sequence parallelism, MoE or not (megatron/core/distributed/
finalize_model_grads.py, _allreduce_layernorm_grads). The all-reduce used to be charged a MoE layer's share at a
time, so a dense model (Lm = 0) never paid it. Expected values derived by hand from the presets."""

from __future__ import annotations

import pytest

import wsemoe
from wsemoe.cost.energy.traffic import comm_bytes
from wsemoe.cost.node import params
from wsemoe.specs.workload import WorkloadSpec

REL = 1e-9
# wsc-b200-8x8 (wsemoe/presets/hardware): 900 GB/s a link, 200 ns a hop, 4.5 µs a collective call.
LINK, HOP, CALL = 9.0e11, 2.0e-7, 4.5e-6
# Llama 3.1 8B (dense): H 4096, 32 layers, no q/k norms: two RMSNorms a layer and the final one,
# 32 · 2 · 4096 + 4096 = 266,240 gradients a step, 532,480 B at 2 B, 16,640 B a layer
PER_LAYER = (32 * 2 * 4096 + 4096) * 2.0 / 32


def _row(model="llama-3.1-8b", **sets):
    sets = {"workload.mode": "train", "workload.seq_len": 4096, "workload.B": 1, "workload.G": 1,
            "mapping.tp": 4, "mapping.strategy": "block", **sets}
    return wsemoe.evaluate(wsemoe.point_config("wsc-b200-8x8", model, [f"{k}={v}" for k, v in sets.items()])).iloc[0]


def test_a_dense_model_sums_its_norm_gradients_over_the_tp_group():
    """TP 4 blocks of 2×2 dies, one-hop ring edges: 2·3/4 · 16,640 = 24,960 B on each edge a layer, 27.73 ns at
    900 GB/s, and a 32nd of one call's 6 · 200 ns + 4.5 µs = 5.7 µs: 205.86 ns a dense layer, 6.587 µs a step, in
    the dense FFN stage after its own all-reduce. It was 0 (no term, no step time, no energy)."""
    assert params.tp_summed_params(wsemoe.load_model("llama-3.1-8b")) == 266_240
    row = _row()
    edge = 2 * 3 / 4 * PER_LAYER
    assert edge == 24_960
    assert row["router_gradient_max_link_bytes"] == pytest.approx(edge, rel=REL)
    assert row["dense_ffn_gradient_s"] == pytest.approx(edge / LINK + (6 * HOP + CALL) / 32, rel=REL)
    assert 32 * row["dense_ffn_gradient_s"] == pytest.approx(32 * 24_960 / 9e11 + 5.7e-6, rel=REL)
    core = max(row["dense_ffn_compute_s"], row["dense_ffn_hbm_s"]) + row["dense_ffn_launch_s"]
    comm = row["dense_ffn_allreduce_s"] + row["dense_ffn_gradient_s"]
    assert row["dense_ffn_time_s"] == pytest.approx(core + comm, rel=REL)
    # the energy model counts its byte-hops on each of the 32 layers: 16 rings × 4 edges × 24,960 B
    m, wl = wsemoe.load_model("llama-3.1-8b"), WorkloadSpec(mode="train", seq_len=4096, B=1, G=1)
    with_it = comm_bytes(m, wl, dict(row))[0]
    without = comm_bytes(m, wl, {k: v for k, v in row.items() if not k.startswith("router_gradient")})[0]
    assert with_it - without == pytest.approx(32 * 16 * 4 * edge, rel=REL)


def test_a_moe_model_still_pays_it_in_its_moe_layers_only():
    """Qwen3-30B-A3B (48 layers, all MoE): the share rides the MoE stage (tests/test_router_gradient.py); its dense
    FFN stage pays none. At TP 1 nothing moves for a dense model either."""
    row = _row("qwen3-30b-a3b")
    assert row["moe_gradient_s"] > 0 and row["dense_ffn_gradient_s"] == 0
    one = _row(**{"mapping.tp": 1})
    assert one["dense_ffn_gradient_s"] == 0 and one["router_gradient_max_link_bytes"] == 0
