"""The system as a mesh of wafers (or a switch of scale-up domains): size, link classes, hop classes, latency.

A mesh system is a grid of `wafers = (Wr, Wc)` wafers of `rows × cols` dies each, one die grid of
`(Wr·rows) × (Wc·cols)` with XY routing across wafer edges. Links and hops come in two classes:

- class 0: a die-to-die link on a wafer (a switch: the device's scale-up port and one switch traversal);
- class 1: a link across a wafer boundary (a switch: the scale-out network between scale-up domains).

Each class has its own bandwidth and latency. Since every link of a class has the same bandwidth, the
exact `max over links of load / bandwidth` is `max over classes of (busiest link of the class) / its
bandwidth`, so a structure keeps one peak per class and bandwidths stay per-point inputs. Latency of a
transfer is `on-wafer hops · t_hop + crossing hops · t_cross`; a phase keeps the Pareto-maximal
(on, crossing) hop pairs it uses, so its latency is exact for any pair of hop latencies.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from wsemoe.cost.fabric.mesh import LinkArrays, LinkLoads


def wafer_grid(hw) -> tuple[int, int]:
    """(Wr, Wc) of a hardware namespace (one wafer when the field is absent)."""
    w = getattr(hw, "wafers", None)
    return (1, 1) if w is None else (int(w[0]), int(w[1]))


def system_nodes(hw):
    """Dies or devices of the whole system: rows·cols per wafer times the wafers (scalars or arrays)."""
    wr, wc = wafer_grid(hw)
    return hw.rows * hw.cols * wr * wc


def inter_wafer_bw(hw):
    """Bandwidth of a link across a wafer boundary: the field, or the on-wafer link when unset."""
    v = getattr(hw, "inter_wafer_link_bw_bytes_per_s", None)
    return hw.link_bw_bytes_per_s if v is None else v


def class_bandwidths(hw) -> tuple:
    """(class-0 link bandwidth, class-1 bandwidth): mesh links and wafer-crossing links, or (∞, scale-out) on a switch."""
    if hw.topology == "switch":
        out = getattr(hw, "scale_out_bw_bytes_per_s", None)
        return np.inf, np.inf if out is None else out
    return hw.link_bw_bytes_per_s, inter_wafer_bw(hw)


def class_latencies(hw) -> tuple:
    """(class-0 hop latency, class-1 hop latency): on-wafer / wafer-crossing hop, or switch / scale-out traversal."""
    name = "scale_out_latency_s" if hw.topology == "switch" else "inter_wafer_hop_latency_s"
    v = getattr(hw, name, None)
    return hw.hop_latency_s, hw.hop_latency_s if v is None else v


@dataclass(frozen=True)
class Layout:
    """The shape of a system: topology, per-wafer grid, wafer grid and (switch) scale-up domain size."""

    topology: str
    rows: int
    cols: int
    wafers: tuple[int, int] = (1, 1)
    domain: int | None = None

    @property
    def grid(self) -> tuple[int, int]:
        """Rows and columns of the whole die grid."""
        return self.rows * self.wafers[0], self.cols * self.wafers[1]

    @property
    def nodes(self) -> int:
        """Dies or devices of the system."""
        r, c = self.grid
        return r * c

    def wafer_of(self) -> np.ndarray:
        """Wafer (mesh) or scale-up domain (switch) of every node, shape (N,)."""
        n = np.arange(self.nodes)
        if self.topology == "switch":
            return n // (self.domain or self.nodes)
        r, c = np.divmod(n, self.grid[1])
        return (r // self.rows) * self.wafers[1] + c // self.cols

    def hop_split(self) -> tuple[np.ndarray, np.ndarray]:
        """(on-wafer hops, wafer-crossing hops) of every transfer, two N×N arrays (see `hops_of`)."""
        n = np.arange(self.nodes)
        return self.hops_of(n[:, None], n[None, :])

    def hops_of(self, src, dst) -> tuple[np.ndarray, np.ndarray]:
        """(on-wafer hops, wafer-crossing hops) of transfers from nodes `src` to nodes `dst` (broadcast).

        Mesh: XY hops split by wafer boundaries crossed (|Δ wafer row| + |Δ wafer column|). Switch: one
        traversal, class 1 when source and destination lie in different scale-up domains.
        """
        src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
        if self.topology == "switch":
            dom = self.wafer_of()
            cross = (dom[src] != dom[dst]).astype(np.int64)
            return (src != dst).astype(np.int64) - cross, cross
        r, c, wr, wc = self.coords
        cross = np.abs(wr[src] - wr[dst]) + np.abs(wc[src] - wc[dst])
        return np.abs(r[src] - r[dst]) + np.abs(c[src] - c[dst]) - cross, cross

    @functools.cached_property
    def coords(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(row, column, wafer row, wafer column) of every node: looked up, which is faster than dividing."""
        r, c = np.divmod(np.arange(self.nodes, dtype=np.int64), self.grid[1])
        return r, c, r // self.rows, c // self.cols

    @property
    def domains(self) -> int:
        """Scale-up domains of a switch (1 when every device shares one switch; 1 on a mesh)."""
        if self.topology != "switch" or self.domain is None or self.domain >= self.nodes:
            return 1
        return self.nodes // self.domain

    def crossing(self) -> LinkArrays:
        """Boolean LinkArrays: True where a mesh link joins two different wafers."""
        R, C = self.grid
        east = np.broadcast_to((np.arange(C - 1) % self.cols == self.cols - 1)[None, :], (R, max(C - 1, 0)))
        south = np.broadcast_to((np.arange(R - 1) % self.rows == self.rows - 1)[:, None], (max(R - 1, 0), C))
        return LinkArrays(R, C, east, east, south, south)


