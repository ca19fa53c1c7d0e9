"""The comparisons' GPU baseline against published GPU decode: the node-level model (cost/node, the model every
shipped comparison costs NVL72 and the DGX cluster with) at the two published DeepSeek-V3 decode workers the
fitted serving stack is checked at (validate/silicon/checks.py), and a third from the same publication:

  GB200 NVL72, 48 GPUs (EP 48), 768 tokens per GPU: 9,087 output tokens/s per GPU (LMSYS blog, Sept. 2025,
    Part II: FP8 experts, 2,000-token inputs); the `nvl72` preset, the comparisons' own, on 48 of its GPUs
  96 H100 (decode on 72, EP 72), 256 tokens per GPU: 2,785 output tokens/s per GPU (LMSYS blog, May 2025,
    Part I: 22.3k output tokens/s per 8-GPU node, 2,000-token inputs); the `h100-sxm` preset, 9 servers
    joined by its InfiniBand figures

Each is a decode worker with attention data parallelism (TP 1: every GPU its own sequences) and experts over
every GPU, at a context of the 2,000-token input plus half of a 100-token output, overlapped as its publication
runs it (`OVERLAP`: Part I's two micro-batches, Part II's serial-like combine overlap; the other option beside
it) and at the default readings otherwise, in the precision the publications name: "BF16 attention and FP8 MoE"
(Part II's words for its 9,087; Part I ran the same FP8 checkpoint with a BF16 cache). Part II's "FP8 attention" is "the FP8 precision for KV cache in
attention", so its "BF16 attention" is a 16-bit KV cache and attention core (the model keeps the core 16-bit
always); the projections are the checkpoint's FP8 GEMMs, as the fitted stack's checks of the same points take
them (`gemm_quant_mode` fp8). Until issue 26 these rows ran 16-bit projections, which doubled attention's
replicated weights: the H100 worker then did not fit its 80 GB (1.14×) and its row read tokens/s of a design
that cannot run. A worker that does not fit now fails its row (`served`).
The same publication's reduced-precision worker (NVFP4 experts, FP8 attention and KV cache, 1,408 tokens per GPU:
13,386 tokens/s per GPU) is a third point (`LOW_PRECISION`). The band (tolerances.py, `gpu.node`) is the stack
checks' ×[0.67, 1.5]. Nothing here is fitted: a miss says how far the comparisons' baseline sits from measured
serving at a production load.

And a published prefill worker, where the matmuls bind: Part I's 32 H100s (EP 32, attention DP, two-batch overlap)
at 16,384 tokens per GPU of 4,096-token prompts, 59,337 input tokens/s per node with the experts' load balanced
(`gpu.prefill`, the band of `gpu.node`). Its prefill crosses InfiniBand once per target server (DeepEP's normal kernels,
cost/fabric/scaleout.py); each copy sent apart, as the decode kernels send them, would read 0.46× serially.

And the baseline's expert-parallel communication against measured kernels: one dispatch or combine call of the
same node-level model on `nvl72`, DeepSeek-V3's profile (hidden 7,168, top-8, BF16 activations: 14,336 bytes a
token), at each EP size 8-64 and tokens per rank the TensorRT-LLM tech blog 18 tables measure on GB200 NVL72
(NVLinkOneSided kernels). The model's call is its fixed per-call cost (`alltoall_latency_s`) and one switch
traversal plus the bytes through the busiest port: b · min(EP, k) · 14,336 · (EP − 1)/EP over 900 GB/s (a
token's copy to its own rank stays local). The one-token calls are what the preset's per-call cost was taken
from, so that row is kind fitted (`gpu.a2a.fixed`, ±5%); at 256 and 2,048 tokens per rank, where the bytes are
half or most of a call, the rows are predictions of the port term (`gpu.a2a`, ±30%). The same blog times the
dispatch at 2,048 tokens per rank with the token quantized before it is sent (MXFP8, 7,392 bytes a token; NVFP4,
4,032): the model's dispatch with FP8 and FP4 experts, which sends the same bytes (cost/node/formats.
dispatch_bytes), is checked against them (`gpu.a2a.quant`, ±30%). The blog's BF16 figure beside them is its GB200
table's EP 8 one, so the rows take EP 8 on `nvl72` (its figure's caption names B200: the same NVLink 5 port).

And over InfiniBand: the same model's calls on `h100-sxm` servers (8 GPUs each) at EP 16-256 and 128 tokens per
GPU against DeepEP's low-latency kernels (V1 documentation: H800 GPUs, one CX7 400 Gb/s NIC each, the NIC an H100
server has; FP8 dispatching, BF16 combining), dispatch and combine apart (`gpu.ib`, ±30%): the model sends a token
quantized to FP8 and takes it back at 16 bits (cost/node/formats.dispatch_bytes), over the servers' NICs for the
copies that leave a server. EP 8 is left out: one server, whose copies the model sends over NVLink and the
pure-RDMA kernels through the NIC.

The kernel rows time one call of a benchmark that holds no model: they read the call whether or not DeepSeek-V3's
weights and cache would fit those GPUs (at EP 8, or 2,048 tokens per rank, they do not). Only the serving workers
above must fit (`served`).
"""

