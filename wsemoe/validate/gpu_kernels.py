"""Single kernels of the GPU baseline against measured ones, where one preset constant sets the model's time (issue
26: rows that fail when the h100-sxm preset's NVLink port, HBM bandwidth or all-reduce call, or nvl72's FP8 and FP4
peaks, are wrong by 2×; the gpu family's decode workers run TP 1, the InfiniBand share of their all-to-all binds,
and at their loads the matmuls outlast the HBM reads, so none of them reads these).

**The NVLink all-reduce** (`gpu.allreduce`). The measurement: nccl-tests' all_reduce_perf on one server of 8 H100
SXM GPUs, 2-4 GiB messages, forced to each algorithm (NVIDIA/nccl issue #1455, Sept. 2024): NCCL_ALGO=Ring, bus
bandwidth "about 365-370 GBps when gpus from 2 to 8"; NCCL_ALGO=NVLS (NVLink SHARP, the switches reduce in flight),
480 GB/s at 8 GPUs, algorithm bandwidth "about 273" (480 · 8/14 = 274). NVIDIA's GTC talk S62129 gives the same
480 GB/s for NVLink 4 SHARP inside a server (as quoted in NVIDIA/nccl issue #1374). nccl-tests reports an
all-reduce's bus bandwidth as its algorithm bandwidth (bytes / time) × 2(n−1)/n, so the measured time of a message
of M bytes is M · 2(n−1)/n / busbw.

The model's counterpart is the node-level model's own attention all-reduce (cost/comm.py, one call: G = 1 in
decode) on `h100-sxm`'s 8 GPUs at TP 8, with a message of exactly 2 GiB: Qwen3-235B-A22B's hidden 4,096 at 16-bit
activations is 8,192 bytes a token, 262,144 tokens in the group (32,768 a GPU). Under Ring the preset's in-switch
reduction is off (`hardware.in_switch_reduction=false`): the model's ring moves 2(n−1)/n · M over each GPU's port,
plus 2(n−1) ring rounds of a switch traversal and one per-call cost; under NVLS (the preset's reading) each GPU sends
and receives its message once, M over the port, plus two traversals and the call. At 2 GiB the fixed terms are
under 0.2% of the time: the rows read the port (450 GB/s a direction). The point does not fit the GPUs' memory (a
benchmark of one collective holds no model); the rows read the call whether or not it would.

**The HBM read** (`gpu.hbm`). FlashMLA's dense MLA decoding kernel "achieves up to 3000 GB/s in memory-bound
configuration" on H800 SXM5 (deepseek-ai/FlashMLA README, CUDA 12.8), reading DeepSeek-V3's MLA cache (576 16-bit
values a token and layer, 1,152 bytes); H800 SXM5's HBM3 is the H100 SXM5's (80 GB at 3.35 TB/s). The model's
counterpart is what the node-level model's attention HBM term (cost/node) adds per layer when each of a GPU's 128
decode sequences holds 4,096 more tokens of 16-bit cache (4,096 → 8,192 tokens; DeepSeek-V3 on `h100-sxm`, attention
DP): the read of those 128 · 4,096 · 1,152 bytes, its weights' read the same at both contexts. The row reads the
term whether or not it binds (at 128 query heads the model's attention is compute-bound, as FlashMLA's README says
of its kernel from 64 query heads a token; its memory-bound figure is a configuration with fewer heads a GPU).

**The latency-bound all-reduce** (`gpu.allreduce.fixed`, kind fitted). nccl-tests with CUDA graphs on an HGX 8×H100
node, 2 GPUs, NCCL_ALGO=NVLS, 128 B: 5.56 µs out of place (NVIDIA/nccl issue #1259; 128-512 B span 5.56-5.99 µs).
`h100-sxm`'s collective_latency_s is that time less the two 0.5 µs switch traversals the model charges (its
hop_latency_s), so the model's all-reduce of one token a GPU (16 KiB, 0.04 µs at the port) on 2 GPUs with the
in-switch reduction is 2 traversals + the call: the row holds the two constants to their source within ±5%, as
gpu.a2a.fixed holds nvl72's dispatch call (validate/gpu.py).

**The FP8 and FP4 peaks** (`gpu.gemm`). NVIDIA's cuBLAS 12.9 post: block-scaled FP4 matmuls reach "up to 2.3x"
the speed of FP8 ones on Blackwell. The model's counterpart is the node-level model's MoE matmul time per layer
on `nvl72` at FP8 experts over at NVFP4 experts (Qwen3-235B-A22B prefill, 16,384 tokens a GPU, compute-bound:
each at matmul_efficiency of its format's peak, which cancels), 1.99× (the router stays 16-bit). The measured
figure is a maximum over the post's sizes and exceeds the datasheet peaks' ratio (2.0), so the row reads below 1.
"""

