"""`wsemoe validate` for people and tools: a summary line with the count of every status, the claims table (each
row's claim, published value and band, model value, status; headline rows with the model at the default readings
and its range over the readings), the known deviations and any unexpected failure in tables of their own (how far
outside the band, and why), and the context rows, their notes below them; the same rows as a frame for CSV
and JSON. (The summary line and the Markdown are the docs record's, `validate/record.py`: the command passes
them in, since report/ and validate/ do not import each other.)"""

from __future__ import annotations

import pandas as pd
from rich import box
from rich.console import Group
from rich.table import Table
from rich.text import Text


STYLE = {"yes": "green", "no": "red", "property": "blue", "fitted": "cyan", "FAILS": "bold red"}
COLUMNS = ("id", "family", "kind", "status", "claim", "published", "model", "tolerance", "distance", "reason",
           "reading", "default", "range", "inside", "source")


def _table(title: str, heads: tuple, wide: tuple = ("claim", "figure", "row")) -> Table:
    """Text columns wrap at spaces (a word longer than its column folds); the claim takes the most room."""
    t = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    for h in heads:
        narrow = h in ("#", "status")
        t.add_column(h, no_wrap=narrow, justify="right" if h == "#" else "left", overflow="fold",
                     ratio=None if narrow else 3 if h in wide else 2, min_width=None if narrow else 10)
    return t


def _claim(r: dict) -> Text:
    out = Text(r["claim"])
    if r.get("reading") and "default" in r["reading"]:
        out.append(f"\nreading: {r['reading']}", style="dim")
    return out


def _model(r: dict) -> Text:
    out = Text(r["model"])
    if r["kind"] == "headline":
        out.append(f"\nat the default readings: {r['default']}\nrange: {r['range']}; the published value "
                   f"{'lies inside' if r['inside'] else 'lies outside'}", style="dim")
    return out


def _published(r: dict) -> Text:
    return Text(r["published"]).append(f"\nband: {r['tolerance']}", style="dim") if r["tolerance"] else Text(r["published"])


def tables(rows: list, head: str) -> Group:
    """The summary line `head`; the claims; the known deviations and unexpected failures with their distance and reason (by the
    claim's number); context rows with their notes below them."""
    claims = [r for r in rows if r["kind"] != "info"]
    t = _table("published results reproduced (yes: within the band; no: a known deviation, below; property: true "
               "by construction; fitted: an input was fitted to it; FAILS: unexpected)",
               ("#", "claim", "published", "model", "status"))
    number = {}
    for k, r in enumerate(claims, 1):
        number[id(r)] = k
        kind = "\n(headline)" if r["kind"] == "headline" else ""
        t.add_row(str(k), _claim(r), _published(r), _model(r), Text(r["status"] + kind, style=STYLE.get(r["status"], "")))
    parts: list = [Text(head, style="bold")] + ([t] if claims else [])
    for status, title in (("no", "known deviations"), ("FAILS", "unexpected failures")):
        sel = [r for r in claims if r["status"] == status]
        if sel:
            d = _table(f"{title} ({len(sel)}): how far outside the band, and why", ("#", "row", "distance", "reason"),
                       wide=("reason",))
            for r in sel:
                d.add_row(str(number[id(r)]), Text(r["id"]), Text(r["distance"]), Text(r["reason"] or ""))
            parts += [Text(""), d]
    context = [r for r in rows if r["kind"] == "info"]
    if context:
        c = _table("context: model figures beside published statements they do not check (no pass/fail)",
                   ("#", "figure", "published", "model"))
        for k, r in enumerate(context, 1):
            c.add_row(f"c{k}", _claim(r), Text(r["published"]), Text(r["model"]))
        parts += [Text(""), c, *(Text(f"[{key}] {text}", style="dim", overflow="fold")
                                 for key, text in context_notes(context))]
    return Group(*parts)


def context_notes(context: list) -> list[tuple[str, str]]:
    """[(key, note)] of the context rows, rows in a run with one note sharing it ('c3–c5')."""
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


NUMBERS = ("value", "band_lo", "band_hi", "gap")   # the shown fields as numbers, for scripts


def frame(rows: list) -> pd.DataFrame:
    """The rows as a table for tools (CSV, JSON): every field a row has that a reader can use, and beside the
    shown text the numbers it is written from: the checked `value`, the band's ends (`band_lo`, `band_hi`; empty
    where open) and the signed `gap` outside it as validate pins it (0 inside; positive above; the log of the
    ratio for a factor band). All four are empty for a row without a band."""
    def numbers(r) -> dict:
        band = r.get("band")
        if band is None or r.get("value") is None:
            return dict.fromkeys(NUMBERS)
        return {"value": float(r["value"]), "band_lo": band.lo, "band_hi": band.hi, "gap": r.get("gap")}

    return pd.DataFrame([{**{c: r.get(c) for c in COLUMNS}, **numbers(r)} for r in rows],
                        columns=[*COLUMNS, *NUMBERS])
