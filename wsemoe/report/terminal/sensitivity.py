"""The sensitivity of a sweep's quantities to the calibration unknowns as terminal tables: each group's 5–95% band,
then each unknown's Sobol indices or Morris μ*; where the quantity barely varies its indices are estimates of
nothing (ratios of tiny variances, often above 1) and are said to be negligible instead of printed."""

from __future__ import annotations

import pandas as pd
from rich import box
from rich.console import Group
from rich.table import Table
from rich.text import Text

from wsemoe.report.terminal import console, formats

NEGLIGIBLE = 1e-3  # a 5–95% band narrower than 0.1% of the nominal value: below the 4 significant digits tables
# show, so the variance Sobol indices divide by is numerical noise and the indices mean nothing


def negligible(row) -> bool:
    """Whether a band row (nominal, q05, q95) varies by less than NEGLIGIBLE of its nominal value."""
    scale = max(abs(float(row["nominal"])), 1e-300)
    return abs(float(row["q95"]) - float(row["q05"])) <= NEGLIGIBLE * scale


def sensitivity(result, quantity: str | None = None, width: int | None = None) -> Group:
    """The 5–95% band of a quantity per group (labelled by what varies) in the quantity's unit, then each
    unknown's total (first-order) Sobol index or Morris μ* per group: unknowns down, groups across, in as many
    tables as `width` (the terminal's by default) needs."""
    bands, idx, meta = result.bands, result.indices, result.meta
    qs = list(dict.fromkeys(bands["quantity"]))
    quantity = quantity or next((q for q in qs if q.startswith("speedup_vs_")), qs[0])
    sobol = meta["method"] == "sobol"
    rows = bands[bands["quantity"] == quantity]
    factor, unit = formats.display(quantity, pd.concat([rows["nominal"], rows["q05"], rows["q95"]]))
    title = Text(f"sensitivity of {quantity}" + (f" [{unit}]" if unit else "") + f" to the calibration unknowns "
                 f"({meta['method']}, {meta['samples']:,} samples × {meta['points']:,} points)")
    b = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    for c in ("group", "nominal", "5%", "95%"):
        b.add_column(Text(c + (f" [{unit}]" if unit and c != "group" else "")), justify="left" if c == "group" else
                     "right", no_wrap=True)
    for _, r in rows.iterrows():
        b.add_row(str(r["group"]), formats.cell(r["nominal"], factor), formats.cell(r["q05"], factor),
                  formats.cell(r["q95"], factor))
    sel = idx[idx["quantity"] == quantity] if len(idx) else idx
    if not len(sel):
        return Group(b)
    what = "total index ± 95% CI (first-order ± 95% CI)" if sobol else "Morris μ* ± 95% CI"
    quiet = {r["group"] for _, r in rows.iterrows() if negligible(r)}
    notes = [f"variance negligible in {', '.join(map(str, quiet))} (its 5–95% band within {NEGLIGIBLE:.1%} of the "
             "nominal value): indices there are noise, not shown"] if quiet else []
    notes.append(f"± half the 95% confidence interval (SALib's bootstrap over the {meta['samples']:,} samples): an "
                 "interval as wide as its index says the samples cannot tell; --samples takes more")
    notes += list(meta.get("axis_ends") or [])
    cells = {g: [] for g in rows["group"]}
    for u in meta["unknowns"]:
        for g in rows["group"]:
            r = sel[(sel["group"] == g) & (sel["parameter"] == u["name"])]
            cells[g].append("–" if not len(r) else "negligible" if g in quiet else
                            f"{_ci(r, 'ST')} ({_ci(r, 'S1')})" if sobol
                            else f"{r['mu_star'].iloc[0]:.3g}" + (f"±{r['mu_star_conf'].iloc[0]:.2g}"
                                                                  if "mu_star_conf" in r else ""))
    names = [u["name"] for u in meta["unknowns"]]
    heads = {g: "\n".join(line for part in str(g).split(", ") for line in formats.header_lines(part, 16))
             for g in cells}   # 'seq_len=8192,' over 'model=qwen3-30b-a3b': a setting per line
    slices = _slices([max(map(len, [*heads[g].splitlines(), *cells[g]])) for g in cells],
                     max(map(len, ["unknown", *names])), width or console.width())
    groups, tables = list(cells), []
    for a, z in slices:   # as many groups as fit the width per table: a group cut off is a number lost
        more = "" if len(slices) == 1 else f" (group {z} of {len(groups)})" if z == a + 1 else \
            f" (groups {a + 1}–{z} of {len(groups)})"
        # the notes below the table, not as its caption: a caption wraps to the table's width (60 characters on
        # a 140-column terminal), a line to the terminal's
        t = Table(title=f"{what} of each unknown, per group{more}", title_justify="left", box=box.SIMPLE_HEAD,
                  pad_edge=False, collapse_padding=True)
        t.add_column("unknown", no_wrap=True)
        for g in groups[a:z]:  # 'num_experts_' over 'per_tok=8': names break after '_', never inside a word
            t.add_column(Text(heads[g]), justify="right", no_wrap=True)
        for i, name in enumerate(names):
            t.add_row(name, *(cells[g][i] for g in groups[a:z]))
        tables.append(t)
    return Group(b, *tables, *(Text(n) for n in notes))


def _slices(widths: list[int], first: int, total: int) -> list[tuple[int, int]]:
    """(start, stop) runs of columns of these widths that fit `total` cells beside a first column (one cell of
    padding either side of each, at least one column per run)."""
    out, start, used = [], 0, first + 1
    for i, w in enumerate(widths):
        if i > start and used + w + 2 > total:
            out.append((start, i))
            start, used = i, first + 1
        used += w + 2
    return [*out, (start, len(widths))]


def _ci(r, col: str) -> str:
    """'0.56±0.12': an index and half its 95% confidence interval (the index alone when none is stored)."""
    conf = f"{col}_conf"
    return _index(r[col].iloc[0]) + (f"±{abs(float(r[conf].iloc[0])):.2f}" if conf in r and
                                      pd.notna(r[conf].iloc[0]) else "")


def _index(x: float) -> str:
    """A Sobol index to two decimals; an estimate that rounds to zero reads 0.00 whatever its sign."""
    return f"{x:.2f}".replace("-0.00", "0.00")
