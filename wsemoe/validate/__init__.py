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

__all__ = ["bta_comparison", "families", "param_rows", "run_all"]


def param_rows() -> list[dict]:
    """Parameter counts of the model presets against their published totals and active counts."""
    rows = []
    for name in presets.names("models"):
        m = presets.load_model(name)
        for what, value, pub in (("total", float(params.total_params(m)), m.published_total_params),
                                 ("active", published_active(m), m.published_active_params)):
            if not pub:
                continue
            tol = PARAM_TOTAL if what == "total" else param_active(pub)
            err = value / pub - 1
            rows.append(row(f"params.{what}:{name}", f"{name} {what} parameters (published count vs the model's "
                            "count)", f"{pub / 1e9:g} B", err, lambda x: f"{100 * x:+.2f}%",
                            band=Band(-tol, tol, why="published counts' significant digits"),
                            model=f"{value / 1e9:.2f} B ({100 * err:+.2f}%)", source="model card"))
    return rows


def published_active(m) -> float:
    """The model's active count as its vendor counts it (`published_active_excludes`: GLM and MiniMax leave the
    embedding table and output head out of their active figures)."""
    active = float(params.active_params(m))
    if m.published_active_excludes == "embeddings":
        active -= float(params.embedding_params(m) - m.hidden_size)  # both matrices; the final norm stays
    elif m.published_active_excludes == "input_embedding":
        active -= float(m.vocab_size * m.hidden_size)  # a token reads one row of it, not the table
    return active


# Families of rows (`wsemoe validate --only`), each with the module and function making its rows, in order.
PARTS = (("params", "wsemoe.validate", "param_rows"), ("bta", "wsemoe.validate.shipped", "shipped_rows"),
         ("bta", "wsemoe.validate.bta", "bta_rows"), ("mapping", "wsemoe.validate.moentwine", "mapping_rows"),
         ("balance", "wsemoe.validate.balance", "balance_rows"), ("scale", "wsemoe.validate.scale", "scale_rows"),
         ("scale", "wsemoe.validate.versus", "versus_rows"),
         ("waferllm", "wsemoe.validate.waferllm", "waferllm_rows"), ("cerebras", "wsemoe.validate.cerebras", "cerebras_rows"),
         ("gpu", "wsemoe.validate.gpu", "gpu_rows"),
         ("gpu", "wsemoe.validate.gpu_kernels", "kernel_rows"),
         ("silicon", "wsemoe.validate.silicon.rows", "silicon_rows"), ("energy", "wsemoe.validate.energy", "energy_rows"))
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
    """Every reproduced figure (or those of the families `only` names), each row tagged with its family and
    with its status (deviations.classify). `on_progress(done, total, family)` hears of each part done."""
    import importlib

    wanted = families(only)
    parts = [p for p in PARTS if p[0] in wanted]
    rows = []
    for k, (family, module, fn) in enumerate(parts):
        rows += [{**r, "family": family} for r in getattr(importlib.import_module(module), fn)()]
        if on_progress:
            on_progress(k + 1, len(parts), family)
    return classify(rows)