from __future__ import annotations

import math

from wsemoe.validate.common import row

POINTS = (("nvl72", "GB200 NVL72", 48, 768, 9087.0, "LMSYS blog, Sept. 2025 (Part II)"),
          ("h100-sxm", "H100", 72, 256, 2785.0, "LMSYS blog, May 2025 (Part I)"))
CONTEXT = 2050  # tokens: the 2,000-token input and half of the 100-token output


def decode_point(hardware: str, gpus: int, per_gpu: int, expert_format: str, attn_format: str = "bf16",
                 kv_format: str = "bf16", comm_overlap: str = "none"):
    """The node-level model's row of a DeepSeek-V3 decode worker on `gpus` GPUs of `hardware`: attention DP (TP 1),
    experts over every GPU, `per_gpu` tokens per GPU, experts in `expert_format`, attention's projections and the
    KV cache in theirs (16-bit unless given). Under `comm_overlap` microbatch the worker's tokens run as two
    micro-batches of `per_gpu`/2, one communicating while the other computes."""
    per_batch = micro_batch(per_gpu, comm_overlap)
    return _point(hardware, [f"hardware.cols={gpus}", "workload.mode=decode", f"workload.tokens_per_device={per_batch}",
                             f"workload.seq_len={CONTEXT}", f"workload.attn_weight_format={attn_format}",
                             f"workload.expert_weight_format={expert_format}", f"workload.kv_format={kv_format}",
                             "mapping.tp=1", f"workload.comm_overlap={comm_overlap}"])


def micro_batch(per_gpu: int, comm_overlap: str) -> int:
    """What one micro-batch holds of a worker's `per_gpu` tokens or prompts: half under two-batch overlap (the two
    micro-batches share the published batch), all of it otherwise."""
    return per_gpu // 2 if comm_overlap == "microbatch" else per_gpu


def _point(hardware: str, sets: list[str]):
    """The node-level model's row of DeepSeek-V3 on `hardware` with `sets` (KEY=VALUE) applied."""
    from wsemoe.config.single import parse_sets, point_mapping
    from wsemoe.sweep.chunked import evaluate

    return evaluate(point_mapping(hardware, "deepseek-v3", parse_sets(sets), "gpu_check")).iloc[0]


def served(one) -> tuple[float, str]:
    """(output tokens/s per GPU, binding term) of an evaluated decode worker; NaN, and why, when it does not fit:
    a published worker ran, so a model that cannot fit it fails the row."""
    if not bool(one["feasible"]):
        return math.nan, f"does not fit: {one['infeasible_reason']}"
    return float(one["per_device_tokens_per_s"]), str(one["bound"])


# How each publication overlaps communication with compute, in the model's comm_overlap reading: Part I runs
# two-batch overlap in decode and prefill ("Two-batch Overlap": two micro-batches, one communicating while the other
# computes); Part II on GB200 replaces it by overlapping the combine with the down GEMM and the shared experts, a
# part of one layer's compute, nearer the serial accounting than to two micro-batches. The rows run each worker so
# and say what the other option gives.
OVERLAP = {"h100-sxm": "microbatch", "nvl72": "none"}
OVERLAP_WHY = {"microbatch": "two-batch overlap, as the publication runs it",
               "none": "serial: the publication overlaps only the combine with part of the MoE compute"}


