"""The record of `wsemoe validate` in the docs: every row as a Markdown table between two markers
(docs/sources.md), or the summary, the headline rows and the known deviations between two others (docs/reproductions.md),
regenerated from the rows (`make docs`, tools/update_docs.py), so a test can compare each page with what validate
prints."""

from __future__ import annotations

from wsemoe.errors import ConfigError
from wsemoe.validate import perturb

START, END = "<!-- validate:start -->", "<!-- validate:end -->"
SUMMARY = ("<!-- validate-summary:start -->", "<!-- validate-summary:end -->")


def _cell(x) -> str:
    return str(x or "").replace("|", "\\|").replace("\n", " ")


def counts(rows: list[dict]) -> str:
    """'51 claims: 25 yes, 9 known deviations (no), 7 property, 10 fitted; 21 context rows.'"""
    claims = [r for r in rows if r["kind"] != "info"]
    count = {s: sum(r["status"] == s for r in claims) for s in ("yes", "no", "property", "fitted", "FAILS")}
    return (f"{len(claims)} claims: {count['yes']} yes, {count['no']} known deviations (no), {count['property']} "
            f"property, {count['fitted']} fitted" + (f", {count['FAILS']} FAIL" if count["FAILS"] else "") +
            f"; {len(rows) - len(claims)} context rows." + perturb.line(dict.fromkeys(r.get("family") for r in rows)))


def summary(rows: list[dict]) -> str:
    """The counts, each headline row (at the publication's reading, at the default readings, the range over the
    readings, whether the published value lies in it) and the known deviations, as Markdown."""
    out = [counts(rows), "", "| headline | published | model at the publication's reading | at the default readings "
           "| range over the readings | published value in the range | status |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        if r["kind"] == "headline":
            out.append(f"| {_cell(r['claim'])} | {_cell(r['published'])} | {_cell(r['model'])} | "
                       f"{_cell(r['default'])} | {_cell(r['range'])} | {'yes' if r['inside'] else 'no'} | "
                       f"{r['status']} |")
    known = [r for r in rows if r["status"] == "no"]
    out += ["", f"Known deviations ({len(known)}; `wsemoe validate` prints each with its reason):", ""]
    out += [f"- `{r['id']}` {_cell(r['claim'])}: {_cell(r['model'])} against {_cell(r['published'])} "
            f"({_cell(r['distance'])})" for r in known]
    return "\n".join(out) + "\n"


def markdown(rows: list[dict]) -> str:
    """The claims (id, claim, published, reading, model, band, status), the known deviations with their distance
    and reason, and the context rows, as Markdown."""
    claims = [r for r in rows if r["kind"] != "info"]
    out = [counts(rows), "", "| id | claim | published | model | band | status |", "|---|---|---|---|---|---|"]
    for r in claims:
        model = r["model"]
        if r["kind"] == "headline":
            model += (f"; at the default readings: {r['default']}; range {r['range']}; the published value "
                      f"{'inside' if r['inside'] else 'outside'}")
        status = r["status"] + (" (headline)" if r["kind"] == "headline" else "")
        claim = r["claim"] + (f" (reading: {r['reading']})" if "default" in (r.get("reading") or "") else "")
        out.append(f"| `{r['id']}` | {_cell(claim)} | {_cell(r['published'])} | {_cell(model)} | "
                   f"{_cell(r['tolerance'])} | {status} |")
    known = [r for r in claims if r["status"] == "no"]
    if known:
        out += ["", "Known deviations (how far outside the band, and why):", "", "| id | distance | reason |",
                "|---|---|---|"]
        out += [f"| `{r['id']}` | {_cell(r['distance'])} | {_cell(r['reason'])} |" for r in known]
    context = [r for r in rows if r["kind"] == "info"]
    if context:
        out += ["", "Context rows (no pass or fail):", "", "| id | figure | published | model | note |",
                "|---|---|---|---|---|"]
        out += [f"| `{r['id']}` | {_cell(r['claim'])} | {_cell(r['published'])} | {_cell(r['model'])} | "
                f"{_cell(r['tolerance'])} |" for r in context]
    readings = sorted({r["reading"] for r in rows if r.get("reading")})
    if readings:
        out += ["", "Readings the rows use: " + "; ".join(f"`{x}`" for x in readings) + "."]
    return "\n".join(out) + "\n"


def replace(page: str, rows: list[dict]) -> str:
    """The page with each block between markers (the full record, the summary) regenerated from the rows."""
    blocks = [(a, b, fn) for (a, b), fn in (((START, END), markdown), (SUMMARY, summary)) if a in page and b in page]
    if not blocks:
        raise ConfigError(f"the page has no {START} … {END} or {SUMMARY[0]} … {SUMMARY[1]} block", loc=("page",))
    for start, end, fn in blocks:
        head, rest = page.split(start, 1)
        _, tail = rest.split(end, 1)
        page = f"{head}{start}\n{fn(rows)}{end}{tail}"
    return page
