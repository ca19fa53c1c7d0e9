"""The formats a measured run keeps its KV cache and its attention projections in, which its quant columns do not
say: the row's own column where it has one, else what the backend does by default with the checkpoint the run
serves (a silicon file names the model; its weight format says which checkpoint of it was served).

KV cache. Each engine's default (`--kv-cache-dtype auto`, `KvCacheConfig.dtype "auto"`) is the model's 16-bit
dtype unless the checkpoint declares a quantized cache (`kv_cache_quant_algo` in a ModelOpt hf_quant_config.json):
- TensorRT-LLM reads the declaration (tensorrt_llm/llmapi/llm_utils.py: "Setting kv_cache_quant_algo=FP8 from HF
  quant config"); a config.json `quantization_config` without one leaves kv_cache_quant_algo None, a 16-bit cache;
- SGLang likewise (srt/model_executor/model_runner.py `configure_kv_cache_dtype`: "auto" is float8_e4m3fn when
  the quant config's kv_cache_quant_algo is "FP8", else the model dtype; its Fp8Config, for DeepSeek's and Qwen's
  block-FP8 checkpoints and for weights it quantizes on the fly, carries none). It forces an FP8 cache only for
  DeepSeek's sparse-attention (V3.2, on Blackwell) and V4 models (server_args), none of them in the given rows;
- vLLM reads it from 0.13 (PR #29980, December 2025: "hf_quant_config.json (modelopt) file specifies
  kv_cache_quant_algo FP8, but vLLM loads the unquantized version of kv-cache"); 0.12 and earlier keep "auto" at
  the model dtype whatever the checkpoint says.
Which checkpoints declare it. The authors' own FP8 releases do not: DeepSeek-V3/R1 (deepseek-ai/*, config.json
`quantization_config` {quant_method fp8, weight_block_size [128, 128]}, no KV scheme) and Qwen's `-FP8` repositories
(the same block FP8); nor does a 16-bit checkpoint SGLang quantizes on the fly. NVIDIA's ModelOpt NVFP4 releases
do (nvidia/DeepSeek-R1-0528-FP4 ships a k_scale and v_scale per layer; nvidia/Qwen3-30B-A3B-NVFP4's
hf_quant_config.json declares FP8, vLLM issue #34752). A 16-bit-published model served in FP8 or narrower through
TensorRT-LLM or vLLM serves a re-quantized ModelOpt checkpoint (neither engine quantizes NVFP4 on the fly), read
with its FP8 cache: no source pins that these runs' checkpoints declared it, but their measured queueing knees
say the cache was 8-bit (the Llama-3.1-70B ones' recipes set it, below; Llama-3.1-70B FP8, TensorRT-LLM, one B200,
64 requests of 8k + 1k tokens: TTFT 2.27 s measured, 2.67 s predicted with an FP8 cache, 34.4 s with a 16-bit one
that holds 32 of them; vLLM on one H200 at 32 requests: 3.13 s measured, 3.63 s and 31.8 s; Qwen3-32B FP8 on
TensorRT-LLM, TP 2, 128 x 4k: 1.56 s measured, 1.52 s and 6.9 s).

Benchmark recipes. A harness that sets the cache overrides that default. InferenceMAX (SemiAnalysis, now
github.com/SemiAnalysisAI/InferenceX) measured the given DeepSeek-R1/-V3 and Llama-3.1-70B rows (its results
database's export marks each with a workflow_run_id, its CSV export with a wip flag); its single-node recipes
(benchmarks/, benchmarks/single_node/ from February 2026) set the cache in every NVIDIA configuration the file holds
but one, unchanged from September 2025 to the last run (2026-03-25; commits 9596d23d of 2025-10-29, d27433df of
2025-12-31, 12ba0ae0 of 2026-03-25): TensorRT-LLM `kv_cache_config: dtype: fp8` (dsr1_fp8_b200_trt,
dsr1_fp4_b200_trt, dsr1_fp8_h200_trt, 70b_fp8_b200_trt, 70b_fp4_b200_trt, 70b_fp8_h200_trt), SGLang
`--kv-cache-dtype fp8_e4m3` (dsr1_fp8_b200, dsr1_fp4_b200), vLLM `kv-cache-dtype: fp8` (70b_fp8_b200, 70b_fp4_b200,
70b_fp8_h200, and 70b_fp8_h100 from af4ccd03, 2025-09-23). dsr1_fp8_h200 (SGLang on H200) sets none: the backend's
default, BF16.

Attention projections. NVIDIA's NVFP4 DeepSeek releases (nvidia/DeepSeek-R1-FP4, -R1-0528-FP4) list
`model.layers.N.self_attn*` for every layer in hf_quant_config.json `exclude_modules` (TensorRT-LLM issue #5766
prints the list: lm_head and each layer's self_attn*, no MLP entry), and the -0528-FP4 safetensors hold q_a_proj,
q_b_proj, kv_a_proj_with_mqa, kv_b_proj and o_proj in BF16 while the dense FFNs are NVFP4 (U8 with E4M3 scales):
a DeepSeek (MLA) run in NVFP4 reads its attention projections at 16 bits and multiplies them at the 16-bit peak;
its dense layers, shared experts and routed experts stay NVFP4.
"""

