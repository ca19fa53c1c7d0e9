"""Tests of the XY-routing mesh model against a brute-force path walker and closed forms."""

import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wsemoe.mesh import (
    hops_matrix,
    hot_links,
    hot_overlap,
    idle_share,
    max_hops,
    mean_hops,
    phase_time,
    phase_time_from_peaks,
    switch_phase_time,
    xy_link_loads,
)


def walk_loads(rows, cols, traffic):
    """Reference: step every (s, d) packet along its XY path and add its bytes to each link."""
    east = np.zeros((rows, max(cols - 1, 0)))
    west = np.zeros_like(east)
    south = np.zeros((max(rows - 1, 0), cols))
    north = np.zeros_like(south)
    n = rows * cols
    for s in range(n):
        for d in range(n):
            v = traffic[s, d]
            if v == 0 or s == d:
                continue
            r, c = divmod(s, cols)
            rd, cd = divmod(d, cols)
            while c < cd:
                east[r, c] += v
                c += 1
            while c > cd:
                west[r, c - 1] += v
                c -= 1
            while r < rd:
                south[r, c] += v
                r += 1
            while r > rd:
                north[r - 1, c] += v
                r -= 1
    return east, west, south, north


def assert_matches_walker(rows, cols, traffic):
    loads = xy_link_loads(rows, cols, traffic)
    for got, want in zip((loads.east, loads.west, loads.south, loads.north), walk_loads(rows, cols, traffic)):
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-9)
    return loads


@pytest.mark.parametrize("rows,cols", [(1, 1), (1, 5), (5, 1), (2, 3), (3, 4), (4, 4), (5, 7)])
def test_loads_match_walker(rows, cols):
    rng = np.random.default_rng(rows * 10 + cols)
    n = rows * cols
    traffic = rng.random((n, n)) * (rng.random((n, n)) < 0.6)
    assert_matches_walker(rows, cols, traffic)


@st.composite
def mesh_and_traffic(draw):
    rows = draw(st.integers(1, 6))
    cols = draw(st.integers(1, 6))
    n = rows * cols
    vals = draw(st.lists(st.floats(0, 1e6, allow_nan=False), min_size=n * n, max_size=n * n))
    return rows, cols, np.array(vals).reshape(n, n)


@settings(max_examples=60, deadline=None)
@given(mesh_and_traffic())
def test_loads_match_walker_hypothesis(case):
    rows, cols, traffic = case
    loads = assert_matches_walker(rows, cols, traffic)
    # Conservation: every byte loads one link per hop it travels.
    np.testing.assert_allclose(loads.total(), (traffic * hops_matrix(rows, cols)).sum(), rtol=1e-9, atol=1e-6)


def test_inject_eject_exclude_diagonal():
    traffic = np.array([[5.0, 1.0], [2.0, 7.0]])
    loads = xy_link_loads(1, 2, traffic)
    np.testing.assert_allclose(loads.inject, [1.0, 2.0])
    np.testing.assert_allclose(loads.eject, [2.0, 1.0])


@pytest.mark.parametrize("k", [2, 4, 6, 8])
def test_uniform_all_to_all_peak(k):
    # East link between columns c and c+1 of row r carries (X phase, source row r)
    # the (c+1) sources left of it to the (k-c-1)*k destinations right of it:
    # (c+1)(k-c-1)k, maximal at c+1 = k/2 -> k^3/4. The Y phase gives the same
    # count by symmetry (k source columns funnel into the destination column).
    n = k * k
    traffic = np.ones((n, n)) - np.eye(n)
    loads = xy_link_loads(k, k, traffic)
    assert loads.max_link() == pytest.approx(k**3 / 4)
    assert loads.east.max() == pytest.approx(k**3 / 4)
    assert loads.south.max() == pytest.approx(k**3 / 4)


def test_mirror_symmetry():
    rows, cols = 3, 5
    rng = np.random.default_rng(1)
    traffic = rng.random((rows * cols, rows * cols))
    # Mirror node (r, c) -> (r, cols-1-c) on both the sending and receiving side.
    mirror = (np.arange(rows)[:, None] * cols + (cols - 1 - np.arange(cols))[None, :]).ravel()
    flipped = traffic[np.ix_(mirror, mirror)]
    a, b = xy_link_loads(rows, cols, traffic), xy_link_loads(rows, cols, flipped)
    np.testing.assert_allclose(b.west, a.east[:, ::-1])
    np.testing.assert_allclose(b.east, a.west[:, ::-1])
    np.testing.assert_allclose(b.south, a.south[:, ::-1])


def test_batched_equals_slices():
    rng = np.random.default_rng(2)
    batch = rng.random((2, 3, 12, 12))
    loads = xy_link_loads(3, 4, batch)
    assert loads.east.shape == (2, 3, 3, 3) and loads.south.shape == (2, 3, 2, 4)
    for i in range(2):
        for j in range(3):
            one = xy_link_loads(3, 4, batch[i, j])
            np.testing.assert_allclose(loads.all_links()[i, j], one.all_links())
            assert loads.max_link()[i, j] == pytest.approx(one.max_link())


