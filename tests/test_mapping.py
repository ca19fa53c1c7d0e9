"""Tests of TP-group/expert placements and the traffic matrices built on them."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wsemoe.cost.fabric.mapping import (
    cycle_order,
    place_block,
    place_er,
    place_experts,
    place_groups,
)
from wsemoe.cost.fabric.traffic import (
    allreduce_ring_traffic,
    dispatch_traffic,
    gradient_traffic,
    migration_traffic,
)
from wsemoe.mesh import hops_matrix, max_hops, xy_link_loads

LAYOUTS = [(4, 4, 4), (8, 8, 4), (8, 8, 16), (4, 6, 2), (6, 4, 3), (2, 8, 8), (3, 5, 5), (4, 4, 1), (4, 4, 16)]


def ring_edges(placement):
    """(src, dst) node pairs of every ring edge, wrap-around included."""
    return placement.rings, np.roll(placement.rings, -1, axis=1)


@pytest.mark.parametrize("rows,cols,tp", LAYOUTS)
@pytest.mark.parametrize("strategy", ["block", "er", "snake", "random"])
def test_every_group_has_tp_members(strategy, rows, cols, tp):
    p = place_groups(strategy, rows, cols, tp, seed=7)
    assert np.all(np.bincount(p.group_of, minlength=p.num_groups) == tp)
    assert sorted(p.rings.ravel()) == list(range(rows * cols))
    assert np.all(p.group_of[p.rings] == np.arange(p.num_groups)[:, None])
    rank = np.empty(rows * cols, dtype=int)
    rank[p.rings] = np.arange(tp)[None, :]
    assert np.array_equal(np.sort(rank[p.rings], axis=1), np.tile(np.arange(tp), (p.num_groups, 1)))


@pytest.mark.parametrize("rows,cols,tp", [(4, 4, 4), (8, 8, 4), (8, 8, 16), (4, 6, 2), (6, 4, 3), (2, 8, 8), (4, 4, 1)])
def test_er_tiles_hold_one_member_of_every_group(rows, cols, tp):
    p = place_er(rows, cols, tp)
    fr, fc = p.ftd_shape
    assert fr * fc == p.num_groups
    seen = np.zeros(rows * cols, dtype=int)
    for tile_r in range(0, rows, fr):
        for tile_c in range(0, cols, fc):
            nodes = [(tile_r + i) * cols + tile_c + j for i in range(fr) for j in range(fc)]
            assert sorted(p.group_of[nodes]) == list(range(p.num_groups))
            assert len(set(p.ftd_id[nodes])) == 1
            seen[nodes] += 1
    assert np.all(seen == 1)  # tiles are disjoint and cover the mesh
    assert p.ftd_id.max() + 1 == tp


@pytest.mark.parametrize("rows,cols,tp,ftd", [(8, 8, 4, None), (8, 8, 4, (2, 8)), (8, 8, 8, None), (6, 6, 4, (3, 3)),
                                              (4, 8, 2, (4, 4)), (8, 4, 8, None)])
def test_er_ring_neighbours_are_fr_or_fc_apart(rows, cols, tp, ftd):
    p = place_er(rows, cols, tp, ftd)
    fr, fc = p.ftd_shape
    hops = hops_matrix(rows, cols)
    src, dst = ring_edges(p)
    dist = hops[src, dst]
    lat_r, lat_c = rows // fr, cols // fc
    closes = lat_r >= 2 and lat_c >= 2 and (lat_r * lat_c) % 2 == 0
    checked = dist if closes or lat_r * lat_c <= 2 else dist[:, :-1]  # open snake: long wrap edge
    assert np.all(np.isin(checked, [fr, fc]))


def test_er_rejects_bad_tile():
    with pytest.raises(ValueError):
        place_er(8, 8, 4, (3, 5))
    with pytest.raises(ValueError):
        place_er(8, 8, 4, (2, 4))  # 8 != 16 groups
    with pytest.raises(ValueError):
        place_groups("zigzag", 4, 4, 4)
    with pytest.raises(ValueError):
        place_groups("block", 4, 4, 3)


def test_block_groups_are_rectangles_with_neighbour_rings():
    p = place_block(8, 8, 4)
    hops = hops_matrix(8, 8)
    src, dst = ring_edges(p)
    assert np.all(hops[src, dst] == 1)
    r, c = np.divmod(p.rings, 8)
    assert np.all(r.max(1) - r.min(1) == 1) and np.all(c.max(1) - c.min(1) == 1)
    assert place_block(8, 8, 8).rings.shape == (8, 8)
    wide = place_block(4, 8, 8)
    r, c = np.divmod(wide.rings, 8)
    assert np.all(r.max(1) - r.min(1) == 1) and np.all(c.max(1) - c.min(1) == 3)  # 2x4, bc >= br


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 7), st.integers(1, 7))
def test_cycle_order_is_a_permutation_with_neighbour_steps(rows, cols):
    order = cycle_order(rows, cols)
    assert sorted(order) == list(range(rows * cols))
    r, c = np.divmod(order, cols)
    steps = np.abs(np.diff(r)) + np.abs(np.diff(c))
    assert np.all(steps == 1)
    if rows >= 2 and cols >= 2 and rows * cols % 2 == 0:
        assert abs(r[-1] - r[0]) + abs(c[-1] - c[0]) == 1


def test_explicit_placement_validated():
    ids = [0, 0, 1, 1, 1, 1, 0, 0]
    p = place_groups("explicit", 2, 4, 4, explicit=ids)
    assert list(p.group_of) == ids
    assert list(p.rings[0]) == [0, 1, 7, 6]  # snake order inside the group
    for bad in ([0, 0, 0, 1, 1, 1, 1, 1], [0, 0, 1, 1, 1, 1, 0, 2], [0] * 7, [-1, 0, 1, 1, 1, 1, 0, 0]):
        with pytest.raises(ValueError):
            place_groups("explicit", 2, 4, 4, explicit=bad)


def test_random_is_seeded():
    a = place_groups("random", 4, 4, 4, seed=3)
    b = place_groups("random", 4, 4, 4, seed=3)
    c = place_groups("random", 4, 4, 4, seed=4)
    assert np.array_equal(a.rings, b.rings) and not np.array_equal(a.rings, c.rings)
    assert a.ftd_id[0] == -1 and place_er(4, 4, 4).ftd_id[15] == 3


def test_expert_placements():
    many = place_experts(32, 4, 4)
    assert np.all(many.slots_per_node == 2) and np.all(many.replicas == 1)
    assert list(many.hosts_of(17)) == [1]
    few = place_experts(4, 4, 4)
    assert list(few.hosts_of(1)) == [1, 5, 9, 13] and np.all(few.slots_per_node == 1)
    greedy = place_experts(3, 2, 2, replicas=[2, 1, 3])
    assert list(greedy.replicas) == [2, 1, 3]
    assert list(greedy.slots_per_node) == [2, 2, 1, 1]
    with pytest.raises(ValueError):
        place_experts(3, 2, 2, replicas=[5, 1, 1])


@pytest.mark.parametrize("tp", [1, 2, 4, 8])
def test_allreduce_ring_traffic(tp):
    p = place_block(4, 4, tp)
    t = allreduce_ring_traffic(p, 64.0)
    if tp == 1:
        assert not t.any()
        return
    src, dst = ring_edges(p)
    per_edge = 2 * (tp - 1) / tp * 64.0
    np.testing.assert_allclose(t[src, dst], per_edge)
    assert t.sum() == pytest.approx(16 * per_edge)
    assert np.all(p.group_of[np.nonzero(t)[0]] == p.group_of[np.nonzero(t)[1]])


def test_gradient_traffic_links_same_rank_members():
    p = place_block(4, 4, 4)
    t = gradient_traffic(p, 10.0)
    s, d = np.nonzero(t)
    rank = np.empty(16, dtype=int)
    rank[p.rings] = np.arange(4)[None, :]
    assert np.all(rank[s] == rank[d]) and np.all(p.group_of[s] != p.group_of[d])
    assert t.sum() == pytest.approx(16 * 2 * 3 / 4 * 10.0)


def test_migration_traffic():
    t = migration_traffic([0, 0, 3], [1, 1, 2], [5.0, 2.0, 1.0], 4)
    assert t[0, 1] == 7.0 and t[3, 2] == 1.0 and t.sum() == 8.0
    with pytest.raises(ValueError):
        migration_traffic([0], [4], 1.0, 4)


def crossing_loads(loads, fr, fc):
    """Loads of all links that join two different FTD tiles."""
    cols_cross = (np.arange(loads.cols - 1) + 1) % fc == 0
    rows_cross = (np.arange(loads.rows - 1) + 1) % fr == 0
    return np.concatenate([loads.east[:, cols_cross].ravel(), loads.west[:, cols_cross].ravel(),
                           loads.south[rows_cross].ravel(), loads.north[rows_cross].ravel()])


@pytest.mark.parametrize("rows,cols,tp", [(8, 8, 4), (8, 8, 16), (4, 8, 4), (6, 6, 4)])
def test_er_ftd_dispatch_stays_inside_tiles(rows, cols, tp):
    p = place_er(rows, cols, tp)
    experts = place_experts(rows * cols, rows, cols)
    t = dispatch_traffic(p, experts, 100.0, 4, 2.0, token_source="ftd")
    s, d = np.nonzero(t)
    assert np.all(p.ftd_id[s] == p.ftd_id[d])
    loads = xy_link_loads(rows, cols, t)
    assert not crossing_loads(loads, *p.ftd_shape).any()
    assert loads.max_link() > 0


def test_er_nearest_dispatch_is_no_longer_than_ftd():
    p = place_er(8, 8, 4)
    experts = place_experts(64, 8, 8)
    hops = hops_matrix(8, 8)
    near = dispatch_traffic(p, experts, 100.0, 8, 2.0, token_source="nearest")
    ftd = dispatch_traffic(p, experts, 100.0, 8, 2.0, token_source="ftd")
    assert (near * hops).sum() <= (ftd * hops).sum()
    assert near.sum() == pytest.approx(ftd.sum())


def test_er_beats_block_on_dispatch_but_not_on_allreduce():
    rows = cols = 8
    experts = place_experts(64, rows, cols)
    block, er = place_block(rows, cols, 4), place_er(rows, cols, 4)
    peaks = {}
    for name, p in (("block", block), ("er", er)):
        t = dispatch_traffic(p, experts, 256.0, 8, 4096.0)
        peaks[name] = xy_link_loads(rows, cols, t).max_link()
    assert peaks["er"] < peaks["block"]
    # With 16 groups the FTD tile is 4x4, so ER ring members sit fr = fc = 4 hops apart.
    assert max_hops(rows, cols, allreduce_ring_traffic(block, 1.0)) == 1
    assert max_hops(rows, cols, allreduce_ring_traffic(er, 1.0)) == 4


@pytest.mark.parametrize("strategy", ["block", "er", "snake", "random"])
@pytest.mark.parametrize("num_experts", [8, 16, 40])
def test_dispatch_conserves_tokens(strategy, num_experts):
    p = place_groups(strategy, 4, 4, 4, seed=1)
    experts = place_experts(num_experts, 4, 4)
    load = np.random.default_rng(num_experts).dirichlet(np.ones(num_experts))
    for source in ("nearest", "ftd"):
        t = dispatch_traffic(p, experts, 50.0, 2, 3.0, expert_load=load, token_source=source)
        assert t.sum() == pytest.approx(p.num_groups * 50.0 * 2 * 3.0)
        per_expert_dst = t.sum(axis=0)
        assert np.all(per_expert_dst[~experts.hosts.any(axis=0)] == 0)


def test_dispatch_rejects_bad_arguments():
    p = place_block(4, 4, 4)
    experts = place_experts(16, 4, 4)
    with pytest.raises(ValueError):
        dispatch_traffic(p, experts, 1.0, 0, 1.0)
    with pytest.raises(ValueError):
        dispatch_traffic(p, experts, 1.0, 2, 1.0, expert_load=np.ones(16))
    with pytest.raises(ValueError):
        dispatch_traffic(p, experts, 1.0, 2, 1.0, token_source="far")


def test_block_always_finds_a_tiling_rectangle():
    """Whenever tp divides rows·cols some br × bc = tp rectangle tiles the mesh (br | rows, bc | cols):
    the block strategy never needs a fallback. Exhaustive over meshes up to 16 × 16."""
    from wsemoe.cost.fabric.mapping import near_square_factor

    for rows in range(1, 17):
        for cols in range(1, 17):
            for tp in range(1, rows * cols + 1):
                if (rows * cols) % tp == 0:
                    br, bc = near_square_factor(tp, rows, cols)
                    assert br * bc == tp and rows % br == 0 and cols % bc == 0
