"""GEMV and GEMM on a rectangle of PEs with the weights split in 2D: local MACs, input broadcast along one
axis, partial sums reduced along the other, and what each costs. Scalars or arrays that broadcast; numpy.

A weight matrix W (k × n) lies on a `k_split` × `n_split` rectangle: PE (i, j) holds the block of rows
i·k/k_split… and columns j·n/n_split…. A token's input x (length k) is split the same way along the k
axis and replicated along the n axis (either already there, as an all-reduce leaves it, or broadcast from
one PE of each line); each PE multiplies its block, and the partial sums (n/n_split each) are reduced
along the k axis (a line of k_split PEs, `collectives`). With `tokens` tokens the stages pipeline:

    stage cycles   s = [MACs per token, reduce volume per token, (broadcast volume per token)]
    cycles         = max(tokens · s) + (Σ s − max s) + reduce/broadcast latency + overhead
    overhead       = op_overhead_cycles · (local kernels + collectives invoked)

At one token this is MACs + reduce volume + latency + overhead (nothing overlaps a single GEMV); with
many tokens the busiest stage sets the pace (docs/cost-model.md, "The wafer at PE level").
"""

from __future__ import annotations

import numpy as np

from wsemoe.cost.wafer import collectives
from wsemoe.cost.wafer.fabric import mac_cycles, path_cycles, seconds, wavelets

BOUNDS = ("compute", "link", "latency", "overhead")  # the largest term of an operator, by index


def blocks(k, n, k_split, n_split):
    """(rows, cols) of the weight block one PE holds: ⌈k / k_split⌉ × ⌈n / n_split⌉."""
    return (np.ceil(np.asarray(k, dtype=float) / k_split), np.ceil(np.asarray(n, dtype=float) / n_split))


def pipeline(stages, tokens) -> list:
    """Each stage's share of `tokens` items through sequential stages of the given per-item cycles: the
    slowest stage paces the stream (tokens × its cycles), every other adds its time once (fill and
    drain). The shares add up to the pipeline's cycles."""
    stages = np.stack(np.broadcast_arrays(*[np.asarray(s, dtype=float) for s in stages]))
    pacing = np.arange(len(stages)).reshape((-1,) + (1,) * (stages.ndim - 1)) == np.argmax(stages, axis=0)
    return list(np.where(pacing, np.asarray(tokens, dtype=float) * stages, stages))


def terms(mac, link, latency, overhead) -> dict:
    """An operator's terms, their sum (`cycles`) and the largest of them (`bound`, index into BOUNDS)."""
    stack = np.stack(np.broadcast_arrays(*[np.asarray(t, dtype=float) for t in (mac, link, latency, overhead)]))
    return {"compute_cycles": stack[0], "link_cycles": stack[1], "latency_cycles": stack[2],
            "overhead_cycles": stack[3], "cycles": stack.sum(axis=0), "bound": np.argmax(stack, axis=0)}


