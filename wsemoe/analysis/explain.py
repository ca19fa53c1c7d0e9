"""One design point broken into its terms: inputs, FLOPs, stage times, memory, constraints."""

from __future__ import annotations

import pandas as pd

from wsemoe.sweep import engine

from wsemoe.sweep import space
from wsemoe.sweep.columns import describe
from wsemoe.config.loader import load_config
from wsemoe.errors import ConfigError
from wsemoe.config import yamlio

GROUPS = [
    ("throughput", lambda c: c in ("step_time_s", "tokens_per_s", "sequences_per_s", "mfu", "bound",
                                   "feasible", "infeasible_reason") or c.startswith("speedup_vs_")),
    ("flops (forward, one layer, one micro-batch)", lambda c: c.endswith("_flops") or c == "model_flops_per_step"),
    ("time per layer (s)", lambda c: describe(c)[0] == "s" and c != "step_time_s"),
    ("memory per node", lambda c: c.startswith("mem_")),
    ("constraints (g ≤ 0 satisfied)", lambda c: c.startswith("g_")),
]


def _apply_sets(data: dict, sets: list[str]) -> dict:
    """Override base fields: 'workload.G=8' (value parsed as YAML, validated with the config)."""
    data = dict(data)
    for item in sets:
        path, sep, text = item.partition("=")
        section, _, field = path.partition(".")
        if not sep or not field:
            raise ConfigError("use --set section.field=value", loc=("--set", item))
        value = yamlio.loads(text, source="--set")
        sec = data.get(section)
        if isinstance(sec, str):
            sec = {"preset": sec}
        data[section] = {**(sec or {}), field: value}
        data["axes"] = {k: v for k, v in (data.get("axes") or {}).items() if k != path}
    data.pop("compare", None)  # one point has no baseline group to compare with
    return data


def breakdown(config, point: int = 0, sets: list[str] | None = None) -> tuple[pd.Series, list]:
    """(the point's row, [(group, column, value, unit, meaning), ...]) for one design point."""
    if sets:
        from pathlib import Path

        data = yamlio.load(config) if isinstance(config, (str, Path)) else dict(config)
        if isinstance(config, (str, Path)) and isinstance(data, dict):
            data.setdefault("name", Path(config).stem)
        config = _apply_sets(data, sets)
    cfg = load_config(config)
    cfg = cfg.model_copy(update={"compare": None})  # one point has no baseline group to compare with
    n = cfg.size()
    if not 0 <= point < n:
        raise ConfigError(f"point {point} out of range: the sweep has {n} points (0..{n - 1})", loc=("--point",))
    row = engine.evaluate_points(cfg, point, point + 1).iloc[0]
    rows, used = [], set()
    for c in cfg.axis_names():
        rows.append(("inputs", c, row[c], *describe(c)))
        used.add(c)
    for title, pick in GROUPS:
        for c in row.index:
            if c not in used and pick(c):
                rows.append((title, c, row[c], *describe(c)))
                used.add(c)
    for c in row.index:
        if c not in used:
            rows.append(("other", c, row[c], *describe(c)))
    return row, rows
