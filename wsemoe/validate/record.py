"""The record of `wsemoe validate` in docs/sources.md: every row as a Markdown table between two markers,
regenerated from the rows (`wsemoe validate --docs docs/sources.md`), so a test can compare the page with what
validate prints."""

from __future__ import annotations

from wsemoe.errors import ConfigError

START, END = "<!-- validate:start -->", "<!-- validate:end -->"


def _cell(x) -> str:
    return str(x or "").replace("|", "\\|").replace("\n", " ")


def markdown(rows: list[dict]) -> str:
    """The claims (id, claim, published, reading, model, band, status), the known deviations with their distance
    and reason, and the context rows, as Markdown."""
    claims = [r for r in rows if r["kind"] != "info"]
    count = {s: sum(r["status"] == s for r in claims) for s in ("yes", "no", "property", "fitted", "FAILS")}
    out = [f"{len(claims)} claims: {count['yes']} yes, {count['no']} known deviations (no), {count['property']} "
           f"property, {count['fitted']} fitted" + (f", {count['FAILS']} FAIL" if count["FAILS"] else "") +
           f"; {len(rows) - len(claims)} context rows.", "",
           "| id | claim | published | model | band | status |", "|---|---|---|---|---|---|"]
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
    """The page with the block between the markers regenerated from the rows."""
    if START not in page or END not in page:
        raise ConfigError(f"the page has no {START} … {END} block", loc=("--docs",))
    head, rest = page.split(START, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{START}\n{markdown(rows)}{END}{tail}"