from __future__ import annotations

import re

from wsemoe.cost.node import formats

# A file's kv cache quant column (AIConfigurator's KVCacheQuantMode names) to the cache format; "", "auto" or
# absent: the backend's default (kv_format). A value not listed is the row's reason, never a default.
KV_COLUMN = "kvcache_quant_mode"
KV_QUANT = {"fp8": "fp8", "fp8_e4m3": "fp8", "float16": "bf16", "bfloat16": "bf16", "bf16": "bf16", "fp16": "bf16",
            "nvfp4": "nvfp4", "fp4": "fp4"}
# Backends whose default cache follows the checkpoint's kv_cache_quant_algo, from the version given (docstring).
HONOURS_CHECKPOINT_KV = {"trtllm": (0,), "sglang": (0,), "vllm": (0, 13)}
# Weight formats whose checkpoints declare an FP8 cache: NVIDIA's ModelOpt NVFP4 releases.
DECLARES_FP8_KV = ("nvfp4",)
# Checkpoints their authors published in FP8, with no KV scheme: every deepseek-ai/DeepSeek-V3 and -R1 release, and
# a repository of another organisation than NVIDIA's whose name ends in -FP8 (Qwen/Qwen3-235B-A22B-FP8).
AUTHORS_FP8 = ("deepseek-ai/DeepSeek-V3", "deepseek-ai/DeepSeek-R1")


# A run measured by InferenceMAX's harness: the marks its exports put in silicon_data_source (docstring).
INFERENCEMAX_MARKS = ("workflow_run_id=", "wip=")
# InferenceMAX's recipe (model prefix, precision, system, backend) -> the cache it sets, None where it sets none
# (docstring: paths and commits). Its DeepSeek runs all serve the dsr1 recipes (DeepSeek-R1-0528, the NVFP4
# -R1-0528-FP4 on fp4), whichever DeepSeek-V3-architecture id the file gives them.
RECIPE_KV = {("dsr1", "fp8", "b200-sxm", "trtllm"): "fp8", ("dsr1", "fp4", "b200-sxm", "trtllm"): "fp8",
             ("dsr1", "fp8", "h200-sxm", "trtllm"): "fp8", ("dsr1", "fp8", "b200-sxm", "sglang"): "fp8",
             ("dsr1", "fp4", "b200-sxm", "sglang"): "fp8", ("dsr1", "fp8", "h200-sxm", "sglang"): None,
             ("70b", "fp8", "b200-sxm", "trtllm"): "fp8", ("70b", "fp4", "b200-sxm", "trtllm"): "fp8",
             ("70b", "fp8", "h200-sxm", "trtllm"): "fp8", ("70b", "fp8", "b200-sxm", "vllm"): "fp8",
             ("70b", "fp4", "b200-sxm", "vllm"): "fp8", ("70b", "fp8", "h200-sxm", "vllm"): "fp8",
             ("70b", "fp8", "h100-sxm", "vllm"): "fp8"}
