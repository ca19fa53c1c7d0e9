"""The one rule for numbers and counts in text (`wsemoe.wording`), by hand cases, and its users agreeing with it."""

from __future__ import annotations

import numpy as np
import pytest

from wsemoe.wording import count, noun, number


@pytest.mark.parametrize("value, text", [
    (0, "0"), (1, "1"), (2, "2"), (999, "999"), (1000, "1,000"), (1024, "1,024"), (8192, "8,192"),
    (32768, "32,768"), (131072, "131,072"), (-4096, "-4,096"),
    (0.0, "0"), (1.0, "1"), (8192.0, "8,192"), (32768.0, "32,768"),            # a whole float reads as its int
    (np.int64(32768), "32,768"), (np.float64(8192.0), "8,192"), (np.float32(2.0), "2"),
    (0.375, "0.375"), (1.5, "1.5"), (1234.5, "1,234.5"), (0.1 + 0.2, "0.3"),   # shortest form, 6 digits
    (1e-5, "1e-05"), (2.5e20, "2.5e+20"), (1e18, "1e+18"),
])
def test_number_groups_every_whole_number_from_a_thousand(value, text):
    assert number(value) == text


def test_number_keeps_fewer_digits_on_request_and_leaves_what_is_no_number_as_it_is():
    assert number(1234.5678, digits=3) == "1.23e+03" and number(3.14159, digits=3) == "3.14"
    assert number(float("nan")) == "nan" and number(float("inf")) == "inf"
    assert number(True) == "True" and number(np.bool_(False)) == "False"   # a flag is no count
    assert number("fp8") == "fp8" and number(None) == "None"


@pytest.mark.parametrize("n, text", [
    (0, "0 runs"), (1, "1 run"), (2, "2 runs"), (1000, "1,000 runs"), (32768, "32,768 runs"),
    (1.0, "1 run"), (2.0, "2 runs"), (0.5, "0.5 runs"), (np.int64(1), "1 run"),
])
def test_count_puts_its_noun_in_the_number_it_takes(n, text):
    assert count(n, "run") == text


def test_an_irregular_plural_is_given_and_the_noun_stands_alone():
    assert count(1, "entry", "entries") == "1 entry" and count(3, "entry", "entries") == "3 entries"
    assert noun(1, "front") == "front" and noun(0, "front") == "fronts" and noun(7, "reading") == "readings"

