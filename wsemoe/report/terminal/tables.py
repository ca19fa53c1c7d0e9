"""rich renderables: sweep summary, what binds, rows of a query, comparisons, one-point breakdowns, invariants,
sensitivity, calibration, inventory (validation: `terminal.validation`; the preset tables: `terminal.presets`)."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
from rich import box
from rich.console import Group
from rich.table import Table
from rich.text import Text

from wsemoe.errors import printable
from wsemoe.report.terminal import formats
from wsemoe.report.terminal.sensitivity import sensitivity  # noqa: F401  (show and the command use it here)
from wsemoe.sweep import crossing
from wsemoe.wording import count, number


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
    return number(x, 4) + (f" {unit}" if unit and unit not in ("1", "bool") else "")


def front_line(manifest: dict) -> str:
    """'14 rows for 22 points (exact ties in one row); 3 fronts, one per hardware' from a manifest."""
    rows = manifest.get("pareto", 0)
    points = rows if manifest.get("pareto_points") is None else manifest["pareto_points"]
    text = count(rows, "row") + \
        (f" for {points:,} points (exact ties in one row)" if points != rows else "")
    if manifest.get("pareto_groups") is None:  # results of an earlier wsemoe: one front, its groups unrecorded
        return text
    groups = manifest["pareto_groups"]
    fronts = manifest.get("pareto_fronts") or 0
    return text + (f"; {count(fronts, 'front')}, one per {', '.join(groups)}" if groups
                   else "; one front over every point")


def summary(manifest: dict, status: str = "") -> Table:
    """Counts of a run: points, feasible, Pareto size, what binds."""
    t = Table(title=f"sweep {manifest.get('name', '')} {status}".strip(), show_header=False, box=box.SIMPLE,
              title_justify="left", pad_edge=False)
    t.add_row("points", f"{manifest['points']:,}")
    search = manifest.get("search")
    if search and search.get("enumerated"):
        t.add_row("search", f"not needed: {search['stopped']}")
    elif search:
        share = search["evaluated"] / search["space_points"] if search["space_points"] else 0.0
        t.add_row("search", f"{search['algorithm']} ({search['library']}), seed {search['seed']}: {search['evaluated']:,} "
                  f"of {search['space_points']:,} points ({share:.3%}) in {search['generations']:,} generations of "
                  f"{search['population']:,}; stopped: {search['stopped']}")
    t.add_row("feasible", f"{manifest['feasible']:,}")
    t.add_row("pareto", front_line(manifest))
    if manifest.get("objectives_not_finite"):
        t.add_row("left off the front", f"{manifest['objectives_not_finite']:,} feasible points with a non-finite objective")
    t.add_row("objectives", ", ".join(f"{k} ({v})" for k, v in manifest["objectives"].items()))
    binds = sorted(manifest.get("bounds", {}).items(), key=lambda kv: -kv[1])
    rest = binds[5:]   # the five most common, and what the others add up to (the counts sum to the feasible points)
    t.add_row("what binds (feasible)", "; ".join([f"{k}: {v:,}" for k, v in binds[:5]] + (
        [f"{count(len(rest), 'other')}: {sum(v for _, v in rest):,}"] if rest else [])) or "–")
    t.add_row("config hash", manifest["config_hash"])
    return t


def selection(sel, width: int, title: str) -> Table | Group:
    """The rows of a query as a table that fits `width`; the caption says what was left out and how to see it.
    What is required (asked-for columns; else the axes, objectives, `bound` and `feasible`) is never left out: when
    it does not fit, the table continues below with the rest of it. A column every row shares (a filter made it
    constant) is said once, above the table."""
    rows = sel.rows
    filtered = sel.matched < sel.scanned  # a filter kept some rows: what it made constant is said once
    same = [c for c in rows.columns if filtered and len(rows) > 1 and c != "feasible"
            and rows[c].nunique(dropna=False) == 1]
    rows = rows[[c for c in rows.columns if c not in same]]
    required = [c for c in getattr(sel, "required", []) if c in rows]
    priority = [c for c in sel.priority if c in rows]
    priority = ["feasible", *(c for c in priority if c != "feasible")] if "feasible" in rows else priority
    first = ["feasible"] if "feasible" in rows else []  # which rows are infeasible: in the first table, always
    cols, hidden = formats.fit(rows, list(dict.fromkeys([*first, *required, *priority])), width)
    more = [c for c in required if c in hidden]
    hidden = [c for c in hidden if c not in more]
    notes = []
    if "feasible" in sel.rows and not sel.rows["feasible"].astype(bool).all():
        notes.append(f"{count(int((~sel.rows['feasible'].astype(bool)).sum()), 'infeasible row')} shown (feasible: no; "
                     "--feasible keeps only feasible points)")
    if len(sel.rows) < sel.matched:
        turns = f", the best of each of the {sel.fronts} fronts in turn" if getattr(sel, "fronts", 0) else ""
        notes.append(f"{len(sel.rows):,} of {sel.matched:,} rows{turns} (--limit 0 shows all)")
    if hidden:
        notes.append(f"not shown for width: {', '.join(hidden)} (--columns picks, --format csv shows all)")
    label = "every row shown: " if len(sel.rows) < sel.matched else "every row: "   # --limit cut the selection
    head = [Text(label + ", ".join(f"{c} = {formats.cell(rows_value(sel.rows, c))}" for c in same))] \
        if same else []
    wrapped = bool(more)
    tables = [formats.table(rows[cols], title=title, caption="" if wrapped else "; ".join(notes))]
    while more:  # the required columns that did not fit: continued below, each table with the point index
        cont, _ = formats.fit(rows[more], more, width)
        cont = cont or more[:1]
        more = [c for c in more if c not in cont]
        tables.append(formats.table(rows[cont], title="(continued: the same rows)"))
    tail = [Text("; ".join(notes))] if wrapped and notes else []
    return tables[0] if len(tables) == 1 and not head else Group(*head, *tables, *tail)


def rows_value(df: pd.DataFrame, col: str):
    """The one value a column takes in every row."""
    return df[col].iloc[0]


COMPARISON_FIRST = ("speedup_vs_", "best_G", "best_B", "best_tokens_per_s", "baseline_tokens_per_s", "best_bound",
                    "baseline_bound", "best_mfu", "baseline_mfu", "baseline_B", "baseline_G")


def comparison_order(df: pd.DataFrame) -> list[str]:
    """Group keys, then the answer (speedup_vs_...) and what makes it, then the rest: as show and the report order
    it (the report, in comparison.csv's order, put the speedup 14th of 15, off the page's right edge)."""
    keys = [c for c in df.columns if "." in c or c in ("model", "hardware")]
    ranked = [c for first in COMPARISON_FIRST for c in df.columns if c.startswith(first)]
    # each side's <side>_reach_<axis> is what the axis-end notes read (compare.axis_ends), not shown: the table
    # names the tuned values themselves (comparison.csv keeps it)
    return [c for c in dict.fromkeys([*keys, *ranked, *df.columns]) if "_reach_" not in c]


def comparison(df: pd.DataFrame, width: int, title="best feasible point against the best feasible baseline, per group") -> Table:
    """The comparison table (one row per group): group keys first, then what the comparison found."""
    same = [c for c in df.columns if ("." in c or c in ("model", "hardware")) and len(df) > 1
            and df[c].nunique(dropna=False) == 1]  # a zipped constant, say
    order = [c for c in comparison_order(df) if c not in same]
    cols, hidden = formats.fit(df[order], order, width, index=None)
    notes = ([f"every row: {', '.join(f'{c} = {df[c].iloc[0]}' for c in same)}"] if same else []) + \
        ([f"not shown for width: {', '.join(hidden)} (--format csv shows all)"] if hidden else [])
    return formats.table(df[cols], title=title, index=None, caption="; ".join(notes))


def breakdown(rows: list) -> Group:
    """A one-point breakdown: a table per group of terms; value in a readable unit; meaning or formula beside it."""
    tables, groups = [], {}
    for group, name, value, unit, doc in rows:
        groups.setdefault(group, []).append((name, value, unit, doc))
    for group, items in groups.items():
        t = Table(title=group, box=box.SIMPLE_HEAD, title_justify="left", pad_edge=False, expand=True,
                  title_style="bold")
        t.add_column("term", no_wrap=True)
        t.add_column("value", justify="right", no_wrap=True)
        t.add_column("unit", no_wrap=True)
        t.add_column("meaning, or how it adds up", overflow="fold", ratio=1)
        for name, value, unit, doc in items:
            number, shown = formats.quantity(value, unit)
            t.add_row(Text(printable(name)), Text(number), Text(shown), Text(printable(doc)))
        tables.append(t)
    return Group(*tables)


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


def _fitted(f) -> str:
    """The identifiable unknowns of one fit with their values in readable units ('io_in_bw 130.8 GB/s')."""
    from wsemoe.config.reference import input_unit

    parts = []
    for u, v, free in zip(f.unknowns, f.best, f.identifiable):
        if free:
            number, unit = formats.quantity(float(v), input_unit(u.paths[0]))
            parts.append(f"{u.name} {number}" + (f" {unit}" if unit else ""))
    return "; ".join(parts)


def calibration(fits: list, fit: pd.DataFrame, per_reading: pd.DataFrame) -> Group:
    """χ² per reading; at the default readings the unknowns (fitted or unidentifiable, with the source of each
    bound) and every target's residual and leave-one-out residual."""
    stats = ("chi2", "chi2_bta", "chi2_shipped", "delta_chi2", "fitted", "unidentifiable")
    names = [c for c in per_reading.columns if c not in stats]
    r = Table(title="χ² per reading, each combination fitted on its own (its parts: BTA's published figures, "
                    "Cerebras' shipped micro-batches; Δ from the best)")
    for c in (*names, "χ²", "BTA", "shipped", "Δχ²", "fitted unknowns", "unidentifiable"):
        r.add_column(c)
    shown = {tuple(str(choice.get(n)) for n in names): _fitted(f) for choice, f in fits}
    for _, row in per_reading.sort_values("chi2").iterrows():
        key = tuple(str(row[n]) for n in names)
        r.add_row(*key, f"{row['chi2']:.1f}", f"{row['chi2_bta']:.1f}", f"{row['chi2_shipped']:.1f}",
                  f"{row['delta_chi2']:.1f}", shown.get(key, row["fitted"]), row["unidentifiable"] or "–")
    choice, result = fits[0]
    where = ", ".join(f"{k}={v}" for k, v in choice.items()) or "as configured"
    t = Table(title=f"unknowns at the default readings ({where}; χ² = {result.chi2:.2f}; each row in its own unit)")
    for c in ("unknown", "unit", "nominal", "fitted", "spread (χ² ≤ min + 1)", "range", "effect (σ)"):
        t.add_column(c, no_wrap=c in ("unknown", "unit"))
    bounds = []
    for _, u in fit.iterrows():
        values = u[["nominal", "fitted", "spread_low", "spread_high", "range_low", "range_high"]].astype(float)
        factor, unit = formats.display(f"_unit_{u['unit']}", values) if u.get("unit") else (1.0, "")
        c = lambda x: formats.cell(float(x), factor)  # noqa: E731
        shown = Text(c(u["fitted"])) if u["identifiable"] else Text("not fitted (unidentifiable)")
        if u["identifiable"] and u["at_edge"]:
            shown.append(" (at a bound)", "yellow")
        t.add_row(u["unknown"], unit, c(u["nominal"]), shown, f"{c(u['spread_low'])} – {c(u['spread_high'])}",
                  f"{c(u['range_low'])} – {c(u['range_high'])}", f"{u['effect_sigma']:.2f}")
        bounds.append(Text(f"{u['unknown']}: low {c(u['range_low'])} {unit} ({u['low_source'] or 'no source'}); high "
                           f"{c(u['range_high'])} {unit} ({u['high_source'] or 'no source'})".replace("  (", " ("),
                           style="dim"))
    v = Table(title="targets at the default readings: residual in σ (0 = an inequality holds) and leave-one-out "
                    "(the residual when the other targets alone are fitted)")
    for c in ("target", "published", "nominal", "fitted", "residual", "leave-one-out"):
        v.add_column(c)
    for _, row in result.residuals.iterrows():
        v.add_row(row["target"], row["published"], f"{row['nominal']:.3g}", f"{row['fitted']:.3g}",
                  f"{row['residual_sigma']:+.2f}", f"{row['loo_sigma']:+.2f}")
    return Group(r, t, Text("where each bound comes from:", style="dim"), *bounds, v)


