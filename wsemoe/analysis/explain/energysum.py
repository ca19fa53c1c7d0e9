"""How one point's energy and cost per token add up (cost/energy, docs/energy.md): the six tiers to the total,
the total to the average power, the top-down view beside it, and electricity plus capital to the cost per
million tokens; each line written out with its numbers and checked against the model's column."""

from __future__ import annotations

import math

from wsemoe.cost.energy.columns import J_PER_KWH, TIERS

TITLE = "how energy and cost per token add up (bottom-up tiers; top-down beside them)"


def _get(row, col) -> float:
    v = row.get(col, 0.0)
    return 0.0 if v is None else float(v)


def _check(value: float, column: float) -> str:
    """A check mark when the recomputed value matches the column (as addsup's lines do)."""
    return "✓" if math.isclose(value, column, rel_tol=1e-9, abs_tol=1e-300) else f"≠ {column:.6g} in the model's column"


def _j(x: float) -> str:
    for f, u in ((1.0, "J"), (1e-3, "mJ"), (1e-6, "µJ")):
        if abs(x) >= f:
            return f"{x / f:.4g} {u}"
    return "0 J" if x == 0 else f"{x * 1e9:.4g} nJ"


def energy(row, hw) -> list:
    """[(term, value, unit, how it is made)]; nothing when the point has no energy figures."""
    total = _get(row, "energy_per_token_j")
    if "energy_per_token_j" not in row.keys() or total != total or total == 0.0:
        return []
    tiers = {t: _get(row, f"energy_{t}_per_token_j") for t in TIERS}
    s = sum(tiers.values())
    out = [("energy_per_token_j", row["energy_per_token_j"], "J/token",
            " + ".join(f"{t} {_j(v)}" for t, v in tiers.items()) + f" = {_j(s)} {_check(s, total)}")]
    rate = _get(row, "tokens_per_s")
    out.append(("avg_power_w", row["avg_power_w"], "W", f"{_j(total)} per token × {rate:,.6g} tokens/s = "
                f"{total * rate:,.6g} W {_check(total * rate, _get(row, 'avg_power_w'))}"))
    top, top_w = _get(row, "topdown_energy_per_token_j"), _get(row, "topdown_power_w")
    if top == top:
        out.append(("topdown_energy_per_token_j", row["topdown_energy_per_token_j"], "J/token",
                    f"(bottom-up / top-down = {total / top:.3g}) {top_w:,.6g} W (rated × nodes × (idle + (1 − idle) "
                    f"× busy)) / {rate:,.6g} tokens/s = {_j(top_w / rate)} {_check(top_w / rate, top)}"))
    pue, price = float(getattr(hw, "pue", 1.0)), float(getattr(hw, "power_price_usd_per_kwh", 0.0))
    elec = 1e6 * total * pue / J_PER_KWH * price
    cap = _get(row, "cost_capital_per_mtok")
    electricity = (f"electricity 10⁶ × {_j(total)} × PUE {pue:g} at {price:g} USD/kWh = {elec:.4g} "
                   f"{_check(elec, _get(row, 'cost_energy_per_mtok'))}")
    if cap != cap:   # no capital_usd: the model gives no total (NaN), and NaN + NaN read "≠ nan in the model's column"
        out.append(("cost_per_mtok", row["cost_per_mtok"], "USD/Mtok",
                    f"{electricity}; no capital cost (capital_usd unset), so no total"))
        return out
    out.append(("cost_per_mtok", row["cost_per_mtok"], "USD/Mtok",
                f"{electricity} + capital {cap:.4g} = {elec + cap:.4g} {_check(elec + cap, _get(row, 'cost_per_mtok'))}"))
    return out
