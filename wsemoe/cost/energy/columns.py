"""Energy and cost columns of some points: the bottom-up split by tier (adds up to `energy_per_token_j`),
the average power, the top-down view and the cost per million tokens.

Bottom-up, per step: compute = FLOPs (16-bit-equivalent) × energy_flop_j; sram = bytes × energy_sram_j_per_byte;
hbm = bytes × energy_memory_j_per_byte; fabric = byte-hops × energy_hop_j_per_byte; network = bytes ×
energy_offchip_j_per_byte; static = static_power_w × nodes × step time. The total is IT energy (at the device
and system, before the facility's PUE). Top-down: rated_power_w × nodes × (s + (1 − s)·busy) × step time, with
s = static_power_w / rated_power_w the idle share and busy the larger of the compute and memory busy fractions.
Cost: facility energy (× PUE) at power_price_usd_per_kwh, plus capital_usd × nodes written off over
amortization_years at the point's aggregate tokens/s.
"""

from __future__ import annotations

import numpy as np

from wsemoe.cost.energy.traffic import Work, sram_work, step_work

TIERS = ("compute", "sram", "fabric", "hbm", "network", "static")
FIELDS = ("energy_flop_j", "energy_sram_j_per_byte", "energy_memory_j_per_byte", "energy_hop_j_per_byte",
          "energy_offchip_j_per_byte", "static_power_w")
SECONDS_PER_YEAR = 365.25 * 86400.0
J_PER_KWH = 3.6e6
NAMES = [f"energy_{t}_per_token_j" for t in TIERS] + [
    "energy_per_token_j", "avg_power_w", "topdown_energy_per_token_j", "topdown_power_w", "energy_view_ratio",
    "cost_energy_per_mtok", "cost_capital_per_mtok", "cost_per_mtok"]


def columns(hw, m, wl, mp, out: dict) -> dict:
    """Every energy and cost column of the points whose other columns are `out` (NaN without energy figures)."""
    if getattr(hw, "energy_flop_j", None) is None or "tokens_per_s" not in out:
        return {n: np.nan for n in NAMES}
    work = sram_work(hw, m, wl, mp, out) if hw.weight_source == "sram" else step_work(hw, m, wl, mp, out)
    return priced(hw, work, out["tokens_per_s"])


def field(hw, name: str, unset):
    """An energy figure of the hardware (a scalar or a swept array), `unset` where the spec leaves it out."""
    v = getattr(hw, name, None)
    return unset if v is None else v


def tiers(hw, w: Work) -> dict:
    """Joules per step of each tier (the split that adds up)."""
    f = {k: field(hw, k, 0.0) for k in FIELDS}
    return {"compute": w.flops16 * f["energy_flop_j"], "sram": w.sram_bytes * f["energy_sram_j_per_byte"],
            "fabric": w.hop_bytes * f["energy_hop_j_per_byte"], "hbm": w.memory_bytes * f["energy_memory_j_per_byte"],
            "network": w.offchip_bytes * f["energy_offchip_j_per_byte"],
            "static": f["static_power_w"] * w.nodes * w.seconds}


def priced(hw, w: Work, tokens_per_s) -> dict:
    """The columns of `NAMES` from a step's work."""
    split = tiers(hw, w)
    total = sum(split.values())
    cols = {f"energy_{t}_per_token_j": v / w.tokens + 0.0 * total for t, v in split.items()}
    cols["energy_per_token_j"] = total / w.tokens
    cols["avg_power_w"] = total / w.seconds
    rated = np.asarray(field(hw, "rated_power_w", np.nan), dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):   # no rated power (or 0): no top-down view
        idle = np.where(rated > 0, field(hw, "static_power_w", 0.0) / rated, np.nan)
    power = rated * w.nodes * (idle + (1.0 - idle) * np.minimum(w.busy, 1.0))
    cols["topdown_power_w"] = power + 0.0 * total
    cols["topdown_energy_per_token_j"] = power * w.seconds / w.tokens + 0.0 * total
    cols["energy_view_ratio"] = cols["energy_per_token_j"] / cols["topdown_energy_per_token_j"]
    cols["cost_energy_per_mtok"] = 1e6 * cols["energy_per_token_j"] * hw.pue / J_PER_KWH * hw.power_price_usd_per_kwh
    per_s = field(hw, "capital_usd", np.nan) * w.nodes / (hw.amortization_years * SECONDS_PER_YEAR)
    cols["cost_capital_per_mtok"] = 1e6 * per_s / tokens_per_s + 0.0 * total
    cols["cost_per_mtok"] = cols["cost_energy_per_mtok"] + cols["cost_capital_per_mtok"]
    return cols
