"""How a dispatch's link loads spread over a step's random routing: per link, the second moment that, with its
mean load, gives the binomial cost/balance/routing.py takes its copies to be.

A link of the dispatch carries the copies whose (sender, expert copy) paths cross it. A group's token sends its
copy of expert e to host d with probability q_ed = k·share_e·split_ed, so the copies on link l over the step's T
tokens have mean T/groups·Σ q, the sum over the (sender, d, e) pieces whose paths cross l. Its variance is not the
pieces' Σ q(1 − q) (each picked by itself): a token is one draw of k distinct experts, so the copies one owner's
token (its group's; a member's own under the slice flow) puts on l are one count, of variance μ − (1 − ρ)·Σ q² − ρ·μ²
with μ its Σ q and ρ = (E − k)/(k(E − 1)) (comm._link_spread: exact at top-1 and for uniform shares). Next to a
sender the pieces overstated it most: 2 × 2 mesh, top-1, one token a die, the east link beside die 0 carries its
token with chance 1/2, Bernoulli(1/2), where they read Binomial(2, 1/4). So each link keeps Σ over owners of (the
owner's share on it)² (`owner_squares`) beside its pieces' Σ (q/k)². Per unit of the dispatch pattern (one
copy from every group) the mean is the link's load, and Σ (q/k)² is the load of the same pattern with every
transfer into node d scaled by d's concentration Σ_e (share_e·split_ed)² / Σ_e share_e·split_ed
(routing.node_concentration): the transfers into d carry d's pieces in proportion to their shares (exact where
every group splits an expert's copies over its hosts alike; where the default placement of fewer experts than
nodes sends each group to its nearest host, the placement's split stands in for the group's, as it does for a
node's spread in routing.py). So the link's concentration is (that load) / (its load), as a node's is; its share is its load over the
groups (each sends one unit). Combine retraces the dispatch, so its spread is the transposed pattern's.

The same pieces load every other carrier a step's copies cross, and the step waits for the busiest of each kind as
it does for the busiest link (a synchronous all-to-all ends when its last byte lands): the expert side's ports (a
dispatch's ejection, a combine's injection: the copies into node d from other nodes, on a switch of several domains
those from d's own domain, the rest leaving by the NICs) and, on a switch of several domains, what each domain's
pool of NICs and each device's own NIC (per-copy kernels) receive from other domains. Combine's carriers of these
kinds are the dispatch's with send and receive swapped: one set serves both. A sender's NIC directions are not
made of independent pieces that way: every copy of its own tokens leaves it but those its own domain's experts take,
so its count and its local count k − it have one variance, and the pieces of the larger set, each taken by itself,
overstate it by their negative covariance (a token's k picks are distinct): for one H100 of 4 servers, a
256-expert top-8 model, 7.5 a token over its 192 remote experts against 1.94 over its 64 local ones (the exact
hypergeometric variance, 1.46). So a sender's carrier takes the smaller of the two sums ("nic_local",
"device_local": its domain's pieces). (The senders' ports keep their expected loads: with several members a group,
which member sends a copy turns on its destination, and its count's complement is no set of its own.)
"""

from __future__ import annotations

import numpy as np

from wsemoe.cost.fabric import mesh, patterns
from wsemoe.cost.fabric import topology as topo


def into_scaled(p, factor: np.ndarray):
    """The evaluable pattern `p` with every transfer into node d scaled by factor[d] (its kind kept)."""
    factor = np.asarray(factor, dtype=float)
    if isinstance(p, patterns.Dense):
        return patterns.Dense(p.t * factor[None, :])
    if isinstance(p, patterns.Transfers):
        return patterns.Transfers(p.n, p.src, p.dst, p.vol * factor[p.dst])
    if isinstance(p, patterns.Outer):
        return patterns.Outer(p.shape, p.a, p.b * factor, p.f, p.tile)
    if isinstance(p, patterns.Blocks) and not p.flipped:
        make = p.make
        return patterns.Blocks(p.n, p.count, lambda i: into_scaled(make(i), factor))
    raise TypeError(f"cannot scale a {type(p).__name__} by destination")