def node_tokens_per_gpu(hardware: str, gpus: int, per_gpu: int, comm_overlap: str | None = None,
                        **formats) -> tuple[float, str]:
    """(output tokens/s per GPU, binding term) of the node-level model's DeepSeek-V3 decode worker, overlapped as
    its publication runs it unless `comm_overlap` says otherwise: the FP8 checkpoint's projections and experts, a
    16-bit KV cache, unless `formats` says otherwise."""
    formats = {"expert_format": "fp8", "attn_format": "fp8", **formats}
    overlap = OVERLAP[hardware] if comm_overlap is None else comm_overlap
    return served(decode_point(hardware, gpus, per_gpu, comm_overlap=overlap, **formats))


def node_row(rid: str, claim: str, published: float, worker: tuple, source: str, **formats) -> dict:
    """A published decode worker's tokens/s per GPU against the node-level model's (NaN: it does not fit), at the
    publication's overlap, the other option beside it."""
    hardware, gpus, per_gpu = worker
    overlap = OVERLAP[hardware]
    got, bound = node_tokens_per_gpu(hardware, gpus, per_gpu, **formats)
    other = "none" if overlap == "microbatch" else "microbatch"
    alt, _ = node_tokens_per_gpu(hardware, gpus, per_gpu, other, **formats)
    text = (f"{got:,.0f} tokens/s/GPU ({got / published:.2f}×; bound {bound}); comm_overlap {other}: {alt:,.0f} "
            f"({alt / published:.2f}×)") if math.isfinite(got) else bound
    return row(rid, claim, f"{published:,.0f} tokens/s/GPU", got / published, model=text, source=source,
               reading=f"comm_overlap {overlap} ({OVERLAP_WHY[overlap]}); the default readings otherwise")


def gpu_rows() -> list[dict]:
    """Per published point: the node-level model's tokens/s per GPU over the published figure."""
    out = [node_row(f"gpu.node:{hardware}", f"DeepSeek-V3 decode (FP8 experts, BF16 attention) on {gpus} {system} "
                    f"GPUs (EP {gpus}, attention DP), {per_gpu} tokens per GPU: output tokens/s per GPU, node-level "
                    "model (the comparisons' GPU baseline) over published", published, (hardware, gpus, per_gpu),
                    source) for hardware, system, gpus, per_gpu, published, source in POINTS]
    return out + [low_precision_row(), prefill_row()] + a2a_rows() + ib_rows()


# The same publication's reduced-precision decode (LMSYS blog, Sept. 2025, Part II): FP8 attention (FP8 KV cache),
# NVFP4 experts and the output projection in NVFP4, q_b_proj in FP8, the rest of attention 16-bit (the model takes
# one format for attention's projections: FP8, the middle of that mix), 48 GPUs, "1408 for 2k ISL" tokens per GPU
# (the batch that fills the KV cache): 13,386 output tokens/s per GPU. DeepEP quantizes the dispatched tokens to
# NVFP4 there ("Fusing NVFP4 in DeepEP"), as the model's dispatch does (cost/node/formats.dispatch_bytes).
LOW_PRECISION = ("nvl72", 48, 1408, 13386.0, dict(expert_format="nvfp4", attn_format="fp8", kv_format="fp8"))


def low_precision_row() -> dict:
    """The node-level model at the reduced-precision decode worker over its published tokens/s per GPU."""
    hardware, gpus, per_gpu, published, formats = LOW_PRECISION
    return node_row(f"gpu.node:{hardware}-nvfp4", f"DeepSeek-V3 decode (NVFP4 experts, FP8 attention and KV cache) on "
                    f"{gpus} GB200 NVL72 GPUs (EP {gpus}, attention DP), {per_gpu:,} tokens per GPU: output tokens/s "
                    "per GPU, node-level model over published", published, (hardware, gpus, per_gpu),
                    "LMSYS blog, Sept. 2025 (Part II)", **formats)


# LMSYS blog, May 2025 (Part I), "Profile Results": prefill on 4 nodes (32 H100, EP 32, attention DP, the FP8
# checkpoint, a 16-bit KV cache), 16,384 tokens per device of 4,096-token prompts (4 prompts a GPU): 59,337 input
# tokens/s per 8-GPU node under "simulated perfect EPLB (random expert selection following group-limited routing
# semantics)", the model's uniform routing (balance.distribution uniform); 50,302 under the default expert
# distribution, whose imbalance the model would need that run's histogram to charge. Its prefill runs two-batch
# overlap ("largely attributable to ... DeepGEMM and two-batch overlap") and DeepEP's normal kernels, which cross
# InfiniBand once per target node (the `auto` scale-out dispatch in prefill, cost/fabric/scaleout.py). (Part II's
# GB200 prefill workers, 18,471 and 26,156 per GPU, run 4 and 2 GPUs an instance with weights offloaded to host
# memory, which the model does not hold.)
PREFILL = ("h100-sxm", 32, 4, 4096, 59337.0 / 8)


