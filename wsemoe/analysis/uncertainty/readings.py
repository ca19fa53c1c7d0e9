"""A sweep evaluated under its readings: the sweep as configured, every combination of the readings it can
vary (full factorial), and each reading moved alone from the configured sweep; written to results/<name>/readings/.

Every run is the whole sweep re-evaluated, because a reading moves the best design too (attention memory
changes which batch fits): the quantities are those of `analysis.sampled` (per comparison group the best and
baseline metric, their ratio, the tuned axis values; per sweep each objective's best). Runs that are the same
config (an option equal to the configured value) are evaluated once. `analysis.robustness` reads the result.
"""

from __future__ import annotations

import itertools
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from wsemoe.analysis.uncertainty import robustness
from wsemoe.analysis.uncertainty.sampled import Sampled
from wsemoe.arguments import flag
from wsemoe.config import readings as registry
from wsemoe.config.registry import registry_hash
from wsemoe.config.loader import load_config
from wsemoe.errors import ConfigError, ResultsError, excerpt
from wsemoe.store import ledger
from wsemoe.store import writer
from wsemoe.sweep import frames
from wsemoe.sweep.compare import end_tops, group_keys

FOLDER = "readings"  # inside a results folder (a slot of `readings` in sweep/ownership.RESULTS_SLOTS)
FILES = ("runs.csv", "values.csv", "meta.json")
MAX_COMBINATIONS = 512  # a full factorial beyond this is refused: fix some readings (--set) or pick some (--only)
AUTO_BUDGET = 2_000_000  # point evaluations `wsemoe sweep` spends on its comparison's readings unasked
SRAM_COST = 1000  # node-level point evaluations one SRAM-serving point costs (its layouts and PE operators; bench/)


@dataclass
class Readings:
    """Runs (one row per evaluated sweep: which option of each varied reading, and its role), the quantities
    of each run (long: run, quantity, group, value) and what was done (statuses, hashes, counts)."""

    runs: pd.DataFrame
    values: pd.DataFrame
    meta: dict

    @property
    def varied(self) -> list[str]:
        return [s["name"] for s in self.meta["readings"] if s["state"] == "varied"]

    def summary(self) -> pd.DataFrame:
        """Per quantity and group: as configured, at the default readings, range, flips, hinge (analysis.robustness)."""
        from wsemoe.analysis.uncertainty import robustness

        return robustness.summarize(self)

    def statement(self, quantity: str | None = None) -> list[str]:
        """The comparison's robustness in one line (and notes), as `wsemoe show` prints it."""
        from wsemoe.analysis.uncertainty import robustness

        return robustness.statement(self, quantity=quantity)


def plan(cfg, only=(), fixed=None, readings=None, option: str = "--only") -> tuple[list[dict], list[registry.Status], dict]:
    """(status rows for every reading, the varied statuses, the fixed choice): `fixed` readings are set for
    every run and not varied; `only` limits which readings vary (given by the command's `option`)."""
    readings = registry.load() if readings is None else readings
    only = only or ()   # None is the default, every reading, as () is (the API's calibrate(readings=None) failed)
    registry.select(readings, only, (option,))
    fixed = dict(fixed or {})
    registry.select(readings, list(fixed), ("--set",))
    both = next((n for n in only or () if n in fixed), None)
    if both is not None:   # fixed for every run and varied: nothing left to vary ('a full factorial of 0 readings')
        raise ConfigError(f"'{both}' is fixed by --set and varied by {option}: give one", loc=(option, both))
    rows, varied = [], []
    for st in registry.plan(cfg, readings):
        r = st.reading
        row = {"name": r.name, "state": st.state, "detail": st.detail, "configured": st.configured,
               "default": r.default, "options": list(r.options), "question": r.question}
        if st.varied and r.name in fixed:
            row.update(state="fixed", detail=f"fixed at {fixed[r.name]} for every run")
        elif st.varied and only and r.name not in only:
            row.update(state="held", detail="held as configured (not in --only)")
        elif st.varied:
            varied.append(st)
        elif r.name in fixed:
            raise ConfigError(f"{r.name} is {st.state} for this sweep: {st.detail}", loc=("--set", r.name))
        elif r.name in only:   # asked to vary a reading this sweep cannot vary: said, not silently ignored
            raise ConfigError(f"{r.name} is {st.state} for this sweep: {st.detail}; nothing to vary",
                              loc=(option, r.name))
        rows.append(row)
    return rows, varied, fixed


