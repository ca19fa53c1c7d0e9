"""The GPU baseline's tensor-parallel all-reduce inside one NVLink server against measured NCCL (issue 26: rows that
fail when the h100-sxm preset's NVLink port is wrong by 2×; the gpu family's decode workers run TP 1 and the
InfiniBand share of their all-to-all binds, so none of them reads the port).

The measurement: nccl-tests' all_reduce_perf on one server of 8 H100 SXM GPUs, 2-4 GiB messages, forced to each
algorithm (NVIDIA/nccl issue #1455, Sept. 2024): NCCL_ALGO=Ring, bus bandwidth "about 365-370 GBps when gpus from 2
to 8"; NCCL_ALGO=NVLS (NVLink SHARP, the switches reduce in flight), 480 GB/s at 8 GPUs, algorithm bandwidth "about
273" (480 · 8/14 = 274). NVIDIA's GTC talk S62129 gives the same 480 GB/s for NVLink 4 SHARP inside a server (as
quoted in NVIDIA/nccl issue #1374). nccl-tests reports an all-reduce's bus bandwidth as its algorithm bandwidth
(bytes / time) × 2(n−1)/n, so the measured time of a message of M bytes is M · 2(n−1)/n / busbw.

The model's counterpart is the node-level model's own attention all-reduce (cost/comm.py, one call: G = 1 in
decode) on `h100-sxm`'s 8 GPUs at TP 8, with a message of exactly 2 GiB: Qwen3-235B-A22B's hidden 4,096 at 16-bit
activations is 8,192 bytes a token, 262,144 tokens in the group (32,768 a GPU). Under Ring the preset's in-switch
reduction is off (`hardware.in_switch_reduction=false`): the model's ring moves 2(n−1)/n · M over each GPU's port,
plus 2(n−1) ring rounds of a switch traversal and one per-call cost; under NVLS (the preset's reading) each GPU sends
and receives its message once, M over the port, plus two traversals and the call. At 2 GiB the fixed terms are
under 0.2% of the time: the rows read the port (450 GB/s a direction). The point does not fit the GPUs' memory (a
benchmark of one collective holds no model); the rows read the call whether or not it would.
"""

from __future__ import annotations

from wsemoe.validate.common import row

SOURCE = "NVIDIA/nccl issue #1455 (8 H100 SXM, all_reduce_perf -b 2G -e 4G, NCCL_ALGO forced); GTC S62129 (480 GB/s)"
HARDWARE, GPUS, MODEL = "h100-sxm", 8, "qwen3-235b-a22b"
MESSAGE = 2 ** 31   # bytes: 2 GiB, the smallest message of the measured sweep (its bus bandwidth is flat to 4 GiB)
# algorithm -> (the preset's in-switch reduction on, measured bus bandwidth GB/s at 8 GPUs, as published)
MEASURED = {"ring": (False, 367.5, "about 365-370 GB/s"), "nvls": (True, 480.0, "480 GB/s (algbw about 273)")}


def measured_s(busbw_gb_s: float, gpus: int = GPUS, message: int = MESSAGE) -> float:
    """Seconds of the measured all-reduce: nccl-tests' bus bandwidth is bytes / time × 2(n−1)/n."""
    return message * 2 * (gpus - 1) / gpus / (busbw_gb_s * 1e9)


def allreduce_s(in_switch: bool) -> float:
    """Seconds of one attention all-reduce of the node-level model: TP 8 over `h100-sxm`'s 8 GPUs, a 2 GiB message
    (`in_switch`: the NVLink switches reduce it in flight, as the preset reads; off: a ring)."""
    from wsemoe.config import presets
    from wsemoe.config.single import parse_sets, point_mapping
    from wsemoe.sweep.chunked import evaluate

    token_bytes = presets.load_model(MODEL).hidden_size * 2   # 16-bit activations (workload.bytes_per_act 2)
    per_gpu = MESSAGE // (token_bytes * GPUS)
    sets = [f"hardware.cols={GPUS}", f"mapping.tp={GPUS}", "workload.mode=decode", "workload.bytes_per_act=2",
            f"workload.tokens_per_device={per_gpu}", "workload.seq_len=2048",
            f"hardware.in_switch_reduction={str(in_switch).lower()}"]
    one = evaluate(point_mapping(HARDWARE, MODEL, parse_sets(sets), "gpu_check")).iloc[0]
    return float(one["attention_allreduce_s"])


def allreduce_rows() -> list[dict]:
    """Per algorithm, the model's 2 GiB all-reduce on 8 H100s over the measured one (a prediction of the port)."""
    out = []
    for algo, (in_switch, busbw, quoted) in MEASURED.items():
        got, pub = allreduce_s(in_switch), measured_s(busbw)
        ratio = got / pub
        reading = "the preset's in_switch_reduction (NVLink SHARP)" if in_switch else \
            "in_switch_reduction=false (a ring, as NCCL_ALGO=Ring)"
        out.append(row(f"gpu.allreduce:{algo}", f"one 2 GiB all-reduce over 8 H100 SXM GPUs (NCCL_ALGO={algo.upper()}"
                       "), node-level model over nccl-tests' measured time (prediction of the NVLink port term)",
                       f"{1e3 * pub:.2f} ms (bus bandwidth {quoted})", ratio,
                       model=f"{1e3 * got:.2f} ms, bus bandwidth {measured_s(1.0) / got:.0f} GB/s "
                       f"({ratio:.2f}×)", source=SOURCE, reading=reading))
    return out
