"""How a dispatch's link loads spread over a step's random routing: per link, the second moment that, with its
mean load, gives the binomial cost/balance/routing.py takes its copies to be.

A link of the dispatch carries the copies whose (sender, expert copy) paths cross it. A group's token sends its
copy of expert e to host d with probability q_ed = k·share_e·split_ed, so the copies on link l over the step's T
tokens have mean T/groups·k·Σ q/k and variance T/groups·Σ q(1 − q), the sums over the (sender, d, e) pieces whose
paths cross l (each piece picked by itself, as routing.py takes a node's). Per unit of the dispatch pattern (one
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

from wsemoe.cost.fabric import patterns
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


def squared_loads(layout: topo.Layout, dispatch, conc: np.ndarray) -> tuple[dict, dict]:
    """({phase: Σ (piece share)² per link (all_links order)} of the dispatch and of the combine routed XY and
    reverse, {} off a mesh, where no link carries a share of a step's copies; {kind: (loads, Σ (piece share)² per
    carrier)} of `carriers`), the squares from the pattern with every transfer into d scaled by conc[d]."""
    sq = into_scaled(dispatch, conc)
    links = {} if layout.topology != "mesh" else {   # first: a blocked pattern's port sums reuse its loads' pass
        "dispatch": sq.loads(layout).all_links(), "combine": sq.T.loads(layout).all_links(),
        "combine_reverse": sq.T.loads(layout, "reverse").all_links()}
    plain, squares = carriers(layout, dispatch), carriers(layout, sq)
    return links, {k: (plain[k], squares[k]) for k in plain}