def carriers(layout: topo.Layout, p) -> dict:
    """{kind: per-carrier loads} of an evaluable dispatch pattern `p` (module docstring): "port", the copies into each
    node from other nodes (a switch of several domains: from its own domain); on such a switch "nic_in" and
    "nic_out", each domain's bytes received from and sent to other domains, "device_in", "device_out", each
    device's, and "nic_local", "device_local", what each domain's and device's tokens send inside their domain
    (local copies included)."""
    if layout.topology != "switch" or layout.domains < 2:
        return {"port": p.ports()[1]}
    t, dom = p.dense(), layout.wafer_of()
    apart = dom[:, None] != dom[None, :]
    inside = np.where(apart, 0.0, t)
    cross = np.where(apart, t, 0.0)
    member = np.eye(layout.domains)[dom]   # (N, domains) one-hot
    per_domain = lambda x: x @ member      # noqa: E731  (sums over each domain's devices)
    ports = inside.sum(axis=0) - np.diag(t)
    return {"port": ports, "nic_in": per_domain(cross.sum(axis=0)), "nic_out": per_domain(cross.sum(axis=1)),
            "nic_local": per_domain(inside.sum(axis=1)), "device_in": cross.sum(axis=0),
            "device_out": cross.sum(axis=1), "device_local": inside.sum(axis=1)}


OWNER_MAX_NODES = 1024   # most nodes whose per-sender link loads (N × N numbers, 8 MB) `owner_squares` forms; on
                         # larger meshes a link's owners are taken as its pieces (the independent-piece spread,
                         # which overstates it next to a sender), keeping those meshes' structures O(N) in memory


def _by_owner(x: np.ndarray, key: np.ndarray, rows: int | None = None) -> np.ndarray:
    """Σ over keys of (x summed over each key's senders)², x indexed by sender on its first axis; with `rows`, the
    squares of key q summed into row q % rows (keys owner·rows + the senders' row: a row's own links)."""
    order = np.argsort(key, kind="stable")
    starts = np.flatnonzero(np.r_[True, np.diff(key[order]) != 0])
    sq = np.add.reduceat(x[order], starts, axis=0) ** 2
    if rows is None:
        return sq.sum(axis=0)
    out = np.zeros((rows,) + x.shape[1:])
    np.add.at(out, key[order][starts] % rows, sq)
    return out


def _owner_xy(rows: int, cols: int, t: np.ndarray, owner: np.ndarray) -> mesh.LinkLoads:
    """Per XY-routed link, Σ over owners of (the load of the transfers an owner's senders make)², O(N²): sender s
    at (r, c) loads east (r, k) for c ≤ k with what it sends past column k, south (k, c') for r ≤ k with what it
    sends into column c' past row k (west and north mirrored)."""
    n = rows * cols
    r, c = np.divmod(np.arange(n), cols)
    t3 = t.reshape(n, rows, cols)                                            # [sender, row, column] of d
    after = lambda a, ax: np.flip(np.cumsum(np.flip(a, ax), ax), ax)         # noqa: E731  (Σ from j on)
    col, kc, kr = t3.sum(axis=1), np.arange(cols - 1), np.arange(rows - 1)
    east = np.where(c[:, None] <= kc, after(col, 1)[:, 1:], 0.0)
    west = np.where(c[:, None] > kc, np.cumsum(col, 1)[:, :-1], 0.0)
    south = np.where((r[:, None] <= kr)[:, :, None], after(t3, 1)[:, 1:], 0.0)
    north = np.where((r[:, None] > kr)[:, :, None], np.cumsum(t3, 1)[:, :-1], 0.0)
    row_key = owner * rows + r                                               # a row's links: its own senders
    zero = np.zeros(n)
    return mesh.LinkLoads(rows, cols, _by_owner(east, row_key, rows), _by_owner(west, row_key, rows),
                          _by_owner(south, owner), _by_owner(north, owner), zero, zero)


