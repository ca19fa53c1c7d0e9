"""A `wsemoe compare` of results folders under the readings: every combination of the readings the folders
vary alike (one a folder sets differently is what they compare, and held), each folder's sweep re-evaluated
whole, the ratios of their best points per group. The single-sweep analysis is `readings.py`."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from wsemoe.analysis.uncertainty.readings import AUTO_BUDGET, Readings, design, distinct, execute, too_many
from wsemoe.config import readings as registry
from wsemoe.config.loader import load_config
from wsemoe.errors import ConfigError


def _folder_plan(cfgs: list, labels: list[str], readings) -> tuple[list[dict], list[registry.Status], list[dict]]:
    """Readings varied across results folders: varied in some folder and configured alike wherever varied
    (a reading the folders set differently is what they compare: held). Also each folder's varied names."""
    plans = [{st.reading.name: st for st in registry.plan(c, readings)} for c in cfgs]
    rows, varied = [], []
    for name, r in readings.items():
        where = [(lab, p[name]) for lab, p in zip(labels, plans) if p[name].varied]
        row = {"name": name, "state": "not applicable", "detail": plans[0][name].detail, "configured": None,
               "default": r.default, "options": list(r.options), "question": r.question}
        kinds = {st.configured for _, st in where}
        if where and len(kinds) == 1:
            row.update(state="varied", detail="", configured=where[0][1].configured)
            varied.append(where[0][1])
        elif where:
            row.update(state="held", detail="differs between the folders (" + ", ".join(
                f"{lab}: {st.configured}" for lab, st in where) + "): it is what they compare")
        elif any(p[name].state == "pending" for p in plans):
            row.update(state="pending", detail=r.pending)
        rows.append(row)
    names = [st.reading.name for st in varied]
    return rows, varied, [{n for n in names if p[n].varied} for p in plans]


def _best_per_group(cfg, group: list[str], metric: str, sense: str) -> dict:
    """{group label: best feasible metric} of one sweep, evaluated whole."""
    from wsemoe.sweep import chunked

    df = chunked.evaluate(cfg)
    df = df[np.asarray(df["feasible"], dtype=bool)]
    if not group:
        return {"all": float(df[metric].max() if sense == "max" else df[metric].min()) if len(df) else np.nan}
    best = df.groupby(group, sort=False, observed=True)[metric].agg(sense)
    keys = best.index if len(group) > 1 else [(k,) for k in best.index]
    # a zipped partner (the expert width a sparsity helper sets) follows its leader: the readings move it
    partners = {p for z in cfg.zip for p in list(z)[1:] if list(z)[0] in group}
    shown = [i for i, c in enumerate(group) if c not in partners]
    return {group_label([group[i] for i in shown], [k[i] for i in shown]): float(v)
            for k, v in zip(keys, best.to_numpy())}


def group_label(group: list[str], key) -> str:
    """'tokens_per_device=8' for a group of crossrun comparisons."""
    return ", ".join(f"{c.split('.')[-1]}={v:g}" if isinstance(v, (int, float, np.number)) and not isinstance(v, bool)
                     else f"{c.split('.')[-1]}={v}" for c, v in zip(group, key))


def _own(choice: dict, mine: set) -> dict:
    """The part of a run's {reading: option} that one folder varies (the others do not apply to it)."""
    return {n: o for n, o in choice.items() if n in mine}


def evaluate_folders(paths, comparison, readings=None, budget: int = AUTO_BUDGET):
    """The ratios of a `wsemoe compare` of results folders under every combination of their readings
    (each folder's sweep re-evaluated whole); a line saying why not when that costs more than `budget`."""
    t0 = time.perf_counter()
    readings = registry.load() if readings is None else readings
    cfgs = [load_config(Path(p) / "config.yaml") for p in paths]
    labels, metric, sense = comparison.labels, comparison.metric, comparison.sense
    rows, varied, per_folder = _folder_plan(cfgs, labels, readings)
    try:
        runs = design(varied, screen=True)   # over MAX_COMBINATIONS: one reading at a time
    except ConfigError as exc:  # the comparison itself stands: say why its robustness is not (as after a sweep)
        return f"robustness over readings: not computed ({exc.message})"
    total = len(runs) * sum(c.size() for c in cfgs)
    if total > budget:   # runs whose configs coincide are evaluated once (`execute`): count those that differ
        total = sum(distinct(c, [(role, _own(choice, mine)) for role, choice in runs], readings) * c.size()
                    for c, mine in zip(cfgs, per_folder))
    if total > budget:
        return (f"robustness over readings: not computed ({len(runs)} runs of {sum(c.size() for c in cfgs):,} "
                f"points, {total:,} evaluations of distinct configs, exceed {budget:,})")

    def one(choice):
        moved = [registry.apply(c, _own(choice, mine), readings) if choice else c
                 for c, mine in zip(cfgs, per_folder)]

        def fn():
            best = [_best_per_group(c, comparison.group, metric, sense) for c in moved]
            return {f"{lab}/{labels[0]}:{metric}": {g: b[g] / best[0][g] for g in best[0] if g in b}
                    for lab, b in zip(labels[1:], best[1:])}
        return tuple(c.config_hash() for c in moved), fn

    table, values, evaluated = execute(runs, [st.reading.name for st in varied],
                                        {st.reading.name: st.configured for st in varied}, one)
    first = f"{labels[1]}/{labels[0]}"
    meta = {"name": " vs ".join(labels), "readings": rows, "fixed": {}, "varied": [st.reading.name for st in varied],
            "combinations": int((table["role"] == "combination").sum()), "screened": too_many(varied),
            "runs": len(runs), "evaluated": evaluated,
            "points": sum(c.size() for c in cfgs), "evaluations": evaluated * sum(c.size() for c in cfgs),
            "comparison": {"name": first, "metric": metric, "quantity": f"{first}:{metric}", "extents": {}},
            "seconds": round(time.perf_counter() - t0, 3)}
    return Readings(table, values, meta)