def too_many(varied: list[registry.Status]) -> str:
    """'9,216 combinations of 12 readings exceed 512' where the full factorial is refused, else ''
    (counted before anything is built)."""
    count = int(np.prod([len(st.reading.options) for st in varied], dtype=object))
    return f"{count:,} combinations of {len(varied)} readings exceed {MAX_COMBINATIONS}" if count > MAX_COMBINATIONS \
        else ""


def design(varied: list[registry.Status], screen: bool = False) -> list[tuple[str, dict]]:
    """The runs as (role, choice): the sweep as configured ({}), the full factorial ("combination"), then each
    reading moved alone to an option the sweep does not already have ("alone"); a choice is {reading: option}
    on top of the configured sweep. A factorial over MAX_COMBINATIONS is refused, or with `screen` left out: the
    runs are then the configured sweep and each reading alone (one at a time: no interaction is seen)."""
    names = [st.reading.name for st in varied]
    refused = too_many(varied)
    if refused and not screen:
        raise ConfigError(f"{refused}; vary fewer (--only) or fix some (--set name=option), a what-if "
                          "that is not stored", loc=("readings",))
    combos = [] if refused else list(itertools.product(*(list(st.reading.options) for st in varied)))
    runs = [("configured", {})] + [("combination", dict(zip(names, c))) for c in combos]
    for st in varied:
        runs += [("alone", {st.reading.name: o}) for o in st.reading.options if o != st.configured]
    return runs


def configs(config, only=(), fixed=None, readings=None) -> list[tuple[dict, object]]:
    """({reading: option}, SweepConfig) of every combination of the readings a sweep can vary: what a study
    (calibration per reading, a validation row's range) evaluates under each reading."""
    readings = registry.load() if readings is None else readings
    cfg = load_config(config)
    _, varied, fixed = plan(cfg, only, fixed, readings)
    base = registry.apply(cfg, fixed, readings) if fixed else cfg
    combos = [c for role, c in design(varied) if role == "combination"] if varied else [{}]
    return [(c, registry.apply(base, c, readings) if c else base) for c in combos]


def _label(choice: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in choice.items()) or "as configured"


def execute(runs: list[dict], names: list[str], configured: dict, evaluate_run, on_progress=None):
    """(runs table, long values, evaluations) of a design; `evaluate_run(choice)` gives (key, {quantity:
    {group: value}}) and runs with one key (the same configs) are evaluated once."""
    cache: dict = {}
    table, values = [], []
    for i, (role, choice) in enumerate(runs):
        key, fn = evaluate_run(choice)
        if key not in cache:
            cache[key] = fn()
        table.append({"run": i, "role": role, "label": _label(choice), "key": str(key),
                      **{n: choice.get(n, configured[n]) for n in names}})
        values += [{"run": i, "quantity": q, "group": g, "value": v}
                   for q, per in cache[key].items() for g, v in per.items()]
        if on_progress:
            on_progress(i + 1, len(runs))
    return pd.DataFrame(table), pd.DataFrame(values), len(cache)


def _quantities(cfg) -> dict:
    """{quantity: {group label: value}} of one sweep (analysis.sampled at the sweep's own values)."""
    sampled = Sampled(cfg, [])
    labels = sampled.group_labels()
    out = {}
    for q, arr in sampled.evaluate(np.zeros((1, 0))).items():
        per_group = arr.shape[1] == len(labels) and not q.startswith("sweep_")
        out[q] = {g: float(arr[0, j]) for j, g in enumerate(labels if per_group else ["sweep"])}
    return out


def evaluate(config, only=(), fixed=None, readings=None, on_progress=None) -> Readings:
    """Every run of the sweep's readings design (nothing is written)."""
    t0 = time.perf_counter()
    readings = registry.load() if readings is None else readings
    cfg = load_config(config)
    rows, varied, fixed = plan(cfg, only, fixed, readings)
    base = registry.apply(cfg, fixed, readings) if fixed else cfg
    names = [st.reading.name for st in varied]

    def one(choice):
        run_cfg = registry.apply(base, choice, readings) if choice else base
        return run_cfg.config_hash(), lambda: _quantities(run_cfg)

    runs = design(varied, screen=True)
    with frames.shared_groups():   # a run whose reading leaves a system's rows as they were reuses their outputs
        table, values, evaluated = execute(runs, names, {st.reading.name: st.configured for st in varied}, one,
                                            on_progress)
    meta = {"config_hash": cfg.config_hash(), "registry_hash": registry_hash(readings),
            "name": cfg.name, "readings": rows, "fixed": fixed, "varied": names,
            "combinations": int((table["role"] == "combination").sum()), "screened": too_many(varied),
            "runs": len(runs),
            "evaluated": evaluated, "points": cfg.size(), "evaluations": evaluated * cfg.size(),
            "comparison": _comparison(cfg), "seconds": round(time.perf_counter() - t0, 3)}
    return Readings(table, values, meta)


