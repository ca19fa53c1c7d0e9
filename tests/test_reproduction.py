"""Published figures reproduced within stated tolerances (the rows `wsemoe validate` prints).

Every row can fail: the known gaps (`no` rows, each with its reason) are pinned here, so a row that
starts or stops reproducing fails this test until the record is updated.
"""

from __future__ import annotations

import numpy as np
import pytest

from wsemoe import validate
from wsemoe.validate.common import unexplained

KNOWN_GAPS = {
    "layer-input checkpoints of every shipped micro-batch fit the wafer's SRAM (if held there)",
    "BTA speedup in tokens/s at E 128, top-k 1",
    "total MoE communication falls under ER (top-k 8, B=256, every TP, both models)",
    "per-device MoE throughput, WSC (ER, one wafer) vs NVL72",
}


@pytest.fixture(scope="module")
def rows():
    return validate.run_all()


def test_no_unexplained_failure(rows):
    assert not unexplained(rows)


def test_known_gaps_are_exactly_the_no_rows(rows):
    no = {r["claim"] for r in rows if r["status"] == "no"}
    assert {c for c in no if not c.startswith("non-invasive migration hides")} == KNOWN_GAPS
    assert any(c.startswith("non-invasive migration hides") for c in no)
    assert all(r["reason"] for r in rows if r["status"] == "no")


@pytest.mark.parametrize("name", ["bta_experts", "bta_topk"])
def test_shipped_sparsity_sweeps_in_tokens_per_s(name):
    """The paper's trends in its units: the baseline falls monotonically, BTA stays within 1.2× (max/min)."""
    t = validate.bta_comparison(name)
    uniform, bta = t["baseline_tokens_per_s"].to_numpy(), t["best_tokens_per_s"].to_numpy()
    assert np.all(np.diff(uniform) < 0)
    assert bta.max() / bta.min() <= 1.2
    assert (t["best_G"] > 1).all()  # BTA wins by tiling, not by a different B alone


def test_validate_command(runner):
    from wsemoe.cli import app

    r = runner.invoke(app, ["validate"])
    assert r.exit_code == 0, r.output
    assert "published" in r.output and "why:" in r.output