RECIPE_MODELS = {"deepseek-ai/DeepSeek-R1": "dsr1", "deepseek-ai/DeepSeek-V3": "dsr1",
                 "meta-llama/Llama-3.1-70B": "70b"}


def harness(source) -> str:
    """'inferencemax' for a run whose silicon_data_source carries InferenceMAX's export marks, else ''."""
    text = "" if source is None or isinstance(source, float) else str(source)
    return "inferencemax" if any(m in text for m in INFERENCEMAX_MARKS) else ""


def recipe_kv(res) -> str | None:
    """The cache the recipe of run `res`'s harness sets, or None where the harness is not known to set one."""
    if res.get("harness") != "inferencemax":
        return None
    prefix = RECIPE_MODELS.get(str(res.get("checkpoint") or ""))
    precision = formats.COMPUTE.get(res["moe"], res["moe"])
    return RECIPE_KV.get((prefix, precision, res.get("system_preset"), res.get("backend")))


def kv_quant(cell) -> str | None:
    """The cache format a row's kv cache quant cell names ('' for none given); None when it names none known."""
    text = "" if cell is None or (isinstance(cell, float) and cell != cell) else str(cell).strip().lower()
    return "" if text in ("", "auto") else KV_QUANT.get(text)


def _version(text: str) -> tuple:
    """A backend version's leading numbers ('0.12.0' -> (0, 12, 0)); () when none is given."""
    return tuple(int(x) for x in re.findall(r"\d+", text.split("rc")[0])[:3]) if text else ()


def _honours(res) -> bool:
    """Whether the run's backend, at its version (none given: the current one), keeps the cache the checkpoint
    declares."""
    since = HONOURS_CHECKPOINT_KV.get(res.get("backend"))
    v = _version(str(res.get("version") or ""))
    return since is not None and (not v or v >= since)


def authors_fp8(checkpoint: str) -> bool:
    """True for a checkpoint its model's authors published in FP8 (no KV scheme in its config.json)."""
    org, _, repo = checkpoint.partition("/")
    return checkpoint.startswith(AUTHORS_FP8) or (org.lower() != "nvidia" and repo.upper().endswith("-FP8"))


def kv_format(res) -> str:
    """The KV cache's format of resolved run `res`: its file's column where given (res['kv']), else the cache its
    harness's recipe sets (recipe_kv), else its backend's
    default for the checkpoint its weight formats and model id say it serves (the module docstring)."""
    if res.get("kv"):
        return res["kv"]
    declared = recipe_kv(res)
    if declared:
        return declared
    fmts = (res["gemm"], res["moe"])
    if any(f in DECLARES_FP8_KV for f in fmts):
        return "fp8" if _honours(res) else formats.HIGH
    narrow = formats.COMPUTE.get(res["gemm"], res["gemm"]) in ("fp8", "fp4")   # gpt-oss's MXFP4 experts: its own
    if not narrow or authors_fp8(str(res.get("checkpoint") or "")) or res.get("backend") == "sglang":
        return formats.HIGH
    return "fp8"   # a re-quantized ModelOpt checkpoint of a 16-bit model: its measured knees (docstring)


def attn_format(res) -> str:
    """The attention projections' format of `res`: res['attn'] where the caller sets it, 16-bit for a DeepSeek
    (MLA) run in NVFP4 (its checkpoint excludes self_attn*), else the run's GEMM format."""
    if res.get("attn"):
        return res["attn"]
    if res["gemm"] == "nvfp4" and getattr(res["model"], "attention", "gqa") == "mla":
        return formats.HIGH
    return res["gemm"]
