"""Compact traffic patterns (transfer lists, factorised all-to-alls) against the general N×N path: link loads,
ports, statistics and latency profiles equal, pattern by pattern and structure by structure; the uniform
all-to-all against its hand-derived closed form on a 128×128 mesh, which no N×N matrix is built for."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st

from test_mesh import walk_loads
from wsemoe.cost.fabric import collectives, topology, mapping as mp, patterns, traffic
from wsemoe.cost import structure
from wsemoe.cost.balance import popularity
from wsemoe.cost.fabric.cache import bounded_cache

TIGHT = {"rtol": 1e-12, "atol": 1e-12}


def _assert_same(p, q, layout: topology.Layout):
    """Pattern p (compact) and q (Dense, the general path) agree on everything a structure reads."""
    np.testing.assert_allclose(p.dense(), q.t, **TIGHT)
    for routing in ("xy", "reverse"):
        a, b = p.loads(layout, routing), q.loads(layout, routing)
        np.testing.assert_allclose(a.all_links(), b.all_links(), **TIGHT)
        np.testing.assert_allclose(np.concatenate([a.inject, a.eject]), np.concatenate([b.inject, b.eject]), **TIGHT)
    for x, y in zip(p.ports(), q.ports()):
        np.testing.assert_allclose(x, y, **TIGHT)
    np.testing.assert_allclose(p.received(), q.received(), **TIGHT)
    (m1, h1), (m2, h2) = p.hop_stats(layout), q.hop_stats(layout)
    assert h1 == h2 and m1 == pytest.approx(m2, rel=1e-12, abs=1e-12)
    assert np.array_equal(p.profile(layout), q.profile(layout))


@st.composite
def layouts(draw):
    rows, cols = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    wafers = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    assume(rows * cols * wafers[0] * wafers[1] > 1)
    return topology.Layout("mesh", rows, cols, wafers)


@settings(max_examples=60, deadline=None)
@given(layouts(), st.integers(0, 40), st.integers(0, 2**32 - 1))
def test_transfers_equal_the_general_path_and_a_packet_walk(layout, count, seed):
    rng = np.random.default_rng(seed)
    n = layout.nodes
    src, dst = rng.integers(0, n, count), rng.integers(0, n, count)   # repeats and self transfers included
    vol = rng.choice([0.0, 0.5, 1.0, 3.25], count)
    p = patterns.Transfers(n, src, dst, vol)
    _assert_same(p, patterns.Dense(p.dense()), layout)
    east, west, south, north = walk_loads(*layout.grid, p.dense())
    loads = p.loads(layout)
    np.testing.assert_allclose(np.concatenate([x.ravel() for x in (east, west, south, north)]), loads.all_links(),
                               **TIGHT)


@settings(max_examples=60, deadline=None)
@given(layouts(), st.booleans(), st.floats(0.1, 8.0), st.integers(0, 2**32 - 1))
def test_factorised_all_to_all_equals_the_general_path(layout, per_wafer, f, seed):
    rng = np.random.default_rng(seed)
    n = layout.nodes
    a = rng.choice([0.0, 0.25, 1.0, 2.0], n)     # zeros: nodes that send nothing (or receive nothing)
    b = rng.choice([0.0, 0.5, 1.0, 1.5], n)
    tile = (layout.rows, layout.cols) if per_wafer else None
    p = patterns.Outer(layout.grid, a, b, f, tile)
    _assert_same(p, patterns.Dense(p.dense()), layout)
    _assert_same(p.T, patterns.Dense(p.dense()).T, layout)


@pytest.mark.parametrize("rows, cols", [(1, 5), (3, 4), (128, 128)])
def test_uniform_all_to_all_has_the_closed_form_link_loads(rows, cols):
    """XY routing: the east link c→c+1 of row r carries row r's sources at columns ≤ c to every destination at
    columns > c in any row, (c+1)·(C−c−1)·R; the south link r→r+1 of column c carries every source in rows ≤ r
    to column c's destinations below, (r+1)·C·(R−r−1). 128×128 = 16,384 dies: no N×N array is built."""
    layout = topology.Layout("mesh", rows, cols)
    ones = np.ones(rows * cols)
    loads = patterns.Outer((rows, cols), ones, ones).loads(layout)
    c, r = np.arange(cols - 1), np.arange(rows - 1)
    east = np.broadcast_to((c + 1) * (cols - c - 1) * rows, (rows, cols - 1))
    south = np.broadcast_to(((r + 1) * cols * (rows - r - 1))[:, None], (rows - 1, cols))
    np.testing.assert_array_equal(loads.east, east)
    np.testing.assert_array_equal(loads.west, east[:, ::-1])
    np.testing.assert_array_equal(loads.south, south)
    np.testing.assert_array_equal(loads.north, south[::-1])
    mean, longest = patterns.Outer((rows, cols), ones, ones).hop_stats(layout)
    n = rows * cols   # Σ over ordered pairs of |Δr| is C²·R(R²−1)/3, of |Δc| R²·C(C²−1)/3; self pairs excluded
    assert mean == pytest.approx((cols**2 * rows * (rows**2 - 1) + rows**2 * cols * (cols**2 - 1)) / 3 / (n * n - n),
                                 rel=1e-12)
    assert longest == rows + cols - 2


