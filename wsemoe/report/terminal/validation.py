"""`wsemoe validate` for people and tools: a summary line, the claims table and the context table with every
explanation (why a row is `no`, what a context row notes) as a numbered note below its table, so the cells
stay short and the tables fit 80 columns; the same rows as CSV, JSON or Markdown."""

from __future__ import annotations

import pandas as pd
from rich import box
from rich.console import Group
from rich.table import Table
from rich.text import Text

STATUS = {"yes": "green", "no": "red", "property": "blue", "FAILS": "bold red"}
COLUMNS = ("family", "kind", "status", "claim", "published", "model", "error", "tolerance", "reason")


def status(r: dict) -> str:
    """yes, no, property, info, or FAILS (a row failing without a reason, or a property that does not hold)."""
    return r["status"] if r["ok"] or (r["kind"] == "check" and r.get("reason")) else "FAILS"


def summary(rows: list) -> str:
    """'59 rows (params, bta, ...): 30 yes, 8 no (why: notes below), 2 property; 19 context rows (no pass/fail)'."""
    claims = [r for r in rows if r["kind"] != "info"]
    count = {s: sum(status(r) == s for r in claims) for s in ("yes", "no", "property", "FAILS")}
    families = ", ".join(dict.fromkeys(r.get("family", "") for r in rows if r.get("family")))
    text = (f"{len(claims)} claims" + (f" ({families})" if families else "") + f": {count['yes']} yes, {count['no']} no"
            + (" (why: the notes)" if count["no"] else "") + f", {count['property']} property")
    if count["FAILS"]:
        text += f", {count['FAILS']} FAIL without a known reason"
    context = len(rows) - len(claims)
    return text + (f"; {context} context rows (no pass/fail)" if context else "")


def _table(title: str, heads: tuple) -> Table:
    """Text columns wrap at spaces (a word longer than its column folds); the claim takes the most room."""
    t = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    for h in heads:
        narrow = h in ("#", "status")
        t.add_column(h, no_wrap=narrow, justify="right" if h == "#" else "left", overflow="fold",
                     ratio=None if narrow else 3 if h in ("claim", "figure") else 2,
                     min_width=None if narrow else 16 if h in ("claim", "figure") else 12)
    return t


def _with(value: str, extra: str) -> str:
    """'671.03 B (+0.00%)': a value with its error or tolerance in brackets (when there is one)."""
    return f"{value} ({extra})" if extra else value


def tables(rows: list) -> Group:
    """Summary line, claims table, context table, each table's notes below it (rich)."""
    parts: list = [Text(summary(rows), style="bold")]
    claims = [r for r in rows if r["kind"] != "info"]
    t = _table("published results reproduced: published value (tolerance), model (error); no: outside "
               "tolerance, property: true by construction", ("#", "claim", "published (tolerance)", "model (error)",
                                                              "status"))
    notes = []
    for r in claims:
        s = status(r)
        mark = ""
        if r.get("reason"):
            notes.append(r["reason"])
            mark = f" [{len(notes)}]"
        t.add_row(str(len(t.rows) + 1), Text(r["claim"]), Text(_with(r["published"], r["tolerance"])),
                  Text(_with(r["model"], r["error"])), Text(s + mark, style=STATUS.get(s, "")))
    parts += [t, *(_note(i, n) for i, n in enumerate(notes, 1))] if claims else []
    context = [r for r in rows if r["kind"] == "info"]
    if context:
        c = _table("context: model figures beside published statements they do not check (no pass/fail)",
                   ("#", "figure", "published", "model"))
        for k, r in enumerate(context, 1):
            c.add_row(f"c{k}", Text(r["claim"]), Text(r["published"]), Text(r["model"]))
        parts += [Text(""), c, *(_note(key, text) for key, text in context_notes(context))]
    return Group(*parts)


def context_notes(context: list) -> list[tuple[str, str]]:
    """[(key, note)] of the context rows: 'informational' dropped, rows in a run with one note share it."""
    out: list = []
    for k, r in enumerate(context, 1):
        text = r["tolerance"].removeprefix("informational").lstrip(": ").strip()
        if not text:
            continue
        if out and out[-1][1] == text and out[-1][2] == k - 1:
            out[-1] = (out[-1][0], text, k)
        else:
            out.append((k, text, k))
    return [(f"c{a}" if a == b else f"c{a}–c{b}", text) for a, text, b in out]


def _note(key, text: str) -> Text:
    return Text(f"[{key}] {text}", style="dim", overflow="fold")


def frame(rows: list) -> pd.DataFrame:
    """The rows as a table for tools (status FAILS where a row fails without a known reason)."""
    return pd.DataFrame([{**{c: r.get(c) for c in COLUMNS}, "status": status(r)} for r in rows], columns=list(COLUMNS))


def markdown(rows: list) -> str:
    """GitHub Markdown: the summary, the claims table and the context table, explanations as notes below each."""
    out = [f"**{summary(rows)}**", "", "| # | claim | published | model | error | tolerance | status |",
           "|---:|---|---|---|---|---|---|"]
    notes = []
    esc = lambda x: str(x or "").replace("|", "\\|")  # noqa: E731
    for k, r in enumerate((r for r in rows if r["kind"] != "info"), 1):
        mark = ""
        if r.get("reason"):
            notes.append(r["reason"])
            mark = f" [{len(notes)}]"
        out.append(f"| {k} | {esc(r['claim'])} | {esc(r['published'])} | {esc(r['model'])} | {esc(r['error'])} | "
                   f"{esc(r['tolerance'])} | {status(r)}{mark} |")
    out += [""] + [f"[{i}] {esc(n)}  " for i, n in enumerate(notes, 1)]
    context = [r for r in rows if r["kind"] == "info"]
    if context:
        out += ["", "| # | figure (context, no pass/fail) | published | model |", "|---:|---|---|---|"]
        out += [f"| c{k} | {esc(r['claim'])} | {esc(r['published'])} | {esc(r['model'])} |"
                for k, r in enumerate(context, 1)]
        out += [""] + [f"[{key}] {esc(text)}  " for key, text in context_notes(context)]
    return "\n".join(out).rstrip() + "\n"
