"""`wsemoe report`: one self-contained HTML page of a results folder (summary, what binds, the Pareto fronts,
comparisons, every figure with its claim, the resolved config, the manifest and the column reference) that a
researcher can attach to an email: no scripts, no external files, no network, no absolute paths, wide tables
scrolling sideways instead of being cut, and a few MB at most (figures: `html.figures`)."""

from __future__ import annotations

import json
import os
from html import escape
from pathlib import Path

import pandas as pd

from wsemoe.version import __version__
from wsemoe.analysis.explain.query import default_columns, select
from wsemoe.report.terminal import formats
from wsemoe.errors import printable
from wsemoe.report.terminal.tables import comparison_crossovers, comparison_order, front_line
from wsemoe.report.figures import plots
from wsemoe.report.html import figures as html_figures
from wsemoe.store import store
from wsemoe.store import ownership, writer
from wsemoe.wording import count

MAX_ROWS = 500  # rows of the Pareto front written out; the page says when there are more
CSS = """
body{font:15px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;max-width:1400px;margin:2em auto;padding:0 1em;
color:#222}h1{font-size:1.6em}h2{margin-top:2em;border-bottom:1px solid #ddd}.scroll{overflow-x:auto;max-width:100%;
margin:.5em 0}.scroll.tall{max-height:40em;overflow-y:auto}.tall thead th{position:sticky;top:0}table{border-collapse:collapse;font-size:13px}th,td{padding:3px 8px;border-bottom:1px solid #eee;
vertical-align:top}th{text-align:left;background:#f6f6f6;white-space:nowrap}td.n{text-align:right;
font-variant-numeric:tabular-nums;white-space:nowrap}td.t{white-space:nowrap}#columns td.t:last-child,#readings td.t:last-child{
white-space:normal;min-width:30em}pre{background:#f6f6f6;padding:1em;
overflow:auto;font-size:12px;white-space:pre}.note{color:#555;font-size:13px}
""" + html_figures.CSS


def _h(text) -> str:
    """Text for the page: escaped for HTML, control characters shown as escapes (lines kept)."""
    return escape(printable(text, lines=True))


def scroll(table_html: str, tall: bool = False) -> str:
    """A table in a box that scrolls sideways when wider than the page (never cut at the right edge); a `tall`
    one scrolls down within 40 lines too, its header staying in view."""
    return f"<div class=\"scroll{' tall' if tall else ''}\">{table_html}</div>"


def shown_path(target, base: Path) -> str:
    """A path as the page shows it: relative to the page's folder when that stays near it (at most two levels
    up), else only its name; never absolute."""
    target = Path(str(target))
    if not target.is_absolute():
        return str(target)
    try:
        rel = os.path.relpath(target, base.absolute())
    except ValueError:  # another drive
        return target.name
    return rel if rel.split(os.sep).count("..") <= 2 else target.name


def _summary(man: dict, base: Path) -> str:
    rows = [("points", f"{man['points']:,}"), ("feasible", f"{man['feasible']:,}"), ("Pareto front", front_line(man)),
            ("objectives", ", ".join(f"{k} ({v})" for k, v in man.get("objectives", {}).items())),
            ("swept axes", ", ".join(man.get("axes", [])) or "–"), ("config hash", man.get("config_hash", "")),
            ("evaluated in", f"{man.get('eval_seconds', 0):.3g} s, {count(man.get('chunks', 0), 'chunk')}"),
            ("made by", f"wsemoe {man.get('version', '?')}"),
            ("sweep file", shown_path(man["source"], base) if man.get("source") else "–")]
    if man.get("objectives_not_finite"):
        rows.append(("left off the front", f"{man['objectives_not_finite']:,} feasible points with a non-finite objective"))
    return scroll("<table id=\"summary\">" + "".join(f"<tr><th>{_h(k)}</th><td>{_h(v)}</td></tr>"
                                                    for k, v in rows) + "</table>")


def share_pct(count: float, total: float) -> float:
    """A share in percent, to 0.1 (one significant digit below 1%: 0.09, never 8.993e-04 of a fraction)."""
    p = 100.0 * count / (total or 1)
    return round(p, 1) if p >= 1 or p == 0 else float(f"{p:.1g}")


