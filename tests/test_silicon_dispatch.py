"""The measured-serving model's expert-parallel all-to-all charges only the copies that cross a link.

A token's k routed copies go to the GPUs holding their experts; with the experts spread evenly over moe_ep GPUs,
1/moe_ep of them are for experts on the sender's own GPU and stay in its HBM. The values below are derived by hand
from the presets (B200: NVLink 900 GB/s a direction, 26 us an all-to-all call) and the shipped TensorRT-LLM stack.
"""

from __future__ import annotations

import numpy as np
import pytest

from wsemoe.config import presets
from wsemoe.cost.gpu import serving
from wsemoe.validate.silicon import features, fit, reader

DSR1_FP4_DP8 = {c: "" for c in reader.COLUMNS} | {
    # 2026_03_25_deepseek_r1_b200_sxm_trtllm_fp4_agg_1024x1024_c64_tp8_0_ep8_0_976 of the given file
    "id": "976", "silicon_data_source": "silicon_concurrency=64", "backend": "trtllm",
    "model_path": "deepseek-ai/DeepSeek-R1",
    "system": "b200_sxm", "precision": "fp4", "mode": "agg", "isl": 1024, "osl": 1024, "gemm_quant_mode": "nvfp4",
    "moe_quant_mode": "nvfp4", "batch_size": 8, "tp_size": 1, "pp_size": 1, "attention_dp_size": 8, "moe_tp_size": 1,
    "moe_ep_size": 8, "silicon_ttft_ms": 1085.5, "silicon_tpot_ms": 12.29}


def _resolve(**over):
    return reader.resolve(DSR1_FP4_DP8 | over, presets.load_model, presets.load_hardware)


def _features(**over):
    return {k: np.array([v], float) for k, v in features.one(_resolve(**over), "agg").items()}


@pytest.mark.parametrize("ep", [4, 8])
def test_copies_for_experts_on_the_sender_s_gpu_cross_no_link(ep):
    """DeepSeek-R1 NVFP4, attention DP = EP on one B200 server, 4 tokens a rank: per MoE layer two calls and the
    dispatch (0.5625 bytes a value: FP4 and an E4M3 scale per 16) plus the 16-bit combine of (ep − 1)/ep of the
    k = 8 copies of a 7,168-wide token."""
    X = _features(attention_dp_size=ep, moe_ep_size=ep, batch_size=4)
    assert (X["dp"][0], X["moe_ep"][0], X["moe_tp"][0], X["tp"][0]) == (ep, ep, 1, 1)
    per_layer = 2 * 26e-6 + 4 * 7168 * 8 * (ep - 1) / ep * (0.5625 + 2) / 9e11
    assert serving._comm(X, np.array([4.0]))[0] == pytest.approx(58 * per_layer, rel=1e-12)


def test_past_one_server_the_network_carries_the_copies_for_other_servers():
    """EP 16 over two 8-GPU H200 servers: the all-to-all is charged at the network's share a GPU (400 GB/s over 8);
    the copies for the sender's own server go over NVLink beside it, so half the copies are charged, not 15/16."""
    res = _resolve(system="h200_sxm", precision="fp8", gemm_quant_mode="fp8", moe_quant_mode="fp8",
                   attention_dp_size=16, moe_ep_size=16)
    assert res["workers"]["agg"]["gpus"] == 16
    assert features.ep_remote(res["hardware"], res["workers"]["agg"]) == pytest.approx(8 / 16, rel=1e-12)
    assert features.ep_remote(res["hardware"], {**res["workers"]["agg"], "moe_tp": 2}) == 1.0


# The TensorRT-LLM stack the hand derivation below is worked with (the one shipped before December 2026's refit),
# given here so that a refit of the shipped stacks does not move a check of the model's arithmetic
TRTLLM = {"eta_bw": 0.8376, "eta_mm": 0.7637, "eta_moe": 1.0, "eta_xmm": 0.1151, "t_layer": 48.6547, "t_moe": 13.9539,
          "t_step": 0.0, "t_seq": 39.7475, "t_req": 101.7318, "sync": 0.0898, "alpha": 0.7542}


def test_deepseek_r1_fp4_attention_dp_row_by_hand():
    """The given run 976 (C 64 = 8 ranks x 8, isl = osl = 1,024) by hand with the stack TRTLLM. Prefill of one
    request (1,024 tokens) on its rank, in ms: attention projections 2·61·187.1M·1,024 FLOPs at the 16-bit
    2.25 PFLOP/s x 0.7637 = 13.6032 (the checkpoint keeps them in BF16: validate/silicon/checkpoints.py; 3.4008 at
    the FP4 peak before); causal pairs 61·81,920·1,024²/2 at 2.25 PFLOP/s x 0.7637 = 1.5247; dense FFN 0.3543;
    experts (every one of a rank's 32 reached: 58·32·44.04M·0.5625 B over 8 TB/s) 5.7472; shared experts
    2·58·44,040,192·1,024 at 9 PFLOP/s x 0.7637 = 0.7611; router (16-bit, whole) 2·58·1,835,264·1,024 at
    2.25 PFLOP/s x 0.7637 = 0.1269 (it rode with the shared experts at the FP4 peak before: 0.7928 together);
    all-to-all 58·(52 us + 1,024·7,168·8·7/8·2.5625 B / 900 GB/s) = 11.5009 (12.713 when the copies for the
    rank's own experts were charged too); 61 layers x 48.65 us + 58 MoE layers x 13.95 us = 3.7773. Sum 37.3955.
    Decode step at 8 a rank: 16.7693, its attention projections 61·187.1M weights of 2 bytes over 8 TB/s x 0.8376
    = 3.4066 (0.9581 at NVFP4's 0.5625 bytes), the shared experts 58·44,040,192·0.5625 B = 0.2144 ms and the
    router 58·1,835,264·2 B = 0.0318 ms (0.2234 ms together at 0.5625 B before). TTFT = 101.73 + 37.396 + 16.769
    + 0.0898·63·37.396 = 367.46 ms; TPOT = 16.769 + 0.7542·(64/1,024)·37.396 = 18.532 ms."""
    out = fit.predict_one(_resolve(), "agg", TRTLLM)
    assert 1e3 * out["prefill"][0] == pytest.approx(37.3955, abs=2e-4)
    assert 1e3 * out["decode_step"][0] == pytest.approx(16.7693, abs=2e-4)
    assert 1e3 * out["ttft"][0] == pytest.approx(367.46, abs=0.01)
    assert 1e3 * out["tpot"][0] == pytest.approx(18.532, abs=1e-3)
