"""One design point broken into its terms: inputs (with overrides), how the step and memory add up,
FLOPs, stage times, memory and constraints.

A point is its index in the sweep, the same number `wsemoe show` prints and pareto.csv keeps. `sets`
override that point's values (`workload.G=8`): every other value stays the point's own.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from wsemoe.analysis import addsup
from wsemoe.config import axes, checks, yamlio
from wsemoe.config.loader import load_config
from wsemoe.cost.node import params
from wsemoe.errors import ConfigError
from wsemoe.sweep import engine, space, store
from wsemoe.sweep.columns import describe
from wsemoe.sweep.outputs import config_namespaces

GROUPS = [
    ("throughput", lambda c: c in ("tokens_per_s", "sequences_per_s", "bound", "feasible", "infeasible_reason")
     or c.startswith("speedup_vs_")),
    ("flops (forward, one layer, one micro-batch)", lambda c: c.endswith("_flops") or c == "model_flops_per_step"),
    ("times of one micro-batch step: each stage per layer, the head once (unit per row)",
     lambda c: describe(c)[0] == "s"),
    ("memory per node", lambda c: c.startswith("mem_")),
    ("constraints (g ≤ 0 satisfied)", lambda c: c.startswith("g_")),
]


def sweep_config(source):
    """A SweepConfig from a sweep file, a dict, or a results folder (its resolved config.yaml)."""
    if isinstance(source, (str, Path)) and Path(source).is_dir():
        store.load_manifest(source)  # a results folder: complete and ours, or a one-line error
        return load_config(Path(source) / "config.yaml")
    return load_config(source)


def parse_sets(sets: list[str]) -> dict:
    """{path: value} from 'section.field=value' items (values parsed as YAML, e.g. 8, 0.5, er, [2, 2])."""
    out = {}
    for item in sets:
        path, sep, text = str(item).partition("=")
        path = path.strip()
        if not sep or not path:
            raise ConfigError("use --set section.field=value (e.g. workload.G=8) or --set model=<preset>",
                              loc=("--set", item))
        axes.check_path(path, ("--set", path))
        out[path] = yamlio.loads(text, source="--set")
    return out


def point_config(cfg, point: int, sets: dict | None = None):
    """(one-point config, the point's values, the overrides as typed): every axis fixed at the point's value,
    then `sets` on top, validated like axis values and cross-checked like a sweep."""
    n = cfg.size()
    if isinstance(point, bool) or not isinstance(point, int) or not 0 <= point < n:
        raise ConfigError(f"point {point} out of range: the sweep has {n:,} points (0..{n - 1})", loc=("--point",))
    frame = space.build_frame(cfg, point, point + 1)
    values = {c: _plain(frame[c].iloc[0]) for c in frame.columns}
    base = {k: getattr(cfg, k).model_dump(exclude_none=True) for k in ("hardware", "model", "workload", "mapping",
                                                                       "balance")}
    store_ = dict(cfg.presets)
    typed = {p: axes.typed_values(p, [v], base, ("--set", p), store_)[0] for p, v in (sets or {}).items()}
    fixed = {**values, **typed}
    one = cfg.model_copy(update={"axes": {p: [v] for p, v in fixed.items()}, "zip": [], "compare": None,
                                 "presets": store_})
    checks.check_points(one)
    return one, values, typed


def _plain(v):
    return v.item() if hasattr(v, "item") else v


def breakdown(config, point: int = 0, sets: list[str] | None = None) -> tuple[pd.Series, list]:
    """(the point's row, [(group, column, value, unit, meaning), ...]) for one design point."""
    cfg = sweep_config(config)
    one, values, typed = point_config(cfg, point, parse_sets(sets or []))
    row = engine.evaluate_points(one, 0, 1).iloc[0]
    rows, used = [], set()
    for c in dict.fromkeys([*values, *typed]):
        unit, doc = describe(c)
        if c in typed:
            was = values.get(c, _base_value(cfg, c))
            doc = f"{doc}  [--set; the point has {was}]"
        rows.append(("inputs", c, row[c], unit, doc))
        used.add(c)
    ns = config_namespaces(one, {c: row[c] for c in one.axis_names()})
    m, hw, wl = ns["model"], ns["hardware"], ns["workload"]
    wafers = getattr(hw, "wafers", None) or (1, 1)
    steps = addsup.steps(row, m.num_hidden_layers, params.moe_layers(m), wl.overlap,
                         getattr(wl, "comm_overlap", "none"), hw.rows * hw.cols * wafers[0] * wafers[1],
                         hw.node_peak_flops)
    title = (f"how the step adds up (overlap: {wl.overlap}, comm_overlap: {getattr(wl, 'comm_overlap', 'none')}"
             + ("; training: compute terms hold forward + backward + recompute)" if wl.mode == "train" else ")"))
    for group, lines in ((title, steps), ("how memory adds up (per node)", addsup.memory(row))):
        for name, value, unit, text in lines:
            rows.append((group, name, value, unit, text))
            used.add(name)
    for title, pick in GROUPS:
        rows += [(title, c, row[c], *describe(c)) for c in row.index if c not in used and pick(c)]
        used |= {c for c in row.index if pick(c)}
    rows += [("other", c, row[c], *describe(c)) for c in row.index if c not in used]
    return row, rows


def _base_value(cfg, path: str):
    section, _, field = path.partition(".")
    spec = getattr(cfg, section)
    return spec.name if not field else getattr(spec, field)


def frame(rows: list):
    """The breakdown's rows as a DataFrame (group, term, value, unit, meaning), values as plain Python numbers."""
    import pandas as pd

    df = pd.DataFrame(rows, columns=["group", "term", "value", "unit", "meaning"])
    df["value"] = df["value"].map(lambda v: v.item() if hasattr(v, "item") else v)
    return df