from __future__ import annotations

from wsemoe.validate.common import row

SOURCE = "NVIDIA/nccl issue #1455 (8 H100 SXM, all_reduce_perf -b 2G -e 4G, NCCL_ALGO forced); GTC S62129 (480 GB/s)"
HARDWARE, GPUS, MODEL = "h100-sxm", 8, "qwen3-235b-a22b"
MESSAGE = 2 ** 31   # bytes: 2 GiB, the smallest message of the measured sweep (its bus bandwidth is flat to 4 GiB)
# algorithm -> (NCCL_ALGO, the preset's in-switch reduction on, measured bus bandwidth GB/s at 8 GPUs, as published)
MEASURED = {"ring": ("Ring", False, 367.5, "about 365-370 GB/s"),
            "nvls": ("NVLS", True, 480.0, "480 GB/s, algorithm bandwidth about 273")}


def measured_s(busbw_gb_s: float, gpus: int = GPUS, message: int = MESSAGE) -> float:
    """Seconds of the measured all-reduce: nccl-tests' bus bandwidth is bytes / time × 2(n−1)/n."""
    return message * 2 * (gpus - 1) / gpus / (busbw_gb_s * 1e9)


def allreduce_s(in_switch: bool, gpus: int = GPUS, message: int = MESSAGE) -> float:
    """Seconds of one attention all-reduce of the node-level model: TP `gpus` over that many of `h100-sxm`'s GPUs
    (one NVLink switch domain), a `message`-byte message rounded down to whole tokens (at least one a GPU)
    (`in_switch`: the NVLink switches reduce it in flight, as the preset reads; off: a ring)."""
    from wsemoe.config import presets
    from wsemoe.config.single import parse_sets, point_mapping
    from wsemoe.sweep.chunked import evaluate

    token_bytes = presets.load_model(MODEL).hidden_size * 2   # 16-bit activations (workload.bytes_per_act 2)
    per_gpu = max(message // (token_bytes * gpus), 1)
    sets = [f"hardware.cols={gpus}", f"hardware.scale_up_size={gpus}", f"mapping.tp={gpus}", "workload.mode=decode",
            "workload.bytes_per_act=2", f"workload.tokens_per_device={per_gpu}", "workload.seq_len=2048",
            f"hardware.in_switch_reduction={str(in_switch).lower()}"]
    one = evaluate(point_mapping(HARDWARE, MODEL, parse_sets(sets), "gpu_check")).iloc[0]
    return float(one["attention_allreduce_s"])


def kernel_rows() -> list[dict]:
    """The NVLink all-reduce rows (2 GiB, and the latency-bound call) and the HBM read row."""
    return allreduce_rows() + [small_allreduce_row(), hbm_row(), gemm_row()]


# NVIDIA/nccl issue #1259 (HGX 8×H100, NCCL 2.20.5, nccl-tests with CUDA graphs, -G 10): NCCL_ALGO=NVLS on 2 GPUs,
# 128 B, out of place (the point h100-sxm's collective_latency_s was taken from, less two 0.5 µs traversals)
SMALL_SOURCE = "NVIDIA/nccl issue #1259 (HGX 8×H100, NCCL 2.20.5, all_reduce_perf -g 2 -G 10, NCCL_ALGO=NVLS)"
SMALL_GPUS, SMALL_MEASURED = 2, 5.56e-6   # seconds at 128 B (128-512 B: 5.56-5.99 µs out of place and in place)


def small_allreduce_row() -> dict:
    """The model's latency-bound all-reduce on 2 H100s with the in-switch reduction over the measured 128 B call
    (fitted: the preset's per-call cost and switch traversals were taken from it)."""
    got = allreduce_s(True, SMALL_GPUS, 0)   # one token a GPU: 16 KiB, 0.04 µs of it at the port
    ratio = got / SMALL_MEASURED
    return row("gpu.allreduce.fixed:h100-sxm", f"one latency-bound all-reduce over {SMALL_GPUS} H100 SXM GPUs with "
               "NVLink SHARP (µs; fitted: collective_latency_s and two hop_latency_s traversals)",
               f"{1e6 * SMALL_MEASURED:.2f} µs (128 B, CUDA graphs)", ratio, kind="fitted",
               model=f"{1e6 * got:.2f} µs, a 16 KiB message ({ratio:.2f}×)", source=SMALL_SOURCE,
               reading="the preset's in_switch_reduction (NVLink SHARP), as NCCL_ALGO=NVLS")


def allreduce_rows() -> list[dict]:
    """Per algorithm, the model's 2 GiB all-reduce on 8 H100s over the measured one (a prediction of the port)."""
    out = []
    for algo, (nccl_algo, in_switch, busbw, quoted) in MEASURED.items():
        got, pub = allreduce_s(in_switch), measured_s(busbw)
        ratio = got / pub
        reading = "the preset's in_switch_reduction (NVLink SHARP)" if in_switch else \
            "in_switch_reduction=false (a ring, as NCCL_ALGO=Ring)"
        out.append(row(f"gpu.allreduce:{algo}", f"one 2 GiB all-reduce over 8 H100 SXM GPUs (NCCL_ALGO={nccl_algo}"
                       "), node-level model over nccl-tests' measured time (prediction of the NVLink port term)",
                       f"{1e3 * pub:.2f} ms (bus bandwidth {quoted})", ratio,
                       model=f"{1e3 * got:.2f} ms, bus bandwidth {measured_s(1.0) / got:.0f} GB/s "
                       f"({ratio:.2f}×)", source=SOURCE, reading=reading))
    return out


HBM_SOURCE = "deepseek-ai/FlashMLA README (dense MLA decoding, H800 SXM5, CUDA 12.8)"
HBM_MEASURED = 3000e9   # bytes/s: "up to 3000 GB/s in memory-bound configuration"
KV_TOKEN_BYTES = 576 * 2   # DeepSeek-V3's MLA cache a token and layer: 512 latent + 64 RoPE values, 16-bit
HBM_SEQS, HBM_CONTEXTS = 128, (4096, 8192)


def attention_hbm_s(context: int) -> float:
    """Seconds of the node-level model's attention HBM term per layer: DeepSeek-V3 decode on `h100-sxm` (8 GPUs,
    attention DP), 128 sequences a GPU of `context` tokens, a 16-bit KV cache."""
    from wsemoe.config.single import parse_sets, point_mapping
    from wsemoe.sweep.chunked import evaluate

    sets = [f"hardware.cols={GPUS}", "mapping.tp=1", "workload.mode=decode", f"workload.tokens_per_device={HBM_SEQS}",
            f"workload.seq_len={context}", "workload.kv_format=bf16"]
    return float(evaluate(point_mapping(HARDWARE, "deepseek-v3", parse_sets(sets), "gpu_check")).iloc[0]
                 ["attention_hbm_s"])


def hbm_row() -> dict:
    """The model's read of 128 sequences' 4,096 added tokens of MLA cache over the same bytes at FlashMLA's measured
    bandwidth (a prediction of the HBM term)."""
    short, long = HBM_CONTEXTS
    read = HBM_SEQS * (long - short) * KV_TOKEN_BYTES
    got, pub = attention_hbm_s(long) - attention_hbm_s(short), read / HBM_MEASURED
    ratio = got / pub
    return row("gpu.hbm:h100-sxm", f"the KV-cache read of {HBM_SEQS} DeepSeek-V3 decode sequences' {long - short:,} "
               f"added tokens on one H100 SXM ({read / 1e6:,.0f} MB a layer), node-level model over the same bytes at "
               "FlashMLA's measured memory-bound bandwidth (µs; prediction of the HBM term)",
               f"{1e6 * pub:.1f} µs (3,000 GB/s)", ratio,
               model=f"{1e6 * got:.1f} µs, {read / got / 1e9:,.0f} GB/s ({ratio:.2f}×)", source=HBM_SOURCE,
               reading="the default readings; a 16-bit KV cache, as the kernel reads")


GEMM_SOURCE = "NVIDIA technical blog, Boosting Matrix Multiplication Speed and Flexibility with NVIDIA cuBLAS 12.9"
GEMM_MEASURED = 2.3   # "FP4, which reaches up to 2.3x ... over FP8 matmuls on Blackwell" (block-scaled, cuBLAS 12.9)
GEMM_FORMATS = ("fp8", "nvfp4")   # the wider and the narrower expert format the row times the same matmuls in


def expert_matmul_s(fmt: str) -> float:
    """Seconds of the node-level model's MoE matmuls per layer on `nvl72` (8 GPUs, TP 1): Qwen3-235B-A22B prefill
    of 4 prompts of 4,096 tokens a GPU (16,384 tokens: the experts' GEMMs compute-bound, at matmul_efficiency),
    the routed experts in `fmt`, the router and attention at 16 bits."""
    from wsemoe.config.single import parse_sets, point_mapping
    from wsemoe.sweep.chunked import evaluate

    sets = [f"hardware.cols={GPUS}", "mapping.tp=1", "workload.mode=prefill", "workload.B=4", "workload.seq_len=4096",
            f"workload.expert_weight_format={fmt}", "workload.attn_weight_format=bf16"]
    return float(evaluate(point_mapping("nvl72", MODEL, parse_sets(sets), "gpu_check")).iloc[0]["moe_compute_s"])


def gemm_row() -> dict:
    """The model's MoE matmul time at FP8 over at NVFP4 on nvl72 (the preset's FP4 over FP8 peak) over the measured
    FP4-over-FP8 cuBLAS speed-up on Blackwell (a prediction of the two peaks' ratio)."""
    wide, narrow = (expert_matmul_s(f) for f in GEMM_FORMATS)
    got = wide / narrow
    ratio = got / GEMM_MEASURED
    return row("gpu.gemm:nvl72-fp4", "speed-up of compute-bound matmuls from FP8 to FP4 on a Blackwell GPU: the "
               "node-level model's Qwen3-235B-A22B expert GEMMs on nvl72 (16,384 prefill tokens a GPU) at FP8 over "
               "at NVFP4, over cuBLAS' measured FP4-over-FP8 speed-up (prediction of the FP4 and FP8 peaks' ratio)",
               f"up to {GEMM_MEASURED}× (cuBLAS 12.9, block-scaled FP4 over FP8, Blackwell)", ratio,
               model=f"{got:.2f}× ({1e3 * wide:.2f} ms over {1e3 * narrow:.2f} ms a layer; {ratio:.2f}×)",
               source=GEMM_SOURCE, reading="the default readings; the routed experts' weights in each format, the "
               "router and attention 16-bit")
