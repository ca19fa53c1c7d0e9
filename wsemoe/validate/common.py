"""Shared pieces of the validation rows: the row format and the shipped reproduction configs."""

from __future__ import annotations

from pathlib import Path

from wsemoe.config.loader import load_config
from wsemoe.errors import ConfigError

SWEEPS = Path(__file__).resolve().parent / "sweeps"  # package data: validate works from an installed wheel


def row(claim, published, model, error, tolerance, ok, why: str | None = None):
    """One reproduced figure. `ok`: True within tolerance, False outside, None informational. A row outside its
    tolerance may carry `why`, one line on why the model does not reproduce it: it then stays visible as "no"
    without failing `wsemoe validate`; an unexplained miss fails it."""
    return {"claim": claim, "published": published, "model": model, "error": error,
            "tolerance": tolerance if ok is not False or not why else f"{tolerance}; not reproduced: {why}",
            "ok": None if ok is None else bool(ok), "explained": bool(why) and ok is False}


def unexplained(rows: list) -> list:
    """Rows outside their tolerance with no stated reason (what fails `wsemoe validate`)."""
    return [r for r in rows if r["ok"] is False and not r.get("explained")]


def sweep_config(name: str):
    """A shipped reproduction config from sweeps/ (a clear error when run outside a checkout)."""
    path = SWEEPS / f"{name}.yaml"
    if not path.is_file():
        raise ConfigError("reproduction config not found: the installation is incomplete", loc=(str(path),))
    return load_config(path)
