"""A byte-balanced contiguous split of a served model into pipeline stages: the embedding, every layer in order
(each with its own bytes, so layers of different kinds or sizes split as they are) and the head, cut into `W`
contiguous stages whose fullest holds as few bytes as any contiguous cut allows. Numpy only, one model at a time.

The even split of layers (⌊w·L/W⌋, regions.stage_layers) ignores the embedding and the head, so the first and last
stages carry them on top of a full share of layers: Qwen3-235B at 8K context needs 14 CS-3 that way where this split
fits 12. Not yet what `regions` uses (issue 26 left the wiring: the region layouts, the KV room and the wafer count
read the even split); `fewest_stages` and `peak` are its building blocks, `layer_items` lays out a model's bytes.

The optimum is found by bisection on the stage capacity: the greedy pass (fill a stage until the next item would
overflow it) needs the fewest stages of any contiguous split for a given capacity, so the least capacity that needs
at most `W` stages is the least peak; it is one of the contiguous sums, and the bisection ends on it.
"""

from __future__ import annotations

import numpy as np

ITERATIONS = 64   # bisection steps on the capacity: far past float precision for any wafer's bytes


def fewest_stages(items, capacity) -> int:
    """Stages the greedy contiguous fill needs at `capacity` bytes per stage (a large number when one item does
    not fit at all)."""
    items = np.asarray(items, dtype=float)
    if items.size == 0:
        return 0
    if items.max() > capacity:
        return items.size + 1
    stages, load = 1, 0.0
    for x in items:
        if load + x > capacity:
            stages, load = stages + 1, 0.0
        load += x
    return stages


def peak(items, stages: int) -> float:
    """The least bytes of the fullest stage over every contiguous split of `items` into at most `stages` stages."""
    items = np.asarray(items, dtype=float)
    if items.size == 0:
        return 0.0
    lo, hi = float(items.max()), float(items.sum())
    if fewest_stages(items, lo) <= stages:
        return lo
    for _ in range(ITERATIONS):
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if fewest_stages(items, mid) <= stages else (mid, hi)
    return max(loads(items, hi))


def loads(items, capacity) -> list[float]:
    """Bytes of each stage of the greedy contiguous fill at `capacity`."""
    out, load = [], 0.0
    for x in np.asarray(items, dtype=float):
        if load > 0 and load + x > capacity:
            out.append(load)
            load = 0.0
        load += x
    return out + [load]


def split(items, stages: int) -> list[tuple[int, int]]:
    """(first, last + 1) item indices of each stage of a least-peak contiguous split (greedy at the least peak)."""
    cap, bounds, start, load = peak(items, stages), [], 0, 0.0
    for i, x in enumerate(np.asarray(items, dtype=float)):
        if load + x > cap and i > start:
            bounds.append((start, i))
            start, load = i, 0.0
        load += x
    return bounds + [(start, len(items))]


def layer_items(embedding: float, layer_bytes, head: float) -> np.ndarray:
    """The items a pipeline splits, in order: the embedding, each layer's bytes (a per-layer vector, any kinds
    and sizes), the head."""
    return np.concatenate([[float(embedding)], np.asarray(layer_bytes, dtype=float).ravel(), [float(head)]])


def fewest_wafers(items, wafer_bytes: float, most: int) -> float:
    """The fewest stages of at most `wafer_bytes` each that hold the items in order (NaN past `most`)."""
    n = fewest_stages(items, wafer_bytes)
    return float(n) if n <= most else float("nan")