def owner_squares(layout: topo.Layout, dispatch, owner: np.ndarray) -> dict | None:
    """{phase: Σ over token owners of (the owner's share on the link)² per link (all_links order)} of the dispatch
    and of the combine routed XY and reverse: a token is one draw of k distinct experts, so the copies an owner's
    token puts on a link are one count, not independent pieces (module docstring). The combine routed XY is the
    dispatch routed YX, reversed (mesh.yx_link_loads), YX being XY on the transposed mesh. None above
    OWNER_MAX_NODES."""
    R, C = layout.grid
    if layout.nodes > OWNER_MAX_NODES:
        return None
    t = np.asarray(dispatch.dense(), float)
    xy = _owner_xy(R, C, t, owner)
    r, c = np.divmod(np.arange(R * C), C)
    perm = np.argsort(c * R + r)                                             # transposed id -> original id
    yx = _owner_xy(C, R, t[perm][:, perm], owner[perm])
    sw = lambda a: np.swapaxes(a, -1, -2)                                    # noqa: E731
    yx = mesh.LinkLoads(R, C, sw(yx.south), sw(yx.north), sw(yx.east), sw(yx.west), yx.inject, yx.eject)
    return {"dispatch": xy.all_links(), "combine": yx.reversed().all_links(),
            "combine_reverse": xy.reversed().all_links()}


def squared_loads(layout: topo.Layout, dispatch, conc: np.ndarray, owner: np.ndarray, picks=None,
                  held: float = 1.0) -> tuple[dict, dict]:
    """({phase: (Σ (piece share)², Σ (owner share)², Σ (piece α)², Σ (owner α)²) per link (all_links order)} of the
    dispatch and of the combine routed XY and reverse, {} off a mesh, where no link carries a share of a step's
    copies; {kind: (loads, Σ (piece share)² per carrier)} of `carriers`). The piece squares come from the pattern
    with every transfer into d scaled by conc[d], the owners' from `owner_squares` (`owner`: each sender's token
    owner); the α terms (None with `picks` None: uniform shares) likewise from the pattern scaled by `picks`,
    routing.pick_scales' (Σ α·split, Σ (α·split)²) per node. `held`: an owner's share of its group's tokens (1/tp
    under the slice flow, whose members each hold their slice): an owner's token puts 1/held times its pattern
    share on a link, over held times the tokens, so its squares are divided by it (the pieces' are not: each
    piece's square scales as its count does)."""
    sq = into_scaled(dispatch, conc)
    links = {}
    if layout.topology == "mesh":   # first: a blocked pattern's port sums reuse its loads' pass
        own = owner_squares(layout, dispatch, np.asarray(owner))
        phases = {"dispatch": lambda p: p.loads(layout), "combine": lambda p: p.T.loads(layout),
                  "combine_reverse": lambda p: p.T.loads(layout, "reverse")}
        alpha = dict.fromkeys(phases, (None, None))
        if picks is not None:
            mixed, sq_alpha = into_scaled(dispatch, picks[0]), into_scaled(dispatch, picks[1])
            own_alpha = owner_squares(layout, mixed, np.asarray(owner)) or {}
            alpha = {k: (f(sq_alpha).all_links(), own_alpha.get(k)) for k, f in phases.items()}
        links = {k: (f(sq).all_links(), (own or {}).get(k), *alpha[k]) for k, f in phases.items()}
        if own is None:   # a mesh above OWNER_MAX_NODES: its owners taken as its pieces
            links = {k: (v[0], v[0], v[2], v[2]) for k, v in links.items()}
        links = {k: (v[0], v[1] / held, v[2], None if v[3] is None else v[3] / held) for k, v in links.items()}
    plain, squares = carriers(layout, dispatch), carriers(layout, sq)
    return links, {k: (plain[k], squares[k]) for k in plain}
