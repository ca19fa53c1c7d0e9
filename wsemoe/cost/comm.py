"""Communication per layer from the fabric model: TP all-reduce, dispatch, combine, gradients, migration.

Structural terms come from structure.build (once per unique combination); here they are scaled
by the bytes each phase moves and turned into times with numpy broadcasting:
phase time = max(busiest link, busiest injection port, busiest ejection port) / bandwidth
+ latency. The ring all-reduce pays 2(tp−1) sequential steps of ring-neighbour hops.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from wsemoe.cost import mesh, params, structure
from wsemoe.cost.migration import MIGRATION_COLUMNS, migration_columns

RINGS = ("allreduce", "gradient")  # phases that are ring all-reduces (latency: 2(p−1) ring steps)


class StructuralKey(NamedTuple):
    """The numeric fields a structure depends on, for one unique combination in a frame."""

    rows: int
    cols: int
    tp: int
    num_experts: int
    zipf_s: float = 1.0
    seed: int = 0
    spare_slots: int = 0


class Window(NamedTuple):
    """One phase's time per occurrence, its bytes scale and occurrences per layer (migration budgets)."""

    seconds: np.ndarray
    scale: np.ndarray
    reps: np.ndarray


def _structural_keys(hw, m, tp, bal) -> tuple[tuple, list[StructuralKey], np.ndarray]:
    """Unique combinations of the numeric fields structure depends on, and each point's index."""
    fields = [hw.rows, hw.cols, tp, m.num_experts]
    if bal is not None:
        fields += [bal.zipf_s, bal.seed, bal.spare_slots]
    arrays = np.broadcast_arrays(*(np.asarray(x, dtype=float) for x in fields))
    keys = np.stack([a.ravel() for a in arrays], axis=1)
    uniq, inv = np.unique(keys, axis=0, return_inverse=True)
    casts = (int, int, int, int, float, int, int)
    built = [StructuralKey(*(c(v) for c, v in zip(casts, u))) for u in uniq]
    return arrays[0].shape, built, inv.ravel()


def balance_key(bal, numeric, histogram=None) -> structure.BalanceKey:
    """Hashable balance description for the structure cache (uniform when no balance is given);
    `numeric` = (zipf_s, seed, spare_slots) at one point."""
    if bal is None:
        return structure.UNIFORM
    zipf_s, seed, spare = numeric
    hist = tuple(float(x) for x in histogram) if histogram is not None else None
    return structure.BalanceKey(bal.distribution, float(zipf_s), int(seed), bal.balancer, int(spare), hist)


def comm_model(hw, m, wl, mp_, bal=None, histogram=None):
    """A callable (T, groups, tp) -> {phase_s..., extra columns}, or None when nothing crosses nodes.

    Weight-streaming wafers run attention and experts over the whole wafer as one group: traffic
    there stays inside the PE fabric and is not modelled as node-to-node phases.
    """
    if hw.weight_source == "streamed":
        return None
    return CommModel(hw, m, wl, mp_, bal, histogram)


