"""Invariants of energy per token (cost/energy, docs/energy.md): the split by tier adds up to the total; with no
static power and free data movement only compute energy is left; moving more bytes never costs less energy.
Rows whose hardware has no energy figures (NaN energy) are skipped.
"""

from __future__ import annotations

import numpy as np

from wsemoe.analysis.invariants.cases import Case
from wsemoe.analysis.invariants.checking import Checker
from wsemoe.analysis.invariants.registry import invariant, node_rows
from wsemoe.cost.energy.columns import TIERS

TOTAL = "energy_per_token_j"
SPLIT = [f"energy_{t}_per_token_j" for t in TIERS]
MOVEMENT = ("energy_sram_j_per_byte", "energy_memory_j_per_byte", "energy_hop_j_per_byte",
            "energy_offchip_j_per_byte")
NO_ENERGY = "no point of this config has energy figures (hardware energy_* fields)"


def _priced(frame) -> np.ndarray:
    return np.isfinite(np.asarray(frame[TOTAL], dtype=float)) if TOTAL in frame else np.zeros(len(frame), bool)


def _figured(case: Case) -> np.ndarray:
    """Rows whose hardware has energy figures (their energy must be a number)."""
    return np.array([v is not None and v == v for v in case.inputs("hardware.energy_flop_j")], dtype=bool)


def _value(case: Case, field: str, factor: float) -> np.ndarray:
    """A hardware energy figure per row times `factor` (unset rows keep unset)."""
    given = case.inputs(f"hardware.{field}")
    return np.array([None if v is None or v != v else float(v) * factor for v in given], dtype=object)


def _free_frames(case: Case) -> dict:
    zero = {f"hardware.{f}": _value(case, f, 0.0) for f in (*MOVEMENT, "static_power_w")}
    # a FLOP's price held as given: where the energy rule derives it from rated − static power, zero static power
    # would move it (specs.hardware.follow_energy), and this law is about what bytes and idle time cost
    zero["hardware.energy_flop_j"] = _value(case, "energy_flop_j", 1.0)
    return {"no static power, free data movement": zero}


def _more_bytes_frames(case: Case) -> dict:
    act = np.asarray(case.inputs("workload.bytes_per_act"), dtype=float)
    out = {"activations 2x wider": {"workload.bytes_per_act": (2.0 * act).astype(object)}}
    out.update({f"{f} x2": {f"hardware.{f}": _value(case, f, 2.0)} for f in MOVEMENT})
    return out


@invariant("the energy split adds up: compute + sram + fabric + hbm + network + static energy per token = "
           "energy_per_token_j at every point, a finite number ≥ 0 wherever the hardware has energy figures",
           "the total is defined as the sum of the tiers (cost/energy/columns.py); a tier left out or counted twice "
           "breaks it, and a statistic that does not apply (NaN) must move nothing, not poison the total")
def energy_split_adds_up(chk: Checker, case: Case):
    out = case.outputs()
    rows = _figured(case)
    if not rows.any():
        return chk.skip(NO_ENERGY)
    chk.compare(TOTAL, out[TOTAL], 0.0, "finite >= 0", ("model", "a number"), rows)
    total = sum(np.asarray(out[c], dtype=float) for c in SPLIT)
    chk.compare(TOTAL, total, out[TOTAL], "==", ("sum of the tiers", "energy_per_token_j"), rows)


@invariant("with zero static power and zero energy per byte on every tier, energy per token is its compute energy "
           "alone, unchanged from the point as given",
           "static energy is static power × time and every other tier is bytes × energy per byte; the FLOPs "
           "do not depend on what a byte costs", _free_frames)
def energy_free_movement_leaves_compute(chk: Checker, case: Case):
    base = case.outputs()
    rows = _priced(base)
    if not rows.any():
        return chk.skip(NO_ENERGY)
    free = case.variants(_free_frames(case))["no static power, free data movement"]
    chk.compare(TOTAL, free[TOTAL], free["energy_compute_per_token_j"], "==", ("free movement", "its compute"), rows)
    chk.compare("energy_compute_per_token_j", free["energy_compute_per_token_j"], base["energy_compute_per_token_j"],
                "==", ("free movement", "as given"), rows)


@invariant("moving more bytes never costs less energy: activations twice as wide (node-level points), or any "
           "tier's energy per byte doubled, never lowers energy per token",
           "every byte-carrying tier is bytes × energy per byte and static energy grows with time, which more "
           "bytes never shorten; SRAM serving re-lays its regions by bytes per PE, so wider activations are "
           "checked on node-level points only", _more_bytes_frames)
def more_bytes_never_cost_less_energy(chk: Checker, case: Case):
    base = case.outputs()
    rows = _priced(base)
    if not rows.any():
        return chk.skip(NO_ENERGY)
    frames = case.variants(_more_bytes_frames(case))
    for tag, frame in frames.items():
        where = rows & node_rows(case) if tag.startswith("activations") else rows
        chk.compare(TOTAL, frame[TOTAL], base[TOTAL], ">=", (tag, "as given"), where)
