"""Migration of replicated experts: stop-the-world, or non-invasive in the cold windows of each phase.

Every `rebalance_interval` steps the balancer's new expert copies are fetched (expert weights of
every MoE layer). Stop-the-world pays the whole migration phase then. Non-invasive splits the
bytes into pieces that ride links while they are idle: in each all-reduce, dispatch and combine
window a link has (window × bandwidth − its phase load) spare bytes, usable in whole pieces; a
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
    """Per-step migration bytes, hidden and exposed time (s per step, amortized over the interval)."""
    layers = params.moe_layers(m)
    # One expert copy in every MoE layer; only the `churn` share of copies changes per rebalance.
    copy_bytes = params.expert_params(m) * wl.bytes_per_weight * layers * bal.churn
    moved = np.asarray([s.copies_moved for s in built], dtype=float)[inv].reshape(shape)
    mig = [s.phases["migration"] for s in built]
    pick = lambda f: np.asarray([f(p) for p in mig], dtype=float)[inv].reshape(shape)  # noqa: E731
    alone = mesh.phase_time_from_peaks(pick(lambda p: p.max_link), pick(lambda p: p.max_inject),
                                       pick(lambda p: p.max_eject), pick(lambda p: p.max_hops), copy_bytes,
                                       link_bw, hw.port_bw_bytes_per_s, hw.hop_latency_s)
    total_s = np.asarray(alone.time_s, dtype=float)
    interval = bal.rebalance_interval
    if bal.balancer == "stop-the-world" or hw.topology != "mesh":
        exposed = total_s / interval  # a switch has no idle links to hide in: the whole migration is paid
    else:
        exposed = _non_invasive_exposed(built, inv, shape, windows, copy_bytes, link_bw, bal, layers, interval)
    return {
        "migration_bytes_per_step": moved * copy_bytes / interval,
        "migration_total_s": total_s,
        "migration_exposed_s": exposed,
        "migration_hidden_s": np.maximum(total_s / interval - exposed, 0.0),
    }


def _non_invasive_exposed(built, inv, shape, windows, copy_bytes, link_bw, bal, layers, interval):
    """Exposed seconds per step: the busiest link's migration bytes beyond its cold-window budget."""
    flat_inv = np.asarray(inv).ravel()
    out = np.zeros(flat_inv.shape)
    for i, s in enumerate(built):
        rows = flat_inv == i
        need = _flat(s.phases["migration"].loads)                                    # per byte of a copy
        if need.size == 0 or not need.any():
            continue
        budget = np.zeros((rows.sum(), need.size))
        for name, (window, scale, reps) in windows.items():
            load = _flat(s.phases[name].loads)
            w = np.broadcast_to(np.asarray(window, float), shape).ravel()[rows][:, None]
            sc = np.broadcast_to(np.asarray(scale, float), shape).ravel()[rows][:, None]
            bw = np.broadcast_to(np.asarray(link_bw, float), shape).ravel()[rows][:, None]
            spare = np.maximum(w * bw - sc * load[None, :], 0.0)
            piece = np.broadcast_to(np.asarray(bal.piece_bytes, float), shape).ravel()[rows][:, None]
            pieces = np.floor(spare / piece) * piece                                  # whole pieces only
            budget += reps * layers * pieces                                         # windows per step
        n_int = np.broadcast_to(np.asarray(interval, float), shape).ravel()[rows]
        need_rows = need[None, :] * np.broadcast_to(np.asarray(copy_bytes, float), shape).ravel()[rows][:, None]
        left = np.maximum(need_rows - n_int[:, None] * budget, 0.0)
        bw = np.broadcast_to(np.asarray(link_bw, float), shape).ravel()[rows]
        out[rows] = left.max(axis=1) / bw / n_int
    return out.reshape(shape)