def prefill_tokens_per_gpu(comm_overlap: str) -> tuple[float, str]:
    """(input tokens/s per GPU, binding term) of the node-level model at the published prefill worker (under
    `comm_overlap` microbatch, its prompts as two micro-batches of half)."""
    hardware, gpus, prompts, prompt_len, _ = PREFILL
    per_batch = micro_batch(prompts, comm_overlap)
    return served(_point(hardware, [f"hardware.cols={gpus}", "workload.mode=prefill", f"workload.B={per_batch}",
                                    f"workload.seq_len={prompt_len}", "workload.attn_weight_format=fp8",
                                    "workload.expert_weight_format=fp8", "workload.kv_format=bf16", "mapping.tp=1",
                                    f"workload.comm_overlap={comm_overlap}"]))


def prefill_row() -> dict:
    """The node-level model's input tokens/s per GPU at the published prefill worker, two-batch overlap on as the
    publication runs it, over the published figure; the serial default beside it."""
    hardware, gpus, prompts, prompt_len, published = PREFILL
    overlap = OVERLAP[hardware]
    other = "none" if overlap == "microbatch" else "microbatch"
    got, bound = prefill_tokens_per_gpu(overlap)
    alt, _ = prefill_tokens_per_gpu(other)
    text = (f"{got:,.0f} input tokens/s/GPU ({got / published:.2f}×; bound {bound}); comm_overlap {other}: "
            f"{alt:,.0f} ({alt / published:.2f}×)") if math.isfinite(got) else bound
    return row(f"gpu.prefill:{hardware}", f"DeepSeek-V3 prefill (FP8 projections and experts) on {gpus} H100 GPUs "
               f"(EP {gpus}, attention DP, two-batch overlap), {prompts} prompts of {prompt_len:,} tokens per GPU: "
               "input tokens/s per GPU, node-level model over published (experts balanced)",
               f"{published:,.0f} input tokens/s/GPU (59,337 per node, simulated perfect EPLB; 50,302 with the default "
               "expert distribution)", got / published, model=text,
               source="LMSYS blog, May 2025 (Part I), Profile Results",
               reading=f"comm_overlap {overlap} ({OVERLAP_WHY[overlap]}); the default readings otherwise")


# TensorRT-LLM tech blog 18, "Scaling With Batch Size and EP Size" (GB200 NVL72, DeepSeek-V3 profile, BF16): per EP
# size, tokens per rank -> (dispatch µs, combine µs). The rows take the mean of the two: the model has one call time.
A2A_SOURCE = "TensorRT-LLM tech blog 18, Performance Benchmark (GB200 NVL72)"
A2A_MEASURED = {8: {1: (18.9, 31.0), 256: (50.8, 53.0), 2048: (311.8, 322.6)},
                16: {1: (18.8, 30.8), 256: (54.8, 57.0), 2048: (343.3, 348.4)},
                32: {1: (19.8, 31.4), 256: (61.5, 59.7), 2048: (373.7, 369.5)},
                64: {1: (27.8, 32.6), 256: (65.3, 62.9), 2048: (399.2, 372.1)}}


def a2a_call_s(ep: int, per_rank: int) -> float:
    """Seconds of one dispatch (equal to one combine) call of the node-level model: DeepSeek-V3 with BF16
    activations and experts on `ep` GPUs of `nvl72`, `per_rank` tokens per GPU."""
    return float(decode_point("nvl72", ep, per_rank, "bf16")["moe_dispatch_s"])


