"""The registry of cost-model invariants: each law is a function registered with `@invariant(statement, reason)`.

`analysis/invariants/laws.py` holds the laws (and imports the modules with more of them); `wsemoe invariants` and the
project's tests run every registered one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from wsemoe.analysis.invariants.cases import Case
from wsemoe.analysis.invariants.checking import Checker, Outcome

TIMES = ("step_time_s", "moe_layer_time_s", "dense_layer_time_s", "head_time_s")
# SRAM serving's time law is its objective: the period between a sequence's steps (prefill: the TTFT). Its layout is
# the best candidate for that period, so the layer times inside it may move either way when hardware changes.
SERVING_TIMES = ("pipeline_period_s",)
SERVING_ONLY = "SRAM serving only (its laws are the serving_* invariants)"   # the skip of a node-level law


def node_rows(case: Case) -> np.ndarray:
    """Grid rows the node-level model evaluates (every weight source but SRAM serving, which cost.wafer evaluates)."""
    return case.inputs("hardware.weight_source") != "sram"


def timed(case: Case, frame) -> list[tuple[str, np.ndarray]]:
    """(time column, rows it applies to) of every time law column the frame has: the node-level step and layers on
    node-level rows, the serving period on SRAM-serving rows."""
    node = node_rows(case)
    pairs = [(c, node) for c in TIMES] + [(c, ~node) for c in SERVING_TIMES]
    return [(c, rows) for c, rows in pairs if c in frame.columns and rows.any()]


@dataclass(frozen=True)
class Invariant:
    """A named physical law of the cost model, with the reason it must hold."""

    name: str
    statement: str
    reason: str
    check: Callable[[Checker, Case], Outcome | None]
    frames: Callable[[Case], dict] | None = None   # the changed grids it compares ({tag: changes}), if any

    def run(self, case: Case) -> Outcome:
        """The outcome of this invariant on one case."""
        chk = Checker(case)
        return self.check(chk, case) or chk.outcome


REGISTRY: dict[str, Invariant] = {}


def invariant(statement: str, reason: str, frames: Callable[[Case], dict] | None = None):
    """Register the decorated function as an invariant named after it. `frames(case)` declares the
    changed grids the check will ask for, so a runner can evaluate every invariant's frames at once."""
    def register(fn):
        REGISTRY[fn.__name__] = Invariant(fn.__name__, statement, reason, fn, frames)
        return fn
    return register