def _split_status(status: str) -> tuple[str, str]:
    """(the state in a few words, the rest): the text before the first " (", and what the parenthesis holds with
    what follows its closing ')' ("damaged: x does not match (changed since ...); move it out" keeps both parts
    and no stray bracket)."""
    short, sep, rest = status.partition(" (")
    if not sep:
        return status, ""
    depth = 1
    for i, ch in enumerate(rest):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth == 0:
            inside, after = rest[:i], rest[i + 1:].lstrip("; ")
            return short, "; ".join(x for x in (inside, after) if x)
    return short, rest


def inventory(rows: list, root) -> Group:
    """`wsemoe ls`: one row per results folder with its size, points, finish time and state (in a word or two;
    what a state means in full, and version notes, below the table)."""
    from wsemoe.store.inventory import version_note

    t = Table(title=f"results in {root}", box=box.SIMPLE_HEAD, title_justify="left", pad_edge=False,
              collapse_padding=True)
    widths = {"finished": 10, "status": 12}  # a date or state wraps at a space; names and numbers never break
    for c in ("sweep", "points", "feasible", "size", "finished", "status"):
        t.add_column(c, justify="right" if c in ("points", "feasible", "size") else "left", overflow="fold",
                     no_wrap=c not in widths, min_width=widths.get(c))
    notes = []
    for r in rows:
        short, detail = _split_status(r.status)
        note = version_note(r)
        if detail or note:
            said = (detail, note)
            notes.append(Text(f"{printable(r.path.name)}: " + "; ".join(printable(x) for x in said if x), style="dim"))
        t.add_row(Text("\n".join(formats.header_lines(printable(r.path.name), 24))),
                  f"{r.points:,}" if r.points is not None else "–", f"{r.feasible:,}" if r.feasible is not None else "–",
                  fmt(r.bytes, "bytes"), r.finished.strftime("%Y-%m-%d %H:%M") if r.finished else "–",
                  Text(printable(short)))
    return Group(t, *notes)


