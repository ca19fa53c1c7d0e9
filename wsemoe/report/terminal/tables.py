"""rich renderables: sweep summary, what binds, rows of a query, comparisons, one-point breakdowns, validation."""

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
    search = manifest.get("search")
    if search and search.get("enumerated"):
        t.add_row("search", f"not needed: {search['stopped']}")
    elif search:
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


def comparison(df: pd.DataFrame, width: int, title="best feasible point against the best feasible baseline, per group") -> Table:
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
            t.add_row(Text(printable(name)), Text(number), Text(shown), Text(printable(doc)))
        tables.append(t)
    return Group(*tables)


VALIDATION_STYLE = {"yes": "green", "no": "red", "property": "blue", "fitted": "cyan", "FAILS": "bold red"}


def validation_summary(rows: list) -> str:
    """'51 claims: 25 yes, 9 known deviations (no), 7 property, 10 fitted; 21 context rows' (+ FAIL count)."""
    claims = [r for r in rows if r["kind"] != "info"]
    n = {s: sum(r["status"] == s for r in claims) for s in ("yes", "no", "property", "fitted", "FAILS")}
    text = (f"{len(claims)} claims: {n['yes']} yes, {n['no']} known deviations (no), {n['property']} property, "
            f"{n['fitted']} fitted; {len(rows) - len(claims)} context rows")
    return text + (f"; {n['FAILS']} FAIL unexpectedly" if n["FAILS"] else "")


def _claim_cell(r: dict) -> Text:
    out = Text(r["claim"])
    if r.get("reading") and "default" in r["reading"]:
        out.append(f"\nreading: {r['reading']}", style="dim")
    return out


def _model_cell(r: dict) -> Text:
    out = Text(r["model"])
    if r["kind"] == "headline":
        out.append(f"\nat the default readings: {r['default']}\nrange: {r['range']}; the published value "
                   f"{'lies inside' if r['inside'] else 'lies outside'}", style="dim")
    return out


def validation(rows: list) -> Group:
    """Summary; the claims (published, model, band, status); the known deviations with their distance and
    reason; unexpected failures; context rows in a table of their own."""
    t = Table(title="published results reproduced (yes: within the band; no: a known deviation, below; property: "
                    "true by construction; fitted: an input was fitted to it; FAILS: unexpected)")
    for c in ("claim", "published", "model", "band", "status"):
        t.add_column(c)
    claims = [r for r in rows if r["kind"] != "info"]
    for r in claims:
        kind = " (headline)" if r["kind"] == "headline" else ""
        t.add_row(_claim_cell(r), r["published"], _model_cell(r), r["tolerance"],
                  Text(r["status"] + kind, style=VALIDATION_STYLE.get(r["status"], "")))
    parts = [Text(validation_summary(rows), style="bold"), t]
    for status, title in (("no", "known deviations"), ("FAILS", "unexpected failures")):
        sel = [r for r in claims if r["status"] == status]
        if sel:
            d = Table(title=f"{title} ({len(sel)}): how far outside the band, and why")
            for c in ("row", "distance", "reason"):
                d.add_column(c)
            for r in sel:
                d.add_row(f"{r['id']}: {r['claim']}", r["distance"], r["reason"] or "")
            parts.append(d)
    context = [r for r in rows if r["kind"] == "info"]
    if context:
        c = Table(title="context: model figures beside published statements they do not check (no pass/fail)")
        for col in ("figure", "published", "model", "note"):
            c.add_column(col)
        for r in context:
            c.add_row(_claim_cell(r), r["published"], r["model"], r["tolerance"])
        parts.append(c)
    return Group(*parts)


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


