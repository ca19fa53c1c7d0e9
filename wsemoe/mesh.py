"""Public mesh network model: XY-routing link loads, phase times and link statistics."""

from wsemoe.cost.mesh import (
    LinkLoads,
    PhaseTime,
    hops_matrix,
    hot_links,
    hot_overlap,
    idle_share,
    max_hops,
    mean_hops,
    phase_time,
    phase_time_from_peaks,
    switch_phase_time,
    xy_link_loads,
)

__all__ = [
    "LinkLoads",
    "PhaseTime",
    "hops_matrix",
    "hot_links",
    "hot_overlap",
    "idle_share",
    "max_hops",
    "mean_hops",
    "phase_time",
    "phase_time_from_peaks",
    "switch_phase_time",
    "xy_link_loads",
]
