"""Collective schedules of one MoE layer as sequential steps: attention all-reduce, MoE output reduction, gradients.

Every step is a unit traffic pattern (bytes per byte of one TP member's message M, the attention output
of its group's tile; transfers along ring edges, never an N×N matrix) and the number of sequential ring rounds it takes. A ring over p members moves a
reduce-scatter in p−1 rounds, each member sending M/p to its successor, so every ring edge carries
(p−1)/p·M; an all-gather is the same traffic in p−1 more rounds. `directions = 2` sends half of every
message each way round (a ring edge i→i+1 and its reverse i+1→i each carry half).

Where the tokens must be. The attention of the next layer needs every token of a group, complete, on
every member of the group. Two data flows give that:

- **replicated** (token sources `nearest`, `ftd`): reduce-scatter + all-gather (= the ring all-reduce)
  so that every member holds all of its group's tokens and whichever member is best placed sends them to
  an expert. Combine returns each expert's output to the member that sent its tokens, so every member
  ends with a *partial* sum of each token's expert outputs: a second all-reduce over the group (the
  `reduce` phase) adds them up and leaves the sum on every member.
- **slice** (Megatron-style sequence split): reduce-scatter, each member then owns 1/tp of the tokens,
  sends their copies itself and receives their outputs back complete; the all-gather before the next
  attention completes the all-reduce. No second reduction.

Hierarchical ER (`her`, W wafers, t = tp members per wafer): each wafer runs its own groups (ER inside
the wafer); the groups at the same place on every wafer form a family. Replicated flow:
1. on-wafer reduce-scatter over the home group's ring: member i holds slice i (M/t) of its wafer's output;
2. cross-wafer all-gather over the dies at the same place on every wafer (`cross_rings`): member i on
   every wafer now holds slice i of the family's W groups;
3. on-wafer all-gather of those W slices over each wafer's copy of the group: every member of every
   copy holds all W·T_j tokens of the family, so dispatch takes the token source inside the expert's own
   FTD tile on the expert's own wafer and never crosses a wafer boundary.
Steps 1 + 2 + 3 move the bytes of the home wafer's ring all-reduce plus (W−1)·M per member, the
replication that replaces the cross-wafer dispatch (k·(W−1)/W token copies per token). The output
reduction mirrors it in reverse order (reduce-scatter of W slices on each wafer, cross-wafer
reduce-scatter back to the home wafer, all-gather at home), every step on the reversed ring.
Slice flow: 1, then 2, then the home all-gather of one slice (so the home wafer's reduce-scatter and
all-gather are exactly its ring all-reduce); dispatch from the slice owner on the expert's wafer; the
output reduction is the cross-wafer reduce-scatter of step 2's slices back home. On one wafer every
hierarchical schedule equals the flat ER one.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from wsemoe.cost.fabric.mapping import Placement
from wsemoe.cost.fabric.patterns import Transfers


@dataclass(frozen=True, eq=False)
class StepTraffic:
    """One sequential step: unit traffic (per byte of a member's message) as a pattern, and its ring rounds."""

    pattern: object   # a cost.patterns form: Transfers, Outer or Dense
    rounds: int
    ring: bool = True   # ring steps have a bidirectional variant; one-shot steps (dispatch) do not

    @property
    def traffic(self) -> np.ndarray:
        """The step's N×N matrix (materialised on demand: structures never keep it)."""
        return self.pattern.dense()


def ring_transfers(rings: np.ndarray, per_edge: float, n: int, directions: int = 1) -> Transfers:
    """Each ring edge i → i+1 (last → first included) carries `per_edge`; with 2 directions, half each way."""
    rings = np.asarray(rings, dtype=np.int64)
    if rings.ndim != 2 or rings.shape[1] < 2 or per_edge == 0:
        return Transfers.empty(n)
    src, dst = rings.ravel(), np.roll(rings, -1, axis=1).ravel()
    vol = np.full(src.size, float(per_edge))
    if directions == 1:
        return Transfers(n, src, dst, vol)
    # Rings share no node, so each directed pair gets at most one edge each way: ½ + ½ adds up exactly.
    return Transfers(n, np.concatenate([src, dst]), np.concatenate([dst, src]), np.concatenate([0.5 * vol, 0.5 * vol]))


def ring_traffic(rings: np.ndarray, per_edge: float, n: int, directions: int = 1) -> np.ndarray:
    """`ring_transfers` as an N×N matrix."""
    return ring_transfers(rings, per_edge, n, directions).dense()


def _ring(rings, per_edge, rounds, n, directions, reverse=False) -> list[StepTraffic]:
    """One ring step, dropped when it moves nothing; `reverse` runs it the other way round."""
    t = ring_transfers(rings, per_edge, n, directions)
    if not t.any():
        return []
    return [StepTraffic(t.T if reverse else t, int(rounds))]


def home_steps(pl: Placement, directions: int = 1) -> list[StepTraffic]:
    """Reduce-scatter + all-gather over every group's own ring: the ring all-reduce. It is the whole collective
    of a flat placement, and under HER what a dense layer needs (it dispatches nothing to other wafers)."""
    n, t = pl.num_nodes, pl.tp
    return 2 * _ring(pl.rings, (t - 1) / t, t - 1, n, directions)


def attention_steps(pl: Placement, flow: str, directions: int = 1) -> list[StepTraffic]:
    """Steps of the collective after attention (per unit of one member's message M)."""
    n, t, w = pl.num_nodes, pl.tp, pl.num_wafers
    if pl.cross_rings is None:                                   # flat: reduce-scatter + all-gather = all-reduce
        return home_steps(pl, directions)
    rs = _ring(pl.rings, (t - 1) / t, t - 1, n, directions)
    cross = _ring(pl.cross_rings, (w - 1) / t, w - 1, n, directions)
    gather = (t - 1) * (w if flow == "replicated" else 1) / t   # every wafer gathers W slices, or home gathers its own
    return rs + cross + _ring(pl.rings, gather, t - 1, n, directions)


def reduce_steps(pl: Placement, flow: str, directions: int = 1) -> list[StepTraffic]:
    """Steps of the MoE output reduction (per unit of M), the mirror of what the flow needs after combine."""
    n, t, w = pl.num_nodes, pl.tp, pl.num_wafers
    if flow == "slice":   # owners hold complete outputs; only HER's other wafers must send theirs home
        return [] if pl.cross_rings is None else _ring(pl.cross_rings, (w - 1) / t, w - 1, n, directions, True)
    return [StepTraffic(s.pattern.T, s.rounds) for s in attention_steps(pl, flow, directions)]


def gradient_steps(pl: Placement, directions: int = 1) -> list[StepTraffic]:
    """Data-parallel all-reduce of attention-weight gradients: rank i of every group forms one ring (tp rings)."""
    g = pl.num_groups
    return _ring(pl.rings.T, 2.0 * (g - 1) / g, 2 * (g - 1), pl.num_nodes, directions)


def switch_reduction_peaks() -> tuple[float, float]:
    """(send, receive) bytes per port per unit of M of an in-switch all-reduce (NVLink SHARP).

    Each device writes its message into the switch once and reads the reduced result once; a ring sends
    and receives 2(p−1)/p·M. The switch reduces in flight, so the device ports carry M each way.
    """
    return 1.0, 1.0
