"""The formats a measured run keeps its KV cache and its attention projections in, which its quant columns do not
say: the row's own column where it has one, else what the backend does by default with the checkpoint the run
serves (a silicon file names the model; its weight format says which checkpoint of it was served).

KV cache: the file's `kvcache_quant_mode` column where it has one (AIConfigurator's KVCacheQuantMode names);
else FP8 when the run's weights are 8-bit or narrower, 16-bit otherwise (the rule the stacks were fitted with).

Attention projections. NVIDIA's NVFP4 DeepSeek releases (nvidia/DeepSeek-R1-FP4, -R1-0528-FP4) list
`model.layers.N.self_attn*` for every layer in hf_quant_config.json `exclude_modules` (TensorRT-LLM issue #5766
prints the list: lm_head and each layer's self_attn*, no MLP entry), and the -0528-FP4 safetensors hold q_a_proj,
q_b_proj, kv_a_proj_with_mqa, kv_b_proj and o_proj in BF16 while the dense FFNs are NVFP4 (U8 with E4M3 scales):
a DeepSeek (MLA) run in NVFP4 reads its attention projections at 16 bits and multiplies them at the 16-bit peak;
its dense layers, shared experts and routed experts stay NVFP4.
"""

from __future__ import annotations

from wsemoe.cost.node import formats

# A file's kv cache quant column (AIConfigurator's KVCacheQuantMode names) to the cache format; "", "auto" or
# absent: the default of kv_format. A value not listed is the row's reason, never a default.
KV_COLUMN = "kvcache_quant_mode"
KV_QUANT = {"fp8": "fp8", "fp8_e4m3": "fp8", "float16": "bf16", "bfloat16": "bf16", "bf16": "bf16", "fp16": "bf16",
            "nvfp4": "nvfp4", "fp4": "fp4"}


def kv_quant(cell) -> str | None:
    """The cache format a row's kv cache quant cell names ('' for none given); None when it names none known."""
    text = "" if cell is None or (isinstance(cell, float) and cell != cell) else str(cell).strip().lower()
    return "" if text in ("", "auto") else KV_QUANT.get(text)


def kv_format(res) -> str:
    """The KV cache's format of resolved run `res`: its file's column where given (res['kv']), else FP8 when its
    weights multiply at 8 bits or narrower (a block-scaled format read by the precision it multiplies at)."""
    if res.get("kv"):
        return res["kv"]
    return "fp8" if formats.COMPUTE.get(res["gemm"], res["gemm"]) in ("fp8", "fp4") else formats.HIGH


def attn_format(res) -> str:
    """The attention projections' format of `res`: res['attn'] where the caller sets it, 16-bit for a DeepSeek
    (MLA) run in NVFP4 (its checkpoint excludes self_attn*), else the run's GEMM format."""
    if res.get("attn"):
        return res["attn"]
    if res["gemm"] == "nvfp4" and getattr(res["model"], "attention", "gqa") == "mla":
        return formats.HIGH
    return res["gemm"]
