"""How a number and a count read in every text people see (terminal tables and lines, figure titles, ticks and
captions, the report, messages): one rule each, so the same kind of quantity reads the same wherever it stands.

- `number(v)`: a whole number with its thousands separated from 1,000 on ('1,024', '8,192', '32,768'), the same
  for an int and a whole float; any other number in its shortest form to 6 significant digits ('0.375',
  '1,234.5'). From 1,000 on and not from 10,000 on: one swept axis (contexts 8,192, 32,768 and 131,072) or one
  column then reads in one style, where the 10,000 rule showed '8192' beside '32,768'.
- `span(low, high)`: a range of two values as printed, 'low–high', or the one value when both print alike
  ('1.00×', never '1.00×–1.00×' or '1–1', which read as a spread that is not there).
- `count(n, word)`: '0 runs', '1 run', '2 runs', '1,024 rows': a count with its noun in the number it takes,
  never 'run(s)'; `noun(n, word)` is the noun alone, for a sentence that puts the count elsewhere.

Not numbers in this sense, and left as written: identifiers a user types back (point indices, `--set` values,
reading labels `name=value`) and what tools read (CSV, JSON, parquet).

The lowest layer: every package, `errors` included, may phrase a count.
"""

from __future__ import annotations

import numbers

WHOLE_BELOW = 1e15  # a whole float up to here reads as an integer; beyond, '1e+18' says more than 19 digits do


def number(v, digits: int = 6) -> str:
    """`v` as text by the one rule: whole numbers with thousands separators, others to `digits` significant
    digits (thousands separated too); flags, text and anything else as `str(v)`."""
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        return str(v)  # numpy's bool_ is no numbers.Real either: 'True', as it always read
    if isinstance(v, numbers.Integral):
        return f"{int(v):,}"
    x = float(v)
    if x.is_integer() and abs(x) < WHOLE_BELOW:
        return f"{int(x):,}"  # 8192.0 reads as 8,192, never '8192.0' or '8192'
    return format(x, f",.{digits}g")


def noun(n, word: str, words: str | None = None) -> str:
    """`word` in the number `n` takes: singular for exactly one, else `words` (default: `word` + 's')."""
    return word if n == 1 else words or f"{word}s"


def count(n, word: str, words: str | None = None) -> str:
    """'1 run', '3 runs', '1,024 rows': `n` by `number` and its noun (`words` for a plural not made with 's')."""
    return f"{number(n)} {noun(n, word, words)}"


def span(low: str, high: str) -> str:
    """'low–high' for two values as printed, or the one value when they print alike: a range of one value is none."""
    return low if low == high else f"{low}–{high}"
