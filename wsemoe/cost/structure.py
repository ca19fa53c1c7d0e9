"""Structural communication terms, built once per unique (system, mapping, experts, collectives) combination.

A Structure holds, for each phase, its sequential steps with per-unit peaks by link class (on-wafer links,
wafer-crossing links or scale-out NICs, injection and ejection ports), their latency profiles and ring
rounds, plus the summed link loads for heat maps and migration budgets. Callers scale the peaks by bytes
(numpy broadcasting), so a sweep's cost grows with its number of points, not with points × mesh size.
Building is split in two cached layers: the expensive core (placement, balancing, dispatch) and the
collective schedules on top of it (ring directions, combine routing, in-switch reduction), which reuse it.
`cache_info()` tells how many structures were built.

Traffic is built as compact patterns (`cost.patterns`: transfer lists, factorised all-to-alls) and never kept:
a structure holds peaks, statistics and per-link loads (O(N)); `phase_traffic` rebuilds a phase's N×N matrix
on demand. Each step's peaks come from `fabric/peaks.py`: up to DENSE_MAX_NODES nodes (and on every switch)
from its N×N matrix, the general path every result was computed with; above, from the compact form, whose loads
and statistics agree with it to rounding (tests), in memory that grows with the transfers rather than with N².
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from wsemoe.cost.balance import popularity, routing
from wsemoe.cost.fabric import collectives, mesh, patterns, spread, traffic
from wsemoe.cost.fabric import topology as topo
from wsemoe.cost.fabric import mapping as mp
from wsemoe.cost.fabric.cache import bounded_cache
from wsemoe.cost.fabric.collectives import StepTraffic
from wsemoe.cost.fabric.peaks import DENSE_MAX_NODES, PhasePeaks, Step, evaluable, phase_peaks  # noqa: F401 (API)
from wsemoe.cost.structure_keys import PLAIN, UNIFORM, BalanceKey, Collectives, expert_shares  # noqa: F401 (API)

CACHE_NODES = 1 << 18    # nodes of the structures each cache holds (≈ 0.7 kB a node: ≈ 180 MB; 64 at 64×64)


def _held(value) -> int:
    """Nodes a cached structure, core or set of collective phases keeps per-node arrays for (its cache weight)."""
    if isinstance(value, dict):
        return max((p.loads.rows * p.loads.cols for p in value.values() if p.loads is not None), default=1)
    return value.layout.nodes


@dataclass(frozen=True, eq=False)
class Structure:
    """Everything about communication that depends only on structure, not on batch or bandwidth."""

    layout: topo.Layout
    placement: mp.Placement
    experts: mp.ExpertPlacement
    phases: dict
    flow: str                  # "replicated" (tokens on every member, partial outputs reduced) or "slice"
    ring_step_hops: float      # longest hop distance between attention ring neighbours
    hot_overlap: float         # Jaccard of the hottest links of all-reduce and dispatch
    inter_ftd_share: float     # share of dispatch link load on links crossing FTD tiles (NaN without FTDs)
    inter_wafer_share: float   # share of dispatch link load on wafer-crossing links (NaN on one wafer or a switch)
    node_load: np.ndarray      # token copies each node's experts receive per unit dispatch (local included)
    load_before: np.ndarray    # the same without the balancer's replicas
    concentration: np.ndarray  # per node, routing.node_concentration (the spread of its copies over a step)
    concentration_before: np.ndarray
    link_squares: dict         # per dispatch/combine, (Σ (piece share)², Σ (owner share)²) per link (fabric/spread.py;
                               # {} off a mesh)
    carriers: dict             # the expert ports', NICs' and devices' (loads, Σ (piece share)²) (spread.carriers)
    expert_imbalance: float    # busiest node's expected share over the mean (many tokens; routing.busiest_load: a step's)
    imbalance_before: float    # the same without the balancer's replicas
    slots_max: int             # most expert copies any node holds (memory, weight reads)
    slots_before: int          # the same before balancing
    copies: int                # expert copies over all nodes (E, N when E < N, more with a balancer's replicas)
    optimizer_shares_max: float  # most routed-expert optimizer state any node keeps, in whole experts (ZeRO-1)
    copies_moved: int          # new expert copies the balancer creates (migration)
    zipf_s: float              # Zipf exponent in use (solved when the balance sets a skew target; NaN otherwise)
    key: tuple = field(default=(), repr=False)   # the core's cache key, to rebuild traffic on demand
    coll: object = field(default=None, repr=False)


def _ring_hops(layout: topo.Layout, rings: np.ndarray) -> float:
    """Longest hop distance between ring neighbours."""
    if rings.shape[1] < 2:
        return 0.0
    return float(sum(layout.hops_of(rings, np.roll(rings, -1, axis=1))).max())


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


def _migration(layout: topo.Layout, before, after) -> patterns.Transfers:
    """Unit traffic (one byte per new copy) of fetching every new replica from its nearest old host."""
    experts, dst = np.nonzero(after.hosts & ~before.hosts)
    old = [np.flatnonzero(before.hosts[e]) for e in experts]
    src = np.array([h[np.argmin(sum(layout.hops_of(h, d)))] for h, d in zip(old, dst)], dtype=np.int64)
    n = layout.nodes
    return traffic.migration_transfers(src, dst.astype(np.int64), 1.0, n) if len(dst) else patterns.Transfers.empty(n)


def token_flow(topology: str, strategy: str, token_source: str, groups: int) -> tuple[str, str]:
    """(token source, flow). `slice` sends token slices; so does a switch with more than one attention group (the
    all-to-all of attention DP with EP). Otherwise tokens are replicated on the group: `auto` picks the FTD member
    under ER and HER, the nearest member elsewhere. On a switch with one group that is every GPU itself: its own
    experts take the tokens it holds and the partial outputs are all-reduced, no all-to-all (TP with EP and no
    attention DP, as vLLM and SGLang run it)."""
    if token_source == "slice" or (topology == "switch" and groups > 1):
        return "nearest", "slice"
    if token_source == "auto":
        return ("ftd" if strategy in ("er", "her") else "nearest"), "replicated"
    return token_source, "replicated"


def split_dispatch(placement: mp.Placement, experts: mp.ExpertPlacement, shares: np.ndarray,
                   source: str) -> patterns.Blocks | patterns.Outer:
    """Dispatch when a balancer made replicas: each copy receives its split of its expert's tokens, fed by the
    sender the token-source policy picks for that host (per unit token copy of one byte).

    Every node hears from every group: groups × N transfers, made for a block of receiving nodes at a time
    (traffic.SENDER_BLOCK transfers). Each (sender, node) cell gets its groups in ascending order in any
    block, so the matrix is the one a single block adds up."""
    n, ng = placement.num_nodes, placement.num_groups
    into = popularity.node_loads(experts, shares)                 # (N,) per unit from one group
    if placement.tp == 1 and placement.cross_rings is None:   # every node a group, its only sender: t[s, d] = into[d]
        return patterns.Outer((placement.rows, placement.cols), np.ones(n), into)
    width = max(1, traffic.SENDER_BLOCK // ng)

    def make(i: int) -> patterns.Transfers:
        nodes = np.arange(i * width, min(n, (i + 1) * width))
        sender, _ = traffic.dispatch_senders(placement, source, nodes)    # (ng, nodes)
        return patterns.Transfers(n, sender.ravel(), np.tile(nodes, ng), np.tile(into[nodes], ng))

    return patterns.Blocks(n, -(-n // width), make)


def _dispatch(layout, placement, experts, shares, source, flow, replicas: bool):
    """Unit dispatch pattern (per token copy of one byte sent by every group)."""
    if flow == "slice":
        return traffic.slice_pattern(placement, experts, shares, (layout.rows, layout.cols))
    if replicas:
        return split_dispatch(placement, experts, shares, source)
    return traffic.dispatch_transfers(placement, experts, shares, source)


@dataclass(frozen=True, eq=False)
class Core:
    """The expensive part of a structure: placement, balanced experts, dispatch, combine, migration."""

    layout: topo.Layout
    placement: mp.Placement
    before: mp.ExpertPlacement
    experts: mp.ExpertPlacement
    shares: np.ndarray
    source: str
    flow: str
    zipf_s: float
    dispatch: PhasePeaks
    combine: PhasePeaks        # XY-routed
    combine_reverse: PhasePeaks
    migration: PhasePeaks
    moved: int
    node_load: np.ndarray      # what each node's experts receive, after and before balancing
    load_before: np.ndarray
    link_squares: dict         # fabric/spread.squared_loads of the dispatch: per link
    carriers: dict             # and per port, NIC and device


def _core_traffic(layout, placement, before, experts, shares, source, flow) -> tuple:
    """Unit patterns of the dispatch before and after balancing, and of the migration between them."""
    first = _dispatch(layout, placement, before, shares, source, flow, False)
    dispatch = first if experts is before else _dispatch(layout, placement, experts, shares, source, flow, True)
    return first, dispatch, _migration(layout, before, experts)


@bounded_cache(256, CACHE_NODES, lambda _, v: _held(v))
def core(topology: str, rows: int, cols: int, tp: int, strategy: str, ftd, seed: int, explicit, token_source: str,
         num_experts: int, bal: BalanceKey = UNIFORM, wafers=(1, 1), domain=None) -> Core:
    """Placement, balancing, dispatch and combine of one structural combination (cached; patterns not kept)."""
    layout = topo.Layout(topology, rows, cols, tuple(wafers), domain)
    placement = mp.place_groups(strategy, rows, cols, tp, ftd=ftd, seed=seed, explicit=explicit, wafers=tuple(wafers))
    shares, s = expert_shares(num_experts, bal, layout.nodes)
    before, experts = popularity.balance_experts(bal.balancer, shares, placement, bal.spare_slots, split=bal.split,
                                              policy=bal.policy)
    source, flow = token_flow(topology, strategy, token_source, placement.num_groups)
    first, dispatch, moving = _core_traffic(layout, placement, before, experts, shares, source, flow)
    if popularity.imbalance(dispatch.received()) > popularity.imbalance(first.received()):
        # No balancer deploys a placement busier than the default one (the packing and the token sources can
        # make the dispatch's received loads busier than the default's): keep the default.
        experts = before
        first, dispatch, moving = _core_traffic(layout, placement, before, experts, shares, source, flow)
    first, dispatch = evaluable(layout, first), evaluable(layout, dispatch)
    one = lambda p: [StepTraffic(p, 1, False)]  # noqa: E731
    return Core(layout, placement, before, experts, shares, source, flow, s, phase_peaks(layout, one(dispatch)),
                phase_peaks(layout, one(dispatch.T)), phase_peaks(layout, one(dispatch.T), "reverse"),
                phase_peaks(layout, one(moving)), int(len(moving.src)), dispatch.received(), first.received(),
                *spread.squared_loads(layout, dispatch, routing.node_concentration(experts.weights, shares),
                                      np.arange(layout.nodes) if flow == "slice" else placement.group_of,
                                      routing.pick_scales(experts.weights, shares, bal.top_k),
                                      1.0 / placement.tp if flow == "slice" else 1.0))


def _switch_reduction(layout: topo.Layout, placement: mp.Placement) -> PhasePeaks | None:
    """The all-reduce done in the switch (NVLink SHARP) when every TP group lies inside one scale-up domain."""
    dom = layout.wafer_of()[placement.rings]
    if placement.tp < 2 or np.any(dom != dom[:, :1]):
        return None
    send, recv = collectives.switch_reduction_peaks()
    step = Step(0.0, 0.0, send, recv, np.array([[1.0, 0.0]]), 2.0)   # up to the switch and back down
    # each member's message goes up once and its sum comes down once: one GPU-switch-GPU path a member
    return PhasePeaks((step,), 0.0, 1.0, 1.0, 0.0, None, float(placement.num_nodes), 0.0)


def _collective_steps(pl: mp.Placement, flow: str, dirs: int, gather_shared: bool = False) -> dict:
    """Steps of the all-reduce, output reduction, gradient, the dense FFN's all-reduce, the router gradient's
    all-reduce over the TP group, the experts' load counts' all-reduce over every node and (HER) dense all-reduce.

    With `gather_shared` the slice flow's output reduction also holds the TP-split shared experts' collectives:
    each member holds only its slice of the tokens, so the shared experts gather their group's tokens and
    reduce-scatter their outputs over the group's own ring (Megatron-Core's sequence parallelism:
    github.com/NVIDIA/Megatron-LM, megatron/core/transformer/moe/shared_experts.py), the bytes and rounds of the
    group's ring all-reduce (`home_steps`)."""
    reduce = collectives.reduce_steps(pl, flow, dirs)
    if gather_shared and flow == "slice":
        reduce = reduce + [StepTraffic(s.pattern.T, s.rounds) for s in collectives.home_steps(pl, dirs)]
    out = {"allreduce": collectives.attention_steps(pl, flow, dirs), "reduce": reduce,
           "gradient": collectives.gradient_steps(pl, dirs)}
    # A dense FFN split over the TP group leaves partial sums on every member: its group's own ring all-reduce,
    # which on a flat placement is the attention's all-reduce itself (the same steps: `collective_phases` then
    # finds their peaks once)
    home = out["allreduce"] if pl.cross_rings is None else collectives.home_steps(pl, dirs)
    out["ffn_allreduce"] = home
    # The router's weight gradient (with the norms' and MLA's down-projections': params.tp_summed_params): every
    # member holds the whole gate and forms its gradient from the tokens it routes, so the TP group sums it over
    # its own ring (Megatron-Core marks the router weight sequence_parallel and all-reduces such grads over the TP
    # group: megatron/core/transformer/moe/router.py, reset_parameters;
    # megatron/core/distributed/finalize_model_grads.py, _allreduce_non_tensor_model_parallel_grads)
    out["router_gradient"] = home
    # The experts' token counts a correction bias is set from: every rank counts its own tokens, and the step sums
    # them over every rank (TP × DP: params.expert_load_counts), here the group's ring, then the rings across groups
    out["expert_load"] = home + out["gradient"]
    if pl.cross_rings is not None:   # a dense layer dispatches nothing: its attention needs only the home all-reduce
        out["dense_allreduce"] = home
    return out


