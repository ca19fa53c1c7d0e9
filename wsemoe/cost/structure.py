"""Structural communication terms, built once per unique (system, mapping, experts, collectives) combination.

A Structure holds, for each phase, its sequential steps with per-unit peaks by link class (on-wafer links,
wafer-crossing links or scale-out NICs, injection and ejection ports), their latency profiles and ring
rounds, plus the summed link loads for heat maps and migration budgets. Callers scale the peaks by bytes
(numpy broadcasting), so a sweep's cost grows with its number of points, not with points × mesh size.
Building is split in two cached layers: the expensive core (placement, balancing, dispatch) and the
collective schedules on top of it (ring directions, combine routing, in-switch reduction), which reuse it.
`cache_info()` tells how many structures were built.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from wsemoe.cost import balance, collectives, fabric, mesh, traffic
from wsemoe.cost import mapping as mp
from wsemoe.cost.collectives import StepTraffic


@dataclass(frozen=True, eq=False)
class Step:
    """One sequential step of a phase, per unit of its volume: peaks by class, latency profile, ring rounds."""

    max_link: float        # busiest class-0 link (on-wafer die-to-die link; none on a switch)
    max_cross: float       # busiest class-1 link (wafer-crossing link; a switch's scale-out NIC direction)
    max_inject: float
    max_eject: float
    profile: np.ndarray    # (K, 2) Pareto-maximal (class-0 hops, class-1 hops) of its transfers
    rounds: float          # sequential traversals: ring rounds, 1 for a one-shot phase


@dataclass(frozen=True, eq=False)
class PhasePeaks:
    """A phase: its steps, and statistics of its summed traffic (per unit of its volume)."""

    steps: tuple
    max_link: float        # busiest link of the summed loads, any class (heat-map scale, `<phase>_max_link_bytes`)
    max_hops: float
    mean_hops: float
    idle_share: float
    loads: mesh.LinkLoads | None = field(default=None, repr=False)
    traffic: np.ndarray | None = field(default=None, repr=False)


@dataclass(frozen=True, eq=False)
class Structure:
    """Everything about communication that depends only on structure, not on batch or bandwidth."""

    layout: fabric.Layout
    placement: mp.Placement
    experts: mp.ExpertPlacement
    phases: dict
    flow: str                  # "replicated" (tokens on every member, partial outputs reduced) or "slice"
    ring_step_hops: float      # longest hop distance between attention ring neighbours
    hot_overlap: float         # Jaccard of the hottest links of all-reduce and dispatch
    inter_ftd_share: float     # share of dispatch link load on links crossing FTD tiles (NaN without FTDs)
    inter_wafer_share: float   # share of dispatch link load on wafer-crossing links (NaN on one wafer or a switch)
    node_load: np.ndarray      # token copies each node's experts receive per unit dispatch (local included)
    expert_imbalance: float    # busiest node's expert load over the mean (the expert stage runs at its pace)
    imbalance_before: float    # the same without the balancer's replicas
    slots_max: int             # most expert copies any node holds (memory, weight reads)
    slots_before: int          # the same before balancing
    copies_moved: int          # new expert copies the balancer creates (migration)
    zipf_s: float              # Zipf exponent in use (solved when the balance sets a skew target; NaN otherwise)


class BalanceKey(NamedTuple):
    """What the expert placement depends on (hashable: it keys the structure cache)."""

    distribution: str = "uniform"
    zipf_s: float = 1.0
    seed: int = 0
    balancer: str = "none"
    spare_slots: int = 0
    histogram: tuple | None = None  # measured per-expert shares
    skew_target: float | None = None
    skew_devices: int | None = None
    split: str = "water-fill"
    policy: str = "hot"


UNIFORM = BalanceKey()


class Collectives(NamedTuple):
    """How collectives run: ring directions (1 or 2), combine routing ("xy" or "reverse"), in-switch reduction."""

    ring_directions: int = 1
    combine_routing: str = "xy"
    switch_reduction: bool = False


PLAIN = Collectives()


def expert_shares(num_experts: int, bal: BalanceKey, devices: int) -> tuple[np.ndarray, float]:
    """Per-expert popularity from the balance key, and the Zipf exponent used (solved for a skew target)."""
    if bal.distribution == "zipf":
        s = bal.zipf_s
        if bal.skew_target is not None:
            s = balance.calibrate_zipf(bal.skew_target, num_experts, bal.skew_devices or devices, bal.seed)
        return balance.zipf_shares(num_experts, s, bal.seed), float(s)
    if bal.distribution == "histogram":
        h = np.asarray(bal.histogram, dtype=float)
        if len(h) != num_experts:
            raise ValueError(f"histogram has {len(h)} experts, the model {num_experts}")
        return h / h.sum(), float("nan")
    return np.full(num_experts, 1.0 / num_experts), float("nan")


@functools.lru_cache(maxsize=64)
def _hop_split(layout: fabric.Layout) -> tuple[np.ndarray, np.ndarray]:
    return layout.hop_split()


def _step(layout: fabric.Layout, st: StepTraffic, routing: str = "xy") -> tuple[Step, mesh.LinkLoads | None]:
    """Peaks, profile and loads of one step's unit traffic."""
    t = st.traffic
    on, cross = _hop_split(layout)
    send, recv = t.sum(axis=1) - np.diag(t), t.sum(axis=0) - np.diag(t)
    loads = None
    if layout.topology == "mesh":
        route = mesh.yx_link_loads if routing == "reverse" else mesh.xy_link_loads
        loads = route(*layout.grid, t)
    l0, l1 = fabric.class_peaks(layout, loads, t)
    used = (t > 0) & ~np.eye(layout.nodes, dtype=bool)
    return Step(l0, l1, float(send.max(initial=0)), float(recv.max(initial=0)),
                fabric.latency_profile(used, on, cross), float(st.rounds)), loads


