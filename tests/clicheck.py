"""What every refused command must look like, for the tests that refuse things: one line on stderr that starts
with `error: `, a non-zero exit, and never an internal error or a traceback."""

from __future__ import annotations


def one_line_error(result, *needles: str) -> None:
    """Assert that `result` (a CliRunner result) is a one-line refusal naming each of `needles`."""
    text = result.output.strip()
    assert result.exit_code != 0, text
    assert len(text.splitlines()) == 1 and text.startswith("error: "), text
    assert "internal error" not in text and "Traceback" not in text, text
    for n in needles:
        assert n in text, (n, text)
