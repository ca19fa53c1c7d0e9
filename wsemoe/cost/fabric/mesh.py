"""2D-mesh and switch network model: exact XY-routing link loads and phase times."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

__all__ = ["LinkArrays", "LinkLoads", "PhaseTime", "xy_link_loads", "yx_link_loads", "line_loads",
           "loads_from_lines", "phase_time", "phase_time_from_peaks", "switch_phase_time", "hops_matrix",
           "hops_between", "max_hops", "mean_hops", "idle_share", "hot_links", "hot_overlap"]


@dataclass(frozen=True, eq=False)
class LinkArrays:
    """One value per directed link of an R x C mesh (loads, bandwidths or masks), optionally batched.

    ``east[..., r, c]`` is link (r,c)->(r,c+1), ``west[..., r, c]`` is (r,c+1)->(r,c),
    ``south[..., r, c]`` is (r,c)->(r+1,c), ``north[..., r, c]`` is (r+1,c)->(r,c).
    Leading dimensions, if any, are batch dimensions.
    """

    rows: int
    cols: int
    east: np.ndarray
    west: np.ndarray
    south: np.ndarray
    north: np.ndarray

    @property
    def batch_shape(self) -> tuple[int, ...]:
        """Leading batch dimensions (empty tuple for a single pattern)."""
        return np.shape(self.east)[:-2]

    def all_links(self) -> np.ndarray:
        """All directed links flattened as east, west, south, north: shape (..., L)."""
        parts = [np.reshape(a, self.batch_shape + (-1,)) for a in (self.east, self.west, self.south, self.north)]
        return np.concatenate(parts, axis=-1)

    def max_link(self) -> np.ndarray | float:
        """Largest value over the links (0 for a mesh without links)."""
        links = self.all_links()
        if links.shape[-1] == 0:
            return _scalarize(np.zeros(self.batch_shape))
        return _scalarize(links.max(axis=-1))

    def total(self) -> np.ndarray | float:
        """Sum over all links (for loads: sum of bytes x hops)."""
        return _scalarize(self.all_links().sum(axis=-1))


@dataclass(frozen=True, eq=False)
class LinkLoads(LinkArrays):
    """Bytes carried by every directed link of an R x C mesh (see LinkArrays for the link layout).

    ``inject``/``eject`` are per-node bytes sent/received over the network (self traffic excluded).
    """

    inject: np.ndarray
    eject: np.ndarray

    @property
    def batch_shape(self) -> tuple[int, ...]:
        """Leading batch dimensions (empty tuple for a single pattern)."""
        return self.inject.shape[:-1]

    def max_inject(self) -> np.ndarray | float:
        """Largest per-node injected volume."""
        return _scalarize(self.inject.max(axis=-1))

    def max_eject(self) -> np.ndarray | float:
        """Largest per-node ejected volume."""
        return _scalarize(self.eject.max(axis=-1))

    def reversed(self) -> LinkLoads:
        """Loads of every transfer sent back along its own path: each link's load moves to the opposite
        direction, and injection and ejection swap (the YX loads of the transposed traffic)."""
        return LinkLoads(self.rows, self.cols, self.west, self.east, self.north, self.south, self.eject, self.inject)


@dataclass(frozen=True, eq=False)
class PhaseTime:
    """Time of one communication phase, split into its bottleneck terms (seconds).

    ``time_s = max(link_s, inject_s, eject_s) + latency_s``; ``bound`` names the
    dominating term ("link", "inject", "eject", "latency" or "none"). Fields are
    floats/str for scalar inputs and numpy arrays for broadcast inputs.
    """

    link_s: np.ndarray | float
    inject_s: np.ndarray | float
    eject_s: np.ndarray | float
    latency_s: np.ndarray | float
    time_s: np.ndarray | float
    bound: np.ndarray | str


def _scalarize(x):
    """Return a Python scalar for 0-d results so scalar callers get plain numbers."""
    arr = np.asarray(x)
    if arr.ndim == 0:
        return arr.item()
    return arr


def _check_mesh(rows: int, cols: int) -> int:
    """Validate mesh dimensions and return the node count."""
    if int(rows) != rows or int(cols) != cols or rows < 1 or cols < 1:
        raise ValueError(f"mesh dimensions must be positive integers, got {rows}x{cols}")
    return int(rows) * int(cols)


def _check_traffic(rows: int, cols: int, traffic) -> np.ndarray:
    """Validate a (..., N, N) nonnegative finite traffic array and return it as float64."""
    n = _check_mesh(rows, cols)
    if np.iscomplexobj(traffic):
        raise ValueError("traffic must be real (bytes), got complex values")
    t = np.asarray(traffic, dtype=np.float64)
    if t.ndim < 2 or t.shape[-2:] != (n, n):
        raise ValueError(f"traffic must have shape (..., {n}, {n}) for a {rows}x{cols} mesh, got {t.shape}")
    if not np.all(np.isfinite(t)):
        raise ValueError("traffic must be finite")
    if np.any(t < 0):
        raise ValueError("traffic must be nonnegative")
    return t


def line_loads(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Loads on the links of independent 1D lines from a (..., L, M, M) [line, src, dst] array.

    Forward link k->k+1 carries every (s, d) with s <= k < d, backward link
    k+1->k every (s, d) with d <= k < s. A prefix sum over s gives, per k, the
    column of volumes leaving from positions <= k; masking d > k and summing over d
    finishes the 2D prefix sum. Work is O(L*M^2) per batch element.
    """
    m = a.shape[-1]
    if m < 2:
        empty = np.zeros(a.shape[:-2] + (0,))
        return empty, empty.copy()
    k = np.arange(m - 1)[:, None]
    d = np.arange(m)[None, :]
    upto = np.cumsum(a, axis=-2)[..., : m - 1, :]  # sum over s <= k
    # Reverse cumsum instead of (total - prefix) keeps loads exactly nonnegative.
    from_k = np.flip(np.cumsum(np.flip(a, axis=-2), axis=-2), axis=-2)
    beyond = from_k[..., 1:, :]  # sum over s >= k+1
    forward = np.where(d > k, upto, 0.0).sum(axis=-1)
    backward = np.where(d <= k, beyond, 0.0).sum(axis=-1)
    return forward, backward


