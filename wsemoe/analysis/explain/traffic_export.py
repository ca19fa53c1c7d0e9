"""One mesh point's traffic as the model sees it: every communication phase of a layer, step by step, as
transfers in bytes (or, for a huge all-to-all, its factored form), with the exact link loads the model uses
and the model's time of each step; `report.exports` writes it out (docs/traffic-export.md).

Patterns come in their compact forms (`cost.fabric.patterns`): transfer lists, block-made transfer lists and
factored all-to-alls, so a 128×128 mesh exports without an N×N matrix.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from wsemoe.analysis.explain.point import resolve
from wsemoe.cost import step, structure
from wsemoe.cost.comm import CommModel
from wsemoe.cost.fabric import mesh, patterns, phasetime, topology
from wsemoe.errors import ConfigError
from wsemoe.sweep import engine
from wsemoe.sweep.outputs import config_namespaces



@dataclass
class PhaseStep:
    """One sequential step of a phase at the point: its unit pattern, the bytes per unit, its loads and times."""

    phase: str
    index: int
    rounds: int
    pattern: object          # unit traffic (cost.fabric.patterns form)
    scale: float             # bytes per unit at this point (σ)
    routing: str             # "xy", or "reverse" (YX) for a combine routed back along the dispatch path
    loads: mesh.LinkLoads    # unit link loads under that routing (× scale: bytes)
    volume_s: float          # the model's volume term of the step at the point
    latency_s: float         # the model's latency term (rounds × longest path)


@dataclass
class PointTraffic:
    """A mesh point's phases, step by step, with what the model computes from them."""

    name: str
    point: int
    values: dict             # the inputs the export used {path: value}: the point's, with --set on top
    row: dict                # the point's output columns
    layout: topology.Layout
    hardware: dict
    steps: list = field(default_factory=list)
    totals: dict = field(default_factory=dict)   # {phase: unit LinkLoads of the phase (its steps summed)}
    repeats: dict = field(default_factory=dict)  # {phase: occurrences per layer}
    sets: dict = field(default_factory=dict)     # the --set overrides {path: value}, as typed (in `values` too)


def point_traffic(config=None, point: int = 0, sets=None, hardware=None, model=None) -> PointTraffic:
    """The traffic of one design point of a mesh (a sweep file, a results folder, or --hardware/--model)."""
    cfg, one, values, typed, _ = resolve(config, point, sets, hardware, model)
    row = engine.evaluate_points(one, 0, 1).iloc[0]
    ns = config_namespaces(one, {c: row[c] for c in one.axis_names()})
    hw, m, wl, mp, bal = (ns[k] for k in ("hardware", "model", "workload", "mapping", "balance"))
    if hw.weight_source == "streamed" or hw.topology != "mesh":
        why = "streams its weights: one attention group, no node-to-node phases" if hw.weight_source == "streamed" \
            else "is a switch: no mesh links to load"
        raise ConfigError(f"hardware {getattr(hw, 'name', '')} {why}; export traffic needs a mesh with resident "
                          "weights", loc=("hardware",))
    comm = CommModel(hw, m, wl, mp, bal, one.expert_histogram)
    wl_b = step.with_batch(hw, wl, mp)
    shape = step.micro_batch(hw, wl_b, mp)
    (_, s), = comm.structures(shape.tp)
    out = PointTraffic(cfg.name, point if config is not None else 0, {**values, **typed},
                       {k: _plain(v) for k, v in row.items()}, s.layout, dict(vars(hw)), sets=typed)
    ports, links = comm.port_factors(shape.T, shape.tp)
    for name, scale in comm.scales(shape.T, shape.groups, shape.tp).items():
        out.steps += _steps(hw, s, name, float(scale), getattr(mp, "combine_routing", "xy"), ports.get(name),
                            links.get(name), float(_plain(comm.latency_share(name))))
        out.totals[name], out.repeats[name] = s.phases[name].loads, _plain(comm.repeats(name))
    return out


def _steps(hw, s: structure.Structure, name: str, scale: float, combine_routing: str, ports=None,
           links=None, latency_share: float = 1.0) -> list[PhaseStep]:
    """The steps of phase `name`, with the model's per-step times at this scale (`ports`, `links`: the hot expert
    node's port factors and the busiest links', CommModel.port_factors; `latency_share`: the share of a call's
    latency one occurrence pays, CommModel.latency_share)."""
    routing = "reverse" if name == "combine" and combine_routing == "reverse" else "xy"
    built = structure.phase_steps(s, name)
    first = lambda f: (1.0, 1.0) if f is None else tuple(float(np.ravel(x)[0]) for x in f)  # noqa: E731
    times = phasetime.step_times(hw, [s], np.zeros(1, dtype=np.intp), (1,), name, scale, ports=first(ports),
                                 links=first(links))
    return [PhaseStep(name, k, int(st.rounds), st.pattern, scale, routing, st.pattern.loads(s.layout, routing),
                      float(times.volume[0, k]), latency_share * float(times.latency[0, k]))
            for k, st in enumerate(built)]


def listable(pattern) -> bool:
    """Whether a pattern's transfers are listed: an all-to-all on more nodes than structures evaluate as N×N
    matrices is exported by its factors (listing it would build that matrix)."""
    return not isinstance(pattern, patterns.Outer) or pattern.n <= structure.DENSE_MAX_NODES


def transfer_chunks(pattern):
    """(src, dst, bytes per unit) arrays of a pattern's transfers, a chunk at a time (zero volumes dropped)."""
    if isinstance(pattern, patterns.Transfers):
        chunks = [(pattern.src, pattern.dst, pattern.vol)]
    elif isinstance(pattern, patterns.Blocks):
        chunks = (((b.dst, b.src, b.vol) if pattern.flipped else (b.src, b.dst, b.vol))
                  for b in (pattern.make(i) for i in range(pattern.count)))
    else:   # Dense, or an all-to-all small enough to list: its matrix's nonzero entries
        t = pattern.dense()
        src, dst = np.nonzero(t)
        chunks = [(src, dst, t[src, dst])]
    for src, dst, vol in chunks:
        keep = vol != 0
        yield np.asarray(src, dtype=np.int64)[keep], np.asarray(dst, dtype=np.int64)[keep], np.asarray(vol)[keep]


def _plain(v):
    return v.item() if hasattr(v, "item") else v
