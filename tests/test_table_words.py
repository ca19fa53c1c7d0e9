"""No table cell breaks inside a word: a column keeps its longest word when the table can fit that way (the
others wrap at their spaces), and when it cannot a word breaks only at its joints (`tokens_per_device=` / `128`),
never inside a name's part or a number (`tokens_per_device=12` / `8` was the fault)."""

from __future__ import annotations

import re

import pytest
from rich import box
from rich.table import Table

from wsemoe.report.terminal import console as term
from wsemoe.report.terminal import widths

ROWS = [("model=deepseek-v3, tokens_per_device=128", "0.88×", "0.88×", "0.79× – 3.33×",
         "fixed_latency=launch_only (1.77×, ahead); fixed_latency=none (2.66×, ahead)", "fixed_latency (3.37×)"),
        ("model=qwen3-235b-a22b, tokens_per_device=256", "1.00×", "1.00×", "0.38× – 1.06×",
         "d2d_bandwidth=per_die (0.39×, behind)", "d2d_bandwidth (2.46×)")]


def _readings_like() -> Table:
    """The shape of `wsemoe readings`' robustness table, where the fault was seen."""
    t = Table(title="speedup_vs_nvl72 over the readings", box=box.SIMPLE_HEAD, title_justify="left", pad_edge=False)
    for c in ("group", "configured", "default readings", "range", "flips alone", "hinges on (main effect)"):
        t.add_column(c, overflow="fold", justify="right" if c in ("configured", "default readings") else "left")
    for r in ROWS:
        t.add_row(*r)
    return t


def _printed(table: Table, width: int, monkeypatch) -> str:
    monkeypatch.setenv("COLUMNS", str(width))
    con = term.console()
    with con.capture() as cap:
        con.print(table)
    return cap.get()


def _words(rows) -> set[str]:
    return {w for r in rows for c in r for w in c.split()}


def _parts(rows) -> set[str]:
    return {p for w in _words(rows) for p in widths._parts(w)}


def _unbroken(text: str, pieces: set[str]) -> list[str]:
    """Pieces that do not appear whole in the printed table (cells are joined per line, so a piece broken over
    two lines is missing)."""
    flat = [re.sub(r"\s+", " ", line) for line in text.splitlines()]
    return [p for p in pieces if not any(p in line for line in flat)]


@pytest.mark.parametrize("width", [100, 120, 160])
def test_every_word_stays_whole_when_the_longest_words_fit(width, monkeypatch):
    assert _unbroken(_printed(_readings_like(), width, monkeypatch), _words(ROWS)) == []


@pytest.mark.parametrize("width", [72, 80])
def test_a_word_too_long_breaks_only_at_its_joints(width, monkeypatch):
    text = _printed(_readings_like(), width, monkeypatch)
    assert _unbroken(text, _parts(ROWS)) == []
    assert max(len(line.rstrip()) for line in text.splitlines()) <= width


def test_a_nested_table_is_fitted_too(monkeypatch):
    from rich.console import Group

    text = _printed(Group(_readings_like()), 120, monkeypatch)
    assert _unbroken(text, _words(ROWS)) == []


def test_parts_are_cut_at_joints_only():
    assert widths._parts("tokens_per_device=128") == ["tokens_", "per_", "device=", "128"]
    assert widths._parts("(1.77×,") == ["(1.77×,"]
    assert widths._parts("workload.seq_len") == ["workload.", "seq_", "len"]
    assert widths._parts("ahead);") == ["ahead);"] and widths._parts("qwen3-235b-a22b") == ["qwen3-235b-", "a22b"]
