"""rich renderables: sweep summary, top points, what binds, comparisons, one-point breakdowns."""

from __future__ import annotations

import math

import pandas as pd
from rich.console import Group
from rich.table import Table

from wsemoe.sweep.columns import describe


def fmt(value, unit: str = "") -> str:
    """Compact human form of a number with its unit (engineering prefixes for large values)."""
    if isinstance(value, (bool,)) or value is None:
        return str(value)
    if isinstance(value, str):
        return value
    try:
        x = float(value)
    except (TypeError, ValueError):
        return str(value)
    if math.isnan(x):
        return "–"
    if unit == "bytes":
        for p, s in ((1e12, "TB"), (1e9, "GB"), (1e6, "MB"), (1e3, "kB")):
            if abs(x) >= p:
                return f"{x / p:.3g} {s}"
        return f"{x:.3g} B"
    if x != 0 and (abs(x) >= 1e5 or abs(x) < 1e-3):
        return f"{x:.3e}" + (f" {unit}" if unit and unit != "1" else "")
    return f"{x:.4g}" + (f" {unit}" if unit and unit not in ("1", "bool") else "")


def summary(manifest: dict, status: str = "") -> Table:
    """Counts of a run: points, feasible, Pareto size, what binds."""
    t = Table(title=f"sweep {manifest.get('name', '')} {status}".strip(), show_header=False)
    t.add_row("points", f"{manifest['points']:,}")
    t.add_row("feasible", f"{manifest['feasible']:,}")
    t.add_row("pareto", f"{manifest['pareto']:,}")
    if manifest.get("objectives_not_finite"):
        t.add_row("left off the front", f"{manifest['objectives_not_finite']:,} feasible points with a non-finite objective")
    t.add_row("objectives", ", ".join(f"{k} ({v})" for k, v in manifest["objectives"].items()))
    binds = sorted(manifest.get("bounds", {}).items(), key=lambda kv: -kv[1])
    t.add_row("what binds (feasible)", "; ".join(f"{k}: {v:,}" for k, v in binds[:5]) or "–")
    t.add_row("config hash", manifest["config_hash"])
    return t


def top_points(points: pd.DataFrame, axes: list[str], objectives: dict, n: int = 8, title="top feasible points") -> Table:
    """The n best feasible points by the first objective, with the axes and key outputs."""
    first, sense = next(iter(objectives.items()))
    feas = points[points["feasible"]] if "feasible" in points else points
    best = feas.sort_values(first, ascending=(sense == "min")).head(n)
    cols = list(dict.fromkeys([*axes, *objectives, "tokens_per_s", "mfu", "bound"]))
    cols = [c for c in cols if c in best]
    t = Table(title=title)
    for c in cols:
        unit = describe(c)[0]
        t.add_column(f"{c}" + (f" [{unit}]" if unit not in ("", "1", "bool") else ""), justify="right")
    for _, r in best.iterrows():
        t.add_row(*[fmt(r[c], describe(c)[0]) for c in cols])
    return t


def comparison(df: pd.DataFrame, title="best feasible point against the best feasible baseline, per group") -> Table:
    """The comparison table (one row per group)."""
    t = Table(title=title)
    for c in df.columns:
        t.add_column(c, justify="right")
    for _, r in df.iterrows():
        t.add_row(*[fmt(r[c], describe(c)[0]) for c in df.columns])
    return t


def breakdown(rows: list) -> Group:
    """A one-point breakdown: one table section per group of terms."""
    t = Table(title="design point breakdown")
    for c in ("group", "term", "value", "meaning"):
        t.add_column(c)
    last = None
    for group, name, value, unit, doc in rows:
        t.add_row(group if group != last else "", name, fmt(value, unit), doc)
        last = group
    return Group(t)


def validation(rows: list) -> Table:
    """Published figure vs model value with error and tolerance."""
    t = Table(title="published results reproduced")
    for c in ("claim", "published", "model", "error", "tolerance", "ok"):
        t.add_column(c)
    for r in rows:
        status = "info" if r["ok"] is None else "[green]yes[/green]" if r["ok"] else \
            "[yellow]no[/yellow]" if r.get("explained") else "[red]NO[/red]"
        t.add_row(r["claim"], r["published"], r["model"], r["error"], r["tolerance"], status)
    return t
