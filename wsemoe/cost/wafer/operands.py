"""Bytes of each kind of operand a PE-level operator reads from SRAM, per element, in its own format.

A vector MAC reads the stored matrix's element (a weight, or a cached key, value or recurrent state) and reads and
writes the accumulator (fabric.memory_cycles). The accumulator and every message between PEs are activations
(`bytes_per_act`); the stored element is in the format its bytes were laid out in (regions.region_bytes, through
weights.layer_weights and memory.kv_bytes_per_token_layer): attention projections, shared experts and dense FFNs
in `attn_weight_format`, routed experts in `expert_weight_format`, the KV cache in `kv_format` (a linear layer's
state in its own: mix.state_bytes), the router and head 16-bit (cost/node/formats.py). An FP8 weight is 1 byte of SRAM traffic a MAC,
not the 2 of its 16-bit product (the PE multiplies at 16 bits; the SIMD width follows the activation).

Operators take either an `Operands` or a plain number of bytes (every operand that size: the validation rows'
16-bit dense models, and callers that name one format). Numpy only.
"""

from __future__ import annotations

from typing import NamedTuple

from wsemoe.cost.node import formats


class Operands(NamedTuple):
    """Bytes per element: activations and accumulators (`act`), attention, shared and dense weights (`attn`),
    routed experts (`expert`), KV cache and recurrent state (`kv`), router and head (`high`)."""

    act: object
    attn: object
    expert: object
    kv: object
    high: object


def of(b) -> Operands:
    """`b` if it is an Operands, else every operand at `b` bytes."""
    return b if isinstance(b, Operands) else Operands(b, b, b, b, b)


def of_workload(wl) -> Operands:
    """The operands of workload `wl`: activations at `bytes_per_act`, each stored element in its format."""
    return Operands(wl.bytes_per_act, formats.attn_bytes(wl), formats.expert_bytes(wl), formats.kv_bytes(wl),
                    formats.nbytes(formats.HIGH))