def _binds(man: dict) -> str:
    bounds = man.get("bounds", {})
    total = sum(bounds.values())
    df = pd.DataFrame({"bound": list(bounds), "feasible points": list(bounds.values()),
                       "share (%)": [share_pct(v, total) for v in bounds.values()]})
    return scroll(formats.html(df, index=None, table_id="binds")) if len(df) else "<p id=\"binds\">no feasible point</p>"


def _relative_text(text: str, base: Path, data) -> str:
    """`text` with every absolute path that `data` (parsed YAML or JSON) holds as a string shown relative."""
    found: list = []

    def walk(x):
        if isinstance(x, dict):
            for v in x.values():
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)
        elif isinstance(x, str):
            p = x[3:] if x.startswith("hf:") else x   # a Hugging Face model's source: hf:<its config.json>
            if p.startswith(("/", "\\")) and len(p) > 1:
                found.append(p)
    walk(data)
    for p in sorted(set(found), key=len, reverse=True):
        text = text.replace(p, shown_path(p, base))
    return text


def _config(path: Path, base: Path) -> str:
    from wsemoe.config import yamlio

    text = (path / "config.yaml").read_text()
    try:
        text = _relative_text(text, base, yamlio.load(path / "config.yaml"))
    except Exception:  # an unreadable config is shown as it is
        pass
    return f"<pre id=\"config\">{_h(text)}</pre>"


def _manifest(man: dict, base: Path) -> str:
    shown = {**man, "source": shown_path(man["source"], base)} if man.get("source") else man
    text = json.dumps(shown, indent=1, default=str, ensure_ascii=False)  # µ, ×, – as themselves, not \\u escapes
    return f"<pre id=\"manifest\">{_h(_relative_text(text, base, shown))}</pre>"


def readings_section(path: Path, man: dict) -> list[str]:
    """The comparison's robustness over the readings: the statement, each reading's state, and per group the
    value as configured, at the default readings, its range, what flips it and what it hinges on."""
    from wsemoe.analysis.uncertainty import readings
    from wsemoe.analysis.uncertainty import robustness

    found = readings.load(path, man.get("config_hash"))
    if found is None:   # as show says it: why there is none, and the command that runs
        if (note := readings.changed_note(path)) is not None:
            return ["<h2 id=\"s-readings\">Robustness over the readings</h2>", f"<p class=\"note\">{escape(note)}</p>"]
        if not (Path(path) / "comparison.csv").is_file():
            return []
        return ["<h2 id=\"s-readings\">Robustness over the readings</h2>",
                f"<p class=\"note\">{escape(readings.how_to_compute(Path(path) / 'config.yaml', path))}</p>"]
    summary = robustness.summarize(found)
    quantity = (found.meta.get("comparison") or {}).get("quantity")
    plan = pd.DataFrame([{"reading": s["name"], "state": s["state"], "configured": s["configured"] or "",
                          "default": s["default"], "options": ", ".join(s["options"]), "detail": s["detail"]}
                         for s in found.meta["readings"]])
    cols = ["group", "configured", "default", "low", "high", "flips", "flipped", "combinations", "hinge", "effect",
            "effects"]
    rows = summary[summary["quantity"] == quantity][cols] if quantity else summary.iloc[:0][cols]
    screened = robustness.screened(found)
    if screened:   # one reading at a time: the counts are of runs, never of combinations of the factorial
        rows = rows.rename(columns={"combinations": "runs"})
    lines = "".join(f"<p class=\"robustness\">{escape(line)}</p>" for line in robustness.statement(found, summary)) + \
        "".join(f"<p class=\"crossover\">{escape(line)}</p>" for line in robustness.crossovers(found))
    return ["<h2 id=\"s-readings\">Robustness over the readings</h2>", lines,
            "<p class=\"note\">Readings are the modelling choices no source pins (docs/cost-model.md, Readings); every "
            "run re-evaluates the whole sweep. A reading flips the ratio when, moved alone from the configured sweep, "
            "it puts the ratio on the other side of 1; the reading it hinges on has the largest "
            + ("effect alone (the full factorial was too large to run: one reading at a time, interactions unseen)"
               if screened else "main effect") + ".</p>",
            scroll(formats.html(plan, index=None, table_id="readings")),
            scroll(formats.html(rows, index=None, table_id="robustness-table",
                                units={c: "×" for c in ("configured", "default", "low", "high")}))]


