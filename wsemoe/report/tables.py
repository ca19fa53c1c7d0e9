"""rich renderables: sweep summary, what binds, rows of a query, comparisons, one-point breakdowns, validation."""

from __future__ import annotations

import math

import pandas as pd
from rich import box
from rich.console import Group
from rich.table import Table
from rich.text import Text

from wsemoe.report import formats


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
    t = Table(title=f"sweep {manifest.get('name', '')} {status}".strip(), show_header=False, box=box.SIMPLE,
              title_justify="left", pad_edge=False)
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


def selection(sel, width: int, title: str) -> Table:
    """The rows of a query as a table that fits `width`; the caption says what was left out and how to see it."""
    cols, hidden = formats.fit(sel.rows, sel.priority, width)
    notes = []
    if len(sel.rows) < sel.matched:
        notes.append(f"{len(sel.rows):,} of {sel.matched:,} rows (--limit 0 shows all)")
    if hidden:
        notes.append(f"not shown for width: {', '.join(hidden)} (--columns picks, --format csv shows all)")
    return formats.table(sel.rows[cols], title=title, caption="; ".join(notes))


COMPARISON_FIRST = ("speedup_vs_", "best_G", "best_B", "best_tokens_per_s", "baseline_tokens_per_s", "best_bound",
                    "baseline_bound", "best_mfu", "baseline_mfu", "baseline_B", "baseline_G")


def comparison(df: pd.DataFrame, width: int, title="BTA vs uniform batching (best feasible per group)") -> Table:
    """The comparison table (one row per group): group keys first, then what the comparison found."""
    keys = [c for c in df.columns if "." in c or c in ("model", "hardware")]
    same = [c for c in keys if len(df) > 1 and df[c].nunique(dropna=False) == 1]  # a zipped constant, say
    ranked = [c for first in COMPARISON_FIRST for c in df.columns if c.startswith(first)]
    order = [c for c in dict.fromkeys([*keys, *ranked, *df.columns]) if c not in same]
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
            t.add_row(Text(name), Text(number), Text(shown), Text(str(doc)))
        tables.append(t)
    return Group(*tables)


def validation(rows: list) -> Table:
    """Published figure vs model value with error and tolerance."""
    t = Table(title="published results reproduced")
    for c in ("claim", "published", "model", "error", "tolerance", "ok"):
        t.add_column(c)
    for r in rows:
        t.add_row(r["claim"], r["published"], r["model"], r["error"], r["tolerance"],
                  "info" if r["ok"] is None else "[green]yes[/green]" if r["ok"] else "[red]NO[/red]")
    return t


def presets() -> list[Table]:
    """The hardware and model presets with their key figures."""
    from wsemoe.config import presets as ps
    from wsemoe.cost import params

    hw = Table(title="hardware presets")
    for c in ("name", "topology", "nodes", "peak/node", "memory/node", "link", "weights"):
        hw.add_column(c)
    for name in ps.names("hardware"):
        h = ps.load_hardware(name)
        hw.add_row(name, h.topology, f"{h.rows}×{h.cols}", fmt(h.node_peak_flops, "FLOP/s"),
                   fmt(h.node_memory_bytes, "bytes"), fmt(h.link_bw_bytes_per_s, "B/s"), h.weight_source)
    models = Table(title="model presets")
    for c in ("name", "layers", "hidden", "experts", "top-k", "total params", "active params"):
        models.add_column(c)
    for name in ps.names("models"):
        m = ps.load_model(name)
        models.add_row(name, str(m.num_hidden_layers), str(m.hidden_size), str(m.num_experts),
                       str(m.num_experts_per_tok), f"{params.total_params(m) / 1e9:.2f} B",
                       f"{params.active_params(m) / 1e9:.2f} B")
    return [hw, models]


def inventory(rows: list, root) -> Table:
    """`wsemoe ls`: one row per results folder with its size, points, finish time and state."""
    from wsemoe.sweep.inventory import version_note

    t = Table(title=f"results in {root}", box=box.SIMPLE_HEAD, title_justify="left", pad_edge=False)
    for c in ("sweep", "points", "feasible", "size", "finished", "status"):
        t.add_column(c, justify="right" if c in ("points", "feasible", "size") else "left", overflow="fold")
    for r in rows:
        note = version_note(r)
        t.add_row(Text(r.path.name), f"{r.points:,}" if r.points is not None else "–",
                  f"{r.feasible:,}" if r.feasible is not None else "–", fmt(r.bytes, "bytes"),
                  r.finished.strftime("%Y-%m-%d %H:%M") if r.finished else "–",
                  Text(r.status + (f"; {note}" if note else "")))
    return t


def partial_line(p) -> str:
    """One line about a partial folder: whose, how far, and what to do with it."""
    state = ("a run is writing it" if p.running
             else "stale: `wsemoe sweep --resume` continues it, `wsemoe ls --clean` removes it")
    return (f"partial run of '{p.target}': {p.path.name} ({p.parts} part(s), {p.points:,} points, "
            f"{fmt(p.bytes, 'bytes')}, {p.modified:%Y-%m-%d %H:%M}); {state}")
