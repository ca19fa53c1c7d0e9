"""The formats a measured run keeps its attention projections and KV cache in (validate/silicon/checkpoints.py),
derived by hand for one row each."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from wsemoe.config import presets
from wsemoe.cost.gpu import serving
from wsemoe.validate.silicon import features, reader, runs
from tests.test_silicon import _row, _stack

# DeepSeek-R1's attention projections per layer (MLA): q_a 7168x1536, q_b 1536x(128x192), kv_a 7168x576,
# kv_b 512x(128x256), o (128x128)x7168; on TP 8 a rank runs the down-projections (q_a, kv_a) whole and 1/8 of the
# others: 15,138,816 + 171,966,464 / 8 = 36,634,624 weights a layer, x 61 layers.
R1_ATTN_RANK = 61 * (7168 * 1536 + 7168 * 576 + (1536 * 128 * 192 + 512 * 128 * 256 + 128 * 128 * 7168) / 8)
NVFP4 = 0.5 + 1 / 16   # E2M1 values and one E4M3 scale per 16


def _x(**over):
    res = reader.resolve(_row(**over), presets.load_model, presets.load_hardware)
    assert "reason" not in res, res.get("reason")
    return {k: np.array([v], float) for k, v in features.one(res, "agg").items()}


R1_FP4 = dict(model_path="nvidia/DeepSeek-R1-FP4", system="b200_sxm", precision="fp4", gemm_quant_mode="nvfp4",
              moe_quant_mode="nvfp4", tp_size=8, moe_tp_size=1, moe_ep_size=8, batch_size=1, isl=1024, osl=128)


def test_nvfp4_deepseek_reads_its_bf16_attention_projections_at_16_bits():
    """nvidia/DeepSeek-R1-FP4 excludes every layer's self_attn* from NVFP4 (hf_quant_config.json): its attention
    projections are 2 bytes a weight and multiply at B200's 16-bit peak, 2.25 PFLOP/s, while its dense layers and
    shared experts stay NVFP4. One sequence on TP 8, memory-bound: the busiest rank reads 2,234,712,064 attention
    weights a step, 4.469 GB in BF16 = 558.7 us at 8 TB/s (eta_bw 1), where NVFP4 read 1.257 GB = 157.1 us."""
    assert R1_ATTN_RANK == 2_234_712_064
    X = _x(**R1_FP4)
    assert X["b_attn"][0] == 2.0 and X["F_attn"][0] == X["F16"][0] == 2.25e15
    assert X["b_gemm"][0] == NVFP4 and X["F_gemm"][0] == 9e15   # dense FFNs and shared experts: NVFP4
    as_fp4 = {**X, "b_attn": X["b_gemm"], "F_attn": X["F_gemm"]}
    P = _stack()
    one = np.array([1.0])
    step = serving.decode_step(X, P, one)[0] - serving.decode_step(as_fp4, P, one)[0]
    assert step == pytest.approx(R1_ATTN_RANK * (2.0 - NVFP4) / 8e12, rel=1e-9)   # 401.5 us of 16-bit reads
    assert step == pytest.approx(401.55e-6, rel=1e-4)
    held = serving.weights_per_gpu(X)[0] - serving.weights_per_gpu(as_fp4)[0]
    assert held == pytest.approx(R1_ATTN_RANK * (2.0 - NVFP4), rel=1e-9)       # 3.21 GB more a GPU


def test_other_checkpoints_keep_attention_in_their_gemm_format():
    """DeepSeek's own FP8 checkpoint quantizes its attention too, and an NVFP4 Llama (GQA) is NVFP4 throughout."""
    fp8 = _x(**{**R1_FP4, "model_path": "deepseek-ai/DeepSeek-R1", "precision": "fp8", "gemm_quant_mode": "fp8",
                "moe_quant_mode": "fp8_block"})
    assert fp8["b_attn"][0] == fp8["b_gemm"][0] == 1.0 and fp8["F_attn"][0] == fp8["F_gemm"][0]
    llama = _x(system="b200_sxm", precision="", gemm_quant_mode="nvfp4", moe_quant_mode="")
    assert llama["b_attn"][0] == llama["b_gemm"][0] == NVFP4 and llama["F_attn"][0] == llama["F_gemm"][0]


def test_a_kv_cache_quant_column_sets_the_cache_format(tmp_path):
    """A file that gives `kvcache_quant_mode` is read as it says: Llama-3.1-8B's cache is 32 layers x 2 x 8 KV
    heads x 128 = 65,536 values a token, 131,072 bytes in float16 beside its FP8 weights (65,536 in fp8); a value
    no format names is the row's reason, not a default; an empty cell (or none) the default rule."""
    assert _x(kvcache_quant_mode="float16")["b_kv"][0] == 2.0
    assert _x(kvcache_quant_mode="fp8")["b_kv"][0] == 1.0
    X = _x(kvcache_quant_mode="bfloat16")
    assert (X["L"] * X["kv_values"] * X["b_kv"])[0] == 131_072
    bad = reader.resolve(_row(kvcache_quant_mode="int3"), presets.load_model, presets.load_hardware)
    assert "kvcache_quant_mode 'int3'" in bad["reason"]
    rows = [_row(id="a", kvcache_quant_mode="float16"), _row(id="b", kvcache_quant_mode="fp8"), _row(id="c")]
    p = tmp_path / "runs.csv"
    pd.DataFrame(rows, columns=[*reader.COLUMNS, "kvcache_quant_mode"]).to_csv(p, index=False)
    r = runs.load(p)
    assert len(r.configs) == 3   # the cache format is part of a configuration: the three are not merged
    assert sorted(r.X_tpot["b_kv"]) == [1.0, 1.0, 2.0]