def _phase(layout: fabric.Layout, steps: list[StepTraffic], routing: str = "xy") -> PhasePeaks:
    """A phase from its steps: each step's peaks, and statistics of the summed traffic."""
    n = layout.nodes
    built = [_step(layout, s, routing) for s in steps]
    total = sum((s.traffic for s in steps), np.zeros((n, n)))
    on, cross = _hop_split(layout)
    hops = on + cross
    moving = total * (hops > 0)
    mean = float((moving * hops).sum() / moving.sum()) if moving.sum() > 0 else 0.0
    longest = float(hops[moving > 0].max(initial=0))
    if layout.topology == "switch":
        return PhasePeaks(tuple(b for b, _ in built), 0.0, longest, mean, 0.0, None, total)
    loads = _sum_loads(layout, [ld for _, ld in built])
    return PhasePeaks(tuple(b for b, _ in built), float(loads.max_link()), longest, mean, mesh.idle_share(loads),
                      loads, total)


def _sum_loads(layout: fabric.Layout, parts: list) -> mesh.LinkLoads:
    """The loads of sequential steps added link by link (a phase's total per unit)."""
    if not parts:
        return mesh.xy_link_loads(*layout.grid, np.zeros((layout.nodes, layout.nodes)))
    keys = ("east", "west", "south", "north", "inject", "eject")
    return mesh.LinkLoads(parts[0].rows, parts[0].cols, *(sum(getattr(p, k) for p in parts) for k in keys))


def _ring_hops(rings: np.ndarray, hops: np.ndarray) -> float:
    if rings.shape[1] < 2:
        return 0.0
    return float(hops[rings, np.roll(rings, -1, axis=1)].max())


def _share_on(mask_links: np.ndarray | None, loads: mesh.LinkLoads | None) -> float:
    """Share of a phase's link load on the links in `mask_links` (NaN without a mask or links)."""
    if loads is None or mask_links is None:
        return float("nan")
    total = loads.total()
    return float((loads.all_links() * mask_links).sum() / total) if total > 0 else 0.0


def _ftd_crossing(placement: mp.Placement) -> np.ndarray | None:
    """Links whose two ends lie in different FTD tiles (all_links order), or None without FTDs."""
    if placement.ftd_shape is None:
        return None
    tile = placement.ftd_id.reshape(placement.rows, placement.cols)
    h, v = tile[:, :-1] != tile[:, 1:], tile[:-1, :] != tile[1:, :]
    return mesh.LinkArrays(placement.rows, placement.cols, h, h, v, v).all_links()


