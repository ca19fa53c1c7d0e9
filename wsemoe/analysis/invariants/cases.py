"""What the invariants are checked on: one sweep config, a bounded grid of its points, and that grid
evaluated with some inputs changed.

The grid keeps every factor of the config (grid axis or zip group) but thins the longest ones
evenly, endpoints kept, until it holds at most `points` design points. An invariant asks the case
for the grid's outputs with inputs replaced (one hardware field ×2, G = 1, ...); the sweep engine
evaluates each such frame once, whole, and the invariant compares frames elementwise.
"""

from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd

from wsemoe.config import presets
from wsemoe.config.loader import load_config
from wsemoe.config.schema import SweepConfig
from wsemoe.cost import step
from wsemoe.cost.node import params
from wsemoe.cost.wafer import serving
from wsemoe.cost.wafer.streaming import fabric_model
from wsemoe.errors import ConfigError, WsemoeError
from wsemoe.sweep import frames as frame_eval, space

DEFAULT_POINTS = 512   # design points per config: enough to cross every factor, fast enough for every push
# Every invariant's changed grids are evaluated stacked, ~30 KB per point (measured on a 196,608-point BTA-like sweep,
# 2 loaded cores, 2026-12: 0.17 GB at 512 points, 0.39 GB at 8,192, 1.07 GB at 32,768): 65,536 points stay near
# 2 GB; 10⁸ ran 44 s and ended in MemoryError (an internal error) instead of being refused.
MAX_POINTS = 65_536