# The all-reduces an in-switch reduction (NVLS) takes over on a switch whose collectives offer it, and the output
# reduction where the flow has one (a phase with steps: `switched`)
SWITCH_REDUCED = ("allreduce", "ffn_allreduce", "router_gradient", "reduce")


def switched(layout: topo.Layout, pl: mp.Placement, coll: Collectives, name: str, steps) -> PhasePeaks | None:
    """The in-switch reduction's peaks where it takes phase `name` over (its `steps` move anything), else None:
    the one rule `collective_phases` (peaks) and `phase_steps` (patterns) read."""
    if name not in SWITCH_REDUCED or not steps or layout.topology != "switch" or not coll.switch_reduction:
        return None
    return _switch_reduction(layout, pl)


@bounded_cache(256, CACHE_NODES, lambda _, v: _held(v))
def collective_phases(topology: str, rows: int, cols: int, tp: int, strategy: str, ftd, seed: int, explicit,
                      token_source: str, wafers=(1, 1), domain=None, coll: Collectives = PLAIN) -> dict:
    """All-reduce, output reduction and gradient phases: they depend on the placement and the collectives, not
    on the experts, so every balance setting of one placement shares them (cached)."""
    layout = topo.Layout(topology, rows, cols, tuple(wafers), domain)
    pl = mp.place_groups(strategy, rows, cols, tp, ftd=ftd, seed=seed, explicit=explicit, wafers=tuple(wafers))
    _, flow = token_flow(topology, strategy, token_source, pl.num_groups)
    out, found = {}, {}
    for name, steps in _collective_steps(pl, flow, coll.ring_directions, coll.gather_shared).items():
        if id(steps) not in found:   # phases that share their steps share their peaks
            found[id(steps)] = phase_peaks(layout, steps)
        out[name] = found[id(steps)]
    for name in SWITCH_REDUCED:
        out[name] = switched(layout, pl, coll, name, out[name].steps) or out[name]
    return out


