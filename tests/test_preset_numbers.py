"""Every number in a preset file reads back as a number: YAML 1.1 (PyYAML) takes `8e+10`, with no dot, for a
string. The specs coerce it, but anything reading the raw preset (a perturbation scaling a field, a user's merge)
would see text."""

from __future__ import annotations

import pytest

from wsemoe.config import presets


def _strings_that_are_numbers(node, path=()):
    if isinstance(node, dict):
        for k, v in node.items():
            if k != "sources":  # prose
                yield from _strings_that_are_numbers(v, (*path, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _strings_that_are_numbers(v, (*path, i))
    elif isinstance(node, str):
        try:
            float(node)
        except ValueError:
            return
        yield ".".join(map(str, path)), node


@pytest.mark.parametrize("kind", ["hardware", "models"])
def test_every_preset_number_is_a_number(kind):
    bad = {name: list(_strings_that_are_numbers(presets.raw(kind, name))) for name in presets.names(kind)}
    assert not {n: b for n, b in bad.items() if b}
