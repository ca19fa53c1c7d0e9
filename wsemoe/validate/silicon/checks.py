"""The two published GPU decode points the GPU serving model with the fitted stacks must stay near
(×[0.67, 1.5]): DeepSeek-V3 decode workers with attention DP and wide expert parallelism, served by SGLang.

  GB200 NVL72, EP 48, 768 tokens per GPU: 9,087 output tokens/s per GPU (LMSYS blog, Sept. 2025, Part II:
    FP8 experts, 2,000-token inputs)
  96 H100 (decode on 72, EP 72), 256 tokens per GPU: 2,785 output tokens/s per GPU (LMSYS blog, May 2025,
    Part I: 22.3k output tokens/s per 8-GPU node, 2,000-token inputs)
Each is one decode worker (a disaggregated run's decode side: no prefill in its steps) at a mean context of
the 2,000-token input plus half of a 100-token output.
"""

from __future__ import annotations

from wsemoe.validate.silicon import fit, reader

POINTS = (("gb200", 48, 768, 9087.0), ("h100_sxm", 72, 256, 2785.0))
BACKEND = "sglang"  # the stack the points were served with
BAND = (0.67, 1.5)
ISL, OSL = 2000, 100


def decode_tokens_per_gpu(system: str, gpus: int, per_gpu: int, stack: dict) -> float:
    """Output tokens/s per GPU of a DeepSeek-V3 FP8 decode worker: attention DP and EP over `gpus`."""
    from wsemoe.config import presets

    row = {c: "" for c in reader.COLUMNS}
    row.update(id="check", backend=BACKEND, model_path="deepseek-ai/DeepSeek-V3", system=system, precision="fp8",
               mode="disagg", isl=ISL, osl=OSL, gemm_quant_mode="fp8", moe_quant_mode="fp8",
               decode_batch_size=per_gpu, decode_tp_size=1, decode_pp_size=1, decode_attention_dp_size=gpus,
               decode_moe_tp_size=1, decode_moe_ep_size=gpus, prefill_batch_size=1, prefill_tp_size=8,
               prefill_pp_size=1, prefill_attention_dp_size=1, prefill_moe_tp_size=1, prefill_moe_ep_size=8)
    res = reader.resolve(row, presets.load_model, presets.load_hardware)
    p = fit.predict_one(res, "decode", stack)
    # a rank whose KV cache holds fewer than per_gpu sequences runs only those (serving.predict's `running`): each
    # step emits one token per running sequence, not per requested one (per_gpu / tpot overstated it)
    return float(min(per_gpu, p["kv_slots"][0]) / p["tpot"][0])


def published(stacks: dict) -> list[dict]:
    """Each point: the model's tokens/s per GPU with the SGLang stack, the published figure and their ratio."""
    out = []
    for system, gpus, per_gpu, pub in POINTS:
        got = decode_tokens_per_gpu(system, gpus, per_gpu, stacks[BACKEND])
        out.append({"system": system, "gpus": gpus, "tokens_per_gpu": per_gpu, "model": got, "published": pub,
                    "ratio": got / pub, "ok": BAND[0] <= got / pub <= BAND[1]})
    return out