def xy_link_loads(rows: int, cols: int, traffic) -> LinkLoads:
    """Exact per-link loads of XY dimension-order routing, without walking paths.

    ``traffic[..., s, d]`` (nodes ``n = r*cols + c``) is reshaped to
    T[rs, cs, rd, cd]. The X phase runs in the source row: A[rs, cs, cd] =
    sum_rd T, and east(r, c) = sum_{cs<=c<cd} A[r, cs, cd]. The Y phase runs in
    the destination column: V[cd, rs, rd] = sum_cs T, and south(r, c) =
    sum_{rs<=r<rd} V[c, rs, rd]. Both use prefix sums (see ``line_loads``), so
    total work is O(N^2). Self traffic (s == d) crosses no link and no port.
    """
    t = _check_traffic(rows, cols, traffic)
    batch = t.shape[:-2]
    n = rows * cols
    t4 = t.reshape(batch + (rows, cols, rows, cols))
    horiz = t4.sum(axis=-2)  # (..., rs, cs, cd)
    vert = np.moveaxis(t4.sum(axis=-3), -1, -3)  # (..., cd, rs, rd)
    diag = np.diagonal(t, axis1=-2, axis2=-1)
    inject = t.sum(axis=-1) - diag
    eject = t.sum(axis=-2) - diag
    # Subtracting the diagonal may leave -0.0-level noise; clamp so loads stay >= 0.
    inject = np.maximum(inject, 0.0).reshape(batch + (n,))
    eject = np.maximum(eject, 0.0).reshape(batch + (n,))
    return loads_from_lines(rows, cols, horiz, vert, inject, eject)


def loads_from_lines(rows: int, cols: int, horiz: np.ndarray, vert: np.ndarray, inject, eject) -> LinkLoads:
    """Link loads from what each line carries: ``horiz[..., r, cs, cd]`` bytes routed along row r from column cs to
    column cd (the X legs), ``vert[..., c, rs, rd]`` along column c from row rs to row rd (the Y legs).

    XY loads depend on a traffic matrix only through these R·C² + C·R² numbers, so a pattern that knows
    them (a list of transfers, an all-to-all) gets exact loads without an N x N matrix.
    """
    batch = horiz.shape[:-3]
    east, west = line_loads(horiz)
    south_t, north_t = line_loads(vert)
    east = east.reshape(batch + (rows, cols - 1))
    west = west.reshape(batch + (rows, cols - 1))
    south = np.swapaxes(south_t.reshape(batch + (cols, rows - 1)), -1, -2)
    north = np.swapaxes(north_t.reshape(batch + (cols, rows - 1)), -1, -2)
    return LinkLoads(rows, cols, east, west, south, north, inject, eject)