def _migration(layout, before, after) -> tuple[PhasePeaks, int]:
    """Unit traffic (one byte per new copy) of fetching every new replica from its nearest old host."""
    experts, dst = np.nonzero(after.hosts & ~before.hosts)
    on, cross = _hop_split(layout)
    hops = on + cross
    src = np.array([np.flatnonzero(before.hosts[e])[np.argmin(hops[before.hosts[e], d])] for e, d in zip(experts, dst)],
                   dtype=np.int64)
    n = layout.nodes
    t = traffic.migration_traffic(src, dst.astype(np.int64), 1.0, n) if len(dst) else np.zeros((n, n))
    return _phase(layout, [StepTraffic(t, 1, False)]), int(len(dst))


def token_flow(topology: str, strategy: str, token_source: str) -> tuple[str, str]:
    """(token source, flow): a switch and `slice` send token slices; otherwise tokens are replicated on the
    group and `auto` picks the FTD member under ER and HER, the nearest member elsewhere."""
    if topology == "switch" or token_source == "slice":
        return "nearest", "slice"
    if token_source == "auto":
        return ("ftd" if strategy in ("er", "her") else "nearest"), "replicated"
    return token_source, "replicated"


def split_dispatch(placement: mp.Placement, experts: mp.ExpertPlacement, shares: np.ndarray, source: str) -> np.ndarray:
    """Dispatch when a balancer made replicas: each copy receives its split of its expert's tokens, fed by the
    sender the token-source policy picks for that host (per unit token copy of one byte)."""
    n = placement.num_nodes
    into = balance.node_loads(experts, shares)                 # (N,) per unit from one group
    sender, _ = traffic.dispatch_senders(placement, source)    # (ng, N)
    out = np.zeros((n, n))
    np.add.at(out, (sender.ravel(), np.tile(np.arange(n), placement.num_groups)), np.tile(into, placement.num_groups))
    return out


def _dispatch(layout, placement, experts, shares, source, flow, replicas: bool) -> np.ndarray:
    """Unit dispatch pattern (per token copy of one byte sent by every group)."""
    if flow == "slice":
        wafer_of = layout.wafer_of() if placement.num_wafers > 1 else None
        return traffic.slice_dispatch(placement, experts, shares, wafer_of)
    if replicas:
        return split_dispatch(placement, experts, shares, source)
    return traffic.dispatch_traffic(placement, experts, 1.0, 1, 1.0, shares, source)


@dataclass(frozen=True, eq=False)
class Core:
    """The expensive part of a structure: placement, balanced experts, dispatch, migration."""

    layout: fabric.Layout
    placement: mp.Placement
    before: mp.ExpertPlacement
    experts: mp.ExpertPlacement
    flow: str
    zipf_s: float
    first: np.ndarray          # dispatch before balancing
    dispatch: PhasePeaks
    combine: PhasePeaks        # XY-routed
    combine_reverse: PhasePeaks
    migration: PhasePeaks
    moved: int


@functools.lru_cache(maxsize=256)
def core(topology: str, rows: int, cols: int, tp: int, strategy: str, ftd, seed: int, explicit, token_source: str,
         num_experts: int, bal: BalanceKey = UNIFORM, wafers=(1, 1), domain=None) -> Core:
    """Placement, balancing, dispatch and combine of one structural combination (cached)."""
    layout = fabric.Layout(topology, rows, cols, tuple(wafers), domain)
    placement = mp.place_groups(strategy, rows, cols, tp, ftd=ftd, seed=seed, explicit=explicit, wafers=tuple(wafers))
    shares, s = expert_shares(num_experts, bal, layout.nodes)
    before, experts = balance.balance_experts(bal.balancer, shares, placement, bal.spare_slots, split=bal.split,
                                              policy=bal.policy)
    source, flow = token_flow(topology, strategy, token_source)
    first = _dispatch(layout, placement, before, shares, source, flow, False)
    dispatch = first if experts is before else _dispatch(layout, placement, experts, shares, source, flow, True)
    migration, moved = _migration(layout, before, experts)
    back = [StepTraffic(dispatch.T.copy(), 1, False)]
    return Core(layout, placement, before, experts, flow, s, first, _phase(layout, [StepTraffic(dispatch, 1, False)]),
                _phase(layout, back), _phase(layout, back, "reverse"), migration, moved)


