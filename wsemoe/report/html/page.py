"""`wsemoe report`: one self-contained HTML page of a results folder (summary, what binds, the Pareto front,
comparisons, every figure inline as SVG, the resolved config, the manifest and the column reference)
that a researcher can attach to an email: no scripts, no external files, no network."""

from __future__ import annotations

import json
import re
from html import escape
from pathlib import Path

import pandas as pd

from wsemoe.version import __version__
from wsemoe.analysis.query import default_columns, select
from wsemoe.report.terminal import formats
from wsemoe.errors import printable
from wsemoe.report.figures import plots
from wsemoe.report.figures.style import figure_bytes
from wsemoe.sweep import store, writer

MAX_ROWS = 500  # rows of the Pareto front written out; the page says when there are more
CSS = """
body{font:15px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;
color:#222}h1{font-size:1.6em}h2{margin-top:2em;border-bottom:1px solid #ddd}table{border-collapse:collapse;
font-size:13px;margin:.5em 0}th,td{padding:3px 8px;border-bottom:1px solid #eee;vertical-align:top}th{text-align:left;
background:#f6f6f6}td.n{text-align:right;font-variant-numeric:tabular-nums}figure{margin:1.5em 0}figure svg{max-width:100%;
height:auto}figcaption{color:#555;font-size:13px}pre{background:#f6f6f6;padding:1em;overflow:auto;font-size:12px}
.note{color:#555;font-size:13px}
"""


def _h(text) -> str:
    """Text for the page: escaped for HTML, control characters shown as escapes (lines kept)."""
    return escape(printable(text, lines=True))


def _svg(fig, n: int) -> str:
    """A figure as inline SVG: prolog dropped, every id prefixed so figures on one page cannot collide."""
    text = figure_bytes(fig, "svg").decode()
    text = text[text.index("<svg"):]
    ids = set(re.findall(r'id="([^"]+)"', text))
    return re.sub(r'(id="|url\(#|href="#)([^")]+)', lambda m: m.group(1) + (f"f{n}-{m.group(2)}" if m.group(2) in ids
                                                                               else m.group(2)), text)


def _summary(man: dict) -> str:
    rows = [("points", f"{man['points']:,}"), ("feasible", f"{man['feasible']:,}"), ("Pareto front", f"{man['pareto']:,}"),
            ("objectives", ", ".join(f"{k} ({v})" for k, v in man.get("objectives", {}).items())),
            ("swept axes", ", ".join(man.get("axes", [])) or "–"), ("config hash", man.get("config_hash", "")),
            ("evaluated in", f"{man.get('eval_seconds', 0):.3g} s, {man.get('chunks', 0)} chunk(s)"),
            ("made by", f"wsemoe {man.get('version', '?')}"), ("sweep file", man.get("source") or "–")]
    if man.get("objectives_not_finite"):
        rows.append(("left off the front", f"{man['objectives_not_finite']:,} feasible points with a non-finite objective"))
    return "<table id=\"summary\">" + "".join(f"<tr><th>{_h(k)}</th><td>{_h(v)}</td></tr>"
                                             for k, v in rows) + "</table>"


def _binds(man: dict) -> str:
    bounds = man.get("bounds", {})
    total = sum(bounds.values()) or 1
    df = pd.DataFrame({"bound": list(bounds), "feasible points": list(bounds.values()),
                       "share": [v / total for v in bounds.values()]})
    return formats.html(df, index=None, table_id="binds") if len(df) else "<p id=\"binds\">no feasible point</p>"


