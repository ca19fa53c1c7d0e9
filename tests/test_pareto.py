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


# ---------------------------------------------------------------- fronts per group, ties collapsed

def test_a_front_per_group_with_ties_collapsed():
    """Two systems. a's front: points 2 (most throughput) and 0 (least memory); 1 is dominated by 0. In b,
    3 and 4 tie exactly (least memory) and become one row, point 3, with ties = 2; 5 is b's most throughput
    and on b's front, though a's point 0 dominates it (so a front mixing the systems would drop it)."""
    df = pd.DataFrame({"hw": ["a", "a", "a", "b", "b", "b"], "tps": [10.0, 8.0, 12.0, 5.0, 5.0, 7.0],
                       "mem": [2.0, 3.0, 4.0, 0.5, 0.5, 3.0], "feasible": [True] * 6})
    front = pareto_front(df, {"tps": "max", "mem": "min"}, ["hw"])
    assert front.index.tolist() == [2, 0, 5, 3]  # groups in point order, best throughput first in each
    assert front["ties"].tolist() == [1, 1, 1, 2]
    mixed = pareto_front(df, {"tps": "max", "mem": "min"})  # one front: b's points compete with a's
    assert mixed.index.tolist() == [2, 0, 3] and mixed["ties"].tolist() == [1, 1, 2]
    df.loc[4, "feasible"] = False  # an infeasible twin is no tie
    assert pareto_front(df, {"tps": "max", "mem": "min"}, ["hw"])["ties"].tolist() == [1, 1, 1, 1]


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 60), st.integers(1, 3), st.integers(0, 10_000))
def test_grouped_front_matches_brute_force_per_group(n, groups, seed):
    """Each row stands for the brute-force front points of its group with exactly its objectives; every
    such point is counted once, by the row of the lowest point."""
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"g": rng.integers(0, groups, n), "f0": rng.integers(0, 4, n).astype(float),
                       "f1": rng.integers(0, 4, n).astype(float), "feasible": rng.random(n) < 0.8})
    front = pareto_front(df, {"f0": "min", "f1": "max"}, ["g"])
    want = {}
    for g, sub in df[df["feasible"]].groupby("g"):
        pts = np.column_stack([sub["f0"], -sub["f1"]])
        for p in sub.index[brute(pts)]:
            want.setdefault((g, df.at[p, "f0"], df.at[p, "f1"]), []).append(p)
    got = {(r.g, r.f0, r.f1): (p, r.ties) for p, r in front.iterrows()}
    assert got == {k: (min(v), len(v)) for k, v in want.items()}


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([0.0, 1.0, 2.5, float("nan")]), st.sampled_from(["a", "b", None]),
                          st.integers(0, 3)), min_size=1, max_size=40))
def test_group_ids_are_equal_exactly_where_rows_are(rows):
    """One id per distinct row of the group columns (NaN equal to NaN, a missing label a value of its own)."""
    from wsemoe.sweep.pareto import group_ids

    df = pd.DataFrame(rows, columns=["x", "label", "k"]).astype({"label": "category"})
    ids = group_ids(df, ["x", "label", "k"])
    keys = [tuple("nan" if isinstance(v, float) and np.isnan(v) else v for v in r) for r in rows]
    for i in range(len(rows)):
        for j in range(len(rows)):
            assert (ids[i] == ids[j]) == (keys[i] == keys[j])