def partial_line(p) -> str:
    """One line about a partial folder: whose, how far, and what to do with it."""
    if p.running:
        state = "a run is writing it"
    elif p.foreign:  # nothing of it is removed while it holds a user's file
        state = (f"stale: `wsemoe sweep --resume` continues it; kept whole, as it holds '{p.foreign}', which wsemoe "
                 "did not write (move that out and `wsemoe ls --clean` removes it)")
    else:
        state = "stale: `wsemoe sweep --resume` continues it, `wsemoe ls --clean` removes it"
    return (f"partial run of '{p.target}': {p.path.name} ({count(p.parts, 'part')}, {count(p.points, 'point')}, "
            f"{fmt(p.bytes, 'bytes')}, {p.modified:%Y-%m-%d %H:%M}); {state}")


def comparison_crossovers(cmp: pd.DataFrame, path=None) -> list[str]:
    """A sweep's comparison.csv's crossover lines (every crossing of each ratio, sweep/crossing.py), and with the
    results folder a note per tuned axis (grid or zip column) whose best value sits at its axis end, as `show`
    and the report print them."""
    keys = [c for c in cmp.columns if "." in c or c in ("model", "hardware")]
    lines = crossing.table_lines(cmp, keys, [c for c in cmp if c.startswith("speedup_vs_")])
    if path is not None:
        from wsemoe.analysis.explain.point import sweep_config
        from wsemoe.sweep import compare

        lines += compare.axis_ends(cmp, sweep_config(path))
    return lines


def folder_view(path, status: str, limit, width: int) -> list:
    """What `wsemoe show` prints for a results folder: summary, Pareto front (with point indices), comparison
    and sensitivity bands; every file read before anything is returned."""
    from wsemoe.analysis.uncertainty import sensitivity as sens
    from wsemoe.analysis.explain.query import select
    from wsemoe.report.terminal import readings
    from wsemoe.store import store

    man = store.load_manifest(path)
    sel = select(path, limit=limit)
    first = next(iter(man["objectives"]))
    per = " in each front" if (man.get("pareto_fronts") or 1) > 1 else ""
    parts = [summary(man, status), selection(sel, width, f"Pareto front ({front_line(man)}; best {first} first{per})")]
    if (Path(path) / "comparison.csv").is_file():
        cmp = store.read_csv(path, "comparison.csv", man)  # the verified bytes
        parts.append(comparison(cmp, width))
        parts += [Text(ln) for ln in comparison_crossovers(cmp, path)]
    parts += readings.folder_lines(path, man)
    bands = sens.load(path, man.get("config_hash"))
    if bands is not None:
        parts.append(sensitivity(bands))
    return parts
