"""Tables of result rows for people and for tools: a terminal table that fits its width (units in the
headers, not in every cell), Markdown, CSV and JSON (raw values, full precision, for piping).

Each numeric column is shown in one display unit chosen from its values (GB, ms, k tokens/s, %), so
cells stay short and comparable down the column.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
from rich import box
from rich.table import Table
from rich.text import Text

from wsemoe.errors import printable
from wsemoe.sweep.columns import describe, documented
from wsemoe.wording import number

FORMATS = ("table", "csv", "json", "markdown")
PREFIXES = ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, ""))
TIME = ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns"))
MIN_TEXT = 24  # a text column wraps to this width before it is dropped
WHOLE_BELOW = 1e7  # a column of whole numbers below this (tokens, sequences, experts) is shown whole, unprefixed:
# '65,536 tokens', never '65536' under 'k tokens' nor '65.54 k' for a count; larger ones (FLOP) take a prefix


def unit_of(col: str) -> str:
    """A column's unit, also for comparison columns (`best_tokens_per_s`, `baseline_G`); `_unit_<u>` is u."""
    if col.startswith("_unit_"):
        return col.removeprefix("_unit_")
    if ":" in col:  # a cross-run column: 'bta_topk:tokens_per_s' in the metric's unit, 'b/a:tokens_per_s' a ratio
        label, _, rest = col.rpartition(":")
        return "×" if "/" in label else unit_of(rest)
    if documented(col):   # a registered comparison quantity (best_reach_B: a share, not a batch)
        return describe(col)[0]
    for prefix in ("sweep_best_", "best_", "baseline_"):   # sweep_best_: sensitivity's best of an objective
        if col.startswith(prefix):
            rest = col.removeprefix(prefix)
            return describe(rest if rest not in ("B", "G") else f"workload.{rest}")[0]
    return describe(col)[0]


def display(col: str, values: pd.Series) -> tuple[float, str]:
    """(divide by, unit shown in the header) for a numeric column, chosen from its typical (median) magnitude,
    or from its largest where a cell would otherwise need more than four digits."""
    unit = unit_of(col)
    x = pd.to_numeric(values, errors="coerce").to_numpy(dtype=float)
    x = np.abs(x[np.isfinite(x) & (x != 0)])
    top = float(np.median(x)) if len(x) else 1.0
    if unit in ("", "1", "bool", "×") or col.startswith("g_"):
        return 1.0, unit if unit not in ("", "1", "bool") else ""
    if unit == "s":
        return next(((f, u) for f, u in TIME if top >= f), TIME[-1])
    if unit in ("bytes", "bytes/s"):
        f, p = next(((f, p) for f, p in PREFIXES if top >= f), PREFIXES[-1])
        return f, f"{p}B" + unit.removeprefix("bytes")
    if len(x) and top < WHOLE_BELOW and np.all(x == np.round(x)):  # counts (8192 tokens) are shown whole
        return 1.0, unit
    if top >= 1e4:  # tokens/s, FLOP, ... with an engineering prefix
        f, p = next((f, p) for f, p in PREFIXES if top >= f)
    elif len(x) and x.max() >= 1e4:  # small typical values, a few large: the least prefix that keeps every cell
        # in 4 digits, never 1.05e+05; past the largest prefix, the largest (the cells then grow wider)
        f, p = next(((f, p) for f, p in reversed(PREFIXES) if x.max() / f < 1e4), PREFIXES[0])
    else:
        return 1.0, unit
    return f, f"{p}{unit}" if unit[:1].isupper() else f"{p} {unit}"  # TFLOP, k tokens/s


