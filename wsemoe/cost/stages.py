"""Rooflines of stages and layers: time is the max (or, without overlap, the sum) of named terms."""

from __future__ import annotations

import numpy as np


def roofline(terms: dict, overlap: bool):
    """Time from named terms (s) and the index of the binding (largest) term.

    With overlap, compute, weight movement and memory traffic proceed concurrently and the
    slowest one binds; without it they serialize and the largest still names the bound.
    """
    stack = np.stack(np.broadcast_arrays(*[np.asarray(v, dtype=float) for v in terms.values()]))
    time = stack.max(axis=0) if overlap else stack.sum(axis=0)
    return time, stack.argmax(axis=0)


def names_at(names, idx):
    """Names of the binding terms for an index array."""
    return np.asarray(np.asarray(list(names), dtype=object)[idx], dtype=object)


class Stage:
    """A stage of a layer: named concurrent terms, plus serial communication phases after it."""

    def __init__(self, name: str, terms: dict, comm: dict | None = None):
        self.name, self.terms, self.comm = name, terms, comm or {}

    def time(self, overlap: bool):
        """Stage time on its own: roofline of its terms plus its communication."""
        core, _ = roofline(self.terms, overlap)
        return core + sum(self.comm.values())


class Layer:
    """Stages that run back to back; `overlap` says how far weight movement hides behind compute.

    "layer": weights stream continuously across the layer (Cerebras weight streaming), so each
    term is summed over stages before the roofline; "stage": each stage is its own roofline;
    "none": every term serializes. Communication is serial in every mode.
    """

    def __init__(self, name: str, stages: list, count, overlap: str):
        self.name, self.stages, self.count, self.overlap = name, stages, count, overlap
        if overlap == "layer":
            keys = list(dict.fromkeys(k for s in stages for k in s.terms))
            merged = {k: sum(s.terms.get(k, 0.0) for s in stages) for k in keys}
            core, idx = roofline(merged, True)
            self.core_bound = names_at(keys, idx)
        else:
            core = sum(s.time(overlap == "stage") - sum(s.comm.values()) for s in stages)
            per_stage = [roofline(s.terms, overlap == "stage")[0] for s in stages]
            slowest = np.stack(np.broadcast_arrays(*per_stage)).argmax(axis=0)
            inner = [names_at(list(s.terms), roofline(s.terms, True)[1]) for s in stages]
            labels = np.stack(np.broadcast_arrays(*[np.char.add(f"{s.name}:", i.astype(str)) for s, i in zip(stages, inner)]))
            self.core_bound = np.take_along_axis(labels, slowest[None, ...], axis=0)[0]
        self.comm = {k: v for s in stages for k, v in s.comm.items()}
        self.comm_s = sum(self.comm.values()) if self.comm else 0.0
        self.core_s = core
        self.time_s = core + self.comm_s

    def bound(self):
        """`layer:term`, or the largest communication phase when communication outweighs the core."""
        core = np.char.add(f"{self.name}:", np.asarray(self.core_bound).astype(str))
        if not self.comm:
            return core
        stack = np.stack(np.broadcast_arrays(*[np.asarray(v, float) for v in self.comm.values()]))
        comm_name = names_at([f"comm:{k.removesuffix('_s')}" for k in self.comm], stack.argmax(axis=0)).astype(str)
        return np.where(np.asarray(self.comm_s) > np.asarray(self.core_s), comm_name, core)
