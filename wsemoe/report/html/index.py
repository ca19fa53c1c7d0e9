"""results/index.html: every sweep under a results root with its description, size, front and a link to its
report (`wsemoe report --index` writes it; every later `wsemoe report` of a sweep there refreshes it)."""

from __future__ import annotations

from html import escape
from pathlib import Path
from urllib.parse import quote

from wsemoe.errors import ResultsError, printable
from wsemoe.version import __version__
from wsemoe.report.terminal.tables import fmt, front_line
from wsemoe.store import inventory
from wsemoe.store import ledger
from wsemoe.store import store
from wsemoe.store import writer

INDEX = "index.html"
CSS = """
body{font:15px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;max-width:1400px;margin:2em auto;padding:0 1em;
color:#222}.scroll{overflow-x:auto}table{border-collapse:collapse;font-size:14px}th,td{padding:4px 10px;
border-bottom:1px solid #eee;vertical-align:top;text-align:left}th{background:#f6f6f6}td.n{text-align:right;
white-space:nowrap}.note{color:#555;font-size:13px}
"""


def relative_href(*names: str) -> str:
    """A link to a path under the page's folder: each name percent-encoded whole (no ':' or '/' survives, so no
    folder name can become a scheme such as javascript: or leave the folder) behind './', then HTML-escaped."""
    return escape("./" + "/".join(quote(str(n), safe="") for n in names), quote=True)


def _text(value) -> str:
    """Text from a folder or a manifest, shown as itself: control characters escaped, then HTML-escaped."""
    return escape(printable(value), quote=True)


def _row(r, root: Path) -> str:
    report = r.path / "report.html"
    man = store.read_manifest(r.path) or {}
    if report.is_file() and report.stat().st_mtime >= (r.path / "manifest.json").stat().st_mtime:
        link = f"<a href=\"{relative_href(r.path.name, 'report.html')}\">{_text(r.name)}</a>"
    else:
        link = (f"{_text(r.name)}<br><span class=\"note\">no report{' for these results' if report.is_file() else ''}"
                f": wsemoe report {_text(root.name)}/{_text(r.path.name)}</span>")
    cells = [link, _text(man.get("description") or ""), f"{r.points:,}" if r.points is not None else "–",
             f"{r.feasible:,}" if r.feasible is not None else "–", _text(front_line(man)) if man else "–",
             fmt(r.bytes, "bytes"), r.finished.strftime("%Y-%m-%d %H:%M") if r.finished else "–",
             _text(r.status.split(" (")[0])]
    classes = ["", "", "n", "n", "", "n", "n", ""]
    return "<tr>" + "".join(f"<td class=\"{c}\">{v}</td>" for c, v in zip(classes, cells)) + "</tr>"


def page(root) -> str:
    """The HTML text of the index of a results root (links relative to it)."""
    root = Path(root)
    rows = inventory.results_in(root)
    head = "".join(f"<th>{h}</th>" for h in ("sweep (report)", "description", "points", "feasible", "Pareto front",
                                             "size", "finished", "status"))
    body = "".join(_row(r, root) for r in rows) or "<tr><td colspan=\"8\">no results</td></tr>"
    return (f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"generator\" "
            f"content=\"wsemoe {__version__}\"><title>wsemoe results</title><style>{CSS}</style></head><body>"
            f"<h1>wsemoe results in {_text(root.name or str(root))}</h1><div class=\"scroll\"><table id=\"index\">"
            f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div><p class=\"note\">made by wsemoe "
            f"{__version__}; each report is one page to send (`wsemoe report &lt;folder&gt;`).</p></body></html>\n")


def write_index(root, force: bool = False) -> Path:
    """Write <root>/index.html through the guarded writer (`store/writer.py`, as `wsemoe report`); its path."""
    root = Path(root)
    writer.check_file(root / INDEX, "report", force)
    if not inventory.results_in(root):   # any folder took an index.html of 'no results'
        raise ResultsError("holds no results folder to index (give the folder sweeps write into, results/ by "
                           "default)", loc=(str(root),))
    return writer.write_file(root / INDEX, page(root), "report", force)


def refresh(root) -> Path | None:
    """Rewrite <root>/index.html when `wsemoe report` wrote it there, unchanged since (a report changed what it
    links to); any other file of that name is left alone."""
    target = Path(root) / INDEX
    entry = ledger.read(target.parent).entry(INDEX) if target.parent.is_dir() else None
    if entry is not None and entry.get("writer") == "report" and ledger.matches(target, entry):
        return write_index(root)
    return None
