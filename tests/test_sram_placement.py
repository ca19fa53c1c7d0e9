"""SRAM serving at region granularity: layer placement (blocked, interleaved), dispatch and combine link loads,
paths, hand-derived on a 2-expert layer and checked against a tile-by-tile path walk."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wsemoe.cost.wafer import placement, traffic


def test_two_expert_layer_by_hand():
    # 1 attention tile + 2 experts = 3 tiles: a 2 × 2 block (rows = max(1, ⌈√3⌉) = 2, cols = ⌈3/2⌉ = 2).
    # Attention rows centred: r0 = (2 − 1) // 2 = 0, column 0 → tile 0. Free tiles column-major: 2, 1, 3;
    # expert 0 takes tile 2 (row 1, col 0), expert 1 tile 1 (row 0, col 1). One attention column feeds both.
    p = placement.place_layer("blocked", 2, 0, 1, 1)
    assert (p.rows, p.cols) == (2, 2)
    assert p.attention.tolist() == [[0]]
    assert p.experts.tolist() == [2, 1]
    assert p.sender.tolist() == [0, 0]
    assert p.stretch == 1.0
    assert placement.covers_once(p, 2)


def test_two_expert_unicast_loads_by_hand():
    # k = 1, popularity (0.5, 0.5): per token, 0.5 to tile 2 (one hop south) and 0.5 to tile 1 (one hop east).
    p = placement.place_layer("blocked", 2, 0, 1, 1)
    t = traffic.build(p, np.array([0.5, 0.5]), 1, "unicast")
    assert t.dispatch.east[0, 0] == 0.5 and t.dispatch.south[0, 0] == 0.5
    assert t.dispatch.total() == 1.0          # Σ loads = 0.5·1 hop + 0.5·1 hop
    assert t.dispatch_max == 0.5
    # combine is the transpose: west out of tile 1, north out of tile 2
    assert t.combine.west[0, 0] == 0.5 and t.combine.north[0, 0] == 0.5
    assert t.profile.tolist() == [[1.0, 0.0]]  # one tile hop, no turn
    assert t.relays == 0.0


def test_two_expert_multicast_loads_by_hand():
    # The token crosses each link of its tree once: east (0,0)→(0,1) and south (0,0)→(1,0), one token each.
    # Combine reduces back down the tree: one relay stage per tile hop of the longest path (1).
    p = placement.place_layer("blocked", 2, 0, 1, 1)
    t = traffic.build(p, np.array([0.9, 0.1]), 1, "multicast")
    assert t.dispatch.east[0, 0] == 1.0 and t.dispatch.south[0, 0] == 1.0
    assert t.dispatch_max == 1.0 and t.combine_max == 1.0
    assert t.combine.west[0, 0] == 1.0 and t.combine.north[0, 0] == 1.0
    assert t.relays == 1.0


def test_interleaved_spreads_attention_columns():
    # a_c = 2 attention columns in a 4 × 4 block: blocked puts them at columns 0, 1; interleaved at
    # ⌊(j + ½)·4/2⌋ = 1, 3, so they span 3 tile columns for 2 logical ones (stretch 1.5) and every expert is
    # fed from its half of the block.
    b = placement.place_layer("blocked", 8, 1, 2, 2)
    i = placement.place_layer("interleaved", 8, 1, 2, 2)
    assert sorted(set((b.attention % b.cols).ravel().tolist())) == [0, 1]
    assert sorted(set((i.attention % i.cols).ravel().tolist())) == [1, 3]
    assert b.stretch == 1.0 and i.stretch == 1.5
    cols = np.concatenate([i.experts, i.shared]) % i.cols
    assert np.array_equal(i.sender, np.minimum(cols * 2 // i.cols, 1))


def walk(p: placement.LayerPlacement, src, dst, vol) -> dict:
    """Loads by walking every XY path tile by tile (an independent reference)."""
    loads = {k: np.zeros((p.rows, max(p.cols - 1, 0))) for k in ("east", "west")}
    loads.update({k: np.zeros((max(p.rows - 1, 0), p.cols)) for k in ("south", "north")})
    for s, d, v in zip(src, dst, vol):
        (r, c), (r1, c1) = divmod(int(s), p.cols), divmod(int(d), p.cols)
        while c != c1:
            step = 1 if c1 > c else -1
            loads["east" if step > 0 else "west"][r, min(c, c + step)] += v
            c += step
        while r != r1:
            step = 1 if r1 > r else -1
            loads["south" if step > 0 else "north"][min(r, r + step), c] += v
            r += step
    return loads


layers = st.tuples(st.sampled_from(placement.STRATEGIES), st.integers(1, 40), st.integers(0, 3),
                   st.integers(1, 5), st.integers(1, 5), st.integers(1, 8), st.integers(0, 2**16))


@settings(max_examples=60, deadline=None)
@given(layers)
def test_loads_match_a_path_walk(case):
    strategy, experts, shared, a_r, a_c, k, seed = case
    p = placement.place_layer(strategy, experts, shared, a_r, a_c)
    shares = np.random.default_rng(seed).dirichlet(np.ones(experts))
    t = traffic.build(p, shares, min(k, experts), "unicast")
    ref = walk(p, t.unicast.src, t.unicast.dst, t.unicast.vol)
    for key in ("east", "west", "south", "north"):
        assert np.allclose(getattr(t.dispatch, key), ref[key], atol=1e-12)
    # multicast: each attention tile's part crosses each link of the union of its routes once (1 / a_r)
    m = traffic.build(p, shares, min(k, experts), "multicast")
    ref = {key: np.zeros_like(v) for key, v in ref.items()}
    for s in np.unique(t.unicast.src):
        fed = t.unicast.dst[t.unicast.src == s]
        one = walk(p, np.full(len(fed), s), fed, np.ones(len(fed)))
        for key in ref:
            ref[key] += (one[key] > 0) / a_r
    for key in ("east", "west", "south", "north"):
        assert np.allclose(getattr(m.dispatch, key), ref[key], atol=1e-12)


@settings(max_examples=60, deadline=None)
@given(layers)
def test_every_expert_placed_once_and_bytes_times_hops_conserved(case):
    strategy, experts, shared, a_r, a_c, k, seed = case
    p = placement.place_layer(strategy, experts, shared, a_r, a_c)
    assert placement.covers_once(p, experts)
    assert p.rows >= a_r and p.cols >= a_c and p.tiles >= a_r * a_c + experts + shared
    shares = np.random.default_rng(seed).dirichlet(np.ones(experts))
    t = traffic.build(p, shares, min(k, experts), "unicast")
    (r0, c0), (r1, c1) = p.coordinates(t.unicast.src), p.coordinates(t.unicast.dst)
    hops = np.abs(r1 - r0) + np.abs(c1 - c0)
    assert t.dispatch.total() == pytest.approx(float((t.unicast.vol * hops).sum()), rel=1e-12)
    assert t.combine.total() == pytest.approx(t.dispatch.total(), rel=1e-12)
    # every token copy leaves an attention tile: k routed copies and one per shared tile in total
    assert t.unicast.vol.sum() == pytest.approx(min(k, experts) + (1.0 if shared else 0.0))


def test_placement_rejects_unknown_strategy():
    with pytest.raises(ValueError, match="placement"):
        placement.place_layer("snake", 4, 0, 1, 1)