def yx_link_loads(rows: int, cols: int, traffic) -> LinkLoads:
    """Exact per-link loads of YX dimension-order routing (Y first, in the source column; then X).

    YX on an R x C mesh is XY on the transposed C x R mesh: node (r, c) becomes (c, r), east links
    of the transposed mesh are south links here, and so on. A reply routed YX retraces its
    request's XY path backwards: ``yx_link_loads(R, C, t.T)`` equals ``xy_link_loads(R, C, t).reversed()``.
    """
    t = _check_traffic(rows, cols, traffic)
    r, c = np.divmod(np.arange(rows * cols), cols)
    to_t = c * rows + r                                   # node id on the transposed mesh
    perm = np.argsort(to_t)                               # transposed id -> original id
    tt = t[..., perm, :][..., :, perm]
    lt = xy_link_loads(cols, rows, tt)
    sw = lambda a: np.swapaxes(a, -1, -2)  # noqa: E731
    return LinkLoads(rows, cols, sw(lt.south), sw(lt.north), sw(lt.east), sw(lt.west),
                     lt.inject[..., to_t], lt.eject[..., to_t])


def _positive(name: str, value) -> np.ndarray:
    """Validate a strictly positive (possibly infinite) broadcastable parameter."""
    arr = np.asarray(value, dtype=np.float64)
    if np.any(np.isnan(arr)) or np.any(arr <= 0):
        raise ValueError(f"{name} must be > 0 (inf allowed), got {value!r}")
    return arr


def _nonnegative(name: str, value) -> np.ndarray:
    """Validate a finite nonnegative broadcastable quantity."""
    arr = np.asarray(value, dtype=np.float64)
    if not np.all(np.isfinite(arr)) or np.any(arr < 0):
        raise ValueError(f"{name} must be finite and >= 0, got {value!r}")
    return arr


def phase_time_from_peaks(max_link, max_inject, max_eject, max_hops, scale,
                          link_bw, port_bw, hop_latency) -> PhaseTime:
    """Phase time from structural peaks of a unit pattern, scaled and broadcast.

    The peaks (bytes per unit of the pattern) are multiplied by ``scale`` (units)
    and divided by the bandwidths; all arguments broadcast against each other.
    ``port_bw = inf`` removes the port limit. The volume term with the largest
    time is the bound (ties resolved link > inject > eject); if all volume terms
    are zero the bound is "latency" when latency > 0, else "none".
    """
    scale = _nonnegative("scale", scale)
    link_s = _nonnegative("max_link", max_link) * scale / _positive("link_bw", link_bw)
    inject_s = _nonnegative("max_inject", max_inject) * scale / _positive("port_bw", port_bw)
    eject_s = _nonnegative("max_eject", max_eject) * scale / _positive("port_bw", port_bw)
    latency_s = _nonnegative("max_hops", max_hops) * _nonnegative("hop_latency", hop_latency)
    link_s, inject_s, eject_s, latency_s = np.broadcast_arrays(link_s, inject_s, eject_s, latency_s)
    volume = np.maximum(np.maximum(link_s, inject_s), eject_s)
    bound = np.where(
        volume <= 0,
        np.where(latency_s > 0, "latency", "none"),
        np.where(link_s >= volume, "link", np.where(inject_s >= volume, "inject", "eject")),
    )
    return PhaseTime(
        link_s=_scalarize(link_s),
        inject_s=_scalarize(inject_s),
        eject_s=_scalarize(eject_s),
        latency_s=_scalarize(latency_s),
        time_s=_scalarize(volume + latency_s),
        bound=_scalarize(bound),
    )


def phase_time(loads: LinkLoads, link_bw, port_bw, hop_latency, max_hops) -> PhaseTime:
    """Time of a mesh phase: max(link, inject, eject) serialization + hop latency.

    ``link_s = max over links of load / bandwidth``: ``link_bw`` is one bandwidth for every link or a
    LinkArrays of per-link bandwidths (e.g. slower links across wafer boundaries, see
    ``wsemoe.cost.fabric.topology.link_bandwidths``); ``inject_s``/``eject_s`` = max per-node network volume
    / port_bw, ``latency_s = max_hops * hop_latency``.
    """
    if isinstance(link_bw, LinkArrays):
        if (link_bw.rows, link_bw.cols) != (loads.rows, loads.cols):
            raise ValueError("link bandwidths and loads describe different meshes")
        bw = _positive("link_bw", link_bw.all_links())
        links = loads.all_links()
        ratio = (links / bw).max(axis=-1) if links.shape[-1] else np.zeros(loads.batch_shape)
        return phase_time_from_peaks(ratio, loads.max_inject(), loads.max_eject(), max_hops, 1.0, 1.0, port_bw,
                                     hop_latency)
    return phase_time_from_peaks(loads.max_link(), loads.max_inject(), loads.max_eject(),
                                 max_hops, 1.0, link_bw, port_bw, hop_latency)