class CommModel:
    """Per-layer communication of one categorical group of points (numeric fields may be arrays)."""

    def __init__(self, hw, m, wl, mp_, bal, histogram):
        self.hw, self.m, self.wl, self.mp, self.bal, self.histogram = hw, m, wl, mp_, bal, histogram

    def __call__(self, T, groups, tp) -> dict:
        shape, keys, inv = _structural_keys(self.hw, self.m, tp, self.bal)
        built = [self._build(k) for k in keys]

        def pick(fn):  # a structural value per point
            return np.asarray([fn(s) for s in built], dtype=float)[inv].reshape(shape)

        out, windows = self._phases(pick, self._scales(T, groups, tp), groups, tp)
        out.update(self._statistics(pick))
        if self.bal is not None and self.bal.balancer in ("non-invasive", "stop-the-world"):
            out.update(migration_columns(self.hw, self.m, self.wl, self.bal, built, inv, shape, windows,
                                         self._link_bw()))
        else:  # a static placement (or none) migrates nothing
            out.update({k: np.zeros(shape) for k in MIGRATION_COLUMNS})
        return out

    def structures(self, tp) -> list[tuple[StructuralKey, structure.Structure]]:
        """Every unique structure the points of this group use, with its key (built once, cached)."""
        _, keys, _ = _structural_keys(self.hw, self.m, tp, self.bal)
        return [(k, self._build(k)) for k in keys]

    def _build(self, key: StructuralKey) -> structure.Structure:
        mp_ = self.mp
        return structure.build(
            self.hw.topology, key.rows, key.cols, key.tp, mp_.strategy, tuple(mp_.ftd) if mp_.ftd else None,
            mp_.seed, tuple(mp_.placement) if mp_.placement else None, mp_.token_source, key.num_experts,
            balance_key(self.bal, (key.zipf_s, key.seed, key.spare_slots), self.histogram))

    def _link_bw(self):
        return self.hw.link_bw_bytes_per_s if self.hw.topology == "mesh" else np.inf

    def _scales(self, T, groups, tp) -> dict:
        """Bytes per unit of each phase's structural traffic, per point."""
        m, wl = self.m, self.wl
        act = m.hidden_size * wl.bytes_per_act
        tile_tokens = T / (groups * wl.G)          # tokens of one attention tile of one group
        scales = {
            "allreduce": tile_tokens * act,
            "dispatch": (T / groups) * m.num_experts_per_tok * act,
            "combine": (T / groups) * m.num_experts_per_tok * act,
        }
        if wl.mode == "train":  # attention-weight gradients reduced across groups (charged per micro-batch)
            scales["gradient"] = params.attn_params(m) * wl.bytes_per_grad / tp
        return scales

    def _latency(self, pick, name: str, groups, tp):
        """Hop latency of one occurrence: rings pay 2(p−1) sequential neighbour steps, the rest their longest path."""
        if name in RINGS:
            members = tp if name == "allreduce" else groups
            step_hops = pick(lambda s: s.ring_step_hops if name == "allreduce" else s.grad_step_hops)
            return 2.0 * np.maximum(members - 1, 0) * step_hops * self.hw.hop_latency_s
        return pick(lambda s: s.phases[name].max_hops) * self.hw.hop_latency_s

    def _phases(self, pick, scales: dict, groups, tp) -> tuple[dict, dict]:
        """Per-layer time, binding term and busiest-link bytes of every phase; windows for migration."""
        out, windows = {}, {}
        for name, scale in scales.items():
            peaks = [pick(lambda s: getattr(s.phases[name], f)) for f in ("max_link", "max_inject", "max_eject")]
            pt = mesh.phase_time_from_peaks(*peaks, 0.0, scale, self._link_bw(), self.hw.port_bw_bytes_per_s, 0.0)
            latency = self._latency(pick, name, groups, tp)
            reps = self.wl.G if name == "allreduce" else 1   # one all-reduce per attention tile
            volume = np.asarray(pt.time_s, dtype=float)
            out[f"{name}_s"] = reps * (volume + latency)
            windows[name] = Window(volume + latency, scale, reps)
            out[f"{name}_bound"] = np.where(volume <= 0, np.where(latency > 0, "latency", "none"),
                                            np.where(latency > volume, "latency", np.asarray(pt.bound)))
            out[f"{name}_max_link_bytes"] = peaks[0] * scale
        return out, windows

    @staticmethod
    def _statistics(pick) -> dict:
        """Structural statistics per point: hops, idle links, hot-link overlap, imbalance, slots."""
        return {
            "dispatch_mean_hops": pick(lambda s: s.phases["dispatch"].mean_hops),
            "dispatch_max_hops": pick(lambda s: s.phases["dispatch"].max_hops),
            "allreduce_ring_hops": pick(lambda s: s.ring_step_hops),
            "allreduce_idle_link_share": pick(lambda s: s.phases["allreduce"].idle_share),
            "dispatch_idle_link_share": pick(lambda s: s.phases["dispatch"].idle_share),
            "hot_link_overlap": pick(lambda s: s.hot_overlap),
            "dispatch_inter_ftd_share": pick(lambda s: s.inter_ftd_share),
            "expert_imbalance": pick(lambda s: s.expert_imbalance),
            "imbalance_before": pick(lambda s: s.imbalance_before),
            "expert_slots_max": pick(lambda s: s.slots_max),
        }
