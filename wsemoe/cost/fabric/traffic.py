"""Traffic of the communication phases of one MoE layer on a placement: compact patterns (`cost.patterns`) for
structures, N x N matrices (bytes) for callers that want one."""

from __future__ import annotations

import numpy as np

from wsemoe.cost.fabric.mapping import ExpertPlacement, Placement
from wsemoe.cost.fabric.mesh import hops_between
from wsemoe.cost.fabric.patterns import Outer, Transfers

SENDER_BLOCK = 1 << 20   # (group, node) sender entries computed at once by `dispatch_transfers` (bounds its memory)

__all__ = [
    "TOKEN_SOURCES",
    "ring_allreduce_traffic",
    "allreduce_ring_traffic",
    "gradient_traffic",
    "dispatch_senders",
    "dispatch_transfers",
    "dispatch_traffic",
    "slice_pattern",
    "slice_dispatch",
    "migration_transfers",
    "migration_traffic",
]

TOKEN_SOURCES = ("nearest", "ftd")


def _nonneg(name: str, value) -> float:
    """Validate a finite nonnegative scalar."""
    v = float(value)
    if not np.isfinite(v) or v < 0:
        raise ValueError(f"{name} must be finite and >= 0, got {value!r}")
    return v


def ring_allreduce_traffic(rings: np.ndarray, bytes_per_member: float, n: int) -> np.ndarray:
    """Traffic of independent ring all-reduces, one per row of ``rings`` (node ids in ring order).

    A ring of p members all-reducing a vector of B bytes runs reduce-scatter plus
    all-gather: 2(p-1) steps in which every member sends B/p bytes to its ring
    successor, so each ring edge i -> i+1 (including last -> first) carries
    2(p-1)/p * B bytes. Rings of one member move nothing.
    """
    rings = np.asarray(rings, dtype=np.int64)
    b = _nonneg("bytes_per_member", bytes_per_member)
    traffic = np.zeros((n, n))
    if rings.ndim != 2:
        raise ValueError(f"rings must be a 2D array, got shape {rings.shape}")
    p = rings.shape[1]
    if p < 2:
        return traffic
    src, dst = rings, np.roll(rings, -1, axis=1)
    np.add.at(traffic, (src.ravel(), dst.ravel()), 2.0 * (p - 1) / p * b)
    return traffic


def allreduce_ring_traffic(placement: Placement, bytes_per_member: float) -> np.ndarray:
    """Traffic of every TP group's ring all-reduce (all groups at once, see ``ring_allreduce_traffic``)."""
    return ring_allreduce_traffic(placement.rings, bytes_per_member, placement.num_nodes)


def gradient_traffic(placement: Placement, bytes_per_shard: float) -> np.ndarray:
    """Data-parallel all-reduce of attention-weight gradients across TP groups.

    Rank i of every group holds the same weight shard, so the ng nodes at ring
    position i (ordered by group id) form one all-reduce ring of
    ``bytes_per_shard`` bytes; all tp such rings run at once.
    """
    return ring_allreduce_traffic(placement.rings.T, bytes_per_shard, placement.num_nodes)


def holders(placement: Placement) -> np.ndarray:
    """Nodes holding each group's tokens after the attention collective, shape (groups, H): the group's own
    members, or under hierarchical ER every member of its family on every wafer (the cross-wafer all-gather)."""
    fam = placement.families
    # Groups of a family in ascending id, their rings concatenated; every family has as many groups.
    order = np.argsort(fam, kind="stable")
    by_family = placement.rings[order].reshape(int(fam.max()) + 1, -1)
    return by_family[fam]


