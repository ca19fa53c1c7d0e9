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


def squared_loads(layout: topo.Layout, dispatch, conc: np.ndarray) -> dict:
    """{phase: Σ (piece share)² per link (all_links order)} of the dispatch and of the combine routed XY and
    reverse (the module docstring); {} off a mesh, where no link carries a share of a step's copies."""
    if layout.topology != "mesh":
        return {}
    sq = into_scaled(dispatch, conc)
    return {"dispatch": sq.loads(layout).all_links(), "combine": sq.T.loads(layout).all_links(),
            "combine_reverse": sq.T.loads(layout, "reverse").all_links()}
