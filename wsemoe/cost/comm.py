"""Communication per layer from the fabric model: TP all-reduce, dispatch, combine, gradients, migration.

Structural terms come from structure.build (once per unique combination); here they are scaled
by the bytes each phase moves and turned into times with numpy broadcasting:
phase time = max(busiest link, busiest injection port, busiest ejection port) / bandwidth
+ latency. The ring all-reduce pays 2(tp−1) sequential steps of ring-neighbour hops.
"""

from __future__ import annotations

import numpy as np

from wsemoe.cost import mesh, params, structure
from wsemoe.cost.migration import MIGRATION_COLUMNS, migration_columns

PER_LAYER = ("allreduce", "dispatch", "combine", "gradient")


def _structural_keys(hw, m, tp, bal):
    """Unique combinations of the numeric fields structure depends on, and each point's index."""
    fields = [hw.rows, hw.cols, tp, m.num_experts]
    if bal is not None:
        fields += [bal.zipf_s, bal.seed, bal.spare_slots]
    arrays = np.broadcast_arrays(*(np.asarray(x, dtype=float) for x in fields))
    keys = np.stack([a.ravel() for a in arrays], axis=1)
    uniq, inv = np.unique(keys, axis=0, return_inverse=True)
    return arrays[0].shape, uniq, inv.ravel()


def balance_key(bal, numeric, histogram=None) -> tuple:
    """Hashable balance description for the structure cache (uniform when no balance is given)."""
    if bal is None:
        return structure.UNIFORM
    zipf_s, seed, spare = numeric
    hist = tuple(float(x) for x in histogram) if histogram is not None else None
    return (bal.distribution, float(zipf_s), int(seed), bal.balancer, int(spare), hist)


def comm_model(hw, m, wl, mp_, bal=None, histogram=None):
    """A callable (T, groups, tp) -> {phase_s..., extra columns}, or None when nothing crosses nodes.

    Weight-streaming wafers run attention and experts over the whole wafer as one group: traffic
    there stays inside the PE fabric and is not modelled as node-to-node phases.
    """
    if hw.weight_source == "streamed":
        return None
    def phases(T, groups, tp):
        shape, uniq, inv = _structural_keys(hw, m, tp, bal)
        explicit = tuple(mp_.placement) if mp_.placement else None
        ftd = tuple(mp_.ftd) if mp_.ftd else None
        built = [structure.build(hw.topology, int(u[0]), int(u[1]), int(u[2]), mp_.strategy, ftd, mp_.seed,
                                 explicit, mp_.token_source, int(u[3]), balance_key(bal, u[4:], histogram))
                 for u in uniq]

        def pick(fn):
            return np.asarray([fn(s) for s in built], dtype=float)[inv].reshape(shape)

        act = m.hidden_size * wl.bytes_per_act
        tile_tokens = T / (groups * wl.G)          # tokens of one attention tile of one group
        scales = {
            "allreduce": tile_tokens * act,
            "dispatch": (T / groups) * m.num_experts_per_tok * act,
            "combine": (T / groups) * m.num_experts_per_tok * act,
        }
        if wl.mode == "train":  # attention-weight gradients reduced across groups (charged per micro-batch)
            scales["gradient"] = params.attn_params(m) * wl.bytes_per_grad / tp
        link_bw = hw.link_bw_bytes_per_s if hw.topology == "mesh" else np.inf
        out, windows = {}, {}
        for name, scale in scales.items():
            pt = mesh.phase_time_from_peaks(
                pick(lambda s: s.phases[name].max_link), pick(lambda s: s.phases[name].max_inject),
                pick(lambda s: s.phases[name].max_eject), 0.0, scale, link_bw, hw.port_bw_bytes_per_s, 0.0)
            if name in ("allreduce", "gradient"):
                members = tp if name == "allreduce" else groups
                step_hops = pick(lambda s: s.ring_step_hops if name == "allreduce" else s.grad_step_hops)
                latency = 2.0 * np.maximum(members - 1, 0) * step_hops * hw.hop_latency_s
            else:
                latency = pick(lambda s: s.phases[name].max_hops) * hw.hop_latency_s
            reps = wl.G if name == "allreduce" else 1   # one all-reduce per attention tile
            volume = np.asarray(pt.time_s, dtype=float)
            out[f"{name}_s"] = reps * (volume + latency)
            windows[name] = (volume + latency, scale, reps)
            out[f"{name}_bound"] = np.where(volume <= 0, np.where(latency > 0, "latency", "none"),
                                            np.where(latency > volume, "latency", np.asarray(pt.bound)))
            out[f"{name}_max_link_bytes"] = pick(lambda s: s.phases[name].max_link) * scale
        out["dispatch_mean_hops"] = pick(lambda s: s.phases["dispatch"].mean_hops)
        out["dispatch_max_hops"] = pick(lambda s: s.phases["dispatch"].max_hops)
        out["allreduce_ring_hops"] = pick(lambda s: s.ring_step_hops)
        out["allreduce_idle_link_share"] = pick(lambda s: s.phases["allreduce"].idle_share)
        out["dispatch_idle_link_share"] = pick(lambda s: s.phases["dispatch"].idle_share)
        out["hot_link_overlap"] = pick(lambda s: s.hot_overlap)
        out["dispatch_inter_ftd_share"] = pick(lambda s: s.inter_ftd_share)
        out["expert_imbalance"] = pick(lambda s: s.expert_imbalance)
        out["imbalance_before"] = pick(lambda s: s.imbalance_before)
        out["expert_slots_max"] = pick(lambda s: s.slots_max)
        if bal is not None and bal.balancer in ("non-invasive", "stop-the-world"):
            out.update(migration_columns(hw, m, wl, bal, built, inv, shape, windows, link_bw))
        else:  # a static placement (or none) migrates nothing
            out.update({k: np.zeros(shape) for k in MIGRATION_COLUMNS})
        return out

    return phases
