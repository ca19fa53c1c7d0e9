"""wsemoe: design-space explorer for Mixture-of-Experts models on wafer-scale processors.

The public API is imported lazily, so `wsemoe --help` and `import wsemoe` stay fast.
"""

from __future__ import annotations

from wsemoe.version import __version__


def _listed(value):
    """A list argument given as one name, path or setting ('-mfu', 'pareto', 'results/x') as the list of that one:
    iterated as it is, a string is read a character at a time ("unknown column 'm'")."""
    import os

    return [value] if isinstance(value, (str, os.PathLike)) else value


def _path(value, what: str):
    """A path argument (str or os.PathLike) as given; anything else (None, a list, a number) is one line instead of
    pathlib's TypeError."""
    import os

    from wsemoe.errors import ConfigError

    if not isinstance(value, (str, os.PathLike)):
        raise ConfigError(f"a path (str or pathlib.Path), got {type(value).__name__}", loc=(what,))
    return value


def _choice(value, what: str) -> dict:
    """Readings chosen as {reading: option}; a list, a string or None is one line, not an AttributeError."""
    from wsemoe.errors import ConfigError

    if not isinstance(value, dict):
        raise ConfigError(f"a mapping of reading to option, e.g. {{'attn_kernel': 'flash'}}; got "
                          f"{type(value).__name__}", loc=(what,))
    return value


def _selection(value, what: str):
    """A selection argument (columns, figures, names) as `_listed` gives it; an empty one is refused
    (`arguments.selection`: [] asked for nothing, it is not the default)."""
    from wsemoe.arguments import selection

    return selection(_listed(value), what)


def _selection_kwargs(kwargs: dict, *names: str) -> dict:
    return {k: _selection(v, k) if k in names else v for k, v in kwargs.items()}


__all__ = ["__version__", "WsemoeError", "evaluate", "run_sweep", "check", "load_config", "load_hardware",
           "load_model", "parameter_counts", "check_invariants", "sensitivity", "calibrate", "query", "explain",
           "compare", "plot", "write_report", "list_results", "config_schema", "readings", "apply_readings",
           "robustness", "point_config"]


def evaluate(config, **kwargs):
    """Evaluate a sweep config (path, dict or SweepConfig) into a DataFrame, one row per design point (`start`,
    `stop`: a range of them; at most the sweep size limit, WSEMOE_MAX_POINTS, at once; a `search:` is not run)."""
    from wsemoe.sweep.chunked import evaluate as evaluate_chunked
    from wsemoe.sweep.plan import max_points

    return evaluate_chunked(config, **{"limit": max_points(), **kwargs})


def run_sweep(config, **kwargs):
    """Run a sweep end to end and write its results folder (see `wsemoe.sweep.run.run_sweep`)."""
    from wsemoe.sweep.run import run_sweep as run

    return run(config, **kwargs)


def check(config, estimate: bool = False) -> dict:
    """Validate a sweep (every column it names included) and count its points; `estimate` times a sample."""
    from wsemoe.sweep.plan import check as plan

    return plan(config, estimate=estimate)


def query(results, where=None, columns=None, sort=None, limit=None, every_point=False, feasible=False):
    """Rows of a results folder: the Pareto fronts (or every point, or every feasible point) where `where` holds,
    sorted, at most `limit` (see `wsemoe show`); returns a Selection whose `.rows` is a DataFrame indexed by point."""
    from wsemoe.analysis.explain.query import select

    return select(_path(results, "results"), where=where, columns=_selection(columns, "columns"),
                  sort=_listed(sort), limit=limit, every_point=every_point, feasible=feasible)


def explain(config=None, point: int = 0, sets=None, hardware=None, model=None):
    """One point (its index in the sweep) broken into its terms and how they add up: (row, [(group, term,
    value, unit, meaning)]); `sets` like ["workload.G=8"] override that point's values. Without `config`,
    the single point of `hardware`, `model` and `sets` (as `wsemoe eval --hardware --model --set`)."""
    from wsemoe.analysis.explain.point import breakdown

    return breakdown(config, point, _listed(sets) or [], hardware=hardware, model=model)


def point_config(hardware, model, sets=None, name: str = "point") -> dict:
    """The sweep-config mapping of one point: a hardware and a model (preset names or files) and settings like
    ["workload.B=2", "workload.mode=decode"]; `wsemoe.evaluate(wsemoe.point_config(...))` gives its one row.
    The mapping is validated as a sweep is (an unknown preset or workload.G=banana is one line here, not later)."""
    from wsemoe.config.loader import load_config as load
    from wsemoe.config.single import parse_sets, point_mapping

    mapping = point_mapping(hardware, model, parse_sets(_listed(sets) or []), name)
    load(mapping)
    return mapping


def compare(folders, metric=None):
    """Results folders side by side: the best point of each per common group, ratios, what binds."""
    from wsemoe.analysis.explain.crossrun import compare as run

    folders = _listed(folders)
    if not isinstance(folders, (list, tuple)):
        from wsemoe.errors import ConfigError

        raise ConfigError(f"a list of results folders, got {type(folders).__name__}", loc=("folders",))
    return run([_path(f, "folders") for f in folders], metric)