def _comparison(cfg) -> dict | None:
    """What the sweep compares (for the robustness statement): its name, metric, sides and tuned axes' extents."""
    cmp = cfg.compare
    if cmp is None:
        return None
    over = group_keys(cfg)[1]
    extents = {}
    for axis in over:
        vals = [v for g in [cfg.axes, *cfg.zip] for v in g.get(axis, []) if v is not None]  # a zip column's
        # nulls are rows of another system (the wafer has no TP group): the extent is that of the values given
        if vals and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vals):
            extents[axis.split(".")[-1]] = {"axis": axis, "max": max(vals), "count": len(set(vals))}
    return {"name": cmp.name, "metric": cmp.metric, "baseline": {k: str(v) for k, v in cmp.baseline.items()},
            "candidate": {k: str(v) for k, v in cmp.candidate.items()}, "extents": extents,
            # each side's axes whose end may cap its best and their largest values (`compare.end_tops`): what the
            # stored <side>_reach_<axis> are fractions of
            "ends": {side: {a.split(".")[-1]: {"axis": a, "max": top} for a, top in end_tops(cfg, fixed).items()}
                     for side, fixed in (("best", cmp.candidate), ("baseline", cmp.baseline))},
            "quantity": f"speedup_vs_{cmp.name}"}


def cost(config, only=(), fixed=None, readings=None, budget: int | None = None) -> tuple[int, int]:
    """(runs, point evaluations at most) of the readings design, without evaluating anything. Runs whose configs
    coincide (a reading this sweep's points do not read, options that set the same fields) are evaluated once
    (`execute`), so where the runs as designed would exceed `budget` they are counted as distinct configs."""
    readings = registry.load() if readings is None else readings
    cfg = load_config(config)
    _, varied, fixed = plan(cfg, only, fixed, readings)
    runs = design(varied, screen=True)
    weight = SRAM_COST if "sram" in registry.sweep_values(cfg, "hardware.weight_source") else 1
    if budget is not None and len(runs) * cfg.size() * weight > budget:
        n = distinct(registry.apply(cfg, fixed, readings) if fixed else cfg, runs, readings)
        return n, n * cfg.size() * weight
    return len(runs), len(runs) * cfg.size() * weight


def distinct(cfg, runs: list, readings) -> int:
    """How many distinct configs the runs of a design evaluate (each applied to `cfg`; a choice of nothing is
    `cfg`)."""
    return len({(registry.apply(cfg, choice, readings) if choice else cfg).config_hash() for _, choice in runs})


def write(result: Readings, results_path, force: bool = False) -> Path:
    """runs.csv, values.csv and meta.json into <results>/readings/, atomically, replacing an earlier analysis
    (built beside, then swapped in; `store/writer.py` refuses anything wsemoe did not write)."""
    return writer.write_folder(Path(results_path) / FOLDER, dict(zip(FILES, (
        result.runs.to_csv(index=False), result.values.to_csv(index=False),
        json.dumps(result.meta, indent=2, default=str)))), "readings", force)


def load(results_path, config_hash: str | None = None, readings=None) -> Readings | None:
    """The readings analysis stored in a results folder, or None (absent, unreadable, changed since wsemoe wrote
    it (each file against its checksum in the folder's ledger), or stale: made for another config or under
    another registry of readings)."""
    folder = Path(results_path) / FOLDER
    if not ledger.intact(folder, FILES, "readings"):
        return None
    try:
        meta = json.loads((folder / "meta.json").read_text())
        runs = pd.read_csv(folder / "runs.csv", dtype={"label": str})
        values = pd.read_csv(folder / "values.csv", dtype={"group": str})
    except (OSError, ValueError, pd.errors.ParserError):
        return None
    if config_hash is not None and meta.get("config_hash") != config_hash:
        return None
    if robustness.what_if(meta):  # written by an older version: a what-if is never the stored answer
        return None
    if meta.get("registry_hash") != registry_hash(registry.load() if readings is None else readings):
        return None
    return Readings(runs, values, meta)


