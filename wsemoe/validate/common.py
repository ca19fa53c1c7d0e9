"""Shared pieces of the validation rows: the row format and the shipped reproduction configs.

A row compares one published figure with the model's value. Its `status` is `yes` (within the stated
tolerance), `no` (outside it: the row carries the reason the model does not reproduce it) or `property`
(true by construction of the model; checked all the same, but it tests the code, not the physics).
Context rows (`info`) put a model figure beside a published statement it cannot check; they are shown
apart from the claims.
"""

from __future__ import annotations

from wsemoe.config.loader import load_config
from wsemoe.config.presets import SWEEPS
from wsemoe.errors import ConfigError


def row(claim, published, model, error, tolerance, ok, reason: str | None = None, kind: str = "check"):
    """One reproduced figure. `ok` is whether the model is within `tolerance`; a failing check carries
    `reason` (why the model does not reproduce it); `kind="property"` marks a row true by construction.
    `ok=None` makes a context row: a model figure next to a published statement it is not a check of
    (shown apart from the claims, never pass or fail)."""
    if ok is None:
        return {"claim": claim, "published": published, "model": model, "error": error, "tolerance": tolerance,
                "ok": True, "status": "info", "reason": reason, "kind": "info"}
    ok = bool(ok)
    status = "property" if kind == "property" else "yes" if ok else "no"
    return {"claim": claim, "published": published, "model": model, "error": error, "tolerance": tolerance,
            "ok": ok, "status": status, "reason": reason if not ok else None, "kind": kind}


def unexplained(rows: list[dict]) -> list[dict]:
    """Rows that fail without a stated reason, and properties that do not hold: regressions, not known gaps."""
    return [r for r in rows if not r["ok"] and (r["kind"] == "property" or not r["reason"])]


def sweep_config(name: str):
    """A shipped reproduction config from sweeps/ (a clear error when run outside a checkout)."""
    path = SWEEPS / f"{name}.yaml"
    if not path.is_file():
        raise ConfigError("reproduction config not found: the installation is incomplete", loc=(str(path),))
    return load_config(path)
