"""Invariant of the work a step does: longer sequences, more of them, or more experts per token never make a
node-level point faster nor need less memory (docs/ci.md). SRAM serving re-lays its regions by bytes per PE, so its
rows have laws of their own (serving_laws.py).
"""

from __future__ import annotations

import numpy as np

from wsemoe.analysis.invariants.cases import Case
from wsemoe.analysis.invariants.checking import Checker
from wsemoe.analysis.invariants.registry import SERVING_ONLY, TIMES, invariant, node_rows
from wsemoe.config.checks import MAX_TOKEN_PAIRS
from wsemoe.specs.base import MAX_TOKENS

NEEDS = TIMES + ("mem_peak_node_bytes",)


def _more_work(case: Case) -> dict:
    """The grid with twice the sequences (`B×2`, the frame tiling_conserves_work evaluates too), twice the sequence
    length, and one more expert per token (where there is one)."""
    k, E = case.inputs("model.num_experts_per_tok"), case.inputs("model.num_experts")
    return {"B×2": {"workload.B": 2 * case.inputs("workload.B")},
            "seq_len×2": {"workload.seq_len": 2 * case.inputs("workload.seq_len")},
            "top-k+1": {"model.num_experts_per_tok": np.minimum(k + 1, E).astype(np.int64)}}


def _rows(case: Case) -> dict:
    """Node-level rows where each change is a valid point that changes something (B derived from tokens per device
    ignores B; the top-k cannot exceed E). A balancer re-plans its replicas for the load it sees, and one more
    expert per token flattens a skewed load (no expert takes more than every token: shares cap at 1/k), so it may
    place fewer replicas, holding and reading less: top-k+1 is compared without one."""
    B, G, S = (case.inputs(f"workload.{f}") for f in ("B", "G", "seq_len"))
    k, E = case.inputs("model.num_experts_per_tok"), case.inputs("model.num_experts")
    node = node_rows(case)
    own_b = np.array([t is None for t in case.inputs("workload.tokens_per_device")])
    unbalanced = np.array([b == "none" for b in case.inputs("balance.balancer")])
    return {"B×2": node & own_b & (2 * B <= MAX_TOKENS) & (2 * B * G * S <= MAX_TOKEN_PAIRS),
            "seq_len×2": node & (2 * S <= MAX_TOKENS) & (2 * B * G * S <= MAX_TOKEN_PAIRS),
            "top-k+1": node & (k < E) & unbalanced}


@invariant("more work is never faster: twice the sequences B, twice the sequence length, or one more expert per "
           "token never shortens the step, a layer or the head, nor lowers the peak memory per node",
           "each adds FLOPs, bytes or both and removes none; the router is one GEMM over every token whatever k is, "
           "and an expert seeing more rows runs at least as efficiently but never does less work", _more_work)
def more_work_is_never_faster(chk: Checker, case: Case):
    if not node_rows(case).any():
        return chk.skip(SERVING_ONLY)
    asked = _more_work(case)
    base, frames, rows = case.outputs(), case.variants(asked), _rows(case)
    for tag, more in frames.items():
        (path, after), = asked[tag].items()
        changes = {path: (case.inputs(path), np.asarray(after, dtype=float))}
        for col in (c for c in NEEDS if c in base.columns):
            chk.compare(col, more[col], base[col], ">=", (f"with {tag}", "as given"), rows[tag], changes)
