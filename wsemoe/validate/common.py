"""The rows of `wsemoe validate`: what each kind means, how its status follows, and the shipped sweeps.

Kinds of row:
- `check`: the model against a published figure, within a band written before the model ran on it
  (`validate/tolerances.py`); status `yes` inside the band, `no` outside it when the row is a known deviation
  (`validate/deviations.py`, with its measured distance and reason), `FAILS` otherwise;
- `headline`: a check on a seed paper's headline that also shows the model at the default readings, its range
  over the readings, and whether the published value lies in that range;
- `property`: true by construction of the model or of a choice fitted to a published number; checked all the
  same: `property` when it holds, `FAILS` when it does not;
- `fitted`: the model reproduces a figure one of its inputs was fitted to (a calibration constraint, not a
  reproduction); `fitted` when the fit closes, `FAILS` when it does not;
- `info`: context, a model figure beside a published statement it does not check (no pass or fail).
"""

from __future__ import annotations

import contextvars
import math
from contextlib import contextmanager

from wsemoe.config.loader import load_config
from wsemoe.config.presets import SWEEPS
from wsemoe.errors import ConfigError
from wsemoe.validate.tolerances import Band, band as band_of

KINDS = ("check", "headline", "property", "fitted", "info")

# While set, a family builds only what decides its rows' statuses: a headline's range over every reading and the
# context rows are skipped (validate/perturb.py re-runs the families under each scaled constant, and a status
# follows from a row's value and band alone).
_CLAIMS_ONLY = contextvars.ContextVar("claims_only", default=False)


def claims_only() -> bool:
    """Whether the rows are built for their statuses only (no readings ranges, no context rows)."""
    return _CLAIMS_ONLY.get()


@contextmanager
def only_claims():
    """Inside, `claims_only()` is true."""
    token = _CLAIMS_ONLY.set(True)
    try:
        yield
    finally:
        _CLAIMS_ONLY.reset(token)


def pct(x: float) -> str:
    """A signed percentage with a typographic minus ('0%' when it rounds to zero)."""
    return "0%" if round(100 * x) == 0 else f"{100 * x:+.0f}%".replace("-", "−")


def pts(x: float) -> str:
    """A difference of fractions in percentage points."""
    return "0 pts" if round(100 * x) == 0 else f"{100 * x:+.0f} pts".replace("-", "−")


def points(x: float) -> str:
    """An unsigned difference of fractions in percentage points (how far outside a band)."""
    return f"{100 * abs(x):.0f} pts"


def factor(x: float) -> str:
    return f"{x:.2f}×"


def band_text(b: Band, shown) -> str:
    """'4.00×–8.00×', '≤ 1.20×', '> 0%', 'exactly 0%' of a band in the row's unit. A row that prints its value
    negated (a cut shown as the change it makes, `pct(-x)`) gets its band negated alike: 'cut > 0%' reads
    '< 0%' beside 'change −89% … −63%', not '> 0%'."""
    flip = _negates(shown)
    if b.lo is not None and b.hi is not None:
        if b.lo == b.hi:
            return f"exactly {shown(b.lo)}"
        if b.lo == -b.hi and not b.log:
            return f"±{shown(b.hi).lstrip('+')}"
        return f"{shown(b.hi)} … {shown(b.lo)}" if flip else f"{shown(b.lo)} … {shown(b.hi)}"
    below = (b.hi is not None) != flip   # the shown value must lie below the edge shown
    edge = b.hi if b.hi is not None else b.lo
    return f"{('<' if b.strict else '≤') if below else ('>' if b.strict else '≥')} {shown(edge)}"


def _negates(shown) -> bool:
    """Whether a row's formatter prints a value negated (+1 as a minus, −1 as a plus)."""
    try:
        return shown(1.0).startswith(("−", "-")) and not shown(-1.0).startswith(("−", "-"))
    except (TypeError, ValueError):   # a formatter of something other than numbers
        return False


def distance(b: Band, value: float, shown, delta=None) -> str:
    """How far outside its band a value is ('' inside): a ratio for factor bands, a difference otherwise."""
    where = b.outside(value)
    if where is None:
        return ""
    side, edge = where
    if not math.isfinite(value):
        return "no value (no feasible point)"
    if b.log and edge:
        return f"{value / edge:.2f}× the band's {'upper' if side == 'above' else 'lower'} end {shown(edge)}"
    return f"{(delta or shown)(abs(value - edge))} beyond the band's end {shown(edge)}"


def row(rid: str, claim: str, published: str, value: float, shown=factor, *, kind: str = "check",
        band: Band | None = None, model: str | None = None, source: str = "", reading: str = "", delta=None,
        error: str = "") -> dict:
    """One row comparing the model's `value` with a published figure within its band (tolerances.BANDS by
    id unless `band` is given). `model` is the value as printed (default: `shown(value)`)."""
    if kind not in KINDS[:-1]:
        raise ValueError(f"kind {kind!r}")
    b = band if band is not None else band_of(rid)
    value = float(value)
    ok = b.holds(value)
    return {"id": rid, "kind": kind, "claim": claim, "published": published, "source": source, "reading": reading,
            "model": model if model is not None else shown(value), "error": error, "tolerance": band_text(b, shown),
            "value": value, "band": b, "ok": ok, "distance": distance(b, value, shown, delta), "reason": None,
            "status": None}


def context(rid: str, claim: str, published: str, model: str, note: str, source: str = "", reading: str = "") -> dict:
    """A context row: a model figure beside a published statement it does not check (never pass or fail)."""
    return {"id": rid, "kind": "info", "claim": claim, "published": published, "source": source, "reading": reading,
            "model": model, "error": "", "tolerance": note, "value": math.nan, "band": None, "ok": True,
            "distance": "", "reason": None, "status": "info"}


def headline(r: dict, published_value: float, default: str, low: float, high: float, over: str, shown=factor) -> dict:
    """A check row made a headline: the model at the default readings, its range over the readings, and
    whether the published value lies in that range."""
    inside = bool(low <= published_value <= high) if math.isfinite(low) and math.isfinite(high) else False
    return {**r, "kind": "headline", "default": default, "range": f"{shown(low)} … {shown(high)} over {over}",
            "low": low, "high": high, "inside": inside}


def bare_headline(r: dict) -> dict:
    """A check row made a headline without its range over the readings (built for its status alone)."""
    return {**r, "kind": "headline", "default": r["model"], "range": "not computed", "low": math.nan,
            "high": math.nan, "inside": False}


def sweep_config(name: str):
    """A shipped reproduction config from sweeps/ (a clear error when run outside a checkout)."""
    path = SWEEPS / f"{name}.yaml"
    if not path.is_file():
        raise ConfigError("reproduction config not found: the installation is incomplete", loc=(str(path),))
    return load_config(path)


def unexplained(rows: list[dict]) -> list[dict]:
    """Rows that fail unexpectedly: a check outside its band that is no known deviation, a known deviation that
    now reproduces (the record is stale), a property that does not hold, a fit that does not close."""
    return [r for r in rows if r["status"] == "FAILS"]
