"""The byte-balanced contiguous split of a pipeline (cost/wafer/stagesplit.py): hand cases, the optimum against
every contiguous cut, and the issue's Qwen3-235B finding (14 CS-3 at the even split of layers, 12 balanced)."""

from __future__ import annotations

import itertools
from types import SimpleNamespace as NS

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from wsemoe.config import presets
from wsemoe.cost.wafer import regions, stagesplit
from wsemoe.cost.wafer.fabric import pe_facts
from wsemoe.specs import WorkloadSpec


def test_embedding_and_head_take_their_own_share():
    # embedding 5, four layers of 1, head 5 over 3 stages: [5], [1, 1, 1, 1], [5], peak 5. The even split of
    # layers (1, 1, 2) puts 5 + 1 = 6 on the first stage and 2 + 5 = 7 on the last.
    items = stagesplit.layer_items(5, [1, 1, 1, 1], 5)
    assert stagesplit.peak(items, 3) == 5.0
    assert stagesplit.split(items, 3) == [(0, 1), (1, 5), (5, 6)]
    assert stagesplit.fewest_stages(items, 5.0) == 3 and stagesplit.fewest_stages(items, 4.9) == 7


def best_by_enumeration(items, stages):
    n, best = len(items), float("inf")
    for k in range(1, min(stages, n) + 1):
        for cuts in itertools.combinations(range(1, n), k - 1):
            edges = (0, *cuts, n)
            best = min(best, max(sum(items[a:b]) for a, b in zip(edges, edges[1:])))
    return best


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 20), min_size=1, max_size=8), st.integers(1, 5))
def test_peak_is_the_least_over_every_contiguous_cut(items, stages):
    got = stagesplit.peak(items, stages)
    assert got == pytest.approx(best_by_enumeration(items, stages))
    bounds = stagesplit.split(items, stages)
    assert len(bounds) <= stages and bounds[0][0] == 0 and bounds[-1][1] == len(items)
    assert max(sum(items[a:b]) for a, b in bounds) == pytest.approx(got)


def test_qwen3_235b_fits_12_cs3_balanced_where_the_even_split_needs_14():
    m = NS(**presets.load_model("qwen3-235b-a22b").model_dump())
    wl = NS(**WorkloadSpec(mode="decode", B=1, seq_len=8192).model_dump())
    pe = pe_facts(NS(pe=presets.load_hardware("cs3").pe))
    nb = regions.region_bytes(m, wl, 1.0)
    cap = float(regions.wafer_pes(pe) * regions.room(pe, m, wl, nb)[0])
    items = stagesplit.layer_items(nb["embedding"], np.full(m.num_hidden_layers, float(nb["moe"])), nb["head"])
    assert float(regions.fewest_wafers(pe, m, wl)) == 14.0
    assert stagesplit.fewest_wafers(items, cap, 256) == 12.0
    assert stagesplit.peak(items, 12) <= cap < stagesplit.peak(items, 11)
