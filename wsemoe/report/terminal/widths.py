"""Column widths of a rich table that never break inside a word.

Rich narrows a table that is too wide by shrinking its widest wrapping columns, below the longest word in them
if it must, and then folds cells mid-word (`tokens_per_device=12` / `8`) while another column still has room to
spare. Here every wrapping column keeps at least its longest word (a run of non-blank characters, in a cell or
in the header), the excess taken from the columns with the most room above that, so a cell wraps at its spaces
only. When the longest words of every column cannot fit the width, a word too long for its column is broken
at its joints only (after `=`, `_`, `,`, `/`, `:` or `;`, after `.` or `-` before a letter, before `(`): `tokens_per_device=` / `128`,
never inside a name's part or a number. Only a table whose joint-free parts alone exceed the width is left to
rich's own folding (nothing can make it fit).
"""

from __future__ import annotations

import copy
import re

from rich.cells import cell_len
from rich.table import Table
from rich.text import Text

# where a word may break when it must: after = _ , / : ; anywhere, after . or - before a letter (a name's parts,
# never a number's digits: 1.77 stays whole), before an opening parenthesis
JOINT = re.compile(r"(?<=[=_,/:;])(?=.)|(?<=[.-])(?=[^\W\d])|(?<=.)(?=\()")


def _text(renderable) -> Text | None:
    """A cell or header as Text, or None for a renderable that is not text (left to rich)."""
    if isinstance(renderable, Text):
        return renderable
    if isinstance(renderable, str):
        return Text(renderable)
    return None


def _parts(word: str) -> list[str]:
    """A word cut at its joints: 'tokens_per_device=128' → ['tokens_', 'per_', 'device=', '128']."""
    cuts = [0, *(m.start() for m in JOINT.finditer(word)), len(word)]
    return [word[a:b] for a, b in zip(cuts, cuts[1:]) if b > a]


def _extent(texts: list[str]) -> tuple[int, int, int]:
    """(longest joint-free part, longest word, longest line) of some texts, in terminal cells."""
    words = [w for t in texts for w in t.split()]
    parts = [cell_len(p) for w in words for p in _parts(w)] or [0]
    lines = [cell_len(line) for t in texts for line in t.splitlines()] or [0]
    return max(parts), max([cell_len(w) for w in words] or [0]), max(lines)


def _broken(text: Text, width: int) -> Text:
    """`text` with each word longer than `width` cut into lines at its joints (greedy, styles kept)."""
    cuts = []
    for m in re.finditer(r"\S+", text.plain):
        if cell_len(m.group()) <= width:
            continue
        pos, line = m.start(), 0
        for part in _parts(m.group()):
            if line and line + cell_len(part) > width:
                cuts.append(pos)
                line = 0
            line += cell_len(part)
            pos += len(part)
    return Text("\n").join(text.divide(cuts)) if cuts else text


def _shrink(widths: list[int], lows: list[int], excess: int) -> int:
    """Take `excess` cells from the columns with the most room above `lows`, one at a time; what is left over."""
    while excess > 0:
        i = max(range(len(widths)), key=lambda j: (widths[j] - lows[j], widths[j]))
        if widths[i] <= lows[i]:
            break
        widths[i] -= 1
        excess -= 1
    return excess


def fitted(table: Table, width: int) -> Table:
    """A copy of `table` with a width set on every column so that it fits `width` terminal cells without
    breaking a word (or, when it must, only at a word's joints), or `table` itself when it already fits,
    holds a cell that is not text, or cannot fit even so."""
    if not table.columns:
        return table
    cells, spans = [], []
    for column in table.columns:
        texts = [_text(column.header), *(_text(c) for c in column._cells)]
        if any(t is None for t in texts):
            return table
        cells.append(texts)
        spans.append(_extent([t.plain for t in texts]))
    room = width - table._extra_width - sum(table._get_padding_width(i) for i in range(len(table.columns)))
    parts, words, highs = [], [], []
    for column, (part, word, line) in zip(table.columns, spans):
        if column.width is not None or column.no_wrap:
            fixed = column.width if column.width is not None else line
            parts.append(fixed), words.append(fixed), highs.append(fixed)
            continue
        low = max(word, column.min_width or 0)
        words.append(low)
        parts.append(max(part, min(column.min_width or 0, low)))
        highs.append(max(low, min(line, column.max_width) if column.max_width else line))
    if (sum(highs) <= room and not table.expand) or sum(parts) > room:
        return table  # rich lays it out at its natural widths, or nothing here can make it fit
    widths = list(highs)
    left = _shrink(widths, words, sum(widths) - room)
    _shrink(widths, parts, left)
    out = copy.copy(table)
    out.columns = []
    for column, texts, w, word in zip(table.columns, cells, widths, words):
        c = copy.copy(column)
        c.width, c.min_width, c.max_width, c.ratio = w, None, None, None
        if w < word:  # its longest words do not fit: they break at their joints
            c.header = _broken(texts[0], w)
            c._cells = [_broken(t, w) for t in texts[1:]]
        out.columns.append(c)
    return out
