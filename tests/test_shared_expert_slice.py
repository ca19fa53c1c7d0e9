"""Shared experts and router where each TP member holds only its slice of the tokens (stagecost.shared_split) or
all of its group's (the replicated flow), and the router in both (stagecost.router_tokens).

On a switch with several attention groups (and on a mesh under `token_source: slice`) a member routes its own
1/tp of its group's tokens and runs the shared experts on them: it holds and reads them whole, as SGLang (tp_size=1
under its all-to-all backends), vLLM (sequence-parallel MoE) and TensorRT-LLM (attention DP) build them. Where every
member holds all of its group's tokens (one group on a switch, the replicated flow) the shared experts stay split
over the TP group, and training keeps Megatron-Core's TP split. The router (gate) is whole on every rank in every
flow, as all three engines and Megatron-Core hold it, and each rank routes the tokens it holds. Hand-derived from
DeepSeek-V3's shape.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

import wsemoe
from wsemoe.cost.gpu import serving
from wsemoe.cost.node import weights
from wsemoe.validate.silicon import features, reader

H, F, E = 7168, 2048, 256
EXPERT = 3 * H * F * 2                    # one bf16 expert (and the one shared expert): 88,080,384 B
ROUTER = (H * E + E) * 2                  # the gate and its per-expert bias, 16-bit: 3,670,528 B
HBM = 8.0e12                              # GB200 NVL72, per GPU


def _point(tp, mode="decode", tokens=16):
    wl = {"mode": mode, "seq_len": 4096, "tokens_per_device": tokens} if mode == "decode" else \
        {"mode": mode, "seq_len": 4096, "B": 1}
    return wsemoe.evaluate({"name": "p", "hardware": "nvl72", "model": "deepseek-v3", "workload": wl,
                            "mapping": {"tp": tp}}).iloc[0]


def test_nvl72_tp8_at_16_tokens_a_gpu_reads_the_whole_shared_expert():
    """TP 8 on 72 GPUs: 9 groups, 1,152 tokens a step, each GPU holding its 16. Every expert is hit (p = 1 −
    (31/32)^1152 = 1 − 1e-16), so the busiest GPU reads its 4 experts; it also reads the whole shared expert and
    router (it routes and runs its own 16 tokens): (4 · 88,080,384 + 88,080,384 + 3,670,528) B / 8 TB/s = 55.51 µs.
    The TP split read an eighth of the last two, 45.47 µs."""
    row = _point(8)
    assert row["token_flow"] == "slice"
    assert row["moe_hbm_s"] == pytest.approx((4 * EXPERT + EXPERT + ROUTER) / HBM, rel=1e-9)   # 55.509 µs
    assert row["moe_hbm_s"] * 1e6 == pytest.approx(55.509, abs=1e-3)
    # each GPU holds the whole shared expert of each of the 58 MoE layers, not an eighth of it (the router is
    # whole either way)
    split = weights.resident_weights_node(wsemoe.load_hardware("nvl72"), wsemoe.load_model("deepseek-v3"),
                                          SimpleNamespace(), 8, 4.0)
    assert row["mem_weights_node_bytes"] - split == pytest.approx(58 * EXPERT * 7 / 8, rel=1e-9)


def test_the_replicated_flow_holds_and_reads_the_router_whole_and_routes_every_token_on_every_member():
    """TP 72 on NVL72 at 16 tokens a GPU: one group, every GPU holds all 1,152 tokens after the all-reduce. The
    shared expert stays split 72 ways, but the gate is whole on every GPU (SGLang MoEGate, vLLM ReplicatedLinear,
    TensorRT-LLM DeepseekV3Gate): the busiest GPU reads (4 · 88,080,384 + 88,080,384 / 72 + 3,670,528) B / 8 TB/s
    = 44.652 µs (44.199 µs with the router split 72 ways). Every GPU routes all 1,152 tokens: 2 · 1,152 · 7168 · 256
    FLOPs at 2.5 PFLOP/s × 0.4 = 4.228 µs, where a GPU of TP 8 (slice flow) routes its own 16, 0.059 µs: the MoE
    compute terms differ by 2 · 1,136 · 7168 · 256 / 1e15 s = 4.169 µs (they were equal). Holding the shared expert
    whole instead of a 72nd adds 58 · 88,080,384 · 71/72 B; the router is whole in both."""
    whole = _point(72)
    assert whole["token_flow"] == "replicated"
    assert whole["moe_hbm_s"] == pytest.approx((4 * EXPERT + EXPERT / 72 + ROUTER) / HBM, rel=1e-9)
    assert whole["moe_hbm_s"] * 1e6 == pytest.approx(44.652, abs=1e-3)
    assert whole["moe_compute_s"] - _point(8)["moe_compute_s"] == pytest.approx(2 * 1136 * H * E / 1e15, rel=1e-9)
    # the split the flow sets moves the shared expert only: 71/72 of it, not of it and the router
    hw, m = wsemoe.load_hardware("nvl72"), wsemoe.load_model("deepseek-v3")
    held = weights.resident_weights_node(hw, m, SimpleNamespace(), 72, 4.0)
    assert weights.resident_weights_node(hw, m, SimpleNamespace(), 72, 4.0, 1) - held == pytest.approx(
        58 * EXPERT * 71 / 72, rel=1e-9)
    assert whole["mem_weights_node_bytes"] == pytest.approx(held, rel=1e-12)


def _sglang(**over):
    """Features of an aggregated SGLang DeepSeek-V3 FP8 run on B200s (one upstream-format row)."""
    row = {c: "" for c in reader.COLUMNS}
    row.update({"id": "t", "silicon_data_source": "test", "backend": "sglang", "backend_version": "1",
                "model_path": "deepseek-ai/DeepSeek-V3", "system": "b200_sxm", "precision": "fp8", "mode": "agg",
                "isl": 1024, "osl": 1024, "gemm_quant_mode": "fp8_block", "moe_quant_mode": "fp8_block",
                "batch_size": 1, "tp_size": 8, "pp_size": 1, "attention_dp_size": 2, "moe_tp_size": 1,
                "moe_ep_size": 16, "silicon_ttft_ms": 1.0, "silicon_tpot_ms": 1.0})
    row.update(over)
    res = reader.resolve(row, wsemoe.load_model, wsemoe.load_hardware)
    return {k: np.array([v], float) for k, v in features.one(res, "agg").items()}


ETA1 = {k: np.array([v]) for k, v in {"eta_bw": 1.0, "eta_mm": 1.0, "eta_moe": 1.0, "eta_xmm": 1.0, "t_layer": 0.0,
                                        "t_moe": 0.0, "t_step": 0.0, "t_seq": 0.0, "t_req": 0.0, "sync": 0.0,
                                        "alpha": 0.0}.items()}


def _step_part(X, seqs, *names):
    """Seconds a decode step of `seqs` sequences spends on the weights `names` (the step without them, subtracted)."""
    return (serving.decode_step(X, ETA1, np.array([seqs]))[0]
            - serving.decode_step({**X, **{n: np.array([0.0]) for n in names}}, ETA1, np.array([seqs]))[0])


def test_the_gpu_serving_model_holds_and_reads_the_whole_shared_expert_under_attention_dp_with_ep():
    """DP attention over 2 ranks of TP 8 with an all-to-all (DeepEP): a GPU holds its 1/8 of its rank's tokens and
    the whole shared expert, 58 layers × 44,040,192 parameters (SGLang: tp_size=1 under DeepEP). The same GPUs
    without attention DP hold an eighth of it (every member holds all of its rank's tokens)."""
    X = _sglang()
    shared = 58 * 3 * H * F * X["b_gemm"][0]                        # 2.55 GB at FP8
    assert X["Lm"][0] == 58 and X["shared_w"][0] == 3 * H * F and X["router_w"][0] == H * E + E
    one_rank = {**X, "dp": np.array([1.0])}                         # the same GPUs, no attention DP
    assert serving.weights_per_gpu(X)[0] - serving.weights_per_gpu(one_rank)[0] == pytest.approx(shared * 7 / 8,
                                                                                                 rel=1e-9)
    # a decode step of one sequence is bandwidth-bound: the whole shared expert's bytes at the HBM bandwidth
    assert _step_part(X, 2.0, "shared_w") == pytest.approx(shared / X["B"][0], rel=1e-6)


def test_the_gpu_serving_model_holds_and_reads_the_router_whole_and_16_bit_on_every_gpu():
    """SGLang, DeepSeek-V3 FP8, TP 8 without attention DP (the given H200/B200 rows' layout): each GPU holds all of
    the step's tokens and the whole gate (SGLang MoEGate, vLLM ReplicatedLinear, TensorRT-LLM DeepseekV3Gate), kept
    16-bit as the checkpoint keeps it. A decode step of 2 sequences on B200 (8 TB/s, eta 1) reads per MoE layer an
    eighth of the shared expert at 1 byte and the whole router at 2: 58 · (44,040,192 / 8 + 1,835,264 · 2) B /
    8 TB/s = 66.523 µs (41.575 µs when the router rode with the shared expert, an eighth of it at 1 byte), and
    holds 58 · 1,835,264 · 2 = 212,890,624 B of router (13,305,664 B before)."""
    X = _sglang(attention_dp_size=1, moe_tp_size=8, moe_ep_size=1)
    assert (X["tp"][0], X["dp"][0], X["b_gemm"][0]) == (8, 1, 1.0)
    assert _step_part(X, 2.0, "shared_w", "router_w") == pytest.approx(
        58 * (3 * H * F / 8 + (H * E + E) * 2) / HBM, rel=1e-6)
    assert _step_part(X, 2.0, "shared_w", "router_w") * 1e6 == pytest.approx(66.523, abs=1e-3)
    no_router = {**X, "router_w": np.array([0.0])}
    assert serving.weights_per_gpu(X)[0] - serving.weights_per_gpu(no_router)[0] == pytest.approx(212_890_624,
                                                                                                rel=1e-12)


@pytest.mark.parametrize("backend, split, routed", [("sglang", 16, 2), ("vllm", 8, 1), ("trtllm", 8, 1)])
def test_attention_dp_without_ep_splits_the_shared_expert_as_each_backend_builds_it(backend, split, routed):
    """DP attention over 2 ranks of TP 8 with the experts TP-split over all 16 GPUs (moe_tp 16, no EP). SGLang
    gathers both ranks' tokens before the MoE block and builds the shared expert with its tp_size, 16
    (deepseek_v2.py: DeepseekV2MLP without tp_size; communicator.py: FULL), so a GPU holds a 16th of it and routes
    both ranks' tokens; vLLM runs the shared expert over the rank's TP 8 and the gate on the rank's own tokens before
    its naive dispatch (deepseek_v2.py, DeepseekV2MoE), as TensorRT-LLM does. A decode step of 2 sequences (1 a rank)
    on B200 at eta 1: the shared expert 58 · 44,040,192 / split B / 8 TB/s = 19.956 µs (SGLang) or 39.911 µs
    (vLLM, TensorRT-LLM), bandwidth-bound; the router 58 · 1,835,264 · 2 B / 8 TB/s = 26.611 µs. A prefill of
    1,024 tokens routes 1,024 · routed tokens a GPU: 2 · 58 · 1,835,264 · 1,024 · routed FLOPs at 2.25 PFLOP/s =
    96.886 µs per gathered rank (193.77 µs SGLang, 96.886 vLLM). SGLang was charged an eighth (the attention TP)."""
    X = _sglang(backend=backend, attention_dp_size=2, moe_tp_size=16, moe_ep_size=1)
    assert (X["tp"][0], X["dp"][0], X["moe_tp"][0], X["moe_ep"][0]) == (8, 2, 16, 1)
    shared_s = 58 * 3 * H * F / split / HBM
    assert _step_part(X, 2.0, "shared_w") == pytest.approx(shared_s, rel=1e-6)
    assert _step_part(X, 2.0, "shared_w") * 1e6 == pytest.approx({16: 19.956, 8: 39.911}[split], abs=1e-3)
    assert _step_part(X, 2.0, "router_w") == pytest.approx(58 * (H * E + E) * 2 / HBM, rel=1e-6)
    no_shared = {**X, "shared_w": np.array([0.0])}
    assert serving.weights_per_gpu(X)[0] - serving.weights_per_gpu(no_shared)[0] == pytest.approx(
        58 * 3 * H * F / split, rel=1e-12)
    no_router = {**X, "router_w": np.array([0.0])}
    router_prefill = serving.prefill(X, ETA1)[0] - serving.prefill(no_router, ETA1)[0]
    assert router_prefill == pytest.approx(2 * 58 * (H * E + E) * 1024 * routed / 2.25e15, rel=1e-9)


def test_training_keeps_the_tp_split_and_pays_its_gather_and_reduce_scatter():
    """Training, NVL72 TP 8 (9 groups, slice flow), 1,024 tokens a group: Megatron-Core keeps the shared expert
    TP-split, so a member reads an eighth of it, and the router whole (Megatron-Core's Router weight is one
    replicated parameter, marked sequence_parallel): (4 · 88,080,384 + 88,080,384 / 8 + 3,670,528) B / 8 TB/s =
    45.875 µs (45.474 µs with an eighth of the router); the group
    gathers its tokens for it and reduce-scatters its output: the bytes of one all-reduce of the group's
    1,024 × 7168 × 2 = 14,680,064-byte message, in the switch (NVLink SHARP, as the attention's all-reduce):
    14,680,064 / 900 GB/s + 2 × 0.5 µs + 4.5 µs = 21.81 µs a MoE layer, where the slice flow charged none. Serving
    at the same point pays none (each GPU runs the whole shared expert on its own slice)."""
    train = wsemoe.evaluate({"name": "t", "hardware": "nvl72", "model": "deepseek-v3",
                             "workload": {"mode": "train", "seq_len": 1024, "B": 1}, "mapping": {"tp": 8}}).iloc[0]
    assert train["token_flow"] == "slice"
    msg = 1024 * H * 2
    assert train["moe_reduce_s"] == pytest.approx(msg / 9.0e11 + 2 * 0.5e-6 + 4.5e-6, rel=1e-9)
    # the attention's own collective is narrower: MLA gathers its latents and RoPE key, 1536 + 512 + 64 = 2,112 a
    # token, and reduce-scatters H (tests/test_mla_sp_gather.py): the bytes of an all-reduce of (7168 + 2112)/2
    attn = 1024 * (7168 + 2112) / 2 * 2
    assert train["attention_allreduce_s"] == pytest.approx(attn / 9.0e11 + 2 * 0.5e-6 + 4.5e-6, rel=1e-9)
    assert train["moe_hbm_s"] == pytest.approx((4 * EXPERT + EXPERT / 8 + ROUTER) / HBM, rel=1e-9)
    assert _point(8)["moe_reduce_s"] == 0.0
