"""Migration of replicated experts: stop-the-world, or non-invasive in the cold windows of each phase.

Every `rebalance_interval` steps the balancer's new expert copies are fetched (expert weights of
every MoE layer). Stop-the-world pays the whole migration phase then. Non-invasive splits the
bytes into pieces that ride links while they are idle: in each all-reduce, dispatch and combine
window (and gradient-reduction window, when training) a link has (window × bandwidth − its phase load) spare bytes, usable in whole pieces; a
piece routed local → global → local uses whichever links are cold in the current phase, which
this link-level budget captures. What does not fit stays exposed on the critical path.
"""

from __future__ import annotations

import numpy as np

from wsemoe.cost import mesh, params


MIGRATION_COLUMNS = ("migration_bytes_per_step", "migration_total_s", "migration_exposed_s", "migration_hidden_s")


def _flat(loads):
    return np.zeros(0) if loads is None else loads.all_links()


def migration_columns(hw, m, wl, bal, built, inv, shape, windows, link_bw) -> dict:
    """Per-step migration bytes, hidden and exposed time (s per step, amortized over the interval).

    `inv` (shape `shape`) indexes each point's structure in `built`; every other input may vary per
    point too (batch, churn, piece size, interval, bandwidth), so all are broadcast to one shape.
    """
    layers = params.moe_layers(m)
    # One expert copy in every MoE layer; only the `churn` share of copies changes per rebalance.
    copy_bytes = params.expert_params(m) * wl.bytes_per_weight * layers * bal.churn
    interval = bal.rebalance_interval
    varying = [copy_bytes, interval, bal.piece_bytes, link_bw, hw.port_bw_bytes_per_s, hw.hop_latency_s,
               *(x for w in windows.values() for x in w)]
    full = np.broadcast_shapes(tuple(shape), *(np.shape(x) for x in varying))
    idx = np.broadcast_to(np.asarray(inv).reshape(shape), full)
    moved = np.asarray([s.copies_moved for s in built], dtype=float)[idx]
    mig = [s.phases["migration"] for s in built]
    pick = lambda f: np.asarray([f(p) for p in mig], dtype=float)[idx]  # noqa: E731
    alone = mesh.phase_time_from_peaks(pick(lambda p: p.max_link), pick(lambda p: p.max_inject),
                                       pick(lambda p: p.max_eject), pick(lambda p: p.max_hops), copy_bytes,
                                       link_bw, hw.port_bw_bytes_per_s, hw.hop_latency_s)
    total_s = np.broadcast_to(np.asarray(alone.time_s, dtype=float), full)
    if bal.balancer == "stop-the-world" or hw.topology != "mesh":
        exposed = total_s / interval  # a switch has no idle links to hide in: the whole migration is paid
    else:
        exposed = _non_invasive_exposed(built, idx, full, windows, copy_bytes, link_bw, bal, layers, interval)
    return {
        "migration_bytes_per_step": moved * copy_bytes / interval,
        "migration_total_s": total_s,
        "migration_exposed_s": exposed,
        "migration_hidden_s": np.maximum(total_s / interval - exposed, 0.0),
    }


def _non_invasive_exposed(built, idx, shape, windows, copy_bytes, link_bw, bal, layers, interval):
    """Exposed seconds per step: the busiest link's migration bytes beyond its cold-window budget."""
    flat_idx = idx.ravel()
    out = np.zeros(flat_idx.shape)

    def rows_of(x, rows):
        return np.broadcast_to(np.asarray(x, float), shape).ravel()[rows]

    for i, s in enumerate(built):
        rows = flat_idx == i
        need = _flat(s.phases["migration"].loads)                                    # per byte of a copy
        if not rows.any() or need.size == 0 or not need.any():
            continue
        bw = rows_of(link_bw, rows)[:, None]
        piece = rows_of(bal.piece_bytes, rows)[:, None]
        budget = np.zeros((rows.sum(), need.size))
        for name, (window, scale, reps) in windows.items():
            load = _flat(s.phases[name].loads)
            spare = np.maximum(rows_of(window, rows)[:, None] * bw - rows_of(scale, rows)[:, None] * load[None, :], 0.0)
            pieces = np.floor(spare / piece) * piece                                  # whole pieces only
            budget += rows_of(reps, rows)[:, None] * layers * pieces                  # windows per step
        n_int = rows_of(interval, rows)
        left = np.maximum(need[None, :] * rows_of(copy_bytes, rows)[:, None] - n_int[:, None] * budget, 0.0)
        out[rows] = left.max(axis=1) / bw[:, 0] / n_int
    return out.reshape(shape)