def calibration(fits: list, fit: pd.DataFrame, per_reading: pd.DataFrame) -> Group:
    """χ² per reading; at the default readings the unknowns (fitted or unidentifiable, with the source of each
    bound) and every target's residual and leave-one-out residual."""
    stats = ("chi2", "chi2_bta", "chi2_shipped", "delta_chi2", "fitted", "unidentifiable")
    names = [c for c in per_reading.columns if c not in stats]
    r = Table(title="χ² per reading, each combination fitted on its own (its parts: BTA's published figures, "
                    "Cerebras' shipped micro-batches; Δ from the best)")
    for c in (*names, "χ²", "BTA", "shipped", "Δχ²", "fitted unknowns", "unidentifiable"):
        r.add_column(c)
    for _, row in per_reading.sort_values("chi2").iterrows():
        r.add_row(*(str(row[n]) for n in names), f"{row['chi2']:.1f}", f"{row['chi2_bta']:.1f}",
                  f"{row['chi2_shipped']:.1f}", f"{row['delta_chi2']:.1f}", row["fitted"], row["unidentifiable"] or "–")
    choice, result = fits[0]
    where = ", ".join(f"{k}={v}" for k, v in choice.items()) or "as configured"
    t = Table(title=f"unknowns at the default readings ({where}; χ² = {result.chi2:.2f})")
    for c in ("unknown", "nominal", "fitted", "spread (χ² ≤ min + 1)", "range", "effect (σ)"):
        t.add_column(c)
    bounds = []
    for _, u in fit.iterrows():
        shown = Text(f"{u['fitted']:.4g}") if u["identifiable"] else Text("not fitted (unidentifiable)")
        if u["identifiable"] and u["at_edge"]:
            shown.append(" (at a bound)", "yellow")
        t.add_row(u["unknown"], f"{u['nominal']:.4g}", shown, f"{u['spread_low']:.4g} – {u['spread_high']:.4g}",
                  f"{u['range_low']:.4g} – {u['range_high']:.4g}", f"{u['effect_sigma']:.2f}")
        bounds.append(Text(f"{u['unknown']}: low {u['range_low']:.4g} ({u['low_source'] or 'no source'}); high "
                           f"{u['range_high']:.4g} ({u['high_source'] or 'no source'})", style="dim"))
    v = Table(title="targets at the default readings: residual in σ (0 = an inequality holds) and leave-one-out "
                    "(the residual when the other targets alone are fitted)")
    for c in ("target", "published", "nominal", "fitted", "residual", "leave-one-out"):
        v.add_column(c)
    for _, row in result.residuals.iterrows():
        v.add_row(row["target"], row["published"], f"{row['nominal']:.3g}", f"{row['fitted']:.3g}",
                  f"{row['residual_sigma']:+.2f}", f"{row['loo_sigma']:+.2f}")
    return Group(r, t, Text("where each bound comes from:", style="dim"), *bounds, v)


def presets() -> list[Table]:
    """The hardware and model presets with their key figures."""
    from wsemoe.config import presets as ps
    from wsemoe.cost.node import params

    hw = Table(title="hardware presets", box=box.SIMPLE_HEAD, pad_edge=False)
    for c in ("name", "topology", "nodes", "TFLOP/s per node", "memory per node", "link GB/s", "weights"):
        # names are typed and short words read badly broken: never folded; the node layout may wrap
        hw.add_column(c, no_wrap=c in ("name", "topology", "weights"), justify="right" if "/" in c else "left")
    for name in ps.names("hardware"):
        h = ps.load_hardware(name)
        hw.add_row(name, h.topology, _layout(h), f"{h.node_peak_flops / 1e12:,.4g}", fmt(h.node_memory_bytes, "bytes"),
                   f"{h.link_bw_bytes_per_s / 1e9:,.4g}", h.weight_source)
    models = Table(title="model presets", box=box.SIMPLE_HEAD, pad_edge=False)
    pes = [(name, h.pe) for name in ps.names("hardware") if (h := ps.load_hardware(name)).pe is not None]
    for c in ("name", "layers", "hidden", "experts", "top-k", "total params", "active params"):
        models.add_column(c, no_wrap=c == "name")
    for name in ps.names("models"):
        m = ps.load_model(name)
        models.add_row(name, str(m.num_hidden_layers), str(m.hidden_size), str(m.num_experts),
                       str(m.num_experts_per_tok), f"{params.total_params(m) / 1e9:.2f} B",
                       f"{params.active_params(m) / 1e9:.2f} B")
    return [hw, pe_fabric(pes), models]


def _cycles(x) -> str:
    return "?" if x is None else f"{x:g}"


