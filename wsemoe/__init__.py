"""wsemoe: design-space explorer for Mixture-of-Experts models on wafer-scale processors.

The public API is imported lazily, so `wsemoe --help` and `import wsemoe` stay fast.
"""

from __future__ import annotations

from wsemoe.version import __version__

__all__ = ["__version__", "WsemoeError", "evaluate", "run_sweep", "load_config", "load_hardware", "load_model",
           "parameter_counts", "check_invariants", "sensitivity", "calibrate"]


def evaluate(config, **kwargs):
    """Evaluate a sweep config (path, dict or SweepConfig) into a DataFrame, one row per design point."""
    from wsemoe.sweep.chunked import evaluate as evaluate_chunked

    return evaluate_chunked(config, **kwargs)


def run_sweep(config, **kwargs):
    """Run a sweep end to end and write its results folder (see `wsemoe.sweep.run.run_sweep`)."""
    from wsemoe.sweep.run import run_sweep as run

    return run(config, **kwargs)


def load_config(source):
    """A validated SweepConfig from a YAML path or a dict."""
    from wsemoe.config.loader import load_config as load

    return load(source)


def load_hardware(name: str):
    """A hardware preset by name."""
    from wsemoe.config.presets import load_hardware as load

    return load(name)


def load_model(name_or_path):
    """A model by preset name, or from a Hugging Face config.json (or a folder holding one)."""
    from wsemoe.config.presets import load_model as load

    return load(name_or_path)


def parameter_counts(model) -> dict:
    """{'total': ..., 'active': ...} parameters of a ModelSpec (embeddings and head included)."""
    from wsemoe.cost import params

    return {"total": float(params.total_params(model)), "active": float(params.active_params(model))}


def check_invariants(configs=None, **kwargs):
    """Check the cost-model invariants on sweep configs (paths, dicts or SweepConfigs; none: every shipped
    preset and sweep); returns a report (`.ok`, `.results`, `.to_dict()`). See `wsemoe.analysis.suite`."""
    from wsemoe.analysis.suite import check_invariants as check

    return check(configs, **kwargs)


def sensitivity(config, **kwargs):
    """Sobol/Morris indices and 5–95% bands of a sweep's results over the calibration unknowns; writes them into
    results/<name>/sensitivity/ (see `wsemoe.analysis.sensitivity.run`; `analyse` computes without writing)."""
    from wsemoe.analysis.sensitivity import run

    return run(config, **kwargs)[0]


def calibrate(hardware: str = "cs2", **kwargs):
    """Fit a hardware preset's calibration unknowns to the public BTA targets; writes the fitted preset beside a
    copy of the original with the diff and residuals (see `wsemoe.analysis.calibrate.run`)."""
    from wsemoe.analysis.calibrate import run

    return run(hardware, **kwargs)[0]


def __getattr__(name):
    if name == "WsemoeError":
        from wsemoe.errors import WsemoeError

        return WsemoeError
    raise AttributeError(f"module 'wsemoe' has no attribute {name!r}")