def test_rings_are_transfers_and_equal_the_matrix_of_the_general_path():
    pl = mp.place_snake(16, 16, 8)
    layout = topology.Layout("mesh", 16, 16)
    for dirs in (1, 2):
        p = collectives.ring_transfers(pl.rings, 1.75, pl.num_nodes, dirs)
        assert isinstance(p, patterns.Transfers) and len(p.src) == pl.num_nodes * dirs
        _assert_same(p, patterns.Dense(collectives.ring_traffic(pl.rings, 1.75, pl.num_nodes, dirs)), layout)


def _fields(s: structure.Structure) -> dict:
    """Every number a structure holds."""
    out = {k: getattr(s, k) for k in ("ring_step_hops", "hot_overlap", "inter_ftd_share", "inter_wafer_share",
                                      "node_load", "expert_imbalance", "imbalance_before", "slots_max",
                                      "slots_before", "copies_moved", "flow")}
    for name, ph in s.phases.items():
        out.update({f"{name}.{k}": getattr(ph, k) for k in ("max_link", "max_hops", "mean_hops", "idle_share")})
        if ph.loads is not None:
            out[f"{name}.loads"] = np.concatenate([ph.loads.all_links(), ph.loads.inject, ph.loads.eject])
        for i, stp in enumerate(ph.steps):
            out.update({f"{name}.{i}.{k}": getattr(stp, k) for k in ("max_link", "max_cross", "max_inject", "max_eject",
                                                                      "profile", "rounds")})
    for name, terms in (s.link_squares or {}).items():   # the routing spread's per-link squares (fabric/spread.py)
        out.update({f"{name}.squares.{i}": v for i, v in enumerate(terms) if v is not None})
    return out


def _build_both(monkeypatch, *args, **kw):
    """The structure on the general N×N path and on the compact patterns."""
    out = []
    for limit, block in ((10**9, traffic.SENDER_BLOCK), (0, 5)):   # compact: many small sender blocks, too
        monkeypatch.setattr(structure, "DENSE_MAX_NODES", limit)
        monkeypatch.setattr(traffic, "SENDER_BLOCK", block)
        structure.clear_cache()
        out.append(_fields(structure.build(*args, **kw)))
    structure.clear_cache()
    return out


def _assert_fields_equal(general: dict, compact: dict):
    assert general.keys() == compact.keys()
    for k, v in general.items():
        if isinstance(v, str):
            assert v == compact[k], k
        elif k.endswith((".max_hops", ".profile", ".rounds")) or k in ("slots_max", "slots_before", "copies_moved"):
            assert np.array_equal(v, compact[k]), k
        else:
            np.testing.assert_allclose(compact[k], v, rtol=1e-12, atol=1e-12, err_msg=k)


@settings(max_examples=25, deadline=None)
@given(rows=st.sampled_from([2, 4, 6, 8]), cols=st.sampled_from([2, 4, 8]), log_tp=st.integers(0, 3),
       strategy=st.sampled_from(["block", "er", "snake", "random"]),
       source=st.sampled_from(["auto", "nearest", "slice"]), seed=st.integers(0, 3),
       balancer=st.sampled_from(["none", "non-invasive"]), dirs=st.sampled_from([1, 2]))
