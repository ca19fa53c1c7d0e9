"""Number formats of weights and KV cache: bytes per value, and the peak a matmul in a format runs at.

A weight format is the format of its matmul's operands (activations are quantized to it on the fly, as
DeepSeek-V3's FP8 GEMMs and NVFP4 kernels do); activations stored between stages stay `bytes_per_act`.
A format the hardware has no peak for (its `node_peak_flops_<format>` unset) runs at the 16-bit peak.
"""

from __future__ import annotations

import numpy as np

BYTES = {"bf16": 2.0, "fp8": 1.0, "fp4": 0.5}
HIGH = "bf16"   # embedding, head, router, norms and the attention core stay 16-bit (DeepSeek-V3 §3.3.1)

# Checkpoint-native formats (read from a config.json's quantization_config; docs/formats.md): the values plus
# their scale factors, per value. Each runs its matmuls at the peak of the format in COMPUTE.
NATIVE = {
    # OCP Microscaling v1.0 MXFP4 (gpt-oss): FP4 E2M1 values, one E8M0 (1-byte) scale per block of 32.
    "mxfp4": 0.5 + 1 / 32,
    # NVIDIA NVFP4 (ModelOpt checkpoints): FP4 E2M1 values, one FP8 E4M3 scale per 16; the per-tensor FP32
    # second-level scale (4 bytes per weight matrix) is below a part in a million of any matrix here.
    "nvfp4": 0.5 + 1 / 16,
    # DeepSeek-V3 FP8 (§3.3, `weight_block_size: [128, 128]`; also Qwen3-FP8, Kimi K2, MiniMax-M2): E4M3 values,
    # one FP32 scale per 128 × 128 block.
    "fp8_block": 1.0 + 4 / (128 * 128),
    # INT4 weight-only, group 32 (compressed-tensors `pack-quantized`, symmetric, as Kimi K2-Thinking/K2.5):
    # 4-bit integers, one BF16 scale per group of 32, no zero point.
    "int4_g32": 0.5 + 2 / 32,
    # MXFP4 stored as above but multiplied at 16 bits (W4A16: AIConfigurator's `w4a16_mxfp4`, gpt-oss's native
    # MoE format on GPUs without FP4 tensor cores, the kernels dequantizing the weights into the BF16 MMA).
    "mxfp4_w4a16": 0.5 + 1 / 32,
}
BYTES.update(NATIVE)
# Weight-only integer formats of the serving engines (TensorRT-LLM `int8_wo` / `int4_wo`, AIConfigurator's modes
# of the same names): 8- or 4-bit weights with one 16-bit scale per output channel — thousands of weights per
# scale, under 0.1% — dequantized to 16 bits for the matmul (W8A16 / W4A16).
WEIGHT_ONLY = {"int8_wo": 1.0, "int4_wo": 0.5}
BYTES.update(WEIGHT_ONLY)
# Mixed INT4-weight, FP8-activation experts (AIConfigurator's and TensorRT-LLM's `w4afp8`, as the DeepSeek-R1 W4AFP8
# checkpoints: FP8 dense layers, INT4 MoE weights, FP8 activations): 4-bit integers with one 16-bit scale per group
# of 128 (the AWQ group size of TensorRT-LLM's W4A8 kernels), upcast to FP8 inside the kernel, so the matmul runs
# at the FP8 peak.
W4A8 = {"w4afp8": 0.5 + 2 / 128}
BYTES.update(W4A8)
# The format whose peak a native format's matmuls run at: FP4 and FP8 kernels take block-scaled operands; weight-only
# matmuls (INT4, INT8, W4A16 MXFP4) dequantize to 16-bit and run at the 16-bit peak; W4A8 at the FP8 peak.
COMPUTE = {"mxfp4": "fp4", "nvfp4": "fp4", "fp8_block": "fp8", "int4_g32": "bf16", "mxfp4_w4a16": "bf16",
           "int8_wo": "bf16", "int4_wo": "bf16", "w4afp8": "fp8"}


