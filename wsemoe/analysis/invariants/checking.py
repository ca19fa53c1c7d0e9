"""The machinery of an invariant check: elementwise comparisons over whole frames, the worst violation.

An invariant hands a `Checker` arrays (one value per grid row, or one per structure) and the
relation they must satisfy; the checker counts comparisons and violations and keeps the single
worst violation with the inputs that produced it, the two values compared and their ratio.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

REL_TOL = 1e-9   # float64 sums of a few terms agree to ~1e-15; this leaves room, and nothing physical hides in it

RELATIONS = {"<=": "≤", ">=": "≥", "==": "=", "<": "<", "finite >= 0": "finite, ≥"}


@dataclass
class Violation:
    """The worst failure of an invariant on one config."""

    quantity: str            # what was compared (a column, or a structural total)
    relation: str            # the relation that failed: lhs <relation> rhs
    lhs_label: str
    lhs: object
    rhs_label: str
    rhs: object
    ratio: float             # lhs / rhs
    inputs: dict = field(default_factory=dict)   # the design point (or structure) and what the invariant changed

    def line(self) -> str:
        """One line: the quantity, both values, their ratio and the inputs that produced them."""
        where = ", ".join(f"{k}={_show(v)}" for k, v in self.inputs.items())
        rel = RELATIONS.get(self.relation, self.relation)
        return (f"{self.quantity}: {self.lhs_label} = {_show(self.lhs)} should be {rel} "
                f"{self.rhs_label} = {_show(self.rhs)} (ratio {_show(self.ratio)}) at {where}")

    def to_dict(self) -> dict:
        """Plain JSON types."""
        d = asdict(self)
        return {k: _plain(v) if k != "inputs" else {i: _plain(x) for i, x in v.items()} for k, v in d.items()}


@dataclass
class Outcome:
    """What one invariant found on one config."""

    checked: int = 0                  # elementwise comparisons made
    violations: int = 0               # of those, how many failed
    worst: Violation | None = None
    skipped: str | None = None        # why nothing applies to this config (e.g. no fabric traffic)

    @property
    def status(self) -> str:
        if self.violations:
            return "fail"
        return "skip" if self.checked == 0 else "pass"


def _show(v) -> str:
    if isinstance(v, (float, np.floating)):
        return f"{float(v):.6g}"
    return str(v)


def _plain(v):
    """A JSON-safe value (numpy scalars unwrapped; inf and nan spelled as strings)."""
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and not np.isfinite(v):
        return str(v)
    return v if isinstance(v, (int, float, str, bool, type(None))) else str(v)


def _ratio(a, b) -> float:
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(np.float64(a) / np.float64(b))


def _excess(lhs: np.ndarray, rhs: np.ndarray, relation: str) -> np.ndarray:
    """How badly each comparison fails (> 0 fails; larger is worse), relative to the values."""
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = np.maximum(np.abs(lhs), np.abs(rhs))
        if relation == "==":  # NaN = NaN here: both sides say "does not apply" (e.g. no FTD tiles)
            close = np.isclose(lhs, rhs, rtol=REL_TOL, atol=0.0, equal_nan=True) | (lhs == rhs)
            bad = np.where(close, 0.0, np.abs(lhs - rhs) / scale)
        elif relation == "<=":
            bad = np.where((lhs <= rhs) | np.isclose(lhs, rhs, rtol=REL_TOL, atol=0.0), 0.0, (lhs - rhs) / scale)
        elif relation == ">=":
            bad = np.where((lhs >= rhs) | np.isclose(lhs, rhs, rtol=REL_TOL, atol=0.0), 0.0, (rhs - lhs) / scale)
        elif relation == "<":  # strict: equal values fail too
            bad = np.where(lhs < rhs, 0.0, np.maximum((lhs - rhs) / scale, np.finfo(float).tiny))
        elif relation == "finite >= 0":
            bad = np.where(np.isfinite(lhs) & (lhs >= 0), 0.0, np.where(np.isfinite(lhs), -lhs / scale, np.inf))
        else:
            raise ValueError(f"unknown relation {relation!r}")
    return np.where(np.isnan(bad), np.inf, bad)  # NaN on either side is always a violation


class Checker:
    """Collects the comparisons of one invariant on one case and keeps the worst violation."""

    def __init__(self, case):
        self.case = case
        self.outcome = Outcome()
        self._worst = 0.0

    def compare(self, quantity, lhs, rhs, relation: str, labels=("model", "expected"),
                where=None, changes: dict | None = None, inputs: dict | None = None, rows=None) -> None:
        """Check `lhs relation rhs` elementwise over the grid rows (or once, for a structure).

        `quantity` names what is compared: one name, or names broadcast against the values (one per
        column when several outputs are compared at once). `where` masks the values the invariant
        applies to; `rows` maps values to grid rows when they are not one per row in grid order (a
        group of rows, a 2-D block); `changes` ({path: (before, after)}, arrays over the grid rows)
        names the inputs the invariant changed; `inputs` replaces the row's inputs for comparisons
        that are not about a grid row (a communication structure).
        """
        lhs, rhs = np.broadcast_arrays(np.asarray(lhs, dtype=float), np.asarray(rhs, dtype=float))
        mask = np.ones(lhs.shape, bool) if where is None else np.broadcast_to(np.asarray(where, bool), lhs.shape)
        bad = np.where(mask, _excess(lhs, rhs, relation), 0.0)
        self.outcome.checked += int(mask.sum())
        failed = int((bad > 0).sum())
        if not failed:
            return
        self.outcome.violations += failed
        i = int(np.argmax(bad))
        if bad.flat[i] <= self._worst and self.outcome.worst is not None:
            return
        self._worst = float(bad.flat[i])
        name = quantity if isinstance(quantity, str) else str(np.broadcast_to(np.asarray(quantity, object), lhs.shape).flat[i])
        row = i if rows is None else int(np.broadcast_to(rows, lhs.shape).flat[i])
        self.outcome.worst = Violation(name, relation, labels[0], float(lhs.flat[i]), labels[1], float(rhs.flat[i]),
                                       _ratio(lhs.flat[i], rhs.flat[i]), self._inputs(row, inputs, changes))

    def _inputs(self, row: int, inputs, changes) -> dict:
        """The violating point's inputs, with each changed input shown as `before → after`."""
        out = dict(inputs) if inputs is not None else self.case.row_inputs(row)
        for path, (before, after) in (changes or {}).items():  # values over the grid rows
            out[path] = f"{_show(np.asarray(before).flat[row])} → {_show(np.asarray(after).flat[row])}"
        return out

    def same_labels(self, quantity: str, lhs, rhs, labels=("model", "expected"), inputs: dict | None = None) -> None:
        """Labels (bound names, modes) that must be equal; any difference is as bad as it gets."""
        lhs, rhs = np.broadcast_arrays(np.asarray(lhs, dtype=object), np.asarray(rhs, dtype=object))
        bad = lhs != rhs
        self.outcome.checked += lhs.size
        if not bad.any():
            return
        self.outcome.violations += int(bad.sum())
        if self._worst < np.inf:
            i = int(np.argmax(bad))
            self._worst = np.inf
            self.outcome.worst = Violation(quantity, "==", labels[0], lhs.flat[i], labels[1], rhs.flat[i], float("nan"),
                                           self._inputs(i, inputs, None))

    def skip(self, reason: str) -> Outcome:
        """Nothing to compare on this config (the invariant does not apply), with the reason."""
        if self.outcome.checked == 0:
            self.outcome.skipped = reason
        return self.outcome
