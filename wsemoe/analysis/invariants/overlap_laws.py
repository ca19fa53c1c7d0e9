"""Invariant of two micro-batches taking turns at node level (workload.comm_overlap: microbatch): the overlap buys
throughput, never a shorter wait for a token, first or next (docs/cost-model.md, "Serving metrics").
"""

from __future__ import annotations

import numpy as np

from wsemoe.analysis.invariants.cases import Case
from wsemoe.analysis.invariants.checking import Checker
from wsemoe.analysis.invariants.registry import invariant, node_rows

WAITS = ("tpot_s", "ttft_s")   # a sequence's wait for its next token, and a request's for its first


def _interleaved(case: Case) -> np.ndarray:
    """Node-level inference rows whose micro-batches take turns."""
    return (node_rows(case) & (case.inputs("workload.comm_overlap") == "microbatch")
            & np.isin(case.inputs("workload.mode"), ["decode", "prefill"]))


def _serial_frames(case: Case) -> dict:
    """The grid with those rows run serially (comm_overlap none), every other input kept."""
    rows = _interleaved(case)
    if not rows.any():
        return {}
    given = case.inputs("workload.comm_overlap")
    return {"serial": {"workload.comm_overlap": np.where(rows, "none", given).astype(object)}}


@invariant("two micro-batches taking turns never shorten a token's wait: TPOT and TTFT under comm_overlap "
           "microbatch are at least their serial values (comm_overlap none)",
           "each micro-batch's own layer waits for the other's core, 2·max(core, comm) ≥ core + comm, and the two "
           "micro-batches' prompts are prefilled taking turns the same way; only the tokens per step double",
           _serial_frames)
def interleaving_never_shortens_a_tokens_wait(chk: Checker, case: Case):
    frames = case.variants(_serial_frames(case))
    if not frames:
        return chk.skip("no node-level inference point under comm_overlap microbatch in this config")
    base, serial = case.outputs(), frames["serial"]
    for col in (c for c in WAITS if c in base and c in serial):
        mb, one = base[col].to_numpy(float), serial[col].to_numpy(float)
        rows = _interleaved(case) & np.isfinite(mb) & np.isfinite(one)
        chk.compare(col, mb, one, ">=", ("microbatch", "serial"), rows)