def _offdiag_sums(traffic: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-node send and receive volumes of a (..., N, N) matrix, self traffic excluded."""
    diag = np.diagonal(traffic, axis1=-2, axis2=-1)
    send = np.maximum(traffic.sum(axis=-1) - diag, 0.0)
    recv = np.maximum(traffic.sum(axis=-2) - diag, 0.0)
    return send, recv


def switch_phase_time(traffic, port_bw, latency) -> PhaseTime:
    """Phase time on a non-blocking switch: only device ports limit throughput.

    time = max(max send, max receive) / port_bw + latency, with the latency
    charged only if any off-diagonal traffic exists. ``link_s`` is 0.
    """
    t = np.asarray(traffic, dtype=np.float64)
    if t.ndim < 2 or t.shape[-1] != t.shape[-2]:
        raise ValueError(f"traffic must be a (..., N, N) matrix, got shape {t.shape}")
    _nonnegative("traffic", t)
    send, recv = _offdiag_sums(t)
    busy = (send.max(axis=-1) > 0).astype(np.float64)
    return phase_time_from_peaks(0.0, send.max(axis=-1), recv.max(axis=-1), busy, 1.0,
                                 1.0, port_bw, latency)


def hops_matrix(rows: int, cols: int) -> np.ndarray:
    """N x N Manhattan distances between mesh nodes (= XY-routing hop counts)."""
    _check_mesh(rows, cols)
    n = np.arange(rows * cols)
    return hops_between(rows, cols, n[:, None], n[None, :])


@functools.lru_cache(maxsize=16)
def _coords(rows: int, cols: int) -> tuple[np.ndarray, np.ndarray]:
    return np.divmod(np.arange(rows * cols, dtype=np.int64), cols)


def hops_between(rows: int, cols: int, src, dst) -> np.ndarray:
    """Manhattan distances (XY hop counts) between node ids `src` and `dst` (broadcast) of a rows × cols mesh."""
    r, c = _coords(rows, cols)   # looking coordinates up is faster than dividing
    return np.abs(r[src] - r[dst]) + np.abs(c[src] - c[dst])


def max_hops(rows: int, cols: int, traffic) -> np.ndarray | int:
    """Longest hop distance carrying nonzero traffic (0 if there is none)."""
    t = _check_traffic(rows, cols, traffic)
    hops = np.where(t > 0, hops_matrix(rows, cols), 0)
    return _scalarize(hops.max(axis=(-2, -1)))


def mean_hops(rows: int, cols: int, traffic) -> np.ndarray | float:
    """Traffic-weighted mean hop count of the network (off-diagonal) traffic.

    Self traffic never enters the network, so it is left out of the weights;
    the result is 0 when there is no network traffic.
    """
    t = _check_traffic(rows, cols, traffic)
    hops = hops_matrix(rows, cols)
    off = t * (hops > 0)
    weight = off.sum(axis=(-2, -1))
    moved = (off * hops).sum(axis=(-2, -1))
    return _scalarize(np.where(weight > 0, moved / np.where(weight > 0, weight, 1.0), 0.0))


def _flat_links(loads: LinkLoads) -> np.ndarray:
    """Flat link vector of an unbatched LinkLoads (statistics are per pattern)."""
    if loads.batch_shape:
        raise ValueError("link statistics need unbatched LinkLoads; index the batch first")
    return loads.all_links()


def idle_share(loads: LinkLoads, tol: float = 0.0) -> float:
    """Share of directed links whose load is <= tol (0.0 for a mesh without links)."""
    links = _flat_links(loads)
    if links.size == 0:
        return 0.0
    return float(np.mean(links <= tol))


def hot_links(loads: LinkLoads, q: float = 0.9) -> np.ndarray:
    """Boolean mask over ``all_links()``: links with load >= q-quantile of nonzero loads.

    Only loaded links enter the quantile, so idle links never dilute it; with
    no loaded link the mask is all False.
    """
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"q must be in [0, 1], got {q}")
    links = _flat_links(loads)
    loaded = links[links > 0]
    if loaded.size == 0:
        return np.zeros(links.shape, dtype=bool)
    return (links >= np.quantile(loaded, q)) & (links > 0)


def hot_overlap(loads_a: LinkLoads, loads_b: LinkLoads, q: float = 0.9) -> float:
    """Jaccard index |hot_a & hot_b| / |hot_a | hot_b| of two phases' hot links.

    Low values mean the phases stress complementary links (MoEntwine's hot/cold
    complementarity); 0.0 is returned when neither phase has a hot link.
    """
    if (loads_a.rows, loads_a.cols) != (loads_b.rows, loads_b.cols):
        raise ValueError("hot_overlap needs loads of the same mesh shape")
    hot_a, hot_b = hot_links(loads_a, q), hot_links(loads_b, q)
    union = np.count_nonzero(hot_a | hot_b)
    if union == 0:
        return 0.0
    return np.count_nonzero(hot_a & hot_b) / union