def thinned_counts(lengths: list[int], limit: int) -> list[int]:
    """Values kept per factor so that their product is at most `limit`, thinning the longest first."""
    keep = list(lengths)
    while math.prod(keep) > limit:
        i = max(range(len(keep)), key=lambda j: (keep[j], j))
        others = math.prod(keep) // keep[i]
        second = max((k for j, k in enumerate(keep) if j != i), default=1)
        # shrink this factor alone if that is enough, else level it with the next longest
        keep[i] = max(limit // others, min(second, keep[i] - 1), 1)
    return keep


def spread(n: int, k: int) -> np.ndarray:
    """k of the indices 0..n-1, evenly spread, first and last included."""
    return np.unique(np.round(np.linspace(0, n - 1, k)).astype(np.int64)) if k > 1 else np.zeros(1, np.int64)


def bounded_grid(cfg: SweepConfig, points: int) -> tuple[SweepConfig, np.ndarray]:
    """(a config of at most `points` design points spanning every factor of cfg, each grid row's
    index in cfg's own sweep) — so a violation names a point `wsemoe eval --point` reproduces."""
    if points < 1:
        raise ConfigError(f"points must be at least 1, got {points}", loc=("--points",))
    factors = cfg.factors()
    lengths = [len(next(iter(f.values()))) for f in factors]
    picks = [spread(n, k) for n, k in zip(lengths, thinned_counts(lengths, points))]
    axes = {path: [values[i] for i in pick] for f, pick in zip(factors[:len(cfg.axes)], picks) for path, values in f.items()}
    zips = [{path: [values[i] for i in pick] for path, values in f.items()}
            for f, pick in zip(factors[len(cfg.axes):], picks[len(cfg.axes):])]
    grid = cfg.model_copy(update={"axes": axes, "zip": zips})
    rows = np.arange(grid.size(), dtype=np.int64)
    point, stride, gstride = np.zeros_like(rows), cfg.size(), grid.size()
    for n, pick in zip(lengths, picks):
        stride, gstride = stride // n, gstride // len(pick)
        point += pick[(rows // gstride) % len(pick)] * stride
    return grid, point


def _field(namespace, field: str):
    """A field of a section namespace; `pe.<fact>` reads a PE fact (None where the hardware has no PE fabric)."""
    if field.startswith("pe."):
        facts = getattr(namespace, "pe", None) or {}
        return (facts if isinstance(facts, dict) else vars(facts)).get(field[3:])
    return getattr(namespace, field)


def _scalar(value):
    """A namespace field as the cost model sees one point: Python numbers, not length-1 arrays."""
    return value.item() if isinstance(value, np.ndarray) and value.size == 1 else value


class Case:
    """One config's bounded grid; frames of it evaluated with changed inputs, each once."""

    def __init__(self, cfg: SweepConfig, points: int = DEFAULT_POINTS, source: str | None = None):
        self.cfg, self.name = cfg, cfg.name
        self.source, self.label = source or cfg.name, cfg.name  # label: the name in reports
        self.grid, self.point = bounded_grid(cfg, points)
        self.frame = space.build_frame(self.grid)
        self._outputs: dict[str, pd.DataFrame] = {}
        self._inputs: dict[str, np.ndarray] = {}
        self._groups: list | None = None
        self._ns: list | None = None

    def __len__(self) -> int:
        return len(self.frame)

    def outputs(self, changes: dict | None = None, tag: str = "base") -> pd.DataFrame:
        """The grid's output columns with `changes` ({dotted path: value per row}) applied; `tag`
        names the change (frames are cached by it)."""
        return self.variants({tag: changes or {}})[tag]

    def variants(self, requests: dict) -> dict[str, pd.DataFrame]:
        """Several changed grids at once ({tag: changes}): the ones not evaluated yet are stacked into
        frames, so the engine pays its per-group cost once for many of them.

        Changes of plain numbers share one stack. A change of a column the engine groups rows by (a name, a
        structural field, numbers with None among them) is stacked only with changes of the same columns:
        stacked with the rest, that column would split every other change's rows into its groups as well."""
        todo = {tag: changes for tag, changes in requests.items() if tag not in self._outputs}
        stacks: dict[frozenset, dict] = {}
        for tag, changes in todo.items():
            grouping = frozenset(p for p, v in changes.items() if not self._plain(p, v))
            stacks.setdefault(grouping, {})[tag] = changes
        for stack in stacks.values():
            self._evaluate_stacked(stack)
        return {tag: self._outputs[tag] for tag in requests}

    def _plain(self, path: str, values) -> bool:
        """Whether a changed column holds plain numbers (given and changed) the engine broadcasts, not groups by."""
        return (not space.structural(path) and np.asarray(values).dtype.kind in "fiu"
                and self.given(path).dtype.kind in "fiu")

    def _evaluate_stacked(self, todo: dict) -> None:
        """Evaluate the changed grids of `todo` as one stacked frame and keep each one's outputs under its tag."""
        paths = list(dict.fromkeys(p for changes in todo.values() for p in changes))
        frames = [self.frame.assign(**{p: np.broadcast_to(changes[p], len(self)) if p in changes else self.given(p)
                                       for p in paths}) for changes in todo.values()]
        stacked = frame_eval.evaluate_frame(self.cfg, pd.concat(frames, ignore_index=True))
        for j, tag in enumerate(todo):
            self._outputs[tag] = stacked.iloc[j * len(self):(j + 1) * len(self)].set_axis(self.frame.index)

    def given(self, path: str) -> np.ndarray:
        """An input column as the grid gives it: swept values, or the resolved base value per row."""
        return self.frame[path].to_numpy() if path in self.frame.columns else self.inputs(path)

    def inputs(self, path: str) -> np.ndarray:
        """The value of an input field (`section.field`) at every grid row, as the cost model sees it."""
        if path not in self._inputs:
            section, _, field = path.partition(".")
            values = np.empty(len(self), dtype=object)
            for pos, ns in self._namespaces():
                v = _field(ns[section], field)
                if isinstance(v, (tuple, list)):  # a tuple-valued field (wafers, ftd) is one value per row
                    values[pos] = [v] * len(pos)
                else:
                    values[pos] = list(np.broadcast_to(np.asarray(v, dtype=object), len(pos)))
            kinds = {type(v) for v in values}
            numeric = kinds <= {int, float, np.float64, np.int64} and len(values)
            self._inputs[path] = values.astype(np.float64) if numeric else values
        return self._inputs[path]

    def moe_layers(self) -> np.ndarray:
        """MoE layers of the model at every grid row (from its layer pattern, or L − the dense prefix)."""
        out = np.empty(len(self))
        for pos, ns in self._namespaces():
            out[pos] = np.broadcast_to(params.moe_layers(ns["model"]), len(pos))
        return out

    def _namespaces(self) -> list[tuple[np.ndarray, dict]]:
        """(grid rows, section namespaces) of each group of rows the engine evaluates together."""
        if self._ns is None:
            self._ns = [(self.frame.index.get_indexer(index), ns) for index, ns in frame_eval.iter_groups(self.cfg, self.frame)]
        return self._ns

    def point_outputs(self, row: int) -> dict:
        """The cost model on one grid row alone, every input a Python scalar (no arrays, no frame)."""
        (_, ns), = frame_eval.iter_groups(self.cfg, self.frame.iloc[[row]])
        ns = {k: SimpleNamespace(**{f: _scalar(v) for f, v in vars(sec).items()}) for k, sec in ns.items()}
        return frame_eval.evaluate_group(self.cfg, ns)

    def groups(self) -> list[tuple[np.ndarray, dict]]:
        """(grid rows, cost-model outputs) of each group of rows the engine evaluates together. Unlike a
        frame, a group's outputs hold only the columns that apply to it (no NaN fill for phases it lacks)."""
        if self._groups is None:
            self._groups = [(rows, frame_eval.evaluate_group(self.cfg, ns)) for rows, ns in self._namespaces()]
        return self._groups

    def structures(self) -> list[tuple[dict, object]]:
        """Every communication structure (placement, traffic, link loads) the grid uses, once each,
        with the inputs it was built from; none on weight-streaming wafers."""
        seen, out = set(), []
        for _, ns in self._namespaces():
            hw, mp = ns["hardware"], ns["mapping"]
            comm = fabric_model(hw, ns["model"], ns["workload"], mp, ns["balance"], self.cfg.expert_histogram)
            if comm is None:
                continue
            for key, built in comm.structures(step.micro_batch(hw, ns["workload"], mp).tp):
                if id(built) not in seen:
                    seen.add(id(built))
                    out.append(({"hardware.topology": hw.topology, "mapping.strategy": mp.strategy,
                                 "balance.balancer": ns["balance"].balancer, **key._asdict()}, built))
        return out

    def serving_layouts(self) -> list[tuple[dict, object]]:
        """Every SRAM-serving layer layout (placement, region traffic) the grid uses, once each, with what it
        was built for."""
        seen, out = set(), []
        for _, ns in self._namespaces():
            hw, mp = ns["hardware"], ns["mapping"]
            if hw.weight_source != "sram":
                continue
            for built in serving.layouts(hw, ns["model"], ns["workload"], mp, ns["balance"], self.cfg.expert_histogram):
                if id(built) not in seen:
                    seen.add(id(built))
                    shape = built.placement.attention.shape
                    out.append(({"mapping.pe_placement": mp.pe_placement, "mapping.pe_dispatch": mp.pe_dispatch,
                                 "experts": len(built.shares), "attention tiles": f"{shape[0]}×{shape[1]}"}, built))
        return out

    def streaming_grids(self) -> list[tuple[dict, object]]:
        """Every expert grid (`cost.wafer.expertgrid.Grid`) the weight-streaming points at PE level use, once each,
        with what it was built for."""
        seen, out = set(), []
        for _, ns in self._namespaces():
            hw = ns["hardware"]
            comm = fabric_model(hw, ns["model"], ns["workload"], ns["mapping"], ns["balance"], self.cfg.expert_histogram)
            for g in (comm.grids() if hasattr(comm, "grids") else []):
                if id(g) not in seen:
                    seen.add(id(g))
                    out.append(({"mapping.pe_dispatch": g.mode, "experts": g.experts, "grid": f"{g.rows}×{g.cols}"}, g))
        return out

    def row_inputs(self, row: int) -> dict:
        """What identifies a grid row: its point in the config's sweep and the inputs there."""
        named = {s: getattr(self.cfg, s).name for s in ("hardware", "model") if s not in self.frame.columns}
        return {"point": int(self.point[row]), **named, **self.frame.iloc[row].to_dict()}


def preset_config(hardware: str) -> dict:
    """A config crossing one hardware preset with every model preset, mode, batch, tiling factor and
    overlap mode (and, on a fabric, TP sizes, mappings and a skewed, balanced expert load)."""
    hw = presets.load_hardware(hardware)
    models = presets.names("models")
    axes = {"model": models, "workload.mode": ["train", "prefill", "decode"], "workload.B": [1, 8, 64],
            "workload.G": [1, 4, 16], "workload.overlap": ["layer", "stage", "none"]}
    cfg = {"name": f"preset-{hardware}", "description": f"every model preset on {hardware}",
           "hardware": hardware, "model": models[0], "workload": {"seq_len": 4096}, "axes": axes}
    if hw.weight_source == "resident":
        axes["mapping.tp"] = [t for t in (4, 8, 16) if hw.nodes % t == 0] or [hw.nodes]
        if hw.topology == "mesh":
            axes["mapping.strategy"] = ["block", "er"]
        cfg["balance"] = {"distribution": "zipf", "zipf_s": 0.4, "seed": 1, "spare_slots": 1}
        axes["balance.balancer"] = ["none", "non-invasive"]
    return cfg


def _load(config):
    """A config; among several files, an error names the file it is in (as `sweep` names its one file)."""
    try:
        return load_config(config)
    except WsemoeError as exc:
        if isinstance(config, (str, Path)) and (not exc.loc or exc.loc[0] != str(config)):
            exc.loc = (str(config), *exc.loc)
        raise


def load_cases(configs=None, points: int = DEFAULT_POINTS) -> list[Case]:
    """Cases of the given configs (paths, dicts or SweepConfigs), or of every shipped hardware
    preset (with every model preset) and every shipped sweep when none is given. Every config is
    validated before any is evaluated."""
    if not configs:
        configs = [preset_config(h) for h in presets.names("hardware")] + presets.shipped_sweeps()
    loaded = [(_load(c), str(c) if isinstance(c, (str, Path)) else None) for c in configs]
    cases = [Case(cfg, points, source) for cfg, source in loaded]
    names = [c.name for c in cases]
    for c in cases:  # two files may share a name (configs/a/x.yaml, configs/b/x.yaml): label them by path
        c.label = c.name if names.count(c.name) == 1 else c.source
    return cases
