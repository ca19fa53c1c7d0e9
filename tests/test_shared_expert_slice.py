"""Shared experts and router where each TP member holds only its slice of the tokens (stagecost.shared_split).

On a switch with several attention groups (and on a mesh under `token_source: slice`) a member routes its own
1/tp of its group's tokens and runs the shared experts on them: it holds and reads them whole, as SGLang (tp_size=1
under its all-to-all backends), vLLM (sequence-parallel MoE) and TensorRT-LLM (attention DP) build them. Where every
member holds all of its group's tokens (one group on a switch, the replicated flow) they stay split over the TP
group, and training keeps Megatron-Core's TP split. Hand-derived from DeepSeek-V3's shape.
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
    # each GPU holds the whole shared expert and router of each of the 58 MoE layers, not an eighth of them
    split = weights.resident_weights_node(wsemoe.load_hardware("nvl72"), wsemoe.load_model("deepseek-v3"),
                                          SimpleNamespace(), 8, 4.0)
    assert row["mem_weights_node_bytes"] - split == pytest.approx(58 * (EXPERT + ROUTER) * 7 / 8, rel=1e-9)
    # TP 72: one group, every GPU holds all 1,152 tokens after the all-reduce, so the shared expert and router stay
    # split 72 ways (replicated flow); whole weights on 16 tokens or a 72nd of them on 1,152 are the same FLOPs
    whole = _point(72)
    assert whole["token_flow"] == "replicated"
    assert whole["moe_hbm_s"] == pytest.approx((4 * EXPERT + (EXPERT + ROUTER) / 72) / HBM, rel=1e-9)
    assert row["moe_compute_s"] == pytest.approx(whole["moe_compute_s"], rel=1e-12)


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


def test_the_gpu_serving_model_holds_and_reads_the_whole_shared_expert_under_attention_dp_with_ep():
    """DP attention over 2 ranks of TP 8 with an all-to-all (DeepEP): a GPU holds its 1/8 of its rank's tokens and
    the whole shared expert and router, 58 layers × 45,875,456 parameters (SGLang: tp_size=1 under DeepEP). The same
    GPUs without attention DP hold an eighth of them (every member holds all of its rank's tokens)."""
    X = _sglang()
    shared = 58 * (3 * H * F + H * E + E) * X["b_gemm"][0]         # 2.66 GB at FP8 (with its block scales)
    assert X["Lm"][0] == 58 and X["shared_w"][0] == 3 * H * F + H * E + E
    one_rank = {**X, "dp": np.array([1.0])}                         # the same GPUs, no attention DP
    assert serving.weights_per_gpu(X)[0] - serving.weights_per_gpu(one_rank)[0] == pytest.approx(shared * 7 / 8,
                                                                                                 rel=1e-9)
    # a decode step of one sequence is bandwidth-bound: the whole shared expert's bytes at the HBM bandwidth
    eta = {k: np.array([v]) for k, v in {"eta_bw": 1.0, "eta_mm": 1.0, "eta_moe": 1.0, "eta_xmm": 1.0, "t_layer": 0.0,
                                          "t_moe": 0.0, "t_step": 0.0, "t_seq": 0.0, "t_req": 0.0, "sync": 0.0,
                                          "alpha": 0.0}.items()}
    without = {**X, "shared_w": np.array([0.0])}
    seqs = np.array([2.0])
    step = serving.decode_step(X, eta, seqs)[0] - serving.decode_step(without, eta, seqs)[0]
    assert step == pytest.approx(shared / X["B"][0], rel=1e-6)


def test_training_keeps_the_tp_split_and_pays_its_gather_and_reduce_scatter():
    """Training, NVL72 TP 8 (9 groups, slice flow), 1,024 tokens a group: Megatron-Core keeps the shared expert
    TP-split, so a member reads an eighth of it and router (45.47 µs at 16 tokens a GPU, as before) and the group
    gathers its tokens for it and reduce-scatters its output: the bytes of one all-reduce of the group's
    1,024 × 7168 × 2 = 14,680,064-byte message, in the switch (NVLink SHARP, as the attention's all-reduce):
    14,680,064 / 900 GB/s + 2 × 0.5 µs + 4.5 µs = 21.81 µs a MoE layer, where the slice flow charged none. Serving
    at the same point pays none (each GPU runs the whole shared expert on its own slice)."""
    train = wsemoe.evaluate({"name": "t", "hardware": "nvl72", "model": "deepseek-v3",
                             "workload": {"mode": "train", "seq_len": 1024, "B": 1}, "mapping": {"tp": 8}}).iloc[0]
    assert train["token_flow"] == "slice"
    msg = 1024 * H * 2
    assert train["moe_reduce_s"] == pytest.approx(msg / 9.0e11 + 2 * 0.5e-6 + 4.5e-6, rel=1e-9)
    assert train["moe_reduce_s"] == pytest.approx(train["attention_allreduce_s"], rel=1e-12)   # the same message
    assert train["moe_hbm_s"] == pytest.approx((4 * EXPERT + (EXPERT + ROUTER) / 8) / HBM, rel=1e-9)
    assert _point(8)["moe_reduce_s"] == 0.0
