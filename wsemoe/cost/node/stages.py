"""Rooflines of stages and layers: time is the max (or, without overlap, the sum) of named terms."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class Coded(NamedTuple):
    """Labels as integer codes into a tuple of names: no Python string per point until decoded."""

    codes: np.ndarray
    labels: tuple

    def decode(self) -> np.ndarray:
        """The labels themselves, as an object array of the codes' shape."""
        return np.asarray(self.labels, dtype=object)[self.codes]


def roofline(terms: dict, overlap: bool):
    """Time from named terms (s) and the index of the binding (largest) term.

    With overlap, compute, weight movement and memory traffic proceed concurrently and the
    slowest one binds; without it they serialize and the largest still names the bound.
    """
    vals = [np.asarray(v, dtype=float) for v in terms.values()]
    best, idx = argmax_of(vals)
    return (best if overlap else sum(vals)), idx


def argmax_of(vals):
    """(elementwise max, index of the first maximal array) of a few arrays, without stacking them.

    A running comparison touches each array once; numpy's argmax over a stacked axis is strided
    and several times slower for the few-terms × many-points shape the cost model has.
    """
    best = vals[0]
    idx = np.zeros(np.broadcast_shapes(*(np.shape(v) for v in vals)), dtype=np.int8)
    for i, v in enumerate(vals[1:], start=1):
        idx = np.where(v > best, np.int8(i), idx)
        best = np.maximum(best, v)
    return best, idx


class Stage:
    """A stage of a layer: named concurrent terms, a serial fixed cost (kernel launches) and serial
    communication phases after it."""

    def __init__(self, name: str, terms: dict, comm: dict | None = None, launch=0.0):
        self.name, self.terms, self.comm, self.launch = name, terms, comm or {}, launch

    def core(self, overlap: bool):
        """Roofline of the stage's own terms (compute, weights, memory) plus its kernel launches, without
        communication: a kernel's launch gap delays it whatever bounds it."""
        return roofline(self.terms, overlap)[0] + self.launch

    def time(self, overlap: bool, comm_overlap: str = "none"):
        """Stage time on its own: roofline of its terms plus its communication (or the larger of the two when
        two micro-batches interleave)."""
        return combine(self.core(overlap), sum(self.comm.values()), comm_overlap)


def combine(core, comm, comm_overlap: str):
    """Time of compute followed by communication: their sum, or with two interleaved micro-batches
    ("microbatch") their maximum: one micro-batch communicates while the other computes."""
    return np.maximum(core, comm) if comm_overlap == "microbatch" else core + comm


class Layer:
    """Stages that run back to back; `overlap` says how far weight movement hides behind compute.

    "layer": weights stream continuously across the layer (Cerebras weight streaming), so each
    term is summed over stages before the roofline; "stage": each stage is its own roofline;
    "none": every term serializes. Kernel launches add to the core in every mode. Communication follows the
    core (`comm_overlap: none`) or hides behind another micro-batch's core (`microbatch`: layer time =
    max(core, communication)).
    """

    def __init__(self, name: str, stages: list, count, overlap: str, comm_overlap: str = "none"):
        self.name, self.stages, self.count, self.overlap = name, stages, count, overlap
        if overlap == "layer":
            keys = list(dict.fromkeys(k for s in stages for k in s.terms))
            merged = {k: sum(s.terms.get(k, 0.0) for s in stages) for k in keys}
            core, core_idx = roofline(merged, True)
            labels = [f"{name}:{k}" for k in keys]
        else:
            per_stage = [roofline(s.terms, overlap == "stage") for s in stages]
            core = sum(t for t, _ in per_stage)
            _, slowest = argmax_of([t for t, _ in per_stage])
            offsets = np.cumsum([0] + [len(s.terms) for s in stages[:-1]])
            inner = np.stack(np.broadcast_arrays(*[i + o for (_, i), o in zip(per_stage, offsets)]))
            core_idx = np.take_along_axis(inner, slowest[None, ...].astype(np.intp), axis=0)[0]
            labels = [f"{s.name}:{k}" for s in stages for k in s.terms]
        # Kernel launches are serial: they add to the core, and bind when they outweigh the roofline.
        launch = sum(s.launch for s in stages)
        core_idx = np.where(np.asarray(launch) > np.asarray(core), len(labels), core_idx)
        core = core + launch
        labels = labels + [f"{name}:launch"]
        # Phases of one kind in two stages (a dense layer's two TP all-reduces) add up under one name.
        self.comm = {}
        for s in stages:
            for k, v in s.comm.items():
                self.comm[k] = self.comm[k] + v if k in self.comm else v
        self.comm_s = sum(self.comm.values()) if self.comm else 0.0
        self.core_s = core
        self.time_s = combine(core, self.comm_s, comm_overlap)
        # Bound as an index into `labels`: the core's binding term, or the largest communication
        # phase when communication outweighs the core.
        self.labels = labels + [f"comm:{k.removesuffix('_s')}" for k in self.comm]
        self.bound_idx = np.asarray(core_idx)
        if self.comm:
            _, arg = argmax_of([np.asarray(v, float) for v in self.comm.values()])
            comm_idx = len(labels) + arg
            self.bound_idx = np.where(np.asarray(self.comm_s) > np.asarray(core), comm_idx, core_idx)
