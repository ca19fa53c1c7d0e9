"""The PE fabric as hardware: cycles of a path (hops, turns, relay stages), wavelets of a message, the
program rectangle, seconds from cycles. Scalars or arrays that broadcast; numpy only.

`pe` is any object with the PE facts as attributes (`wsemoe.specs.PEFacts`, or a namespace of arrays):
`clock_hz`, `hop_cycles`, `turn_cycles`, `relay_cycles`, `link_bytes_per_cycle`, `fmac_width`,
`sram_per_pe_bytes`, `fabric_rows`, `fabric_cols`, `kernel_margin_rows`, `kernel_margin_cols`,
`op_overhead_cycles`. Sources of every value: docs/sources.md ("The PE fabric").

The latency of one path (docs/cost-model.md, "The wafer at PE level"):

    cycles = hops · hop_cycles + turns · turn_cycles + relays · relay_cycles

A *hop* is one router-to-router link along a configured route (the router forwards without the PE); a
*turn* is a change of dimension (X to Y) of such a route; a *relay* is a store-and-forward stage, where a
PE's compute engine takes the wavelets off the fabric and sends (possibly reduced) wavelets on: ramp in,
one operation, ramp out (Luczynski et al.'s 2·T_R + 1).
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np


def pe_facts(hw) -> SimpleNamespace:
    """The hardware's PE facts as a namespace (a dict in sweep namespaces, a PEFacts in specs)."""
    pe = hw.pe
    return SimpleNamespace(**(pe.model_dump() if hasattr(pe, "model_dump") else dict(pe) if isinstance(pe, dict)
                              else dict(vars(pe))))


def path_cycles(hops, turns, relays, pe):
    """Latency in cycles of a path of `hops` links, `turns` changes of dimension and `relays` PE stages."""
    return (np.asarray(hops, dtype=float) * pe.hop_cycles + np.asarray(turns, dtype=float) * pe.turn_cycles
            + np.asarray(relays, dtype=float) * pe.relay_cycles)


def xy_route(d_rows, d_cols):
    """(hops, turns) of a dimension-ordered (XY) route over a displacement of `d_rows` rows and `d_cols`
    columns: Manhattan hops, and one turn when the route moves along both dimensions."""
    dr, dc = np.abs(np.asarray(d_rows, dtype=float)), np.abs(np.asarray(d_cols, dtype=float))
    return dr + dc, ((dr > 0) & (dc > 0)).astype(float)


def xy_path_cycles(d_rows, d_cols, pe, relays=0):
    """Latency of one XY route over (`d_rows`, `d_cols`), with `relays` store-and-forward stages on it."""
    hops, turns = xy_route(d_rows, d_cols)
    return path_cycles(hops, turns, relays, pe)


WAVELET_BYTES = 4.0  # a WSE wavelet's payload: 32 bits (Cerebras SDK, "A Conceptual View": the fabric moves
                     # 32-bit wavelets, one per cycle on each link), the unit every volume here counts


def wavelets(elements, element_bytes, pe, packed=False):
    """Link cycles that carry `elements` values of `element_bytes` each over one link, counted in wavelets.

    Unpacked (the default reading: the SDK's fabric descriptors send one 16- or 32-bit element per wavelet, as
    WaferLLM's kernels do), every element takes its own 32-bit wavelet, or `ceil(element_bytes / 4)` of them when
    it is wider; packed, elements fill wavelets end to end. A link moves `link_bytes_per_cycle` bytes a cycle, so a
    wavelet takes 4 / `link_bytes_per_cycle` cycles: one on the WSE (4 bytes), half on a link twice as wide.
    """
    elements = np.asarray(elements, dtype=float)
    per = np.asarray(element_bytes, dtype=float) / WAVELET_BYTES
    count = np.ceil(elements * per) if packed else elements * np.ceil(per)
    return count * (WAVELET_BYTES / np.asarray(pe.link_bytes_per_cycle, dtype=float))


def program_rectangle(pe):
    """(rows, cols) of PEs a program can use: the fabric less what the host-I/O framework takes."""
    return pe.fabric_rows - pe.kernel_margin_rows, pe.fabric_cols - pe.kernel_margin_cols


def fits(rows, cols, pe):
    """Whether a region of `rows` × `cols` PEs fits the program rectangle (either orientation)."""
    r, c = np.asarray(rows), np.asarray(cols)
    pr, pc = program_rectangle(pe)
    return ((r <= pr) & (c <= pc)) | ((r <= pc) & (c <= pr))


def seconds(cycles, pe):
    """Cycles to seconds at the PE clock."""
    return np.asarray(cycles, dtype=float) / pe.clock_hz


def mac_cycles(rows, length, pe, element_bytes=2, weight_bytes=None):
    """Cycles of `rows` SIMD multiply-accumulate instructions over vectors of `length` elements.

    The FMAC datapath does `fmac_width` 16-bit MACs per cycle (half as many 32-bit ones); a vector shorter
    than the datapath still takes a whole cycle, so short vectors run below peak (WaferLLM's GEMV issues
    one vector FMAC per input element over its output slice). The width follows the activations
    (`element_bytes`: the PE multiplies in their format); the SRAM bounds the rate too (`memory_cycles`, where a
    stored weight of `weight_bytes` counts at its own size).
    """
    width = pe.fmac_width * 2.0 / np.asarray(element_bytes, dtype=float)
    simd = np.asarray(rows, dtype=float) * np.ceil(np.asarray(length, dtype=float) / width)
    return np.maximum(simd, memory_cycles(rows, length, pe, element_bytes, weight_bytes))


def sram_bytes_per_cycle(pe):
    """One PE's share of the wafer's SRAM bandwidth, bytes per cycle (inf when the preset does not state it)."""
    total = getattr(pe, "sram_bw_total_bytes_per_s", None)
    if total is None:
        return np.inf
    return np.asarray(total, dtype=float) / pe.pe_count / pe.clock_hz


def memory_cycles(rows, length, pe, element_bytes=2, weight_bytes=None):
    """Cycles the SRAM needs for `rows` × `length` MACs whose `mac_memory_operands` operands each read or write
    SRAM (the pe_mac_rate reading; 0 or unset: no bound). One operand is the stored matrix's element (weight,
    cached key or value: a GEMV's vector operand runs along its row), at `weight_bytes` (its format; unset:
    `element_bytes`); the rest (accumulator in and out) are activations of `element_bytes`. CS-3: 21 PB/s / 900k
    PEs / 1.1 GHz = 21.2 B per cycle; 16-bit weights, 3 operands of 2 B: 3.5 MACs per cycle, below the 8-wide
    SIMD; FP8 weights, 1 + 2 + 2 B: 4.2; CS-2's 4-wide SIMD at 21.4 B per cycle is 3.6 (16-bit)."""
    operands = getattr(pe, "mac_memory_operands", None)
    if operands is None:
        return 0.0
    macs = np.asarray(rows, dtype=float) * np.asarray(length, dtype=float)
    nbytes = macs * operands * element_bytes
    if weight_bytes is not None:   # the weight's bytes in place of one activation's (0 when they are equal)
        nbytes = nbytes + macs * np.minimum(operands, 1.0) * (np.asarray(weight_bytes, dtype=float) - element_bytes)
    return np.where(np.asarray(operands) > 0, np.ceil(nbytes / sram_bytes_per_cycle(pe)), 0.0)
