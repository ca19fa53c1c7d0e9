"""Public mesh network model: XY/YX-routing link loads, per-link bandwidths of wafer meshes, phase times and link
statistics."""

from wsemoe.cost.fabric.topology import link_bandwidths
from wsemoe.cost.fabric.mesh import (
    LinkArrays,
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
    yx_link_loads,
)

__all__ = [
    "LinkArrays",
    "LinkLoads",
    "PhaseTime",
    "hops_matrix",
    "hot_links",
    "hot_overlap",
    "idle_share",
    "link_bandwidths",
    "max_hops",
    "mean_hops",
    "phase_time",
    "phase_time_from_peaks",
    "switch_phase_time",
    "xy_link_loads",
    "yx_link_loads",
]
