"""The sweep config's schema: pydantic models of a validated sweep and of its raw top-level keys."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Annotated, Any, Literal, Optional

from pydantic import Field, field_validator, model_validator

from wsemoe.specs import BalanceSpec, HardwareSpec, MappingSpec, ModelSpec, WorkloadSpec
from wsemoe.specs.base import MAX_SEED, MIN_FIGURE, Spec

SECTIONS = {"hardware": HardwareSpec, "model": ModelSpec, "workload": WorkloadSpec,
            "mapping": MappingSpec, "balance": BalanceSpec}
PRESET_KIND = {"hardware": "hardware", "model": "models"}
TOP_KEYS = ("name", "description", *SECTIONS, "axes", "zip", "sparsity", "constraints", "objectives", "compare", "pareto",
            "output", "search")
MAX_EVALUATIONS = 10**9  # a search's budget (the run's size limit applies as well)
MAX_POPULATION = 100_000
RANGE_MIN = 8  # shorter integer axes stay lists in config.yaml (easier to read)
SERVING_OBJECTIVES = {"tokens_per_s_per_user": "max", "tokens_per_s": "max"}   # default of an all-SRAM-serving sweep
PREFILL_SERVING_OBJECTIVES = {"tokens_per_s": "max", "ttft_s": "min"}   # ... that only prefills
MAX_DESCRIPTION = 20_000  # characters of a sweep's description (the manifest that records it holds at most this)
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
NAME_RULE = ("1-100 ASCII letters, digits, '.', '_' or '-', the first a letter or digit (it names the results folder, which "
             "a leading '.' would hide)")


class Sparsity(Spec):
    """Vary E or top-k, holding expert width, active or total routed-expert parameters constant."""

    vary: Literal["num_experts", "num_experts_per_tok"] = Field(description="model field to vary")
    values: list[Annotated[int, Field(gt=0)]] = Field(min_length=1, description="values of the varied field (each "
                                                                                "at least 1)")
    hold: Literal["width", "active", "total"] = Field("active", description="what stays constant: F, k·F (active, the readings' default: presets/readings.yaml, hold), or E·F")


class Constraint(Spec):
    """A user bound on an output column; it becomes a g_<column>_<min|max> column (g ≤ 0 satisfied)."""

    column: str = Field(description="an output or input column")
    max: Optional[float] = Field(None, allow_inf_nan=False, description="upper bound (g = (x − max)/|max|)")
    min: Optional[float] = Field(None, allow_inf_nan=False, description="lower bound (g = (min − x)/|min|)")

    @model_validator(mode="after")
    def _bounded(self):
        if self.max is None and self.min is None:
            raise ValueError("a constraint needs max, min or both")
        for side, bound in (("max", self.max), ("min", self.min)):
            # g divides by |bound|: a subnormal one (1e-320) overflowed to inf with numpy warnings, and was
            # echoed in the reason as 9.99989e-321; no column in SI units is finer than the figures' floor
            if bound is not None and 0 < abs(bound) < MIN_FIGURE:
                raise ValueError(f"{side} {bound!r}: a bound is 0 or of magnitude at least {MIN_FIGURE:g} "
                                 "(columns are in SI units)")
        if self.max is not None and self.min is not None and self.min > self.max:
            raise ValueError(f"min {self.min:g} is above max {self.max:g}: no point could satisfy it")
        return self


def _once(names):
    """A list of axis names with none twice (a repeat meant nothing and read as one)."""
    twice = next((n for i, n in enumerate(names or []) if n in names[:i]), None)
    if twice is not None:
        raise ValueError(f"'{twice}' is named twice")
    return names


class Compare(Spec):
    """Best feasible baseline point per group of the other axes against the best feasible point."""

    name: str = Field("uniform", description="suffix of the speedup_vs_<name> column: letters, digits and '_' "
                                             "(up to 64), so the column can be named in --where and --sort")
    baseline: dict[str, Any] = Field(default_factory=lambda: {"workload.G": 1}, description="axis values of the baseline")
    candidate: dict[str, Any] = Field(default_factory=dict, description="axis values the best side is taken from "
                                      "(default: every point); e.g. one hardware against another, each tuned on its own")
    metric: str = Field("tokens_per_s", description="column to maximize")
    also: list[str] = Field(default_factory=list, description="further columns to maximize and compare the same way, "
                            "each side tuned for each one on its own")
    over: Optional[list[str]] = Field(None, description="axes optimized within a group (default: B, G)")

    @field_validator("over")
    @classmethod
    def _over_once(cls, v):
        return _once(v)

    @field_validator("name")
    @classmethod
    def _column_name(cls, v: str) -> str:
        if not re.fullmatch(r"[A-Za-z0-9_]{1,64}", v):
            raise ValueError(f"a name of ASCII letters, digits and '_' (up to 64): it becomes the column speedup_vs_<name> "
                             f"(got {v!r})")
        return v


# Swept fields that describe the scenario a design serves rather than a choice of design: the context and prompt
# lengths, the mode, how popular the experts are (distribution, skew, its seed, its drift, how many devices it
# concentrates on) and how many drafts a sequence accepts. Points under two scenarios never share a Pareto front
# (the easier scenario would dominate). The batch (B, tokens_per_device) is a choice: it is what trades latency
# for throughput on one front.
SCENARIO_AXES = ("workload.mode", "workload.seq_len", "workload.prompt_len", "workload.accepted_tokens_per_step",
                 "workload.draft_token_s", "balance.distribution", "balance.zipf_s", "balance.seed",
                 "balance.churn", "balance.skew_target", "balance.skew_devices")


class Pareto(Spec):
    """Which points share a Pareto front: one front per combination of the values of `group_by`."""

    group_by: Optional[list[str]] = Field(None, description="swept axes that are never mixed on one front "
                                          "(default: every swept hardware and model axis, e.g. hardware, model, "
                                          "model.num_experts, and every scenario axis: workload.seq_len, "
                                          "balance.zipf_s, ... (docs/usage.md), but those compare.over tunes; [] "
                                          "gives one front over every point)")

    @field_validator("group_by")
    @classmethod
    def _group_once(cls, v):
        return _once(v)


class Output(Spec):
    """What points.parquet keeps: every column (default) or the inputs plus these outputs."""

    columns: Optional[list[str]] = Field(None, description="output columns to keep (feasibility, bound and objectives always kept)")


class Search(Spec):
    """Search the grid instead of enumerating it: a genetic algorithm evaluates generations of points."""

    algorithm: Literal["nsga2"] = Field("nsga2", description="NSGA-II (pymoo): non-dominated sorting, crowding distance")
    evaluations: int = Field(gt=0, le=MAX_EVALUATIONS, description="distinct design points to evaluate at most")
    seed: int = Field(0, ge=0, le=MAX_SEED, description="seed of the algorithm's random choices (same seed, same points)")
    population: Optional[int] = Field(None, ge=4, le=MAX_POPULATION,
                                      description="points per generation (default: evaluations / 100, within 100..2,000)")


class SweepConfig(Spec):
    """A validated sweep: base specs, axes (grid and zip), helpers, constraints, objectives, comparison."""

    name: str
    description: str = Field("", max_length=MAX_DESCRIPTION)
    hardware: HardwareSpec
    model: ModelSpec
    workload: WorkloadSpec = WorkloadSpec()
    mapping: MappingSpec = MappingSpec()
    balance: BalanceSpec = BalanceSpec()
    axes: dict[str, list[Any]] = Field(default_factory=dict)
    zip: list[dict[str, list[Any]]] = Field(default_factory=list)
    sparsity: Optional[Sparsity] = None
    constraints: list[Constraint] = Field(default_factory=list)
    objectives: dict[str, Literal["min", "max"]] = Field(
        default_factory=lambda: {"tokens_per_s": "max", "mem_peak_node_bytes": "min"})
    compare: Optional[Compare] = None
    pareto: Pareto = Pareto()
    output: Output = Output()
    search: Optional[Search] = None
    presets: dict[str, dict[str, Any]] = Field(default_factory=dict, description="resolved preset axes: name -> fields")
    expert_histogram: Optional[list[float]] = Field(None, description="per-expert shares read from balance.histogram")
    base_dir: Optional[str] = Field(None, exclude=True, description="folder relative paths in the config resolve against")

    @field_validator("name")
    @classmethod
    def _safe_name(cls, v):
        if not NAME_RE.match(v):
            raise ValueError(f"must be {NAME_RULE}")
        return v

    def config_hash(self) -> str:
        """Content hash of what runs: identical configs skip re-evaluation.

        The sparsity helper is already expanded into `zip`, and a histogram counts by its shares,
        not its path, so a resolved config.yaml hashes like the config it came from.
        """
        data = self.model_dump(mode="json", exclude={"sparsity"})
        data["balance"].pop("histogram", None)
        text = json.dumps(data, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def resolved(self, base_dir: Path | None = None) -> dict:
        """A loadable config of exactly what runs: presets expanded to fields, helpers expanded to zips,
        imported models on an axis by their config.json's absolute path (it names them again on reload).

        Whole-number progressions are written back as `{range: [start, stop, step]}`, which loads to
        the same values (and hash) without thousands of lines of YAML.
        """
        data = self.model_dump(mode="json", exclude_none=True, exclude={"sparsity", "presets", "expert_histogram"})
        hist = data["balance"].get("histogram")
        if hist and base_dir is not None and not Path(hist).is_absolute():
            data["balance"]["histogram"] = str((base_dir / hist).resolve())
        for group in [data["axes"], *data["zip"]]:
            if "model" in group:
                group["model"] = [self.imported_from(v) or v for v in group["model"]]
        data["axes"] = {p: _as_range(v) for p, v in data["axes"].items()}
        data["zip"] = [{p: _as_range(v) for p, v in g.items()} for g in data["zip"]]
        return data

    def imported_from(self, name: str) -> str | None:
        """The config.json a model-axis value was imported from (None for a preset)."""
        source = str(self.presets.get(name, {}).get("source", ""))
        return source[3:] if source.startswith("hf:") and Path(source[3:]).is_absolute() else None

    def axis_names(self) -> list[str]:
        """Every swept path, grid axes first, then zipped ones."""
        return list(self.axes) + [k for group in self.zip for k in group]

    def factors(self) -> list[dict[str, list]]:
        """Independent factors of the design space: one per grid axis, one per zip group."""
        return [{path: values} for path, values in self.axes.items()] + [dict(g) for g in self.zip]

    def front_groups(self) -> list[str]:
        """Axes whose values each get their own Pareto front: `pareto.group_by`, else every swept hardware and
        model axis (two systems or two models are not one design space) and every scenario axis (SCENARIO_AXES:
        what the design is asked to serve, not a choice: a design at context 8K does not dominate one at 128K),
        but those the comparison tunes over (`compare.over` declares them design choices of one system, e.g.
        how many wafers a pipeline takes)."""
        if self.pareto.group_by is not None:
            return list(self.pareto.group_by)
        tuned = set(self.compare.over or ()) if self.compare is not None else set()
        return [a for a in self.axis_names()
                if (a.split(".")[0] in ("hardware", "model") or a in SCENARIO_AXES) and a not in tuned]

    def size(self) -> int:
        """Number of design points (the product of the factors' lengths)."""
        n = 1
        for f in self.factors():
            n *= len(next(iter(f.values())))
        return n


def _as_range(values: list):
    """`{range: [start, stop, step]}` for a long run of integers in constant positive steps, else the list."""
    if len(values) < RANGE_MIN or not all(type(v) is int for v in values):
        return values
    step = values[1] - values[0]
    if step <= 0 or any(b - a != step for a, b in zip(values, values[1:])):
        return values
    return {"range": [values[0], values[-1], step]}


class RawSweep(Spec):
    """The non-spec part of a sweep file, validated before axes are expanded."""

    output: Output = Output()
    name: str = "sweep"
    description: str = Field("", max_length=MAX_DESCRIPTION, description="what the sweep asks (shown in reports)")
    axes: Optional[dict[str, Any]] = None
    zip: Optional[list[dict[str, Any]]] = None
    sparsity: Optional[Sparsity] = None
    constraints: list[Constraint] = Field(default_factory=list)
    objectives: Optional[dict[str, Literal["min", "max"]]] = None
    compare: Optional[Compare] = None
    pareto: Pareto = Pareto()
    search: Optional[Search] = None