R1_FP8 = {**R1_FP4, "model_path": "deepseek-ai/DeepSeek-R1", "precision": "fp8", "gemm_quant_mode": "fp8",
          "moe_quant_mode": "fp8_block", "isl": 1024, "osl": 1024}


def test_deepseek_s_own_fp8_checkpoint_keeps_a_16_bit_cache():
    """deepseek-ai/DeepSeek-R1's config.json declares no KV scheme, so SGLang's and TensorRT-LLM's default cache is
    BF16 (was read as FP8 for any 8-bit weights). One sequence at its mean context 1,024 + 1,024/2 = 1,536 tokens:
    a decode step reads 1,536 x 61 layers x 576 latent values (512 + 64 rope) x 2 bytes = 107,937,792 bytes on
    each TP rank (the latent is replicated), 13.49 us at 8 TB/s (6.75 us of it more than an FP8 cache)."""
    P, one = _stack(), np.array([1.0])
    for backend in ("sglang", "trtllm"):
        X = _x(**R1_FP8, backend=backend)
        assert X["b_kv"][0] == 2.0
        as_fp8 = {**X, "b_kv": np.array([1.0])}
        step = serving.decode_step(X, P, one)[0] - serving.decode_step(as_fp8, P, one)[0]
        assert 1536 * 61 * 576 * 2 == 107_937_792
        assert step == pytest.approx(107_937_792 / 2 / 8e12, rel=1e-9)   # 6.746 us


@pytest.mark.parametrize("over, b_kv", [
    ({**R1_FP4, "backend": "trtllm"}, 1.0),                               # ModelOpt NVFP4: declares an FP8 cache
    ({**R1_FP4, "backend": "sglang"}, 1.0),
    ({**R1_FP4, "backend": "vllm", "backend_version": "0.12.0"}, 2.0),    # vLLM 0.12 does not read it
    ({**R1_FP4, "backend": "vllm", "backend_version": "0.13.0"}, 1.0),
    ({"model_path": "Qwen/Qwen3-235B-A22B-FP8", "backend": "vllm", "tp_size": 8, "moe_tp_size": 8,
      "moe_ep_size": 1}, 2.0),                                           # Qwen's own block FP8: no KV scheme
    ({"backend": "sglang", "gemm_quant_mode": "fp8_block"}, 2.0),        # quantized on the fly by SGLang
    ({"model_path": "meta-llama/Llama-3.1-70B", "backend": "trtllm"}, 1.0),   # re-quantized: measured knees
    ({"precision": "", "gemm_quant_mode": ""}, 2.0),                     # a 16-bit run
])
def test_each_backend_s_default_cache_for_the_checkpoint_a_row_serves(over, b_kv):
    assert _x(**over)["b_kv"][0] == b_kv


# One of the three configurations the 16-bit cache put past its queueing knee: DeepSeek-R1 FP8 on 8 B200s, TP 8,
# 256 requests of 8,192 + 1,024 tokens, measured by InferenceMAX (its export's marks: workflow_run_id, wip).
R1_KNEE = dict(model_path="deepseek-ai/DeepSeek-R1", system="b200_sxm", precision="fp8", gemm_quant_mode="fp8",
               moe_quant_mode="fp8", tp_size=8, moe_tp_size=8, moe_ep_size=1, batch_size=256, isl=8192, osl=1024,
               silicon_data_source="db-dump/2026-04-27; config_id=75; silicon_concurrency=256; workflow_run_id=1")


def test_inferencemax_recipes_set_an_fp8_cache_and_the_knee_moves_past_256_requests():
    """InferenceMAX's dsr1_fp8_b200_trt recipe writes `kv_cache_config: dtype: fp8` and dsr1_fp8_b200 (SGLang)
    `--kv-cache-dtype fp8_e4m3` (checkpoints.py: paths, commits), so the run's cache is FP8 whatever the checkpoint
    declares (was BF16, the backend's default). A request at its mean context 8,192 + 1,024/2 = 8,704 tokens holds
    8,704 x 61 layers x 576 latent values = 305,823,744 bytes of FP8 cache on each TP rank (611,647,488 at 16 bits):
    the same free memory holds twice the requests, 256 and more, where BF16 held 157 and queued the rest."""
    from wsemoe.cost.gpu import serving
    assert 8704 * 61 * 576 == 305_823_744
    for backend, version in (("trtllm", "1.2.0rc6.post2"), ("sglang", "0.5.9")):
        X = _x(**R1_KNEE, backend=backend, backend_version=version)
        assert X["b_kv"][0] == 1.0
        w = serving.weights_per_gpu(X)[0]
        share, _ = serving.kv_budget(backend)
        free = share * (X["mem"][0] - w)
        assert serving.kv_slots(X)[0] == np.floor(free / 305_823_744)
        assert serving.kv_slots(X)[0] >= 256 > serving.kv_slots({**X, "b_kv": np.array([2.0])})[0]


@pytest.mark.parametrize("over, b_kv", [
    ({"backend": "trtllm", "system": "h200_sxm"}, 1.0),                        # dsr1_fp8_h200_trt: dtype fp8
    ({"backend": "sglang", "system": "h200_sxm", "moe_quant_mode": "fp8_block"}, 2.0),   # dsr1_fp8_h200: none set
    ({"backend": "sglang", "model_path": "deepseek-ai/DeepSeek-V3"}, 1.0),    # the dsr1 recipe, a V3 id
    ({"backend": "trtllm", "silicon_data_source": "source_file=x.csv; silicon_concurrency=256"}, 2.0),  # not known
])
def test_the_recipe_s_cache_only_where_inferencemax_measured_it(over, b_kv):
    assert _x(**{**R1_KNEE, "backend_version": "", **over})["b_kv"][0] == b_kv
