"""Published figures the model reproduces, each with the model's value, its band and its status.

`wsemoe validate` prints these rows (validate/common.py defines the kinds, validate/deviations.py the known
deviations and how a status follows). It exits non-zero when a row fails unexpectedly.
"""

from __future__ import annotations

from wsemoe.config import presets
from wsemoe.cost.node import params
from wsemoe.validate.bta import bta_comparison
from wsemoe.validate.common import row
from wsemoe.validate.deviations import classify
from wsemoe.validate.tolerances import PARAM_TOTAL, Band, param_active

__all__ = ["bta_comparison", "param_rows", "run_all"]


def param_rows() -> list[dict]:
    """Parameter counts of the model presets against their published totals and active counts."""
    rows = []
    for name in presets.names("models"):
        m = presets.load_model(name)
        for what, value, pub in (("total", float(params.total_params(m)), m.published_total_params),
                                 ("active", float(params.active_params(m)), m.published_active_params)):
            if not pub:
                continue
            tol = PARAM_TOTAL if what == "total" else param_active(pub)
            err = value / pub - 1
            rows.append(row(f"params.{what}:{name}", f"{name} {what} parameters (published count vs the model's "
                            "count)", f"{pub / 1e9:g} B", err, lambda x: f"{100 * x:+.2f}%",
                            band=Band(-tol, tol, why="published counts' significant digits"),
                            model=f"{value / 1e9:.2f} B ({100 * err:+.2f}%)", source="model card"))
    return rows


def run_all() -> list[dict]:
    """Every reproduced figure, each row with its status (deviations.classify)."""
    from wsemoe.validate.balance import balance_rows
    from wsemoe.validate.bta import bta_rows
    from wsemoe.validate.cerebras import cerebras_rows
    from wsemoe.validate.moentwine import mapping_rows
    from wsemoe.validate.scale import scale_rows
    from wsemoe.validate.shipped import shipped_rows
    from wsemoe.validate.waferllm import waferllm_rows

    return classify(param_rows() + shipped_rows() + bta_rows() + mapping_rows() + balance_rows() + scale_rows()
                    + waferllm_rows() + cerebras_rows())