def plot(results, only=None, formats=("png", "svg")):
    """Write the plots of a results folder (or those `only` names) into its plots/ folder, or of every results
    folder under a results root; returns the files."""
    from wsemoe.report.figures.plots import plot_results

    return plot_results(_path(results, "results"), only=_selection(only, "only"),
                        formats=_selection(formats, "formats"))


def write_report(results, output=None):
    """Write the self-contained HTML report of a results folder; returns its path (`wsemoe.report` is the
    package of tables and figures, so the function has its own name)."""
    from wsemoe.report.html.page import write_report

    return write_report(_path(results, "results"), None if output is None else _path(output, "output"))


def list_results(root="results"):
    """(results folders with their state, partial folders runs left) under `root`, or of `root` itself when it is
    a results folder (as `wsemoe ls`)."""
    from wsemoe.store import inventory

    root, only = inventory.scope(_path(root, "root"))   # a results folder itself lists that one, as `wsemoe ls` does
    return inventory.results_in(root, only), inventory.partials_in(root, only)


def config_schema() -> dict:
    """The JSON Schema of sweep configs (what `wsemoe schema` writes)."""
    from wsemoe.config.reference import json_schema

    return json_schema()


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
    """{'total': ..., 'active': ...} parameters of a ModelSpec, or of a model preset name or config.json path
    (embeddings and head included)."""
    import os

    from wsemoe.cost.node import params
    from wsemoe.errors import ConfigError
    from wsemoe.specs.model import ModelSpec

    if isinstance(model, (str, os.PathLike)):   # a name or a file, as load_model takes it
        model = load_model(model)
    if not isinstance(model, ModelSpec):
        raise ConfigError(f"a ModelSpec, preset name or config.json path, got {type(model).__name__}", loc=("model",))
    return {"total": float(params.total_params(model)), "active": float(params.active_params(model))}


def check_invariants(configs=None, **kwargs):
    """Check the cost-model invariants on sweep configs (paths, dicts or SweepConfigs; none: every shipped
    preset and sweep); returns a report (`.ok`, `.results`, `.to_dict()`). See `wsemoe.analysis.invariants.suite`."""
    from wsemoe.analysis.invariants.suite import check_invariants as check

    return check(_listed(configs), **_selection_kwargs(kwargs, "only"))


def sensitivity(config, **kwargs):
    """Sobol/Morris indices and 5–95% bands of a sweep's results over the calibration unknowns; writes them into
    results/<name>/sensitivity/ (see `wsemoe.analysis.uncertainty.sensitivity.run`; `analyse` computes without writing)."""
    from wsemoe.analysis.uncertainty.sensitivity import run

    return run(config, **_selection_kwargs(kwargs, "only"))[0]


def readings(path=None) -> dict:
    """The readings: modelling choices no source pins, {name: Reading} with options (the spec fields each sets,
    evidence, source), default and why (the shipped wsemoe/presets/readings.yaml, or a file of that form)."""
    from wsemoe.config.registry import load

    return load(path)


def apply_readings(config, choice: dict):
    """A sweep (path, dict or SweepConfig) under named readings, e.g. {"attn_kernel": "flash"}: a SweepConfig to
    evaluate (`wsemoe.evaluate`) or run; a reading the sweep pins, or that does not apply to it, is refused."""
    from wsemoe.config.loader import load_config as load
    from wsemoe.config.readings import apply

    return apply(load(config), _choice(choice, "choice"))


def robustness(config, only=None, fixed=None, write: bool = False, out_root="results"):
    """A sweep evaluated under every combination of its readings (`only`: vary just these; `fixed`: {reading:
    option} for every run); `.summary()` per quantity and group (as configured, at the default readings, range,
    flips, hinge), `.statement()` the comparison's line. With `write`, also into results/<name>/readings/,
    unless it is a what-if (`only` or `fixed`): that is returned, labelled, never stored."""
    from wsemoe.analysis.uncertainty import readings as rd
    from wsemoe.arguments import flag

    only, fixed = _selection(only, "only") or (), None if fixed is None else _choice(fixed, "fixed")
    if flag(write, "write"):
        return rd.run(config, out_root=out_root, only=only, fixed=fixed)[0]
    return rd.evaluate(config, only, fixed)


def calibrate(hardware: str = "cs2", **kwargs):
    """Fit a hardware preset's calibration unknowns to the public BTA targets under every reading; writes the fit
    at the default readings as a preset beside a copy of the original, with the diff, residuals and χ² per reading
    (see `wsemoe.analysis.uncertainty.calibrate.run`). Returns [(reading, Fit)], the default readings first."""
    from wsemoe.analysis.uncertainty.calibrate import run

    return run(hardware, **_selection_kwargs(kwargs, "only", "readings"))[0]


def __getattr__(name):
    if name == "WsemoeError":
        from wsemoe.errors import WsemoeError

        return WsemoeError
    raise AttributeError(f"module 'wsemoe' has no attribute {name!r}")