def pe_fabric(pes: list) -> Table:
    """The PE fabric of the presets that carry one: what the PE-level operators (cost/wafer) read."""
    t = Table(title="PE fabric: PEs cols×rows (program rectangle); link bytes / FP16 MACs per cycle (B/MAC); "
                    "cycles per hop / turn / relay stage and per operator (h/t/r/ovh); routable colours (free); host I/O "
                    "channels per west and east edge (I/O)",
              box=box.SIMPLE_HEAD, pad_edge=False)
    for c in ("name", "fabric (program)", "SRAM/PE", "GHz", "B/MAC", "h/t/r/ovh", "colours", "I/O"):
        t.add_column(c, no_wrap=True)
    for name, pe in pes:
        program = "" if pe.kernel_margin_cols is None else \
            f" ({pe.fabric_cols - pe.kernel_margin_cols}×{pe.fabric_rows - pe.kernel_margin_rows})"
        colours = "?" if pe.routable_colors is None else f"{pe.routable_colors} ({pe.routable_colors - (pe.reserved_colors or 0)})"
        t.add_row(name, f"{pe.fabric_cols}×{pe.fabric_rows}{program}", fmt(pe.sram_per_pe_bytes, "bytes"),
                  f"{pe.clock_hz / 1e9:g}", f"{pe.link_bytes_per_cycle:g}/{pe.fmac_width}",
                  "/".join(_cycles(x) for x in (pe.hop_cycles, pe.turn_cycles, pe.relay_cycles, pe.op_overhead_cycles)),
                  colours, _cycles(getattr(pe, "io_channels_per_edge", None)))
    return t


def _layout(h) -> str:
    """Nodes of a hardware preset as people describe them: '2×2 wafers of 8×8 = 256', '32 × 8 = 256', '8×8'."""
    if tuple(h.wafers) != (1, 1):
        return f"{h.wafers[0]}×{h.wafers[1]} wafers of {h.rows}×{h.cols} = {h.nodes}"
    if h.scale_up_size and h.scale_up_size < h.nodes:
        return f"{h.nodes // h.scale_up_size} domains × {h.scale_up_size} = {h.nodes}"
    return f"{h.rows}×{h.cols}"


def inventory(rows: list, root) -> Table:
    """`wsemoe ls`: one row per results folder with its size, points, finish time and state."""
    from wsemoe.sweep.inventory import version_note

    t = Table(title=f"results in {root}", box=box.SIMPLE_HEAD, title_justify="left", pad_edge=False)
    for c in ("sweep", "points", "feasible", "size", "finished", "status"):
        t.add_column(c, justify="right" if c in ("points", "feasible", "size") else "left", overflow="fold")
    for r in rows:
        note = version_note(r)
        t.add_row(Text(printable(r.path.name)), f"{r.points:,}" if r.points is not None else "–",
                  f"{r.feasible:,}" if r.feasible is not None else "–", fmt(r.bytes, "bytes"),
                  r.finished.strftime("%Y-%m-%d %H:%M") if r.finished else "–",
                  Text(printable(r.status + (f"; {note}" if note else ""))))
    return t


def partial_line(p) -> str:
    """One line about a partial folder: whose, how far, and what to do with it."""
    state = ("a run is writing it" if p.running
             else "stale: `wsemoe sweep --resume` continues it, `wsemoe ls --clean` removes it")
    return (f"partial run of '{p.target}': {p.path.name} ({p.parts} part(s), {p.points:,} points, "
            f"{fmt(p.bytes, 'bytes')}, {p.modified:%Y-%m-%d %H:%M}); {state}")


def folder_view(path, status: str, limit, width: int) -> list:
    """What `wsemoe show` prints for a results folder: summary, Pareto front (with point indices), comparison
    and sensitivity bands; every file read before anything is returned."""
    from wsemoe.analysis import sensitivity as sens
    from wsemoe.analysis.query import select
    from wsemoe.report.terminal import readings
    from wsemoe.sweep import store

    man = store.load_manifest(path)
    sel = select(path, limit=limit)
    first = next(iter(man["objectives"]))
    parts = [summary(man, status), selection(sel, width, f"Pareto front ({man['pareto']:,} points, best {first} first)")]
    if (Path(path) / "comparison.csv").is_file():
        parts.append(comparison(pd.read_csv(Path(path) / "comparison.csv"), width))
    parts += readings.folder_lines(path, man)
    bands = sens.load(path, man.get("config_hash"))
    if bands is not None:
        parts.append(sensitivity(bands))
    return parts
