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
            core, core_idx = roofline(merged, True)
            labels = [f"{name}:{k}" for k in keys]
        else:
            per_stage = [roofline(s.terms, overlap == "stage") for s in stages]
            core = sum(t for t, _ in per_stage)
            slowest = np.stack(np.broadcast_arrays(*[t for t, _ in per_stage])).argmax(axis=0)
            offsets = np.cumsum([0] + [len(s.terms) for s in stages[:-1]])
            inner = np.stack(np.broadcast_arrays(*[i + o for (_, i), o in zip(per_stage, offsets)]))
            core_idx = np.take_along_axis(inner, slowest[None, ...], axis=0)[0]
            labels = [f"{s.name}:{k}" for s in stages for k in s.terms]
        self.comm = {k: v for s in stages for k, v in s.comm.items()}
        self.comm_s = sum(self.comm.values()) if self.comm else 0.0
        self.core_s = core
        self.time_s = core + self.comm_s
        # Bound as an index into `labels`: the core's binding term, or the largest communication
        # phase when communication outweighs the core.
        self.labels = labels + [f"comm:{k.removesuffix('_s')}" for k in self.comm]
        self.bound_idx = np.asarray(core_idx)
        if self.comm:
            stack = np.stack(np.broadcast_arrays(*[np.asarray(v, float) for v in self.comm.values()]))
            comm_idx = len(labels) + stack.argmax(axis=0)
            self.bound_idx = np.where(np.asarray(self.comm_s) > np.asarray(core), comm_idx, core_idx)

    def bound(self):
        """`layer:term` labels of the binding term, per point."""
        return np.asarray(self.labels, dtype=object)[self.bound_idx]
