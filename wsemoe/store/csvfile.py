"""CSV files of result tables (pareto.csv, comparison.csv), formatted column by column through arrow.

`DataFrame.to_csv` formats every float in Python: 0.36 s for the 2,725-row front of the mesh
bench space, more than evaluating its 100k points. Here each column becomes strings in one arrow
call and rows are joined the same way. `pandas.read_csv` reads the file back to the frame
`to_csv` gives: floats keep a decimal point or exponent (so they stay floats), NaN is an empty
field, booleans are True/False, and text is quoted only when it holds a comma, quote or newline.
Floats are written in their shortest round-trip form, so every value reads back exactly.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

_NEEDS_QUOTES = r'[,"\r\n]'
ARROW_ROWS = 500  # shorter tables go through pandas


def _text(values: pd.Series | pd.Index) -> pa.Array:
    """One column as CSV fields."""
    try:
        arr = pa.array(values, from_pandas=True)
    except (pa.ArrowException, TypeError, ValueError):
        arr = None
    if arr is None or pa.types.is_nested(arr.type):  # tuples (placements) and other objects: as Python prints them
        arr = pa.array(pd.Series(values).astype(str), type=pa.string())
    if pa.types.is_dictionary(arr.type):
        arr = arr.cast(arr.type.value_type)
    if pa.types.is_floating(arr.type):
        x = np.asarray(values, dtype=float)
        s = arr.cast(pa.string())
        whole = np.flatnonzero(np.isfinite(x) & (x == np.round(x)))  # printed without a point unless as 1e+16
        if len(whole):
            bare = whole[~np.asarray(pc.match_substring(s.take(whole), "e"))]
            fixed = np.asarray(s.to_numpy(zero_copy_only=False), dtype=object)
            fixed[bare] += ".0"
            s = pa.array(fixed, type=pa.string())
        nan = np.isnan(x)
        return pc.if_else(pa.array(nan), "", s) if nan.any() else s
    if pa.types.is_boolean(arr.type):
        return pc.if_else(arr, "True", "False").fill_null("")
    if pa.types.is_integer(arr.type):
        return arr.cast(pa.string()).fill_null("")
    s = arr.cast(pa.string())
    if not any(pc.any(pc.match_substring(s, c)).as_py() for c in ',"\r\n'):
        return s.fill_null("")
    quoted = pc.binary_join_element_wise('"', pc.replace_substring(s, '"', '""'), '"', "")
    return pc.if_else(pc.match_substring_regex(s, _NEEDS_QUOTES), quoted, s).fill_null("")


def _field(name) -> str:
    text = "" if name is None else str(name)
    return f'"{text.replace(chr(34), chr(34) * 2)}"' if any(c in text for c in ',"\r\n') else text


def csv_text(df: pd.DataFrame, index: bool = True) -> str:
    """`df` as `df.to_csv(index=index)` writes it (the same frame after `pandas.read_csv`)."""
    if len(df) < ARROW_ROWS:  # a few arrow calls per column cost more than pandas on a short table
        return df.to_csv(index=index)
    names = ([df.index.name] if index else []) + list(df.columns)
    cols = ([_text(df.index)] if index else []) + [_text(df[c]) for c in df.columns]
    lines = [",".join(_field(n) for n in names)]
    if len(df) and cols:
        rows = pc.binary_join_element_wise(*cols, ",") if len(cols) > 1 else cols[0]
        lines += rows.to_pylist()
    return "\n".join(lines) + "\n"
