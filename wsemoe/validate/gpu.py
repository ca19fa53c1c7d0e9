"""The comparisons' GPU baseline against published GPU decode: the node-level model (cost/node, the model every
shipped comparison costs NVL72 and the DGX cluster with) at the two published DeepSeek-V3 decode workers the
fitted serving stack is checked at (validate/silicon/checks.py):

  GB200 NVL72, 48 GPUs (EP 48), 768 tokens per GPU: 9,087 output tokens/s per GPU (LMSYS blog, Sept. 2025,
    Part II: FP8 experts, 2,000-token inputs); the `nvl72` preset, the comparisons' own, on 48 of its GPUs
  96 H100 (decode on 72, EP 72), 256 tokens per GPU: 2,785 output tokens/s per GPU (LMSYS blog, May 2025,
    Part I: 22.3k output tokens/s per 8-GPU node, 2,000-token inputs); the `h100-sxm` preset, 9 servers
    joined by its InfiniBand figures

Each is a decode worker with attention data parallelism (TP 1: every GPU its own sequences) and experts over
every GPU, at a context of the 2,000-token input plus half of a 100-token output, at the default readings, in
the precision the publications name: "BF16 attention and FP8 MoE" (Part II's words for its 9,087; Part I ran the
same FP8 checkpoint with a BF16 cache), so FP8 expert weights and a 16-bit KV cache and attention (the model
runs attention's projections at the format of its core, 16-bit here, where the checkpoint's are FP8 GEMMs).
The band (tolerances.py, `gpu.node`) is the stack checks' ×[0.67, 1.5]. Nothing here is fitted: a miss says how
far the comparisons' baseline sits from measured serving at a production load.
"""

from __future__ import annotations

from wsemoe.validate.common import row

POINTS = (("nvl72", "GB200 NVL72", 48, 768, 9087.0, "LMSYS blog, Sept. 2025 (Part II)"),
          ("h100-sxm", "H100", 72, 256, 2785.0, "LMSYS blog, May 2025 (Part I)"))
CONTEXT = 2050  # tokens: the 2,000-token input and half of the 100-token output


def node_tokens_per_gpu(hardware: str, gpus: int, per_gpu: int) -> tuple[float, str]:
    """(output tokens/s per GPU, binding term) of the node-level model's DeepSeek-V3 decode worker."""
    from wsemoe.config.single import parse_sets, point_mapping
    from wsemoe.sweep.chunked import evaluate

    sets = [f"hardware.cols={gpus}", "workload.mode=decode", f"workload.tokens_per_device={per_gpu}",
            f"workload.seq_len={CONTEXT}", "workload.attn_weight_format=bf16", "workload.expert_weight_format=fp8",
            "workload.kv_format=bf16", "mapping.tp=1"]
    one = evaluate(point_mapping(hardware, "deepseek-v3", parse_sets(sets), "gpu_check")).iloc[0]
    return float(one["per_device_tokens_per_s"]), str(one["bound"])


def gpu_rows() -> list[dict]:
    """Per published point: the node-level model's tokens/s per GPU over the published figure."""
    out = []
    for hardware, system, gpus, per_gpu, published, source in POINTS:
        got, bound = node_tokens_per_gpu(hardware, gpus, per_gpu)
        out.append(row(f"gpu.node:{hardware}", f"DeepSeek-V3 decode (FP8 experts, BF16 attention) on {gpus} {system} "
                       f"GPUs (EP {gpus}, attention DP), {per_gpu} tokens per GPU: output tokens/s per GPU, node-level "
                       "model (the comparisons' GPU baseline) over published", f"{published:,.0f} tokens/s/GPU",
                       got / published,
                       model=f"{got:,.0f} tokens/s/GPU ({got / published:.2f}×; bound {bound})", source=source,
                       reading="the default readings"))
    return out
