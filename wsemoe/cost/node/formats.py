"""Number formats of weights and KV cache: bytes per value, and the peak a matmul in a format runs at.

A weight format is the format of its matmul's operands (activations are quantized to it on the fly, as
DeepSeek-V3's FP8 GEMMs and NVFP4 kernels do); activations stored between stages stay `bytes_per_act`.
A format the hardware has no peak for (its `node_peak_flops_<format>` unset) runs at the 16-bit peak.
"""

from __future__ import annotations

BYTES = {"bf16": 2.0, "fp8": 1.0, "fp4": 0.5}
HIGH = "bf16"   # embedding, head, router, norms and the attention core stay 16-bit (DeepSeek-V3 §3.3.1)


def nbytes(fmt: str) -> float:
    """Bytes per value of a format."""
    return BYTES[fmt]


def peak(hw, fmt: str):
    """Peak dense FLOP/s per node of matmuls in `fmt`: its own peak, or the 16-bit peak when the hardware has none."""
    own = None if fmt == HIGH else getattr(hw, f"node_peak_flops_{fmt}", None)
    return hw.node_peak_flops if own is None else own


def attn_bytes(wl) -> float:
    """Bytes per weight of attention projections, shared experts and dense FFNs."""
    return BYTES[getattr(wl, "attn_weight_format", HIGH)]


def expert_bytes(wl) -> float:
    """Bytes per weight of the routed experts."""
    return BYTES[getattr(wl, "expert_weight_format", HIGH)]


def kv_bytes(wl) -> float:
    """Bytes per value of the KV cache."""
    return BYTES[getattr(wl, "kv_format", HIGH)]