def _switch_reduction(layout: fabric.Layout, placement: mp.Placement) -> PhasePeaks | None:
    """The all-reduce done in the switch (NVLink SHARP) when every TP group lies inside one scale-up domain."""
    dom = layout.wafer_of()[placement.rings]
    if placement.tp < 2 or np.any(dom != dom[:, :1]):
        return None
    send, recv = collectives.switch_reduction_peaks()
    step = Step(0.0, 0.0, send, recv, np.array([[1.0, 0.0]]), 2.0)   # up to the switch and back down
    return PhasePeaks((step,), 0.0, 1.0, 1.0, 0.0, None, None)


@functools.lru_cache(maxsize=256)
def collective_phases(topology: str, rows: int, cols: int, tp: int, strategy: str, ftd, seed: int, explicit,
                      token_source: str, wafers=(1, 1), domain=None, coll: Collectives = PLAIN) -> dict:
    """All-reduce, output reduction and gradient phases: they depend on the placement and the collectives, not
    on the experts, so every balance setting of one placement shares them (cached)."""
    layout = fabric.Layout(topology, rows, cols, tuple(wafers), domain)
    pl = mp.place_groups(strategy, rows, cols, tp, ftd=ftd, seed=seed, explicit=explicit, wafers=tuple(wafers))
    _, flow = token_flow(topology, strategy, token_source)
    dirs = coll.ring_directions
    allreduce = (_switch_reduction(layout, pl) if topology == "switch" and coll.switch_reduction else None) or \
        _phase(layout, collectives.attention_steps(pl, flow, dirs))
    out = {"allreduce": allreduce, "reduce": _phase(layout, collectives.reduce_steps(pl, flow, dirs)),
           "gradient": _phase(layout, collectives.gradient_steps(pl, dirs))}
    if pl.cross_rings is not None:   # a dense layer dispatches nothing: its attention needs only the home all-reduce
        out["dense_allreduce"] = _phase(layout, collectives.home_steps(pl, dirs))
    return out


@functools.lru_cache(maxsize=512)
def build(topology: str, rows: int, cols: int, tp: int, strategy: str, ftd, seed: int, explicit, token_source: str,
          num_experts: int, bal: BalanceKey = UNIFORM, wafers=(1, 1), domain=None, coll: Collectives = PLAIN) -> Structure:
    """Every phase, its link loads and peaks for one structural combination (rows, cols per wafer).

    Units: all-reduce, reduction and gradient per byte of each member's message; dispatch and combine per
    token copy of one byte sent by every group (scale by tokens per group × top-k × H × bytes); migration
    per byte of each new expert copy.
    """
    args = (topology, rows, cols, tp, strategy, ftd, seed, explicit, token_source)
    c = core(*args, num_experts, bal, tuple(wafers), domain)
    ring = collective_phases(*args, tuple(wafers), domain, coll)
    layout, pl = c.layout, c.placement
    phases = {**ring, "dispatch": c.dispatch, "migration": c.migration,
              "combine": c.combine_reverse if coll.combine_routing == "reverse" else c.combine}
    on, cross = _hop_split(layout)
    mesh_ = topology == "mesh"
    dispatch_loads = c.dispatch.loads
    wafer_cross = layout.crossing().all_links() if mesh_ and layout.wafers != (1, 1) else None
    return Structure(
        layout=layout, placement=pl, experts=c.experts, phases=phases, flow=c.flow,
        ring_step_hops=_ring_hops(pl.rings, on + cross),
        hot_overlap=mesh.hot_overlap(ring["allreduce"].loads, dispatch_loads) if mesh_ else 0.0,
        inter_ftd_share=_share_on(_ftd_crossing(pl) if mesh_ else None, dispatch_loads),
        inter_wafer_share=_share_on(wafer_cross, dispatch_loads),
        node_load=c.dispatch.traffic.sum(axis=0),
        expert_imbalance=balance.imbalance(c.dispatch.traffic.sum(axis=0)),
        imbalance_before=balance.imbalance(c.first.sum(axis=0)),
        slots_max=int(c.experts.slots_per_node.max()),
        slots_before=int(c.before.slots_per_node.max()),
        copies_moved=c.moved,
        zipf_s=c.zipf_s,
    )


def cache_info():
    """How many structures were built (misses) and reused (hits)."""
    return build.cache_info()


def clear_cache() -> None:
    """Forget every built structure (benchmarks measure cold builds)."""
    build.cache_clear()
    core.cache_clear()
    collective_phases.cache_clear()
    _hop_split.cache_clear()