def link_bandwidths(rows: int, cols: int, wafers, link_bw: float, inter_bw: float | None = None) -> LinkArrays:
    """Per-link bandwidth of a mesh of wafers (bytes/s), aligned with the east/west/south/north load arrays.

    `rows`, `cols` are per wafer; links across a wafer boundary get `inter_bw` (default `link_bw`).
    """
    cross = Layout("mesh", rows, cols, tuple(wafers)).crossing()
    bw = link_bw if inter_bw is None else inter_bw
    pick = lambda m: np.where(m, float(bw), float(link_bw))  # noqa: E731
    return LinkArrays(cross.rows, cross.cols, pick(cross.east), pick(cross.west), pick(cross.south), pick(cross.north))


def class_peaks(layout: Layout, loads: LinkLoads | None, between: np.ndarray | None = None) -> tuple[float, float]:
    """(busiest class-0 link, busiest class-1 link) of one pattern.

    Mesh: the busiest on-wafer and wafer-crossing link loads. Switch: no class-0 links (ports are
    charged separately); class 1 is the busiest scale-out NIC direction of a domain, from `between`,
    the bytes from every scale-up domain to every other (domains × domains; None with one domain).
    """
    if layout.topology == "switch":
        if between is None or layout.domains < 2:
            return 0.0, 0.0
        between = between.copy()
        np.fill_diagonal(between, 0.0)
        return 0.0, float(max(between.sum(axis=1).max(), between.sum(axis=0).max()))
    links = loads.all_links()
    cross = layout.crossing().all_links()
    on = links[~cross]
    off = links[cross]
    return float(on.max(initial=0.0)), float(off.max(initial=0.0))


def device_cross_peak(layout: Layout, t: np.ndarray) -> float:
    """Busiest device's bytes to or from other scale-up domains of one switch step (N×N matrix `t`; 0 with one
    domain): what its own NIC carries when every device sends and receives its network traffic through its own NIC
    (a per-copy all-to-all over RDMA, fabric/scaleout.py)."""
    if layout.topology != "switch" or layout.domains < 2:
        return 0.0
    dom = layout.wafer_of()
    cross = np.where(dom[:, None] != dom[None, :], t, 0.0)
    return float(max(cross.sum(axis=1).max(initial=0.0), cross.sum(axis=0).max(initial=0.0)))


def latency_profile(used: np.ndarray, on: np.ndarray, cross: np.ndarray) -> np.ndarray:
    """Pareto-maximal (on-wafer hops, crossing hops) pairs among the transfers `used` (boolean N×N), shape (K, 2).

    For every crossing count the longest on-wafer hop count is kept, then pairs dominated by one with
    at least as many of both are dropped; `max_k(a_k·t0 + b_k·t1)` is then the longest transfer's
    latency for any hop latencies t0, t1 ≥ 0.
    """
    if not used.any():
        return np.zeros((0, 2))
    a, b = on[used], cross[used]
    pairs = np.array([(a[b == v].max(), v) for v in np.unique(b)], dtype=float)
    keep = [i for i, (x, y) in enumerate(pairs) if not np.any((pairs[:, 0] >= x) & (pairs[:, 1] >= y)
                                                                & ((pairs[:, 0] > x) | (pairs[:, 1] > y)))]
    return pairs[keep]


def profile_latency(profile: np.ndarray, t0, t1):
    """Longest transfer latency `max_k(a_k·t0 + b_k·t1)` (0 without transfers); t0, t1 broadcast."""
    out = np.zeros(np.broadcast_shapes(np.shape(t0), np.shape(t1)))
    for a, b in profile:
        out = np.maximum(out, a * np.asarray(t0, float) + b * np.asarray(t1, float))
    return out