def cell(value, factor: float = 1.0) -> str:
    """One cell as text: integers whole, other numbers to 4 significant digits, both by `wording.number`
    ('8,192', '1,883', '0.3748'), NaN as '–'."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (int, np.integer)) and factor == 1.0:
        return number(int(value))  # by the one rule: '8,192', as in every figure
    if isinstance(value, (int, np.integer, float, np.floating)):  # an integer under a prefix is divided too
        x = float(value) / factor
        if factor == 1.0 and x.is_integer() and abs(x) < 1e6:
            return number(int(x))
        return number(x, 4) if abs(x) >= 1e-3 or x == 0 else f"{x:.3e}"   # '1,883', as a whole 1,883 reads
    if pd.isna(value):
        return "–"
    return str(value)


def quantity(value, unit: str) -> tuple[str, str]:
    """(number, unit shown) of one value in a readable unit: ms or µs for seconds, MB or GB for bytes, k or M
    for large rates; text and flags as they are."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        return cell(value), ""
    factor, shown = display(unit and f"_unit_{unit}", pd.Series([value])) if unit else (1.0, "")
    return cell(value, factor), shown


def _columns(df: pd.DataFrame, index: str | None, units: dict | None = None) -> list[tuple[str, str, list[str], bool]]:
    """[(name, unit shown, cells, is text)] of every column, the index first when named; `units` names the unit
    of a column no column description knows (a ratio column of a table built for the page: '×')."""
    out = []
    if index:
        out.append((index, "", [str(i) for i in df.index], False))
    for c in df.columns:
        s = df[c]
        numeric = pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s)
        factor, unit = display(f"_unit_{units[c]}" if c in (units or {}) else c, s) if numeric else (1.0, "")
        cells = [cell(v, factor) for v in s.tolist()]
        out.append((printable(c), unit, cells if numeric else [printable(v) for v in cells], not numeric))
    return out


HEADER_WRAP = 14  # a long column name wraps after '.' or '_' to about this width


def header_lines(name: str, width: int = HEADER_WRAP) -> list[str]:
    """A column name in lines of about `width` characters, broken only after '.' or '_'."""
    parts, cur = [], ""
    for i, ch in enumerate(name):
        cur += ch
        if ch in "._" and i < len(name) - 1:
            parts.append(cur)
            cur = ""
    parts.append(cur)
    lines = [""]
    for p in parts:
        if lines[-1] and len(lines[-1]) + len(p) > width:
            lines.append("")
        lines[-1] += p
    return lines


def _head_width(name: str) -> int:
    return max(len(line) for line in header_lines(name))


def _width(name: str, unit: str, cells: list[str], text: bool) -> int:
    wide = max([_head_width(name), len(unit) + 2 if unit else 0, *(len(c) for c in cells)])
    return min(wide, max(MIN_TEXT, _head_width(name))) if text else wide


def fit(df: pd.DataFrame, priority: list[str], width: int, index: str | None = "point") -> tuple[list[str], list[str]]:
    """(columns that fit in `width` characters, in display order; columns left out), keeping `priority` first."""
    cols = {name: _width(name, unit, cells, text) for name, unit, cells, text in _columns(df, None)}
    budget = width - 2 - (max([len(index), *(len(str(i)) for i in df.index)]) + 2 if index else 0)
    kept, used = set(), 0
    for c in [*priority, *(c for c in df.columns if c not in priority)]:
        if c in cols and used + cols[c] + 2 <= budget:
            kept.add(c)
            used += cols[c] + 2
    return [c for c in df.columns if c in kept], [c for c in df.columns if c not in kept]


def table(df: pd.DataFrame, title: str = "", index: str | None = "point", caption: str = "") -> Table:
    """A compact rich table: header = name and [unit], numbers right-aligned in that unit."""
    t = Table(title=title, box=box.SIMPLE_HEAD, title_justify="left", caption=caption or None,
              caption_justify="left", pad_edge=False, collapse_padding=True)
    cols = _columns(df, index)
    for name, unit, cells, text in cols:
        head = Text("\n".join(header_lines(name)) + (f"\n[{unit}]" if unit else ""))  # Text: '[unit]' is not markup
        t.add_column(head, justify="left" if text else "right", overflow="fold", min_width=_width(name, unit, cells, text),
                     max_width=_width(name, unit, cells, text) if text else None, no_wrap=not text)
    for i in range(len(df)):
        t.add_row(*[Text(c[2][i]) for c in cols])
    return t


