"""rich renderables of the readings: the registry, what a sweep does with each reading, and the robustness of
its quantities (value as configured and at the default readings, range, flips, hinge)."""

from __future__ import annotations

from pathlib import Path

from rich import box
from rich.table import Table
from rich.text import Text

from wsemoe.analysis.uncertainty import robustness
from wsemoe.config.readings import where as applies_where
from wsemoe.report.terminal import formats
from wsemoe.wording import count


def registry(readings: dict, evidence: bool = False) -> Table:
    """`wsemoe readings`: each reading with its options (default marked) and where it applies; with
    `evidence`, every option's evidence and source and why the default."""
    t = Table(title="readings: modelling choices no source pins (wsemoe/presets/readings.yaml)",
              box=box.SIMPLE_HEAD, title_justify="left", pad_edge=False, show_lines=evidence)
    for c in ("reading", "options (default *)", "question" if not evidence else "evidence"):
        t.add_column(c, no_wrap=c == "reading", overflow="fold")
    for r in readings.values():
        opts = ", ".join(f"{o}*" if o == r.default else o for o in r.options)
        if r.pending:
            opts += " (pending)"
        if not evidence:
            rule = "; ".join(applies_where(p, v) for p, v in r.applies_to.items())
            t.add_row(r.name, opts, Text(r.question + (f" (applies where {rule})" if rule else "")))
            continue
        lines = [f"{o.name}: {o.evidence} (source: {o.source})" for o in r.options.values()]
        t.add_row(r.name, opts, Text("\n".join([r.question, *lines, f"default {r.default}: {r.why}"]
                                               + ([f"pending: {r.pending}"] if r.pending else []))))
    return t


def plan(result) -> Table:
    """Each reading's state for the sweep (varied, pinned, fixed, held, not applicable, pending) and options."""
    meta = result.meta
    design = (f"one reading at a time ({meta['screened']}: the full factorial is not run)"
              if robustness.screened(result) else
              f"{count(meta['combinations'], 'combination')} (full factorial of {count(len(result.varied), 'reading')})")
    t = Table(title=f"readings of {meta['name']}: {design}, {count(meta['runs'], 'run')}, "
                    f"{count(meta['evaluated'], 'distinct sweep')} of {count(meta['points'], 'point')}, {meta['seconds']:.1f} s",
              box=box.SIMPLE_HEAD, title_justify="left", pad_edge=False)
    for c in ("reading", "state", "options"):
        t.add_column(c, no_wrap=c != "options", overflow="fold")
    for s in meta["readings"]:
        marks = []
        for o in s["options"]:
            tags = [t for t, hit in (("configured", o == s["configured"] and s["state"] == "varied"),
                                     ("default", o == s["default"])) if hit]
            marks.append(o + (f" ({', '.join(tags)})" if tags else ""))
        detail = ", ".join(marks) if s["state"] == "varied" else f"{s['detail']}"
        t.add_row(s["name"], s["state"], detail)
    return t


def table(result, summary, quantity: str) -> Table:
    """Per group: value as configured, at the default readings, range, what flips it, what it hinges on."""
    d = summary[summary["quantity"] == quantity]
    ratio = robustness.is_ratio(quantity)
    unit = formats.unit_of(quantity.removeprefix("sweep_"))
    unit = f" [{unit}]" if not ratio and unit not in ("", "1", "bool") else ""   # a ratio's cells carry their ×
    t = Table(title=f"{quantity}{unit} over the readings", box=box.SIMPLE_HEAD, title_justify="left",
              pad_edge=False)
    cols = ("group", "configured", "default readings", "range", *(("flips alone",) if ratio else ()),
            "hinges on (effect alone)" if robustness.screened(result) else "hinges on (main effect)")
    for c in cols:
        t.add_column(c, overflow="fold", justify="right" if c in ("configured", "default readings") else "left")
    show = robustness.ratio if ratio else _number
    for _, r in d.iterrows():
        hinge = f"{r['hinge']} ({robustness.ratio(r['effect']) if r['log_effect'] else _number(r['effect'])})" \
            if r["hinge"] else "none"
        cells = [str(r["group"]), show(r["configured"]), show(r["default"]), f"{show(r['low'])} – {show(r['high'])}"]
        if ratio:
            cells.append(r["flips"] or ("none" if robustness.screened(result) else
                                        f"none ({r['flipped']} of {r['combinations']} combinations)"))
        t.add_row(*cells, hinge)
    return t


def _number(x: float) -> str:
    """Four significant digits with thousands separators (74,601 tokens/s), or '–' when undefined."""
    if x != x:
        return "–"
    return f"{x:,.0f}" if abs(x) >= 1e4 else f"{x:.4g}"


def view(result, quantities=None) -> list:
    """The plan, a table per quantity (default: the comparison's ratios, else each objective's best) and the
    robustness statement (lines of text)."""
    summary = robustness.summarize(result)
    qs = list(dict.fromkeys(summary["quantity"]))
    quantities = quantities or [q for q in qs if robustness.is_ratio(q)] or \
        [q for q in qs if q.startswith("sweep_best_")]
    parts = [plan(result), *(table(result, summary, q) for q in quantities)]
    return parts + [Text(line) for line in [*robustness.statement(result, summary), *robustness.crossovers(result)]]


def folder_lines(path, manifest: dict) -> list[Text]:
    """What `show` prints about a results folder's readings: the robustness statement of its comparison, or
    how to compute it (nothing for a sweep without a comparison and without a readings analysis)."""
    from wsemoe.analysis.uncertainty import readings as rd

    found = rd.load(path, manifest.get("config_hash"))
    if found is not None:
        return [Text(line) for line in robustness.statement(found)]
    if (note := rd.changed_note(path)) is not None:
        return [Text(f"robustness over readings: {note}")]
    if (Path(path) / "comparison.csv").is_file():   # the command it names runs (a refused factorial names --only)
        return [Text(f"robustness over readings: {rd.how_to_compute(Path(path) / 'config.yaml', path)}")]
    return []

