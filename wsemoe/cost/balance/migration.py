"""Migration of replicated experts: stop-the-world, or non-invasive in the cold windows of each layer.

Every `rebalance_interval` steps the balancer's new expert copies are fetched (expert weights of every
MoE layer). Stop-the-world pays the whole migration phase then. Non-invasive splits the bytes into
pieces that ride links while they are idle: in each window of a step a link has (window × its bandwidth
− its load in that window) spare bytes. A piece that meets a window's end pauses and resumes in the next
cold window (a DMA engine's transfer is not atomic), so the budget is fluid: the spare bytes add up over
the windows. That keeps the model monotone: a window made longer by Δ hides at most Δ more migration on
the busiest link, so nothing that lengthens a window (less compute, more latency) can shorten the step.
The windows are the communication phases
(all-reduce, dispatch, combine, output reduction, gradient reduction when training) and, unless
`balance.migration_windows: comm`, the compute and HBM time of every layer, when no phase uses the links.
A piece routed local → global → local uses whichever links are cold in the current window, which this
link-level budget captures. What does not fit stays exposed on the critical path.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from wsemoe.cost.fabric import topology, phasetime
from wsemoe.cost.node import params, weights

MIGRATION_COLUMNS = ("migration_bytes_per_step", "migration_total_s", "migration_exposed_s", "migration_hidden_s")


class Window(NamedTuple):
    """A stretch of every step in which migration pieces may ride spare link capacity.

    `seconds` per occurrence, `scale` the bytes per unit of the phase occupying the links (0 when none),
    `reps` occurrences per step, `phase` the structure phase whose unit loads occupy the links (None: idle).
    """

    seconds: object
    scale: object
    reps: object
    phase: str | None


def migration_columns(hw, m, wl, bal, built, inv, shape, windows: list) -> dict:
    """Per-step migration bytes, hidden and exposed time (s per step, amortized over the interval).

    `inv` (shape `shape`) indexes each point's structure in `built`; every other input may vary per
    point too (batch, churn, piece size, interval, bandwidth), so all are broadcast to one shape.
    """
    layers = params.moe_layers(m)
    # One expert copy in every MoE layer; only the `churn` share of copies changes per rebalance.
    copy_bytes = weights.expert_copy_bytes(m, wl) * layers * bal.churn
    interval = bal.rebalance_interval
    varying = [copy_bytes, interval, *topology.class_bandwidths(hw), hw.port_bw_bytes_per_s,
               hw.hop_latency_s, *(x for w in windows for x in w[:3])]
    full = np.broadcast_shapes(tuple(shape), *(np.shape(x) for x in varying))
    idx = np.broadcast_to(np.asarray(inv).reshape(shape), full)
    moved = np.asarray([s.copies_moved for s in built], dtype=float)[idx]
    alone = phasetime.phase(hw, built, idx.ravel(), full, "migration", copy_bytes)
    total_s = np.broadcast_to(alone.volume + alone.latency, full)
    if bal.balancer == "stop-the-world" or hw.topology != "mesh":
        exposed = total_s / interval  # a switch has no idle links to hide in: the whole migration is paid
    else:
        exposed = _non_invasive_exposed(hw, built, idx, full, windows, copy_bytes, bal, interval)
    return {
        "migration_bytes_per_step": moved * copy_bytes / interval,
        "migration_total_s": total_s,
        "migration_exposed_s": exposed,
        "migration_hidden_s": np.maximum(total_s / interval - exposed, 0.0),
    }


def _flat(loads):
    return np.zeros(0) if loads is None else loads.all_links()


def _non_invasive_exposed(hw, built, idx, shape, windows, copy_bytes, bal, interval):
    """Exposed seconds per step: the busiest link's migration bytes beyond its cold-window budget (per link, its
    own bandwidth: wafer-crossing links may be slower)."""
    flat_idx = idx.ravel()
    out = np.zeros(flat_idx.shape)
    bw0, bw1 = topology.class_bandwidths(hw)

    def rows_of(x, rows):
        return np.broadcast_to(np.asarray(x, float), shape).ravel()[rows][:, None]

    for i, s in enumerate(built):
        rows = flat_idx == i
        need = _flat(s.phases["migration"].loads)                                    # per byte of a copy
        if not rows.any() or need.size == 0 or not need.any():
            continue
        cross = s.layout.crossing().all_links()
        bw = np.where(cross[None, :], rows_of(bw1, rows), rows_of(bw0, rows))       # (points, links)
        budget = np.zeros(bw.shape)
        for seconds, scale, reps, phase in windows:
            load = _flat(s.phases[phase].loads) if phase else np.zeros(need.size)
            spare = np.maximum(rows_of(seconds, rows) * bw - rows_of(scale, rows) * load[None, :], 0.0)
            budget += rows_of(reps, rows) * spare                                       # fluid: pieces resume
        n_int = rows_of(interval, rows)[:, 0]
        left = np.maximum(need[None, :] * rows_of(copy_bytes, rows) - n_int[:, None] * budget, 0.0)
        out[rows] = (left / bw).max(axis=1) / n_int
    return out.reshape(shape)
