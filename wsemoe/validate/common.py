"""Shared pieces of the validation rows: the row format and the shipped reproduction configs."""

from __future__ import annotations

from wsemoe.config.loader import load_config
from wsemoe.config.presets import SWEEPS
from wsemoe.errors import ConfigError


def row(claim, published, model, error, tolerance, ok):
    return {"claim": claim, "published": published, "model": model, "error": error,
            "tolerance": tolerance, "ok": None if ok is None else bool(ok)}


def sweep_config(name: str):
    """A shipped reproduction config from sweeps/ (a clear error when run outside a checkout)."""
    path = SWEEPS / f"{name}.yaml"
    if not path.is_file():
        raise ConfigError("reproduction config not found: the installation is incomplete", loc=(str(path),))
    return load_config(path)
