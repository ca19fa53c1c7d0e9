"""Run the invariant registry over configs: one result per invariant and config, and a report.

Every config is loaded and its grid evaluated before any invariant runs, so bad input is one
`WsemoeError` (exit 2 in the CLI) and never a half-written report. An invariant that raises is an
`error` result, not a crash: the others still run and the report says what broke.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from wsemoe.analysis.invariants.cases import DEFAULT_POINTS, MAX_POINTS, Case, load_cases
from wsemoe.analysis.invariants.checking import Outcome
from wsemoe.analysis.invariants.laws import REGISTRY, Invariant
from wsemoe.arguments import whole
from wsemoe.errors import ConfigError


@dataclass
class Result:
    """One invariant on one config."""

    invariant: Invariant
    config: str               # the config's label (its name; its path when two configs share a name)
    outcome: Outcome
    seconds: float
    error: str | None = None  # the exception an invariant raised, in one line

    @property
    def status(self) -> str:
        """pass, fail, skip (nothing to compare here) or error (the check itself raised)."""
        return "error" if self.error else self.outcome.status

    def message(self) -> str:
        """One line: the worst violation, the error, or why it was skipped (empty when it passed)."""
        if self.error:
            return self.error
        if self.outcome.worst is not None:
            return f"{self.outcome.violations} of {self.outcome.checked} comparisons fail; worst: {self.outcome.worst.line()}"
        return self.outcome.skipped or ""

    def to_dict(self) -> dict:
        o = self.outcome
        return {"invariant": self.invariant.name, "config": self.config, "status": self.status,
                "checked": o.checked, "violations": o.violations, "seconds": round(self.seconds, 4),
                "worst": o.worst.to_dict() if o.worst else None, "skipped": o.skipped, "error": self.error}


@dataclass
class Report:
    """Every result of a run, with the configs it covered."""

    results: list[Result]
    configs: list[dict] = field(default_factory=list)   # label, source, points in the sweep, points checked
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        """True when no invariant failed or errored (skips are fine)."""
        return not any(r.status in ("fail", "error") for r in self.results)

    def counts(self) -> dict:
        out = {s: 0 for s in ("pass", "fail", "skip", "error")}
        for r in self.results:
            out[r.status] += 1
        return out

    def to_dict(self) -> dict:
        """The report as plain JSON types (`wsemoe invariants --format json`)."""
        return {"ok": self.ok, "counts": self.counts(), "seconds": round(self.seconds, 3), "configs": self.configs,
                "invariants": [{"name": i.name, "statement": i.statement, "reason": i.reason} for i in selected(None)],
                "results": [r.to_dict() for r in self.results]}


def selected(only) -> list[Invariant]:
    """Invariants by name (all when `only` is empty); an unknown name is bad input."""
    if not only:
        return list(REGISTRY.values())
    unknown = [n for n in only if n not in REGISTRY]
    if unknown:
        raise ConfigError(f"unknown invariant '{unknown[0]}'; known: {', '.join(REGISTRY)}", loc=("--only",))
    return [REGISTRY[n] for n in dict.fromkeys(only)]


def run_one(inv: Invariant, case: Case) -> Result:
    """One invariant on one case; an exception inside the check becomes an `error` result."""
    start = time.perf_counter()
    try:
        outcome, error = inv.run(case), None
    except Exception as exc:  # a broken formula may raise: report it against this invariant and go on
        outcome, error = Outcome(), f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}"
    return Result(inv, case.label, outcome, time.perf_counter() - start, error)


def check_invariants(configs=None, points: int = DEFAULT_POINTS, only=None, on_progress=None) -> Report:
    """Run the invariants (all, or those named in `only`) on each config's bounded grid.

    `configs`: paths, dicts or SweepConfigs; none means every shipped hardware preset (with every
    model preset) and every shipped sweep. `points` bounds each config's grid. `on_progress(done, total,
    note)` hears of each config evaluated and each invariant checked.
    """
    start = time.perf_counter()
    if configs is not None and not len(configs):   # [] ran every shipped config; None asks for that
        raise ConfigError("an empty list of configs: give some, or None for every shipped one", loc=("configs",))
    points = whole(points, "--points", 1, MAX_POINTS)   # as --points takes it; bounded: memory grows with it
    invariants = selected(only)
    cases = load_cases(configs, points)
    report = on_progress or (lambda done, total, note="": None)
    total = len(cases) * (2 + len(invariants))
    for i, case in enumerate(cases):
        case.outputs()  # evaluates once; a config the engine refuses (unknown constraint column) is bad input
        report(i + 1, total, case.label)
    results = []
    for i, case in enumerate(cases):
        # every changed grid the invariants compare, in one stacked evaluation (each check finds its own cached)
        case.variants({tag: changes for inv in invariants if inv.frames for tag, changes in inv.frames(case).items()})
        done = len(cases) + i * (1 + len(invariants)) + 1
        report(done, total, case.label)
        for k, inv in enumerate(invariants):
            results.append(run_one(inv, case))
            report(done + k + 1, total, case.label)
    configs_info = [{"config": c.label, "source": c.source, "points": c.cfg.size(), "checked_points": len(c)}
                    for c in cases]
    return Report(results, configs_info, time.perf_counter() - start)
