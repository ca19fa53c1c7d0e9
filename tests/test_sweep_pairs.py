"""Shipped sweeps meant to be set side by side differ only in what they say differs: their resolved configs
(presets expanded, helpers expanded into zips) are compared key by key, and every `wsemoe compare` of
shipped results that the README, docs/usage.md or the Makefile shows is one of the declared pairs."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from wsemoe.config.loader import load_config

ROOT = Path(__file__).resolve().parents[1]
SWEEPS = ROOT / "sweeps"
# (first, second): the top-level sections allowed to differ besides the name and the description.
DECLARED = {("bta_topk", "bta_topk_cs3"): {"hardware"}}


def _flat(data, prefix=()) -> dict:
    """{('section', 'field', ...): value} of nested mappings (lists compared whole)."""
    if not isinstance(data, dict):
        return {prefix: data}
    out = {}
    for k, v in data.items():
        out.update(_flat(v, (*prefix, str(k))))
    return out


def differences(first: str, second: str) -> set[tuple]:
    a = _flat(load_config(SWEEPS / f"{first}.yaml").resolved())
    b = _flat(load_config(SWEEPS / f"{second}.yaml").resolved())
    return {k for k in a.keys() | b.keys() if a.get(k, "<absent>") != b.get(k, "<absent>")}


@pytest.mark.parametrize("pair", sorted(DECLARED))
def test_comparison_sweeps_differ_only_where_declared(pair):
    allowed = {"name", "description", *DECLARED[pair]}
    diff = differences(*pair)
    stray = sorted(k for k in diff if k[0] not in allowed)
    assert not stray, f"{pair} differ beyond {sorted(allowed)}: {stray}"
    assert any(k[0] in DECLARED[pair] for k in diff), "the declared difference is not there"


def test_the_check_sees_a_hold_that_differs(tmp_path):
    """The comparison the issue found: a `hold: width` copy of bta_topk differs in the expert width."""
    text = (SWEEPS / "bta_topk.yaml").read_text().replace("hold: active", "hold: width")
    (tmp_path / "w.yaml").write_text(text)
    a = _flat(load_config(SWEEPS / "bta_topk.yaml").resolved())
    b = _flat(load_config(tmp_path / "w.yaml").resolved())
    stray = {k for k in a.keys() | b.keys() if a.get(k) != b.get(k) and k[0] not in ("name", "description")}
    assert any(k[0] == "zip" for k in stray), stray


def test_every_shown_comparison_of_shipped_sweeps_is_declared():
    shown = re.findall(r"wsemoe compare ((?:results/\S+ ?)+)", (ROOT / "README.md").read_text() +
                       (ROOT / "docs" / "usage.md").read_text() +
                       (ROOT / "Makefile").read_text().replace("$(BIN)/", ""))
    assert shown
    for args in shown:
        names = [a.removeprefix("results/") for a in args.split()]
        for other in names[1:]:
            assert (names[0], other) in DECLARED, f"compare {names[0]} {other} is not a declared pair"


def test_the_cs2_cs3_comparison_matches_every_group(tmp_path):
    """With the same sparsity hold, every top-k group of one sweep is a group of the other. Each group's best point
    is bound by its matmuls on both wafers, so the CS-3 runs at its peak FLOP/s ratio to the CS-2: 0.94 under the
    default pe_mac_rate reading (its 21 PB/s feeds 3.5 MACs per PE and cycle), whatever the I/O."""
    from wsemoe.analysis.explain.crossrun import compare
    from wsemoe.config.presets import load_hardware
    from wsemoe.sweep.run import run_sweep

    paths = [run_sweep(SWEEPS / f"{name}.yaml", out_root=tmp_path).path for name in ("bta_topk", "bta_topk_cs3")]
    cmp = compare(paths, "tokens_per_s")
    assert len(cmp.table) == 4 and not any(cmp.dropped.values())
    ratio = cmp.table["bta_topk_cs3/bta_topk:tokens_per_s"]
    peak = load_hardware("cs3").node_peak_flops / load_hardware("cs2").node_peak_flops
    assert 0.9 < peak < 1 and np.allclose(ratio, peak, rtol=2e-3), (ratio, peak)