def test_zero_cases():
    one = xy_link_loads(1, 1, np.array([[3.0]]))
    assert one.max_link() == 0 and one.total() == 0 and one.all_links().size == 0
    pt = phase_time(one, 1.0, 1.0, 1e-9, max_hops(1, 1, [[3.0]]))
    assert pt.time_s == 0 and pt.bound == "none"
    diag = xy_link_loads(3, 3, np.diag(np.arange(1.0, 10.0)))
    assert diag.max_link() == 0 and diag.max_inject() == 0 and diag.max_eject() == 0
    assert idle_share(diag) == 1.0


def test_phase_time_hand_case():
    traffic = np.array([[0.0, 100.0], [0.0, 0.0]])
    loads = xy_link_loads(1, 2, traffic)
    pt = phase_time(loads, link_bw=10.0, port_bw=np.inf, hop_latency=0.5, max_hops=max_hops(1, 2, traffic))
    assert (pt.link_s, pt.inject_s, pt.latency_s, pt.time_s, pt.bound) == (10.0, 0.0, 0.5, 10.5, "link")
    pt = phase_time(loads, link_bw=10.0, port_bw=5.0, hop_latency=0.5, max_hops=1)
    assert (pt.inject_s, pt.eject_s, pt.time_s, pt.bound) == (20.0, 20.0, 20.5, "inject")
    pt = phase_time_from_peaks(0.0, 0.0, 0.0, 3, 1.0, 1.0, 1.0, 2.0)
    assert pt.time_s == 6.0 and pt.bound == "latency"


def test_phase_time_rejects_bad_bandwidth():
    loads = xy_link_loads(1, 2, [[0.0, 1.0], [0.0, 0.0]])
    with pytest.raises(ValueError):
        phase_time(loads, 0.0, 1.0, 0.0, 1)
    with pytest.raises(ValueError):
        xy_link_loads(2, 2, np.ones((3, 3)))
    with pytest.raises(ValueError):
        xy_link_loads(1, 2, [[0.0, -1.0], [0.0, 0.0]])


def test_more_link_bandwidth_never_slower():
    rng = np.random.default_rng(3)
    loads = xy_link_loads(4, 4, rng.random((16, 16)))
    bw = np.linspace(1.0, 100.0, 50)
    pt = phase_time(loads, bw, 30.0, 1e-3, 6)
    assert np.all(np.diff(pt.time_s) <= 0)
    assert pt.bound.shape == bw.shape and set(pt.bound) <= {"link", "inject", "eject"}
    grid = phase_time_from_peaks(5.0, 2.0, 3.0, 2, np.array([1.0, 2.0])[:, None], bw[None, :], 1.0, 0.0)
    assert grid.time_s.shape == (2, 50)
    assert np.all(grid.time_s[1] >= grid.time_s[0])


def test_switch_time_indifferent_to_placement():
    rng = np.random.default_rng(4)
    traffic = rng.random((16, 16))
    base = switch_phase_time(traffic, 4.0, 1e-6)
    perm = rng.permutation(16)
    moved = switch_phase_time(traffic[np.ix_(perm, perm)], 4.0, 1e-6)
    assert moved.time_s == pytest.approx(base.time_s)
    assert base.link_s == 0 and base.bound in ("inject", "eject")
    assert switch_phase_time(np.eye(4), 4.0, 1e-6).time_s == 0


def test_hops_statistics():
    hops = hops_matrix(3, 4)
    assert hops[0, 11] == 5 and np.all(hops == hops.T)
    traffic = np.zeros((12, 12))
    traffic[0, 1], traffic[0, 11], traffic[5, 5] = 3.0, 1.0, 100.0
    assert max_hops(3, 4, traffic) == 5
    assert mean_hops(3, 4, traffic) == pytest.approx((3 * 1 + 1 * 5) / 4)
    assert mean_hops(3, 4, np.zeros((12, 12))) == 0


def test_hot_link_statistics():
    n = 16
    a = np.zeros((n, n))
    a[0, 3] = 10.0  # row 0, eastbound
    b = np.zeros((n, n))
    b[3, 0] = 10.0  # row 0, westbound: complementary links
    la, lb = xy_link_loads(4, 4, a), xy_link_loads(4, 4, b)
    assert hot_links(la, 0.5).sum() == 3
    assert hot_overlap(la, lb, 0.5) == 0.0
    assert hot_overlap(la, la, 0.5) == 1.0
    assert idle_share(la) == pytest.approx(1 - 3 / la.all_links().size)


def test_32x32_uniform_is_fast():
    traffic = np.ones((1024, 1024))
    start = time.perf_counter()
    loads = xy_link_loads(32, 32, traffic)
    assert time.perf_counter() - start < 1.0
    assert loads.max_link() == pytest.approx(32**3 / 4)
