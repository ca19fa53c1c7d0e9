"""Shared pieces of the validation rows: the row format and the shipped reproduction configs."""

from __future__ import annotations

from pathlib import Path

from wsemoe.config import load_config
from wsemoe.errors import ConfigError

SWEEPS = Path(__file__).resolve().parents[1] / "sweeps"


def row(claim, published, model, error, tolerance, ok):
    return {"claim": claim, "published": published, "model": model, "error": error,
            "tolerance": tolerance, "ok": None if ok is None else bool(ok)}


def sweep_config(name: str):
    """A shipped reproduction config from sweeps/ (a clear error when run outside a checkout)."""
    path = SWEEPS / f"{name}.yaml"
    if not path.is_file():
        raise ConfigError("reproduction config not found (run from a wsemoe checkout)", loc=(str(path),))
    return load_config(path)
