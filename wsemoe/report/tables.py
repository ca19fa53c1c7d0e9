"""rich renderables: sweep summary, top points, what binds, comparisons, one-point breakdowns."""

from __future__ import annotations

import math

import pandas as pd
from rich.console import Group
from rich.table import Table
from rich.text import Text

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
    search = manifest.get("search")
    if search:
        share = search["evaluated"] / search["space_points"] if search["space_points"] else 0.0
        t.add_row("search", f"{search['algorithm']} ({search['library']}), seed {search['seed']}: {search['evaluated']:,} "
                  f"of {search['space_points']:,} points ({share:.3%}) in {search['generations']:,} generations of "
                  f"{search['population']:,}; stopped: {search['stopped']}")
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


def validation(rows: list) -> Group:
    """Published figure vs model value with error and tolerance; context rows in a table of their own."""
    t = Table(title="published results reproduced (no: outside tolerance, with the reason; property: true by "
                    "construction)")
    for c in ("claim", "published", "model", "error", "tolerance", "ok"):
        t.add_column(c)
    shown = {"yes": "[green]yes[/green]", "no": "[red]no[/red]", "property": "[blue]property[/blue]"}
    for r in rows:
        if r["kind"] == "info":
            continue
        status = shown[r["status"]] if r["ok"] or r["kind"] == "check" else "[red]FAILS[/red]"
        claim = f"{r['claim']}\n[dim]why: {r['reason']}[/dim]" if r.get("reason") else r["claim"]
        t.add_row(claim, r["published"], r["model"], r["error"], r["tolerance"], status)
    context = [r for r in rows if r["kind"] == "info"]
    if not context:
        return Group(t)
    c = Table(title="context: model figures beside published statements they do not check (no pass/fail)")
    for col in ("figure", "published", "model", "note"):
        c.add_column(col)
    for r in context:
        c.add_row(r["claim"], r["published"], r["model"], r["tolerance"])
    return Group(t, c)


STATUS_STYLE = {"pass": "green", "fail": "bold red", "skip": "dim", "error": "bold magenta"}


def invariant_lines(report, statuses=("fail", "error")) -> list[str]:
    """One line per result with one of `statuses`: status, invariant, config and what was found."""
    return [f"{r.status.upper()} {r.invariant.name} [{r.config}]: {r.message()}"
            for r in report.results if r.status in statuses]


def invariants(report) -> Group:
    """Each invariant with the configs it holds on, fails on or skips; then every failure in full."""
    t = Table(title="cost-model invariants")
    for c in ("invariant", "holds", "fails", "skipped", "statement"):
        t.add_column(c, overflow="fold")
    by_name: dict = {}
    for r in report.results:
        by_name.setdefault(r.invariant.name, []).append(r)
    for name, results in by_name.items():
        def on(*statuses):
            return ", ".join(r.config for r in results if r.status in statuses) or "–"
        status = "fail" if any(r.status in ("fail", "error") for r in results) else "pass"
        t.add_row(Text(name, style=STATUS_STYLE[status]), str(sum(r.status == "pass" for r in results)),
                  on("fail", "error"), on("skip"), results[0].invariant.statement)
    c = report.counts()
    line = Text(f"{len(report.results)} checks on {len(report.configs)} configs in {report.seconds:.1f} s: "
                f"{c['pass']} hold, {c['fail']} fail, {c['error']} error, {c['skip']} skipped")
    details = [Text.assemble((r.status.upper(), STATUS_STYLE[r.status]), f" {r.invariant.name} [{r.config}]: {r.message()}")
               for r in report.results if r.status in ("fail", "error")]
    return Group(t, line, *details)


def sensitivity(result, quantity: str | None = None) -> Table:
    """Per group: nominal value, 5–95% band, and each unknown's total (first-order) index or Morris μ*."""
    bands, idx, meta = result.bands, result.indices, result.meta
    qs = list(dict.fromkeys(bands["quantity"]))
    quantity = quantity or next((q for q in qs if q.startswith("speedup_vs_")), qs[0])
    params = [u["name"] for u in meta["unknowns"]]
    sobol = meta["method"] == "sobol"
    t = Table(title=f"sensitivity of {quantity} ({meta['method']}, {meta['samples']:,} samples × "
                    f"{meta['points']:,} points; {'total (first-order) index' if sobol else 'Morris μ*'})")
    for c in ("group", "nominal", "5–95% band", *params):
        t.add_column(c)
    sel = idx[idx["quantity"] == quantity] if len(idx) else idx
    for _, b in bands[bands["quantity"] == quantity].iterrows():
        cells = []
        for p in params:
            r = sel[(sel["group"] == b["group"]) & (sel["parameter"] == p)] if len(sel) else sel
            if not len(r):
                cells.append("–")
            elif sobol:
                cells.append(f"{r['ST'].iloc[0]:.2f} ({r['S1'].iloc[0]:.2f})")
            else:
                cells.append(f"{r['mu_star'].iloc[0]:.3g}")
        t.add_row(str(b["group"]), f"{b['nominal']:.4g}", f"{b['q05']:.4g} – {b['q95']:.4g}", *cells)
    return t


def calibration(fit: pd.DataFrame, residuals: pd.DataFrame, chi2: float) -> Group:
    """The fitted unknowns with their spread, and every target's residual (σ units)."""
    t = Table(title=f"calibration unknowns fitted (χ² = {chi2:.2f})")
    for c in ("unknown", "nominal", "fitted", "spread (χ² ≤ min + 1)", "range"):
        t.add_column(c)
    for _, r in fit.iterrows():
        edge = " [yellow](range edge)[/yellow]" if r.get("at_edge") else ""
        t.add_row(r["unknown"], f"{r['nominal']:.4g}", f"{r['fitted']:.4g}{edge}",
                  f"{r['spread_low']:.4g} – {r['spread_high']:.4g}", f"{r['range_low']:.4g} – {r['range_high']:.4g}")
    u = Table(title="targets: published vs model (residual in σ; 0 = inequality holds)")
    for c in ("target", "published", "source", "nominal", "fitted", "residual"):
        u.add_column(c)
    for _, r in residuals.iterrows():
        u.add_row(r["target"], r["published"], r["source"], f"{r['nominal']:.3g}", f"{r['fitted']:.3g}",
                  f"{r['residual_sigma']:+.2f}")
    return Group(t, u)