def markdown(df: pd.DataFrame, index: str | None = "point") -> str:
    """A GitHub Markdown table with units in the header."""
    cols = _columns(df, index)
    head = [f"{n} [{u}]" if u else n for n, u, _, _ in cols]
    rows = ["| " + " | ".join(head) + " |", "|" + "|".join("---:" if not t else "---" for *_, t in cols) + "|"]
    for i in range(len(df)):
        rows.append("| " + " | ".join(c[2][i].replace("|", "\\|") for c in cols) + " |")
    return "\n".join(rows) + "\n"


def machine(df: pd.DataFrame, fmt: str, index: str | None = "point") -> str:
    """CSV or JSON records of the raw values (full precision, no units), the index as a column."""
    out = df.reset_index() if index else df
    if index and out.columns[0] != index:
        out = out.rename(columns={out.columns[0]: index})
    for c in out.columns:
        if isinstance(out[c].dtype, pd.CategoricalDtype):
            out[c] = out[c].astype(object)
    if fmt == "csv":
        return out.to_csv(index=False)
    columns = [_json_values(out[c]) for c in out.columns]
    records = [dict(zip(out.columns, row)) for row in zip(*columns)]
    return json.dumps(records, indent=1, ensure_ascii=False, allow_nan=False) + "\n"


def _json_values(col: pd.Series) -> list:
    """A column as JSON values: floats whole (json writes repr, which reads back to the same double: pandas'
    to_json kept 15 digits, so `-F json` and the API differed in the last bits), NaN and infinities as null
    (JSON has neither), numpy scalars as Python ones."""
    if pd.api.types.is_float_dtype(col.dtype):
        arr = col.to_numpy(dtype=float)
        values = arr.tolist()
        for i in np.flatnonzero(~np.isfinite(arr)):
            values[i] = None
        return values
    return [_json_value(v) for v in col.astype(object).tolist()]


def _json_value(v):
    if isinstance(v, (float, np.floating)):
        return float(v) if math.isfinite(v) else None
    if isinstance(v, np.generic):   # numpy integers and booleans
        return v.item()
    if isinstance(v, (list, tuple)):
        return [_json_value(x) for x in v]
    return None if v is pd.NA or v is pd.NaT else v


def html(df: pd.DataFrame, index: str | None = "point", table_id: str = "", units: dict | None = None) -> str:
    """An HTML table (units in the header, cells as in the terminal table), escaped; `units` as in `_columns`."""
    from html import escape

    cols = _columns(df, index, units)
    head = "".join(f"<th>{escape(n)}" + (f"<br><small>[{escape(u)}]</small>" if u else "") + "</th>"
                   for n, u, _, _ in cols)
    body = "".join("<tr>" + "".join(f"<td class=\"{'t' if c[3] else 'n'}\">{escape(c[2][i])}</td>" for c in cols)
                   + "</tr>" for i in range(len(df)))
    ident = f' id="{escape(table_id)}"' if table_id else ""
    return f"<table{ident}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def render(df: pd.DataFrame, fmt: str, title: str, index: str | None, priority, width: int):
    """Rows for the terminal: CSV, JSON or Markdown text, or a rich table fitted to `width` columns."""
    if fmt in ("csv", "json"):
        return machine(df, fmt, index)
    if fmt == "markdown":
        return (f"**{title}**\n\n" if title else "") + markdown(df, index)
    cols, hidden = fit(df, priority or list(df.columns), width, index)
    note = f"not shown for width: {', '.join(hidden)} (--format csv shows every column)" if hidden else ""
    return table(df[cols], title=title, index=index, caption=note)