def gemv(k, n, k_split, n_split, pe, tokens=1, element_bytes=2, output="allreduce", pattern="tree",
         levels=2, group=None, input_broadcast=False, kernels=1, packed=False, weight_bytes=None) -> dict:
    """y = x·W for `tokens` inputs, W (k × n) on a `k_split` × `n_split` rectangle (module docstring).

    `output`: `allreduce` leaves y on every PE of each k line (what the next operator reads without a
    transpose), `reduce` on one root per line, `none` leaves the partial sums (a caller that fuses the
    reduction of several operators). `input_broadcast` charges broadcasting x along the n axis first.
    `kernels` counts local kernel invocations (a fused QKV issued as three GEMVs is 3). x, y and the partial
    sums are activations of `element_bytes`; W's elements are `weight_bytes` each (its format: FP8 1, BF16 2;
    unset: `element_bytes`), what the MACs read from SRAM (fabric.memory_cycles). Returns the terms
    (`compute_cycles`, `link_cycles`, `latency_cycles`, `overhead_cycles`), `cycles`, `seconds`, `bound`
    (index into BOUNDS), `weight_bytes_per_pe` and the reduction's `hops` and `relays`.
    """
    kt, nt = blocks(k, n, k_split, n_split)
    stages, cost = [mac_cycles(kt, nt, pe, element_bytes, weight_bytes)], collectives.Cost(0.0, 0.0, 0.0)
    calls = np.asarray(kernels, dtype=float)
    if output != "none":
        b = wavelets(nt, element_bytes, pe, packed)
        cost = (collectives.allreduce if output == "allreduce" else collectives.reduce)(k_split, b, pattern, levels, group)
        stages, calls = stages + [cost.volume], calls + 1
    if input_broadcast:
        bc = collectives.broadcast(n_split, wavelets(kt, element_bytes, pe, packed))
        stages, calls = stages + [bc.volume], calls + 1
        cost = cost + collectives.Cost(0.0, bc.hops, bc.relays, bc.turns)
    shares = pipeline(stages, tokens)
    out = terms(shares[0], sum(shares[1:]), cost.latency(pe), calls * pe.op_overhead_cycles)
    return {**out, "seconds": seconds(out["cycles"], pe), "hops": cost.hops, "relays": cost.relays,
            "weight_bytes_per_pe": kt * nt * (element_bytes if weight_bytes is None else weight_bytes)}


def cyclic_gemm(m, k, n, p, pe, algorithm="meshgemm", element_bytes=2, packed=False, weight_bytes=None) -> dict:
    """C = A·B (m×k by k×n) on a p × p square by p compute-shift steps (Cannon's scheme).

    Each step multiplies the local tiles (⌈m/p⌉·⌈k/p⌉ vector FMACs over ⌈n/p⌉) while the A tile shifts
    along X and the B tile along Y (both through the PE's ramp); a step lasts the longer of the two plus
    the shift's critical path and one invocation overhead. `meshgemm` (WaferLLM §5) interleaves the ring so
    every shift is at most 2 hops; `cannon` shifts by one, so its head-to-tail wrap crosses p − 1 hops.
    The one-time alignment is not charged (equal for both). Returns the terms, `cycles`, `seconds`,
    `efficiency` (MAC cycles over total) and `bound`. B is the weight (its FMAC vector operand, `weight_bytes`
    each; unset: `element_bytes`), A the activations.
    """
    p = np.asarray(p, dtype=float)
    mt, kt, nt = (np.ceil(np.asarray(x, dtype=float) / p) for x in (m, k, n))
    compute = mac_cycles(mt * kt, nt, pe, element_bytes, weight_bytes)
    volume = wavelets(mt * kt + kt * nt, element_bytes, pe, packed) if weight_bytes is None else \
        wavelets(mt * kt, element_bytes, pe, packed) + wavelets(kt * nt, weight_bytes, pe, packed)
    if algorithm == "meshgemm":
        hops = np.minimum(2.0, p - 1)
    elif algorithm == "cannon":
        hops = p - 1
    else:
        raise ValueError(f"cyclic GEMM algorithm {algorithm!r}: meshgemm or cannon")
    shift = path_cycles(hops, 0.0, 1.0, pe)
    out = terms(p * compute, p * np.maximum(volume - compute, 0.0), p * shift, p * pe.op_overhead_cycles)
    return {**out, "seconds": seconds(out["cycles"], pe), "efficiency": p * compute / out["cycles"]}


def gemm(m, k, n, k_split, n_split, pe, algorithm="stream", **options) -> dict:
    """C = A·B for m tokens (rows of A). `stream`: weights stay put and the m tokens stream through
    `gemv` (the serving and expert case); `meshgemm`/`cannon`: `cyclic_gemm` on a square of
    `k_split` = `n_split` PEs (the prefill case)."""
    if algorithm == "stream":
        return gemv(k, n, k_split, n_split, pe, tokens=m, **options)
    return cyclic_gemm(m, k, n, k_split, pe, algorithm, **options)