def page(path, base: Path | None = None, on_progress=None, baselines=()) -> str:
    """The HTML text of the report of one results folder (`base`: the folder the page is written to, which
    paths are shown relative to; default the results folder). `on_progress` hears of each figure family;
    `baselines` are the lines saying what each GPU baseline rests on (`write_report`)."""
    path = Path(path)
    base = Path(base) if base is not None else path
    man = store.load_manifest(path)
    name = man.get("name", path.name)
    parts = [f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" "
             f"content=\"width=device-width\"><meta name=\"generator\" content=\"wsemoe {__version__}\">"
             f"<title>{_h(name)}: wsemoe report</title><style>{CSS}</style></head><body>", f"<h1>{_h(name)}</h1>",
             f"<p>{_h(man.get('description') or '')}</p>", "<h2 id=\"s-summary\">Summary</h2>", _summary(man, base),
             "<h2 id=\"s-binds\">What binds (feasible points)</h2>", _binds(man)]
    shown, _ = default_columns(path, man, "pareto")
    extra = [c for c in ("tokens_per_s", "mfu") if c in man.get("columns", {})]
    front = select(path, columns=list(dict.fromkeys([*shown[:-1], *extra, *shown[-1:]])), limit=MAX_ROWS)
    more = f" (the first {len(front.rows):,} of {front.matched:,})" if front.matched > len(front.rows) else ""
    parts += [f"<h2 id=\"s-pareto\">Pareto front{more}</h2>", f"<p class=\"note\">{_h(front_line(man))}; MFU is a "
              "fraction of peak.</p>", scroll(formats.html(front.rows, table_id="pareto"), tall=len(front.rows) > 40)]
    if (path / "comparison.csv").is_file():
        cmp = store.read_csv(path, "comparison.csv", man)
        parts += ["<h2 id=\"s-comparison\">Comparison (best feasible per group)</h2>",
                  scroll(formats.html(cmp[comparison_order(cmp)], index=None, table_id="comparison"), tall=True),
                  *(f"<p class=\"crossover\">{_h(line)}</p>" for line in comparison_crossovers(cmp, path)),
                  *(f"<p class=\"note\">{_h(line)}</p>" for line in baselines)]
    parts += readings_section(path, man)
    parts.append("<h2 id=\"s-figures\">Figures</h2>")
    body, drawn = html_figures.section(plots.figures(path, on_progress=on_progress))
    parts += body if drawn else ["<p class=\"note\">the results support no figure</p>"]
    parts += ["<h2 id=\"s-config\">Resolved config</h2>", _config(path, base),
              "<h2 id=\"s-columns\">Columns</h2>",
              scroll(formats.html(pd.DataFrame([(c, d.get("unit", ""), d.get("doc", ""))
                                                for c, d in man.get("columns", {}).items()],
                                               columns=["column", "unit", "meaning"]), index=None, table_id="columns")),
              "<h2 id=\"s-manifest\">Manifest</h2>", _manifest(man, base),
              f"<p class=\"note\">made by wsemoe {__version__} from the results folder "
              f"{_h(shown_path(path.absolute(), base) if base != path else path.name)}</p></body></html>"]
    return "\n".join(parts) + "\n"


def write_report(path, out=None, force: bool = False, on_progress=None, baselines=()) -> Path:
    """Write the report (default <results>/report.html, a file wsemoe owns there); return its path. The
    target is checked before the page is built (`store/writer.py`: never over a file wsemoe did not write);
    the index of the results root beside it is refreshed when it exists (`wsemoe report --index` makes it).
    `baselines`: a line per GPU baseline saying what it rests on (the command computes them), under the
    comparison."""
    from wsemoe.report.html import index

    path = Path(path)
    target = Path(out) if out else path / "report.html"
    ownership.check_source(target, path)
    made_from = str(path.absolute())   # a report of other results is replaced only with --force
    writer.check_file(target, "report", force, made_from)
    written = writer.write_file(target, page(path, target.parent, on_progress, baselines), "report", force, made_from)
    index.refresh(path.parent)
    return written
