"""A phase's peaks: each sequential step of its unit traffic evaluated on the fabric (the busiest link of each
class, injection and ejection ports, its latency profile and ring rounds), and statistics of their sum.

Up to DENSE_MAX_NODES nodes (and on every switch) a step is evaluated on its N×N matrix, the general path every
result was computed with; above, on the compact pattern, whose loads and statistics agree with it to rounding.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from wsemoe.cost.fabric import mesh, patterns
from wsemoe.cost.fabric import topology as topo
from wsemoe.cost.fabric.collectives import StepTraffic

DENSE_MAX_NODES = 1024   # a step on at most this many nodes is evaluated on its N×N matrix (8 MB)


@dataclass(frozen=True, eq=False)
class Step:
    """One sequential step of a phase, per unit of its volume: peaks by class, latency profile, ring rounds."""

    max_link: float        # busiest class-0 link (on-wafer die-to-die link; none on a switch)
    max_cross: float       # busiest class-1 link (wafer-crossing link; a switch's scale-out NIC direction)
    max_inject: float
    max_eject: float
    profile: np.ndarray    # (K, 2) Pareto-maximal (class-0 hops, class-1 hops) of its transfers
    rounds: float          # sequential traversals: ring rounds, 1 for a one-shot phase
    max_cross_device: float = 0.0   # a switch: the busiest device's bytes to or from other scale-up domains


@dataclass(frozen=True, eq=False)
class PhasePeaks:
    """A phase: its steps, and statistics of its summed traffic (per unit of its volume)."""

    steps: tuple
    max_link: float        # busiest link of the summed loads, any class (`<phase>_max_link_bytes` per unit)
    max_hops: float
    mean_hops: float
    idle_share: float
    loads: mesh.LinkLoads | None = field(default=None, repr=False)
    byte_hops: float = 0.0     # Σ bytes × hops inside a wafer or scale-up domain (a switch path one hop): the fabric
    cross_bytes: float = 0.0   # Σ bytes × wafer crossings (mesh) or bytes between scale-up domains: the network


def evaluable(layout: topo.Layout, pattern):
    """The form a step is evaluated on: its N×N matrix (the general path) on a switch or while matrices are small,
    else the compact pattern itself."""
    if layout.topology == "switch" or layout.nodes <= DENSE_MAX_NODES:
        return pattern if isinstance(pattern, patterns.Dense) else patterns.Dense(pattern.dense())
    return pattern


def step_peaks(layout: topo.Layout, p, rounds: int, routing: str = "xy") -> tuple[Step, mesh.LinkLoads | None]:
    """Peaks, profile and loads of one step's unit traffic (an evaluable pattern)."""
    loads = p.loads(layout, routing) if layout.topology == "mesh" else None
    send, recv = p.ports() if layout.domains == 1 else _scale_up_ports(layout, p.dense())
    l0, l1 = topo.class_peaks(layout, loads, p.between(layout) if layout.domains > 1 else None)
    device = topo.device_cross_peak(layout, p.dense()) if layout.domains > 1 else 0.0
    return Step(l0, l1, float(send.max(initial=0)), float(recv.max(initial=0)), p.profile(layout), float(rounds),
                device), loads


def _scale_up_ports(layout: topo.Layout, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Bytes each device sends and receives through its scale-up (NVLink) port on a switch of several domains:
    those to and from its own domain only. Bytes to another domain leave through the NICs, charged on the
    scale-out class (topology.class_peaks, device_cross_peak): DeepEP's per-copy kernels send them GPU to NIC
    over RDMA, never over NVLink, and the per-server kernels' NVLink forwarding is not charged
    (fabric/scaleout.py); counting them at the port too charged one byte on two links it does not both use."""
    dom = layout.wafer_of()
    inside = np.where(dom[:, None] == dom[None, :], t, 0.0)
    np.fill_diagonal(inside, 0.0)
    return inside.sum(axis=1), inside.sum(axis=0)


def phase_peaks(layout: topo.Layout, steps: list[StepTraffic], routing: str = "xy") -> PhasePeaks:
    """A phase from its steps: each step's peaks, and statistics of the summed traffic."""
    parts = [evaluable(layout, s.pattern) for s in steps]
    built = [step_peaks(layout, p, s.rounds, routing) for p, s in zip(parts, steps)]
    whole = patterns.total(parts, layout.nodes)
    mean, longest = whole.hop_stats(layout)
    if layout.topology == "switch":   # an N×N matrix (`evaluable`; a phase of no steps: the empty transfers)
        whole = whole if isinstance(whole, patterns.Dense) else patterns.Dense(whole.dense())
        off = lambda m: float(m[~np.eye(len(m), dtype=bool)].sum())   # noqa: E731  (what leaves a node or domain)
        between = whole.between(layout) if layout.domains > 1 else np.zeros((1, 1))
        return PhasePeaks(tuple(b for b, _ in built), 0.0, longest, mean, 0.0, None,
                          max(0.0, off(whole.t) - off(between)), off(between))
    loads = sum_loads(layout, [ld for _, ld in built])
    cross = float((loads.all_links() * layout.crossing().all_links()).sum()) if layout.wafers != (1, 1) else 0.0
    return PhasePeaks(tuple(b for b, _ in built), float(loads.max_link()), longest, mean, mesh.idle_share(loads), loads,
                      max(0.0, float(loads.total()) - cross), cross)   # a crossing link: the network's


def sum_loads(layout: topo.Layout, parts: list) -> mesh.LinkLoads:
    """The loads of sequential steps added link by link (a phase's total per unit)."""
    if not parts:
        return patterns.Transfers.empty(layout.nodes).loads(layout)
    keys = ("east", "west", "south", "north", "inject", "eject")
    return mesh.LinkLoads(parts[0].rows, parts[0].cols, *(sum(getattr(p, k) for p in parts) for k in keys))