@bounded_cache(512, CACHE_NODES, lambda _, v: _held(v))
def build(topology: str, rows: int, cols: int, tp: int, strategy: str, ftd, seed: int, explicit, token_source: str,
          num_experts: int, bal: BalanceKey = UNIFORM, wafers=(1, 1), domain=None, coll: Collectives = PLAIN) -> Structure:
    """Every phase, its link loads and peaks for one structural combination (rows, cols per wafer).

    Units: all-reduce, reduction and gradient per byte of each member's message; dispatch and combine per
    token copy of one byte sent by every group (scale by tokens per group × top-k × H × bytes); migration
    per byte of each new expert copy.
    """
    key = (topology, rows, cols, tp, strategy, ftd, seed, explicit, token_source, num_experts, bal, tuple(wafers), domain)
    c = core(*key)
    ring = collective_phases(*key[:9], tuple(wafers), domain, coll)
    layout, pl = c.layout, c.placement
    phases = {**ring, "dispatch": c.dispatch, "migration": c.migration,
              "combine": c.combine_reverse if coll.combine_routing == "reverse" else c.combine}
    mesh_ = topology == "mesh"
    dispatch_loads = c.dispatch.loads
    wafer_cross = layout.crossing().all_links() if mesh_ and layout.wafers != (1, 1) else None
    return Structure(
        layout=layout, placement=pl, experts=c.experts, phases=phases, flow=c.flow,
        ring_step_hops=_ring_hops(layout, pl.rings),
        hot_overlap=mesh.hot_overlap(ring["allreduce"].loads, dispatch_loads) if mesh_ else 0.0,
        inter_ftd_share=_share_on(_ftd_crossing(pl) if mesh_ else None, dispatch_loads),
        inter_wafer_share=_share_on(wafer_cross, dispatch_loads),
        node_load=c.node_load,
        load_before=c.load_before,
        concentration=routing.node_concentration(c.experts.weights, c.shares),
        concentration_before=routing.node_concentration(c.before.weights, c.shares),
        link_squares={"dispatch": c.link_squares.get("dispatch"),
                      "combine": c.link_squares.get("combine_reverse" if coll.combine_routing == "reverse" else "combine")}
        if c.link_squares else {},
        carriers=c.carriers,
        expert_imbalance=popularity.imbalance(c.node_load),
        imbalance_before=popularity.imbalance(c.load_before),
        slots_max=int(c.experts.slots_per_node.max()),
        slots_before=int(c.before.slots_per_node.max()),
        copies=int(c.experts.slots_per_node.sum()),
        optimizer_shares_max=float(c.experts.optimizer_shares.max()),
        copies_moved=c.moved,
        zipf_s=c.zipf_s,
        key=key, coll=coll,
    )


