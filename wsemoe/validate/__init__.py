"""Published figures the model reproduces, each with the model's value, error, tolerance and status.

`wsemoe validate` prints these rows: `yes` within tolerance, `no` outside it with the reason, `property`
true by construction. The tests pin which rows are `no`, so any row changing status fails them.
"""

from __future__ import annotations

import numpy as np

from wsemoe.config import presets
from wsemoe.cost.node import params
from wsemoe.validate.bta import bta_comparison
from wsemoe.validate.common import row

__all__ = ["bta_comparison", "param_rows", "run_all"]


def _tolerance_active(published: float) -> float:
    """Published active counts have two significant digits: allow max(2%, half a unit of the last digit)."""
    half_unit = 0.5 * 10 ** (np.floor(np.log10(published)) - 1)
    return max(0.02, half_unit / published)


def param_rows() -> list[dict]:
    """Parameter counts of the model presets against their published totals and active counts."""
    rows = []
    for name in presets.names("models"):
        m = presets.load_model(name)
        for what, value, pub, tol in (("total", float(params.total_params(m)), m.published_total_params, 0.01),
                                      ("active", float(params.active_params(m)), m.published_active_params, None)):
            if not pub:
                continue
            tol = tol if tol is not None else _tolerance_active(pub)
            err = value / pub - 1
            rows.append(row(f"{name} {what} parameters (published count vs the model's count)", f"{pub / 1e9:g} B",
                            f"{value / 1e9:.2f} B", f"{100 * err:+.2f}%", f"±{100 * tol:.1f}%", abs(err) <= tol))
    return rows


def run_all() -> list[dict]:
    """Every reproduced figure."""
    from wsemoe.validate.balance import balance_rows
    from wsemoe.validate.bta import bta_rows
    from wsemoe.validate.moentwine import mapping_rows
    from wsemoe.validate.scale import scale_rows
    from wsemoe.validate.shipped import shipped_rows
    from wsemoe.validate.waferllm import waferllm_rows

    return (param_rows() + shipped_rows() + bta_rows() + mapping_rows() + balance_rows() + scale_rows()
            + waferllm_rows())