def test_structures_on_compact_patterns_equal_the_general_path(monkeypatch_module, rows, cols, log_tp, strategy,
                                                               source, seed, balancer, dirs):
    tp = 2 ** log_tp
    assume((rows * cols) % tp == 0)
    bal = structure.BalanceKey("zipf", 1.2, seed, balancer, 2)
    coll = structure.Collectives(dirs, "reverse" if seed % 2 else "xy")
    try:
        general, compact = _build_both(monkeypatch_module, "mesh", rows, cols, tp, strategy, None, seed, None,
                                       source, 16, bal, coll=coll)
    except ValueError:   # a placement this mesh cannot take (e.g. ER's FTD tiles)
        assume(False)
    _assert_fields_equal(general, compact)


@pytest.mark.parametrize("strategy, source, wafers", [("her", "auto", (2, 2)), ("her", "nearest", (1, 2)),
                                                      ("her", "slice", (2, 1)), ("er", "slice", (2, 2)),
                                                      ("block", "auto", (2, 2))])
def test_multi_wafer_structures_on_compact_patterns_equal_the_general_path(monkeypatch, strategy, source, wafers):
    bal = structure.BalanceKey("zipf", 1.0, 1, "non-invasive", 2)
    general, compact = _build_both(monkeypatch, "mesh", 4, 4, 4, strategy, None, 0, None, source, 64, bal, wafers,
                                   coll=structure.Collectives(2))
    _assert_fields_equal(general, compact)


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as mp_:
        yield mp_


def test_caches_drop_the_least_recently_used_beyond_their_node_budget():
    calls = []

    @bounded_cache(3, 10, lambda args, value: args[0])
    def f(x, tag=""):
        calls.append(x)
        return x

    f(4), f(4), f(5)                  # one hit; 9 nodes held
    assert calls == [4, 5] and f.cache_info().hits == 1 and f.cache_info().weight == 9
    f(2)                              # 11 > 10: the least recently used (4) goes
    assert f.cache_info()[3:] == (2, 7)
    f(5), f(4)                        # 5 is still held; 4 is built again, and 2 goes
    assert calls == [4, 5, 2, 4] and f.cache_info()[3:] == (2, 9)
    f(1, tag="a"), f(1, tag="b"), f(1, tag="c")   # four entries > 3: only the three newest stay
    assert f.cache_info().currsize == 3
    f(50)                             # alone over budget: kept, everything else dropped
    assert f.cache_info()[3:] == (1, 50)
    f.cache_clear()
    assert f.cache_info() == (0, 0, 3, 0, 0)


def test_a_structure_weighs_its_nodes_in_the_cache():
    structure.clear_cache()
    structure.build("mesh", 4, 4, 4, "her", None, 0, None, "auto", 64, wafers=(2, 2))
    assert structure.cache_info().weight == 64 and structure.cache_info().misses == 1
    assert structure.CACHE_NODES >= 64 * 64 * 16   # sixteen 64×64 structures fit; small meshes keep every entry


@pytest.mark.parametrize("strategy, tp, source", [("random", 1, "auto"), ("block", 1, "nearest"), ("er", 2, "auto"),
                                                  ("er", 4, "nearest"), ("snake", 4, "auto")])
def test_split_dispatch_is_every_groups_sender_feeding_every_node(monkeypatch, strategy, tp, source):
    """Brute force: each group's sender to node d (`dispatch_senders`) sends d its share, for every d."""
    monkeypatch.setattr(traffic, "SENDER_BLOCK", 7)   # many blocks
    pl = mp.place_groups(strategy, 4, 6, tp)
    shares = np.linspace(1.0, 3.0, 12) / np.linspace(1.0, 3.0, 12).sum()
    _, experts = popularity.balance_experts("non-invasive", shares, pl, 2)
    into = popularity.node_loads(experts, shares)
    sender, _ = traffic.dispatch_senders(pl, "ftd" if source == "auto" and pl.ftd_shape is not None else "nearest")
    brute = np.zeros((24, 24))
    for j in range(pl.num_groups):
        for d in range(24):
            brute[sender[j, d], d] += into[d]
    p = structure.split_dispatch(pl, experts, shares, "ftd" if source == "auto" else source)
    assert isinstance(p, patterns.Outer if tp == 1 else patterns.Blocks)
    np.testing.assert_array_equal(p.dense(), brute)
    _assert_same(p, patterns.Dense(brute), topology.Layout("mesh", 4, 6))