def phase_steps(s: Structure, name: str) -> list[StepTraffic]:
    """The steps of phase `name` as patterns, rebuilt: a structure keeps peaks, statistics and link loads, not
    traffic. An in-switch reduction moves nothing between devices (no steps)."""
    c = core(*s.key)
    if name in ("dispatch", "combine", "migration"):
        _, dispatch, moving = _core_traffic(c.layout, c.placement, c.before, c.experts, c.shares, c.source, c.flow)
        return [StepTraffic({"dispatch": dispatch, "combine": dispatch.T, "migration": moving}[name], 1, False)]
    steps = _collective_steps(c.placement, c.flow, s.coll.ring_directions, s.coll.gather_shared)[name]
    return [] if switched(c.layout, c.placement, s.coll, name, steps) is not None else steps


def phase_traffic(s: Structure, name: str) -> np.ndarray:
    """The unit traffic matrix (N×N) of phase `name`, its steps summed (rebuilt on demand; for checks and figures)."""
    return sum((st.traffic for st in phase_steps(s, name)), np.zeros((s.layout.nodes, s.layout.nodes)))


def cache_info():
    """How many structures were built (misses) and reused (hits)."""
    return build.cache_info()


def clear_cache() -> None:
    """Forget every built structure (benchmarks measure cold builds)."""
    build.cache_clear()
    core.cache_clear()
    collective_phases.cache_clear()
    patterns.hop_split.cache_clear()