# A token sent to its experts is quantized first, to the format the expert matmul multiplies in, and the combine
# returns 16-bit outputs: DeepSeek-V3 §3.3.2 quantizes the activation before the MoE up-projection to FP8 "and then
# applies dispatch components" (one FP32 scale per 1×128 tile), DeepEP times "FP8 dispatching and BF16 combining",
# and TensorRT-LLM's post-quant dispatch sends 7,392 bytes a 7,168-wide token in MXFP8 and 4,032 in NVFP4 (tech blog
# 18). Values plus one scale per block, per value:
DISPATCHED = {"fp8": 1.0 + 4 / 128,    # E4M3, one FP32 scale per 128 (= MXFP8's one E8M0 byte per 32)
              "fp4": 0.5 + 1 / 16}     # NVFP4: E2M1, one E4M3 scale per 16


def dispatch_bytes(hw, wl):
    """Bytes per element of a token dispatched to the routed experts of workload `wl` (dispatched_bytes)."""
    return dispatched_bytes(hw, getattr(wl, "expert_weight_format", HIGH), wl.bytes_per_act)


def dispatched_bytes(hw, expert_format: str, act_bytes):
    """Bytes per element of a token dispatched to experts in `expert_format`: the expert matmul's operand format
    when the hardware runs that format natively (the stacks quantize before the dispatch), else the activation as
    stored (`act_bytes`; a format without its own peak multiplies at 16 bits, so nothing is quantized early)."""
    fmt = COMPUTE.get(expert_format, expert_format)
    if fmt not in DISPATCHED or getattr(hw, f"node_peak_flops_{fmt}", None) is None:
        return act_bytes
    return np.minimum(DISPATCHED[fmt], act_bytes)


def nbytes(fmt: str) -> float:
    """Bytes per value of a format."""
    return BYTES[fmt]


def peak(hw, fmt: str):
    """Peak dense FLOP/s per node of matmuls in `fmt`: its own peak, or the 16-bit peak when the hardware has none
    (times sram_weight_gain: a PE wafer's SRAM-bound MAC rate with the weights resident in its SRAM)."""
    own = None if COMPUTE.get(fmt, fmt) == HIGH else getattr(hw, f"node_peak_flops_{COMPUTE.get(fmt, fmt)}", None)
    return hw.node_peak_flops * sram_weight_gain(hw, fmt) if own is None else own


MAC_OPERAND_BYTES = 2.0   # the 16-bit operands the node peak's SRAM-bound MAC rate counts (specs.hardware.mac_rate)


def sram_weight_gain(hw, fmt: str):
    """How much faster than the node peak a PE wafer's MACs run with resident weights in `fmt`: the peak is the PEs'
    MAC rate bounded by their SRAM share over `mac_memory_operands` 16-bit operands a MAC (specs.hardware.mac_rate);
    a weight kept in SRAM is one of them, read at its own bytes (1 for FP8: 5 B a MAC, not 6), as the PE-level
    SRAM path counts it (cost/wafer/operands.py, fabric.memory_cycles). Weight streaming (and every node without
    PE facts) gains nothing: a streamed weight reaches the PE over the fabric, and the MAC's SRAM operands are the
    stored activation and the partial sum in and out, 16-bit whatever the weight's format."""
    pe = getattr(hw, "pe", None)
    if getattr(hw, "weight_source", None) != "resident" or pe is None:
        return 1.0
    get = pe.get if isinstance(pe, dict) else lambda k: getattr(pe, k, None)
    operands, total = get("mac_memory_operands"), get("sram_bw_total_bytes_per_s")
    if not operands or total is None:
        return 1.0
    per_cycle = np.asarray(total, dtype=float) / get("pe_count") / get("clock_hz")
    width, ops = np.asarray(get("fmac_width"), dtype=float), np.asarray(operands, dtype=float)
    base = ops * MAC_OPERAND_BYTES
    own = base + np.minimum(ops, 1.0) * (BYTES[fmt] - MAC_OPERAND_BYTES)
    return np.minimum(width, per_cycle / own) / np.minimum(width, per_cycle / base)


def attn_bytes(wl) -> float:
    """Bytes per weight of attention projections, shared experts and dense FFNs."""
    return BYTES[getattr(wl, "attn_weight_format", HIGH)]


def expert_bytes(wl) -> float:
    """Bytes per weight of the routed experts."""
    return BYTES[getattr(wl, "expert_weight_format", HIGH)]


def kv_bytes(wl) -> float:
    """Bytes per value of the KV cache."""
    return BYTES[getattr(wl, "kv_format", HIGH)]