def run(target, out_root="results", only=(), fixed=None, on_progress=None,
        force: bool = False) -> tuple[Readings, Path | None]:
    """The readings analysis of a sweep written into its results folder: `target` is a sweep YAML (its results
    are brought up to date first; results of another config of it are refused: only `sweep` replaces them) or a
    results folder (its config.yaml), or a sweep as a dict or SweepConfig; the readings/ folder is checked
    before anything is evaluated. A what-if (`only` or `fixed`) is evaluated and returned with the path None:
    the stored answer is rewritten only by the analysis that made it, every reading varied, none fixed."""
    from wsemoe.store import store
    from wsemoe.sweep.run import run_sweep

    force = flag(force, "force")
    if store.names_results(target):
        store.load_manifest(target)
        path, cfg = Path(target), load_config(Path(target) / "config.yaml")
    else:
        cfg = load_config(target)
        fixes = plan(cfg, only, fixed)[2]   # a bad --only or --set is refused before the sweep runs or writes
        if fixes:
            registry.apply(cfg, fixes)
        held = store.read_manifest(store.results_dir(out_root, cfg.name))
        if held and held.get("config_hash") != cfg.config_hash():  # never replace another config's results
            raise ResultsError(f"holds results of another config of '{cfg.name}'; `wsemoe sweep {target}` replaces "
                               "them (the readings analysis never does), then run this again",
                               loc=(str(store.results_dir(out_root, cfg.name)),))
        res = run_sweep(target, out_root=out_root)
        path, cfg = res.path, res.config
    if only or fixed:
        return evaluate(cfg, only, fixed, on_progress=on_progress), None
    writer.check_folder(path / FOLDER, "readings", force)
    result = evaluate(cfg, only, fixed, on_progress=on_progress)
    return result, write(result, path, force)


def parse_choices(items) -> dict[str, str]:
    """{reading: option} from `name=option` strings (the --set option)."""
    out = {}
    for item in items or ():
        name, eq, option = str(item).partition("=")
        if not eq or not name or not option:
            raise ConfigError(f"'{item}' is not name=option (e.g. attn_kernel=flash)", loc=("--set",))
        if name.strip() in out:  # the last would win silently: which one was meant?
            raise ConfigError(f"reading '{excerpt(name.strip())}' is set twice ({out[name.strip()]} and "
                              f"{excerpt(option.strip())}); set it once", loc=("--set", name.strip()))
        out[name.strip()] = option.strip()
    return out


def changed_note(path) -> str | None:
    """Why a folder's readings/ is not shown although it is there: changed since wsemoe wrote it (or not its own),
    so `load` ignores it and `wsemoe readings` refuses to replace it; None when it is absent or intact. `show` and
    the report say it alike (the report pointed to `wsemoe readings`, which then refused: a dead end)."""
    folder = Path(path) / FOLDER
    if os.path.lexists(folder) and not ledger.intact(folder, FILES, "readings"):
        return (f"not shown: {folder} changed since wsemoe wrote it (or is not its own); move it out, then "
                f"`wsemoe readings {path}`")
    return None


def how_to_compute(cfg, path) -> str:
    """Why a folder has no readings analysis and the command that computes and stores it (one reading at a time
    where the full factorial of the readings the sweep varies is refused; --only over a few of them gives their
    factorial as a what-if, never stored: `run`)."""
    _, varied, _ = plan(load_config(cfg))
    if refused := too_many(varied):
        return (f"not computed; `wsemoe readings {path}` computes it one reading at a time ({refused}), and "
                f"`--only NAME` (repeatable) the factorial of the readings named as a what-if, of: "
                f"{', '.join(st.reading.name for st in varied)}")
    return f"not computed; `wsemoe readings {path}` computes it"


def refresh(cfg, path, budget: int = AUTO_BUDGET) -> str:
    """After a sweep with a comparison: its readings analysis brought up to date when the runs cost at most
    `budget` point evaluations; the line to print about it ('' when nothing was to do)."""
    if cfg.compare is None or load(path, cfg.config_hash()) is not None:
        return ""
    if cfg.search is not None:
        return "robustness over readings: not computed for a search (every run needs the whole grid)"
    try:
        runs, evaluations = cost(cfg, budget=budget)
    except ConfigError as exc:  # the sweep itself is done and written: say why its robustness is not
        refused = too_many(plan(cfg)[1])   # the factorial: say so and what runs; else what stopped it
        return f"robustness over readings: {how_to_compute(cfg, path) if refused else f'not computed ({exc.message})'}"
    if evaluations > budget:
        heavy = " SRAM-serving" if evaluations > runs * cfg.size() else ""
        return (f"robustness over readings: not computed ({runs} distinct runs × {cfg.size():,}{heavy} points "
                f"exceed {budget:,} evaluations); `wsemoe readings {path}` computes it")
    try:
        writer.check_folder(Path(path) / FOLDER, "readings")
    except ResultsError as exc:  # the sweep itself is done: say why its robustness is not written
        return f"robustness over readings: not written: {exc.line()}"
    result = evaluate(cfg)
    write(result, path)
    return f"readings: {result.meta['combinations']} combinations evaluated in {result.meta['seconds']:.1f} s"
