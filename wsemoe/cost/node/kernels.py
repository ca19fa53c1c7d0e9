"""Kernels each stage launches on a layer's critical path, and what their fixed cost adds (kernel_launch_s).

Counted from the decode layer of DeepSeek-R1 in TensorRT-LLM on B200 (NVIDIA TensorRT-LLM tech blog 1, "Pushing
Latency Boundaries", section "Everything in One Diagram"), kernels that run one after another:

- MLA attention, 8: the fused down-projection GEMM (Fuse_A), the q/kv RMSNorms (one grouped kernel), the
  UQ_QR GEMM, the UK batched GEMM, KV-cache concat + RoPE, MLA generation attention, the UV batched GEMM,
  the WO GEMM. The all-reduce after it is a collective (collective_latency_s), fused with the next norm.
- GQA attention, 4: one QKV GEMM takes the place of the low-rank GEMMs and norms, q/k norm fuses into RoPE
  and the cache write, then attention and the output GEMM.
- MoE block, 4: router GEMM, top-k, and the routed experts' two grouped GEMMs (FC1 with its activation fused,
  FC2). The shared expert runs on a second stream beside them; dispatch and combine are collectives
  (alltoall_latency_s); the final reduction is fused into the next all-reduce.
- dense FFN, 2 (FC1 with its activation, FC2); head, 2 (final norm, head GEMM).

Training launches a data-gradient and a weight-gradient kernel per forward kernel (×3 with the forward),
and full recompute reruns the forward's kernels once more. Attention launches its kernels once per tile.
"""

from __future__ import annotations

KERNELS = {"attention_mla": 8, "attention_gqa": 4, "moe": 4, "dense_ffn": 2, "head": 2}


def count(m, stage: str) -> int:
    """Kernels one forward pass of `stage` launches (attention by the model's attention kind)."""
    if stage == "attention":
        return KERNELS["attention_mla" if getattr(m, "attention", "gqa") == "mla" else "attention_gqa"]
    return KERNELS[stage]


def launch_time(hw, m, stage: str, passes: float, tiles=1.0):
    """Seconds of fixed per-kernel cost of a stage per layer: kernels × passes × tiles × kernel_launch_s.

    `passes` counts forward-equivalents of kernels (1 inference, 3 training, +1 with full recompute).
    """
    return count(m, stage) * passes * tiles * getattr(hw, "kernel_launch_s", 0.0)
