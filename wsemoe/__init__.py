"""wsemoe: design-space explorer for Mixture-of-Experts models on wafer-scale processors."""

from __future__ import annotations

__version__ = "0.1.0"

from wsemoe.errors import WsemoeError  # noqa: E402
from wsemoe.presets import load_hardware, load_model  # noqa: E402


def evaluate(config, **kwargs):
    """Evaluate a sweep config (path, dict or SweepConfig) into a DataFrame, one row per design point."""
    from wsemoe.chunked import evaluate as _evaluate

    return _evaluate(config, **kwargs)


__all__ = ["__version__", "WsemoeError", "evaluate", "load_hardware", "load_model"]
