"""Pareto front: named edge cases and a brute-force reference."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st

from wsemoe.sweep.pareto import nondominated, pareto_front


def brute(points):
    n = len(points)
    keep = np.ones(n, bool)
    for i in range(n):
        for j in range(n):
            if np.all(points[j] <= points[i]) and np.any(points[j] < points[i]):
                keep[i] = False
    return keep


CASES = {
    "single point": (np.array([[1.0, 1.0]]), [True]),
    "strictly dominated": (np.array([[1.0, 1.0], [2.0, 2.0]]), [True, False]),
    "trade-off": (np.array([[1.0, 3.0], [2.0, 2.0], [3.0, 1.0]]), [True, True, True]),
    "duplicates both kept": (np.array([[1.0, 1.0], [1.0, 1.0], [2.0, 0.5]]), [True, True, True]),
    "weakly dominated tie": (np.array([[1.0, 1.0], [1.0, 2.0]]), [True, False]),
    "three objectives": (np.array([[1.0, 2.0, 3.0], [2.0, 1.0, 3.0], [2.0, 2.0, 4.0]]), [True, True, False]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_named_cases(name):
    pts, want = CASES[name]
    assert nondominated(pts).tolist() == want


@settings(max_examples=80, deadline=None)
@given(st.integers(1, 40), st.integers(2, 4), st.integers(0, 10_000))
def test_matches_brute_force(n, k, seed):
    pts = np.random.default_rng(seed).integers(0, 5, size=(n, k)).astype(float)
    assert nondominated(pts).tolist() == brute(pts).tolist()


def test_front_respects_senses_and_feasibility():
    df = pd.DataFrame({"tps": [10, 20, 30, 40], "mem": [1, 2, 3, 1], "feasible": [True, True, True, False]})
    front = pareto_front(df, {"tps": "max", "mem": "min"})
    assert front.index.tolist() == [2, 1, 0]


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000), st.sampled_from([3, 50, 10**6]), st.booleans())
def test_thinning_large_sets_keeps_the_exact_front(seed, spread, shuffle_scale):
    from wsemoe.sweep.pareto import THIN_ABOVE, _sorted_front_2d

    rng = np.random.default_rng(seed)
    n = THIN_ABOVE + 1 + int(rng.integers(0, 5000))
    pts = rng.integers(0, spread, size=(n, 2)).astype(float)
    if shuffle_scale:  # a trade-off curve with noise: many points near the front
        x = rng.random(n)
        pts = np.column_stack([x, 1 / (x + 0.01) + rng.random(n) * 0.1])
    assert nondominated(pts).tolist() == _sorted_front_2d(pts).tolist()
