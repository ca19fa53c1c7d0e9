"""The GPU serving model's cache beyond the KV: a sparse (DSA) layer's indexer keys and scores, a linear layer's
recurrent state, each derived by hand from the model's config (GLM-5: 78 sparse layers; Qwen3.5-397B-A17B: 45
linear and 15 full layers) and checked where it enters the KV capacity, the decode step and the prefill."""

from __future__ import annotations

import numpy as np
import pytest

from wsemoe.config import presets
from wsemoe.cost.gpu import serving
from wsemoe.validate.silicon import features, reader

ROW = {"id": "x", "backend": "trtllm", "system": "b200_sxm", "mode": "agg", "isl": 4096, "osl": 1024,
       "gemm_quant_mode": "fp8", "moe_quant_mode": "fp8", "batch_size": 64, "tp_size": 8, "pp_size": 1,
       "attention_dp_size": 1, "moe_tp_size": 1, "moe_ep_size": 8, "silicon_ttft_ms": 1.0, "silicon_tpot_ms": 1.0}
BARE = {"idx_bytes": 0.0, "idx_flops": 0.0, "state_bytes": 0.0, "state_flops": 0.0}


def _features(model_path: str, **over) -> dict:
    row = {c: "" for c in reader.COLUMNS}
    row.update({**ROW, "model_path": model_path, **over})
    res = reader.resolve(row, presets.load_model, presets.load_hardware)
    return {k: np.array([v], float) for k, v in features.one(res, "agg").items()}


def _stack() -> dict:
    base = {"eta_bw": 1.0, "eta_mm": 1.0, "eta_moe": 1.0, "eta_xmm": 1.0, "t_layer": 0.0, "t_moe": 0.0, "t_step": 0.0,
            "t_seq": 0.0, "t_req": 0.0, "sync": 0.0, "alpha": 0.0}
    return {k: np.array([v]) for k, v in base.items()}


def _bare(X: dict) -> dict:
    return {**X, **{k: np.array([v]) for k, v in BARE.items()}}


def test_glm5_indexer_keys_and_scores_by_hand():
    """GLM-5: every one of its 78 layers keeps a 128-wide FP8 indexer key with one FP32 scale (132 B a token), on
    every TP rank, and scores every earlier key with 32 index heads (2·32·128 FLOPs a pair)."""
    X = _features("zhipuai/GLM-5")
    assert (X["idx_bytes"][0], X["idx_flops"][0]) == (78 * 132, 78 * 2 * 32 * 128)
    assert (X["state_bytes"][0], X["state_flops"][0]) == (0.0, 0.0)
    ctx = 4096 + 1024 / 2
    # capacity: the cache per sequence grows by its indexer keys at the mean context (FP8 latent 576 B a layer)
    free = 0.9 * (X["mem"][0] - serving.weights_per_gpu(X)[0])
    latent = ctx * 78 * 576 * 1.0   # FP8 latent and rope key, one byte a value, every layer
    assert serving.kv_slots(_bare(X))[0] == np.floor(free / latent)
    assert serving.kv_slots(X)[0] == np.floor(free / (latent + ctx * 78 * 132))
    # decode: 64 sequences read their keys (bandwidth) and score them (compute), the longer of the two
    P, b = _stack(), 64
    extra = max(b * ctx * 78 * 132 / X["B"][0], b * ctx * 78 * 2 * 32 * 128 / X["F16"][0])
    step = serving.decode_step(X, P, np.array([64.0]))[0] - serving.decode_step(_bare(X), P, np.array([64.0]))[0]
    assert step == pytest.approx(extra, rel=1e-9)
    # prefill: one 4,096-token prompt scores 4,096·4,097/2 (query, key) pairs in every layer's indexer
    grow = serving.prefill(X, P)[0] - serving.prefill(_bare(X), P)[0]
    assert grow == pytest.approx(78 * 2 * 32 * 128 * 4096 * 4097 / 2 / X["F16"][0], rel=1e-9)


def test_qwen35_linear_states_by_hand():
    """Qwen3.5-397B-A17B: each of its 45 linear layers keeps 64 value heads of 128 × 128 state plus 3 inputs of
    its convolution over q, k (16 heads of 128 each) and v (64 of 128); TP 8 splits the value heads 8 a rank.
    The state is FP32 (config.json `mamba_ssm_dtype: float32`, as vLLM and SGLang keep it), the convolution inputs
    16-bit whatever the FP8 KV format (vLLM's mamba_cache_dtype "auto", SGLang's bfloat16 conv state):
    (64·128·128·4 + 12,288·3·2) B = 4,268,032 B a layer, 24,007,680 B over 45 layers / 8 ranks (23,800,320 B when
    the convolution inputs were counted at the KV format's one byte). The state is read and written
    every decode step, and its recurrent core costs 6·d_k·d_v FLOPs a head."""
    X = _features("Qwen/Qwen3.5-397B-A17B")
    per_layer = 64 * 128 * 128 * 4.0 + (2 * 16 * 128 + 64 * 128) * 3 * 2.0
    state_bytes = 45 * per_layer / 8
    assert state_bytes == 24_007_680
    assert X["state_bytes"][0] == pytest.approx(state_bytes)
    assert X["state_flops"][0] == pytest.approx(45 * 6 * 64 * 128 * 128 / 8)
    assert (X["idx_bytes"][0], X["idx_flops"][0]) == (0.0, 0.0)
    assert X["b_kv"][0] == 1.0
    # capacity: a sequence's cache is 15 full layers' KV at the mean context plus its states
    free = 0.9 * (X["mem"][0] - serving.weights_per_gpu(X)[0])
    kv = (4096 + 512) * 15 * X["kv_values"][0] * serving._kv_part(X)[0]
    assert serving.kv_slots(X)[0] == np.floor(free / (kv + state_bytes))
    P = _stack()
    extra = max(64 * 2 * state_bytes / X["B"][0], 64 * 45 * 6 * 64 * 128 * 128 / 8 / X["F16"][0])
    step = serving.decode_step(X, P, np.array([64.0]))[0] - serving.decode_step(_bare(X), P, np.array([64.0]))[0]
    assert step == pytest.approx(extra, rel=1e-9)


def test_models_of_full_attention_carry_nothing_extra():
    """A model whose layers all run full attention (DeepSeek-V3's MLA) keeps no indexer keys and no states."""
    X = _features("deepseek-ai/DeepSeek-V3")
    assert {k: X[k][0] for k in BARE} == BARE
