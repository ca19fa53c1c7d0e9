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

__all__ = ["bta_comparison", "families", "param_rows", "run_all"]


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


# Families of rows (`wsemoe validate --only`), each with the module and function making its rows, in order.
PARTS = (("params", "wsemoe.validate", "param_rows"), ("bta", "wsemoe.validate.shipped", "shipped_rows"),
         ("bta", "wsemoe.validate.bta", "bta_rows"), ("mapping", "wsemoe.validate.moentwine", "mapping_rows"),
         ("balance", "wsemoe.validate.balance", "balance_rows"), ("scale", "wsemoe.validate.scale", "scale_rows"))
ALIASES = {"moentwine": ("mapping", "balance", "scale")}  # MoEntwine's claims: mapping, balancing, at scale


def families(only=None) -> list[str]:
    """The row families `only` names (family names or aliases; None: all), or a one-line error."""
    import difflib

    from wsemoe.errors import ConfigError

    known = list(dict.fromkeys(f for f, _, _ in PARTS))
    out: list[str] = []
    for name in only or known:
        if name not in known and name not in ALIASES:
            close = difflib.get_close_matches(str(name), [*known, *ALIASES], n=1)
            hint = f"did you mean '{close[0]}'?" if close else f"known: {', '.join([*known, *ALIASES])}"
            raise ConfigError(f"no family of rows named '{name}'; {hint}", loc=("--only",))
        out += [f for f in ALIASES.get(name, (name,)) if f not in out]
    return out


def run_all(only=None, on_progress=None) -> list[dict]:
    """Every reproduced figure (or those of the families `only` names), each row tagged with its family.
    `on_progress(done, total, family)` hears of each part done."""
    import importlib

    wanted = families(only)
    parts = [p for p in PARTS if p[0] in wanted]
    rows = []
    for k, (family, module, fn) in enumerate(parts):
        rows += [{**r, "family": family} for r in getattr(importlib.import_module(module), fn)()]
        if on_progress:
            on_progress(k + 1, len(parts), family)
    return rows