def a2a_rows() -> list[dict]:
    """The one-token calls (fitted: the preset's per-call cost) and, per EP size, the calls at 256 and 2,048 tokens
    per rank (predictions of the port term), each over the mean of the measured dispatch and combine."""
    one = [(a2a_call_s(ep, 1), sum(m[1]) / 2) for ep, m in A2A_MEASURED.items()]
    got, pub = sum(g for g, _ in one) / len(one), sum(p for _, p in one) / len(one)
    ratio = got / (1e-6 * pub)
    out = [row("gpu.a2a.fixed:nvl72", "one dispatch or combine call of one token per rank on nvl72 (EP 8-64, mean; "
               "µs; fitted: alltoall_latency_s)", f"{pub:.1f} µs", ratio, kind="fitted",
               model=f"{1e6 * got:.1f} µs ({ratio:.2f}×)", source=A2A_SOURCE, reading="the default readings")]
    for ep, measured in A2A_MEASURED.items():
        for per_rank in (256, 2048):
            call, mean = a2a_call_s(ep, per_rank), sum(measured[per_rank]) / 2
            ratio = call / (1e-6 * mean)
            out.append(row(f"gpu.a2a:ep{ep}-b{per_rank}", f"one dispatch or combine call on nvl72, EP {ep}, "
                           f"{per_rank:,} tokens per rank, DeepSeek-V3 BF16 (µs; prediction of the port term)",
                           f"{mean:.1f} µs (dispatch {measured[per_rank][0]}, combine {measured[per_rank][1]})", ratio,
                           model=f"{1e6 * call:.1f} µs ({ratio:.2f}×)", source=A2A_SOURCE,
                           reading="the default readings"))
    return out + [quant_row(fmt, measured) for fmt, measured in QUANT_MEASURED.items()]


# The same blog, "Post-Quant Dispatch", at 2,048 tokens per rank and EP 8: expert format -> (the quantized recipe,
# its bytes a token, its dispatch µs); BF16 311.8 µs beside them.
QUANT_MEASURED = {"fp8": ("MXFP8", 7392, 172.2), "nvfp4": ("NVFP4", 4032, 101.7)}


def quant_row(fmt: str, measured: tuple) -> dict:
    """The node model's dispatch at 2,048 tokens per rank, EP 8 on nvl72, with `fmt` experts (the token quantized
    before it is sent) over the measured post-quant dispatch."""
    recipe, token_bytes, pub = measured
    call = float(decode_point("nvl72", 8, 2048, fmt)["moe_dispatch_s"])
    ratio = call / (1e-6 * pub)
    return row(f"gpu.a2a.quant:{recipe.lower()}", f"one dispatch call on nvl72, EP 8, 2,048 tokens per rank, the token "
               f"quantized to {recipe} before it is sent ({token_bytes:,} bytes; µs; prediction)", f"{pub} µs", ratio,
               model=f"{1e6 * call:.1f} µs ({ratio:.2f}×)", source=A2A_SOURCE, reading="the default readings")


# DeepEP V1 documentation (docs/legacy.md), "Low-latency kernels with pure RDMA": H800, CX7 400 Gb/s per GPU, 128
# tokens per batch, hidden 7,168, top-8, FP8 dispatching and BF16 combining: EP size -> (dispatch µs, combine µs).
IB_SOURCE = "DeepEP V1 documentation, low-latency kernels (H800, CX7 400 Gb/s)"
IB_MEASURED = {16: (118.0, 195.0), 32: (155.0, 273.0), 64: (173.0, 314.0), 128: (192.0, 369.0), 256: (194.0, 360.0)}
IB_TOKENS = 128


def ib_calls_s(ep: int) -> tuple[float, float]:
    """(dispatch, combine) seconds of one call of the node-level model: DeepSeek-V3 with FP8 experts on `ep` GPUs
    of `h100-sxm` servers, 128 tokens per GPU."""
    one = decode_point("h100-sxm", ep, IB_TOKENS, "fp8")
    return float(one["moe_dispatch_s"]), float(one["moe_combine_s"])


def ib_rows() -> list[dict]:
    """Per EP size, the dispatch (FP8) and the combine (16-bit) call over the measured kernels' (predictions)."""
    out = []
    for ep, measured in IB_MEASURED.items():
        for (phase, what), call, pub in zip((("dispatch", "FP8 out"), ("combine", "16-bit back")), ib_calls_s(ep),
                                            measured):
            ratio = call / (1e-6 * pub)
            out.append(row(f"gpu.ib:{phase}-ep{ep}", f"one {phase} call ({what}) on h100-sxm servers over InfiniBand, "
                           f"EP {ep}, {IB_TOKENS} tokens per GPU, DeepSeek-V3 (µs; prediction)", f"{pub:.0f} µs",
                           ratio, model=f"{1e6 * call:.1f} µs ({ratio:.2f}×)", source=IB_SOURCE,
                           reading="the default readings"))
    return out