def _nearest_senders(placement: Placement, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per (group, node in `nodes`): the holder of the group's tokens nearest to the node (lowest id on ties), its
    distance. Under hierarchical ER only holders on the node's own wafer count: dispatch never crosses a wafer."""
    members = np.sort(holders(placement), axis=1)  # ascending ids: a strict < keeps the lowest on ties
    far = np.iinfo(np.int64).max // 2
    wafer = None
    if placement.cross_rings is not None:
        wafer = np.empty(placement.num_nodes, dtype=np.int64)
        wafer[placement.cross_rings] = np.arange(placement.num_wafers)[None, :]
    sender = np.broadcast_to(members[:, :1], (len(members), len(nodes))).copy()
    dist = np.full(sender.shape, far)
    for h in range(members.shape[1]):   # one holder rank at a time: (groups, nodes), never (groups, holders, nodes)
        m = members[:, h:h + 1]
        d = hops_between(placement.rows, placement.cols, m, nodes[None, :])
        if wafer is not None:
            d = np.where(wafer[m] == wafer[nodes][None, :], d, far)
        closer = d < dist
        sender, dist = np.where(closer, m, sender), np.where(closer, d, dist)
    return sender, dist


def _ftd_senders(placement: Placement, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per (group, node in `nodes`): the holder of the group's tokens inside the node's FTD tile, and its distance."""
    member_nodes = placement.rings.ravel()
    families = placement.families[placement.group_of[member_nodes]]
    tiles = placement.ftd_id[member_nodes]
    # Every tile holds exactly one member of every family (ER: every group), so this lookup is a bijection.
    by_tile = np.empty((families.max() + 1, tiles.max() + 1), dtype=np.int64)
    by_tile[families, tiles] = member_nodes
    sender = by_tile[placement.families][:, placement.ftd_id[nodes]]
    return sender, hops_between(placement.rows, placement.cols, sender, nodes[None, :])


def dispatch_senders(placement: Placement, token_source: str = "nearest",
                     nodes=None) -> tuple[np.ndarray, np.ndarray]:
    """Sender of group j's tokens towards every node n (of `nodes`, default all), and the hop distance: two
    (ng, len(nodes)) arrays.

    "nearest": the holder of j's tokens closest to n (lowest node id on ties). "ftd": for
    ER placements the member of j in n's FTD tile, which keeps dispatch inside
    tiles (it is not always the nearest member: a member just across a tile
    border can be closer); for other placements it falls back to "nearest". Under
    hierarchical ER every member of j's family on every wafer holds j's tokens.
    """
    if token_source not in TOKEN_SOURCES:
        raise ValueError(f"token_source must be one of {TOKEN_SOURCES}, got {token_source!r}")
    nodes = np.arange(placement.num_nodes) if nodes is None else np.asarray(nodes, dtype=np.int64)
    if token_source == "ftd" and placement.ftd_shape is not None:
        return _ftd_senders(placement, nodes)
    return _nearest_senders(placement, nodes)


def _expert_shares(expert_load, num_experts: int) -> np.ndarray:
    """Validate expert popularity shares (default uniform 1/E)."""
    if expert_load is None:
        return np.full(num_experts, 1.0 / num_experts)
    load = np.asarray(expert_load, dtype=np.float64)
    if load.shape != (num_experts,) or not np.all(np.isfinite(load)) or np.any(load < 0):
        raise ValueError(f"expert_load must be {num_experts} finite nonnegative shares")
    if not np.isclose(load.sum(), 1.0, rtol=1e-6, atol=1e-9):
        raise ValueError(f"expert_load shares must sum to 1, got {load.sum()}")
    return load


def dispatch_transfers(placement: Placement, experts: ExpertPlacement, per_expert: np.ndarray,
                       token_source: str = "nearest") -> Transfers:
    """The MoE dispatch as transfers: for each expert e (in order) and group j, `per_expert[e]` bytes from j's
    sender to the host of e nearest to its own sender (``dispatch_senders``), split evenly over the hosts equally
    near: with fewer experts than dies (E < N under ER or HER) copies e and e + E sit at one place of corresponding
    tiles or wafers, and sending every tie to the lowest id left half the dies without tokens (imbalance 2.0 under
    uniform routing).

    Senders are found for the hosts of a few experts at a time (at most SENDER_BLOCK (group, host) pairs, or
    one expert's), so memory stays O(groups × hosts of a block), never groups × nodes.
    """
    if experts.hosts.shape[1] != placement.num_nodes:
        raise ValueError("expert placement and group placement use different meshes")
    if np.any(experts.replicas < 1):
        raise ValueError("every expert needs at least one host")
    hosts = [experts.hosts_of(e) for e in range(experts.num_experts)]   # ascending host ids
    width = max(1, SENDER_BLOCK // placement.num_groups)
    src, dst, vol, e = [], [], [], 0
    while e < len(hosts):
        stop, cols = e + 1, len(hosts[e])
        while stop < len(hosts) and cols + len(hosts[stop]) <= width:
            cols += len(hosts[stop])
            stop += 1
        sender, dist = dispatch_senders(placement, token_source, np.concatenate(hosts[e:stop]))
        at = 0
        for k in range(e, stop):
            h = hosts[k]
            d = dist[:, at:at + len(h)]
            # the nearest copies; copies equally near (replicas at one place of corresponding tiles or wafers) share
            tied = d == d.min(axis=1, keepdims=True)
            g, pick = np.nonzero(tied)
            share = 1.0 / tied.sum(axis=1)[g]
            src.append(sender[g, at + pick])
            dst.append(h[pick])
            vol.append(per_expert[k] * share)
            at += len(h)
        e = stop
    return Transfers(placement.num_nodes, np.concatenate(src), np.concatenate(dst), np.concatenate(vol))


def dispatch_traffic(placement: Placement, experts: ExpertPlacement, tokens_per_group: float,
                     top_k: int, hidden_bytes: float, expert_load=None,
                     token_source: str = "nearest") -> np.ndarray:
    """Expected bytes of the MoE dispatch (group members -> expert hosts), N x N.

    After the TP all-reduce every member of group j holds all of j's tokens, so
    tokens are not split across members: for each expert e group j sends
    tokens_per_group * top_k * load[e] * hidden_bytes bytes, in one piece, to a
    single host of e: the host h minimising the distance from its sender
    (``dispatch_senders``), split evenly over hosts equally near; that sender sends it.
    Local deliveries (sender == host) stay on the diagonal; they cost no link.
    """
    if int(top_k) != top_k or not 1 <= top_k <= experts.num_experts:
        raise ValueError(f"top_k must be an integer in 1..{experts.num_experts}, got {top_k!r}")
    per_expert = (_nonneg("tokens_per_group", tokens_per_group) * top_k
                  * _nonneg("hidden_bytes", hidden_bytes) * _expert_shares(expert_load, experts.num_experts))
    return dispatch_transfers(placement, experts, per_expert, token_source).dense()


def slice_pattern(placement: Placement, experts: ExpertPlacement, expert_load=None, wafer=None) -> Outer:
    """Dispatch when every member sends only its own slice of the tokens (per token copy of one byte per group).

    Each group's copies for node n come in equal parts from the holders of its tokens: its tp members
    (flat), or under hierarchical ER the t members of its family on n's wafer (`wafer` = (rows, cols) of
    one wafer), each holding W groups' slices. A copy is split over its expert's hosts by `experts.weights`,
    whatever the distance: an all-to-all t[s, n] = into[n]/tp (within wafers: W·into[n]/tp), the same pattern
    as the dispatch of a switch, where distance means nothing.
    """
    into = (experts.weights * _expert_shares(expert_load, experts.num_experts)[:, None]).sum(axis=0)  # (N,)
    n, w = placement.num_nodes, placement.num_wafers
    shape = (placement.rows, placement.cols)
    return Outer(shape, np.full(n, 1.0 / placement.tp), into, float(w), tuple(wafer) if w > 1 else None)


def slice_dispatch(placement: Placement, experts: ExpertPlacement, expert_load=None, wafer=None) -> np.ndarray:
    """`slice_pattern` as an N x N matrix."""
    return slice_pattern(placement, experts, expert_load, wafer).dense()


def migration_transfers(src_nodes, dst_nodes, bytes_each, n: int) -> Transfers:
    """Point-to-point transfers: ``bytes_each`` (scalar or per pair) from src_nodes[i] to dst_nodes[i]."""
    src = np.atleast_1d(np.asarray(src_nodes))
    dst = np.atleast_1d(np.asarray(dst_nodes))
    if int(n) != n or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    if src.shape != dst.shape or src.ndim != 1:
        raise ValueError("src_nodes and dst_nodes must be 1D and of equal length")
    if src.size and (not np.issubdtype(src.dtype, np.integer) or not np.issubdtype(dst.dtype, np.integer)):
        raise ValueError("node ids must be integers")
    if src.size and (min(src.min(), dst.min()) < 0 or max(src.max(), dst.max()) >= n):
        raise ValueError(f"node ids must lie in 0..{n - 1}")
    vol = np.broadcast_to(np.asarray(bytes_each, dtype=np.float64), src.shape)
    if not np.all(np.isfinite(vol)) or np.any(vol < 0):
        raise ValueError("bytes_each must be finite and >= 0")
    return Transfers(int(n), src.astype(np.int64), dst.astype(np.int64), np.array(vol))


def migration_traffic(src_nodes, dst_nodes, bytes_each, n: int) -> np.ndarray:
    """`migration_transfers` as an N x N matrix."""
    return migration_transfers(src_nodes, dst_nodes, bytes_each, n).dense()