def readings_section(path: Path, man: dict) -> list[str]:
    """The comparison's robustness over the readings: the statement, each reading's state, and per group the
    value as configured, at the default readings, its range, what flips it and what it hinges on."""
    from wsemoe.analysis import readings, robustness

    found = readings.load(path, man.get("config_hash"))
    if found is None:
        return []
    summary = robustness.summarize(found)
    quantity = (found.meta.get("comparison") or {}).get("quantity")
    plan = pd.DataFrame([{"reading": s["name"], "state": s["state"], "configured": s["configured"] or "",
                          "default": s["default"], "options": ", ".join(s["options"]), "detail": s["detail"]}
                         for s in found.meta["readings"]])
    cols = ["group", "configured", "default", "low", "high", "flips", "flipped", "combinations", "hinge", "effect",
            "effects"]
    rows = summary[summary["quantity"] == quantity][cols] if quantity else summary.iloc[:0][cols]
    lines = "".join(f"<p class=\"robustness\">{escape(line)}</p>" for line in robustness.statement(found, summary))
    return ["<h2 id=\"s-readings\">Robustness over the readings</h2>", lines,
            "<p class=\"note\">Readings are the modelling choices no source pins (docs/cost-model.md, Readings); every "
            "run re-evaluates the whole sweep. A reading flips the ratio when, moved alone from the configured sweep, "
            "it puts the ratio on the other side of 1; the reading it hinges on has the largest main effect.</p>",
            formats.html(plan, index=None, table_id="readings"),
            formats.html(rows, index=None, table_id="robustness-table")]


def page(path) -> str:
    """The HTML text of the report of one results folder."""
    path = Path(path)
    man = store.load_manifest(path)
    name = man.get("name", path.name)
    parts = [f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"generator\" "
             f"content=\"wsemoe {__version__}\"><title>{_h(name)}: wsemoe report</title>"
             f"<style>{CSS}</style></head><body>", f"<h1>{_h(name)}</h1>",
             f"<p>{_h(man.get('description') or '')}</p>", "<h2 id=\"s-summary\">Summary</h2>", _summary(man),
             "<h2 id=\"s-binds\">What binds (feasible points)</h2>", _binds(man)]
    shown, _ = default_columns(path, man, "pareto")
    extra = [c for c in ("tokens_per_s", "mfu") if c in man.get("columns", {})]
    front = select(path, columns=list(dict.fromkeys([*shown[:-1], *extra, *shown[-1:]])), limit=MAX_ROWS)
    more = f" (the first {len(front.rows):,} of {front.matched:,})" if front.matched > len(front.rows) else ""
    parts += [f"<h2 id=\"s-pareto\">Pareto front{more}</h2>", formats.html(front.rows, table_id="pareto")]
    if (path / "comparison.csv").is_file():
        parts += ["<h2 id=\"s-comparison\">Comparison (best feasible per group)</h2>",
                  formats.html(pd.read_csv(path / "comparison.csv"), index=None, table_id="comparison")]
    parts += readings_section(path, man)
    parts.append("<h2 id=\"s-figures\">Figures</h2>")
    stems = []
    for stem, fig in plots.figures(path):
        if fig is not None:
            parts.append(f"<figure id=\"fig-{_h(stem)}\">{_svg(fig, len(stems))}"
                         f"<figcaption>{_h(stem)}</figcaption></figure>")
            stems.append(stem)
    if not stems:
        parts.append("<p class=\"note\">the results support no figure</p>")
    parts += ["<h2 id=\"s-config\">Resolved config</h2>",
              f"<pre id=\"config\">{_h((path / 'config.yaml').read_text())}</pre>",
              "<h2 id=\"s-columns\">Columns</h2>",
              formats.html(pd.DataFrame([(c, d.get("unit", ""), d.get("doc", "")) for c, d in man.get("columns", {}).items()],
                                        columns=["column", "unit", "meaning"]), index=None, table_id="columns"),
              "<h2 id=\"s-manifest\">Manifest</h2>",
              f"<pre id=\"manifest\">{_h(json.dumps(man, indent=1, default=str))}</pre>",
              f"<p class=\"note\">made by wsemoe {__version__} from {_h(path)}</p></body></html>"]
    return "\n".join(parts) + "\n"


def write_report(path, out=None, force: bool = False) -> Path:
    """Write the report (default <results>/report.html, a file wsemoe owns there); return its path. The
    target is checked before the page is built (`sweep/writer.py`: never over a file wsemoe did not write)."""
    path = Path(path)
    target = Path(out) if out else path / "report.html"
    writer.check_file(target, "report", force)
    return writer.write_file(target, page(path), "report", force)
