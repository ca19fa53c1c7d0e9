"""Cross-field rules of a sweep that no single axis value can break alone (top-k ≤ E, TP divides the
nodes, token counts exact in float64), checked on combinations of just the fields involved."""

from __future__ import annotations

import numpy as np

from wsemoe.config.schema import SweepConfig
from wsemoe.errors import ConfigError


def _combos(cfg: SweepConfig, paths: list[str]) -> dict[str, np.ndarray]:
    """Every combination of values the sweep takes on `paths` (product over the factors involved only)."""
    cols: dict[str, np.ndarray] = {}
    n = 1
    for f in cfg.factors():
        hit = [p for p in paths if p in f]
        if not hit:
            continue
        m = len(next(iter(f.values())))
        for p in cols:  # repeat what we have for each row of this factor
            cols[p] = np.repeat(cols[p], m)
        for p in hit:
            cols[p] = np.tile(np.asarray(f[p], dtype=object), n)
        n *= m
    for p in paths:
        if p not in cols:
            section, field = p.split(".", 1)
            cols[p] = np.full(n, getattr(getattr(cfg, section), field), dtype=object)
    return cols


def check_points(cfg: SweepConfig) -> None:
    """Cross-field rules no single axis value can break alone (top-k ≤ E, TP divides the nodes).

    Checked on the combinations of just the fields involved, so a 10⁸-point sweep costs nothing here.
    """
    c = _combos(cfg, ["model.num_experts_per_tok", "model.num_experts"])
    k, e = c["model.num_experts_per_tok"].astype(float), c["model.num_experts"].astype(float)
    if np.any(k > e):
        i = int(np.argmax(k > e))
        key = "model.num_experts_per_tok" if "model.num_experts_per_tok" in cfg.axis_names() else "model.num_experts"
        raise ConfigError(f"top-k exceeds the number of experts (k={int(k[i])}, E={int(e[i])})", loc=("axes", key))
    if any(p in cfg.axis_names() for p in ("hardware", "mapping.tp", "hardware.rows", "hardware.cols")) \
            or cfg.mapping.tp is not None:
        _check_tp(cfg)
    _check_token_count(cfg)
    if cfg.compare:
        _check_compare(cfg)


def _check_compare(cfg: SweepConfig) -> None:
    """The baseline names swept axes at values they take; `over` names swept axes."""
    values = {p: list(v) for f in cfg.factors() for p, v in f.items()}
    for path, value in cfg.compare.baseline.items():
        if path not in values:
            raise ConfigError(f"'{path}' is not a swept axis", loc=("compare", "baseline", path))
        if value not in values[path]:
            shown = ", ".join(str(v) for v in values[path][:8]) + (", …" if len(values[path]) > 8 else "")
            raise ConfigError(f"baseline value {value!r} is not among the axis values ({shown})",
                              loc=("compare", "baseline", path))
    for path in cfg.compare.over or []:
        if path not in values:
            raise ConfigError(f"'{path}' is not a swept axis", loc=("compare", "over", path))


MAX_TOKEN_PAIRS = 2**48  # G·B·S: tokens (or query-key pairs per head) of one attention group's micro-batch


def _largest(cfg: SweepConfig, path: str) -> float:
    """The largest value `path` takes anywhere in the sweep."""
    section, field = path.split(".", 1)
    values = [v for f in cfg.factors() for v in f.get(path, [])]
    return float(max(values)) if values else float(getattr(getattr(cfg, section), field))


def _check_token_count(cfg: SweepConfig) -> None:
    """G·B·S must stay far inside float64's exact integers; the largest values of each bound the product."""
    g, b, s = (_largest(cfg, p) for p in ("workload.G", "workload.B", "workload.seq_len"))
    if g * b * s > MAX_TOKEN_PAIRS:
        raise ConfigError(f"G·B·seq_len reaches {g * b * s:.3g}; at most 2**48 ({MAX_TOKEN_PAIRS:.3g}) is supported",
                          loc=("workload",))


def _check_tp(cfg: SweepConfig) -> None:
    """TP must divide the nodes; on a weight-streaming wafer it must span them all: the model runs one
    attention group there (no node-to-node phases), so smaller groups would multiply tokens for free."""
    paths = [p for p in ("hardware.rows", "hardware.cols", "mapping.tp", "hardware.weight_source")
             if p in cfg.axis_names()]
    c = _combos(cfg, [*paths, *(["hardware"] if "hardware" in cfg.axis_names() else [])])
    n = len(next(iter(c.values()))) if c else 1
    def field(path):
        section, name = path.split(".", 1)
        if path in c:
            return c[path].astype(float)
        if section == "hardware" and "hardware" in c:
            return np.array([cfg.presets[h][name] for h in c["hardware"]], dtype=float)
        v = getattr(getattr(cfg, section), name)
        return np.full(n, np.nan if v is None else v, dtype=float)
    tp, nodes = field("mapping.tp"), field("hardware.rows") * field("hardware.cols")
    bad = ~np.isnan(tp) & (np.mod(nodes, np.where(np.isnan(tp), 1, tp)) != 0)
    if np.any(bad):
        i = int(np.argmax(bad))
        loc = ("axes", "mapping.tp") if "mapping.tp" in cfg.axis_names() else ("mapping", "tp")
        raise ConfigError(f"mapping.tp = {int(tp[i])} does not divide the {int(nodes[i])} nodes", loc=loc)
    if "hardware.weight_source" in c:
        source = c["hardware.weight_source"]
    elif "hardware" in c:
        source = np.array([cfg.presets[h].get("weight_source", "resident") for h in c["hardware"]])
    else:
        source = np.full(n, cfg.hardware.weight_source)
    split = (source == "streamed") & ~np.isnan(tp) & (tp != nodes)
    if np.any(split):
        i = int(np.argmax(split))
        loc = ("axes", "mapping.tp") if "mapping.tp" in cfg.axis_names() else ("mapping", "tp")
        raise ConfigError(f"mapping.tp = {int(tp[i])} on a weight-streaming wafer: it runs one attention group "
                          f"over all {int(nodes[i])} nodes; leave tp unset", loc=loc)
