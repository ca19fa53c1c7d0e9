"""Energy and cost figures of a hardware spec (per node: a die of a wafer, or a GPU), read by cost/energy.

Every figure is optional: hardware without them reports no energy columns' numbers (NaN), never a guess.
The presets carry each figure with its source (`sources:` of the preset; docs/energy.md, docs/sources.md).
`HardwareSpec` inherits these fields, so they are flat hardware fields (`hardware.energy_flop_j`) that sweep
axes, readings and the calibration unknowns of `sensitivity` reach like any other.
"""

from __future__ import annotations

from typing import Optional

from pydantic import Field

from wsemoe.specs.base import MIN_FIGURE, Spec

_J = dict(ge=0, le=1.0, allow_inf_nan=False)
_W = dict(ge=0, le=1e9, allow_inf_nan=False)


class EnergyFields(Spec):
    """Bottom-up per-operation energies, static and rated power, facility overhead and capital cost."""

    energy_flop_j: Optional[float] = Field(None, **_J, description="energy per dense 16-bit FLOP executed, J (a format with its own peak costs energy_flop_j × 16-bit peak / its peak)")
    energy_sram_j_per_byte: Optional[float] = Field(None, **_J, description="energy per byte read from on-chip SRAM, J (every weight and KV byte a matmul consumes is read once from it)")
    energy_memory_j_per_byte: Optional[float] = Field(None, **_J, description="energy per byte read from node memory (HBM), J")
    energy_hop_j_per_byte: Optional[float] = Field(None, **_J, description="energy per byte per hop of the node fabric, J: a die-to-die mesh hop, or on a switch the whole path device-switch-device")
    energy_offchip_j_per_byte: Optional[float] = Field(None, **_J, description="energy per byte leaving a wafer or scale-up domain, J: inter-wafer links, scale-out network, the wafer I/O (SerDes, optics)")
    static_power_w: Optional[float] = Field(None, **_W, description="power per node drawn whatever it does, W: leakage, clocks, and its share of the system's hosts, fans and power conversion")
    rated_power_w: Optional[float] = Field(None, **_W, description="system power at full load per node, W (rack or system power / nodes): the top-down view")
    pue: float = Field(1.2, ge=1.0, le=5.0, allow_inf_nan=False, description="power usage effectiveness of the facility (facility power / IT power)")
    capital_usd: Optional[float] = Field(None, ge=0, le=1e12, allow_inf_nan=False, description="capital cost per node, USD (system price / nodes)")
    # a divisor: the positive figures' floor, as every rate's (1e-320 years made capital per token inf)
    amortization_years: float = Field(4.0, ge=MIN_FIGURE, le=50, allow_inf_nan=False, description="years over which the capital cost is written off")
    power_price_usd_per_kwh: float = Field(0.08, ge=0, le=100, allow_inf_nan=False, description="price of facility electricity, USD per kWh")
