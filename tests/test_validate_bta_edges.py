"""bta.edges asks whether the best throughput needs an axis's end: a design tied with the best that lies below
both ends (B·G fixed: B 8 G 8 runs the step of B 1 G 64) clears it, whichever of the ties the tie-break shows."""

import pandas as pd
import pytest

from wsemoe.validate import bta, figures
from wsemoe.validate.common import sweep_config


def _points(rows):
    cfg = figures.at(sweep_config("bta_topk"), figures.BTA)   # B swept up to 128, G up to 64
    df = pd.DataFrame(rows, columns=["workload.B", "workload.G", "tokens_per_s"])
    df["feasible"] = True
    df["model.num_experts_per_tok"] = 2
    df["model.moe_intermediate_size"] = 768
    return cfg, df


def test_a_tie_below_the_ends_clears_the_edge():
    # B 1 G 64 is first in point order (the tie-break's pick) and sits at G's end; B 8 G 8 ties it exactly.
    # BTA side: min over ties of max(B/128, G/64) = max(8/128, 8/64) = 0.125; uniform (G 1) best B 57: 57/128.
    cfg, df = _points([(1, 64, 100.0), (8, 8, 100.0), (2, 2, 50.0), (57, 1, 40.0), (16, 1, 30.0)])
    value, where = bta.edge_reach(cfg, df)
    assert value == pytest.approx(57 / 128)
    assert "uniform B 57 of 128" in where
    row = bta.edges({"bta_topk": (cfg, df)}, "r")
    assert row["value"] == pytest.approx(57 / 128) and row["ok"]


def test_a_best_only_at_the_end_fails():
    # Nothing ties B 1 G 64: the axis caps the best, reach 64/64 = 1.
    cfg, df = _points([(1, 64, 100.0), (8, 8, 99.0), (57, 1, 40.0)])
    value, where = bta.edge_reach(cfg, df)
    assert value == 1.0 and "G 64 of 64" in where
    assert not bta.edges({"bta_topk": (cfg, df)}, "r")["ok"]
