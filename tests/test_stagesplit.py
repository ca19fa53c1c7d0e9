"""The byte-balanced contiguous split of a pipeline (cost/wafer/stagesplit.py): hand cases, the least peak and the
fewest stages against every contiguous cut of the items (experts one by one), arrays against single combinations,
and what it changes for real models (Qwen3-235B on 12 CS-3 where the even split of layers needed 14)."""

from __future__ import annotations

import itertools
import unittest.mock
from types import SimpleNamespace as NS

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from wsemoe.config import presets
from wsemoe.cost.wafer import regions, stagesplit
from wsemoe.cost.wafer.fabric import pe_facts
from wsemoe.specs import WorkloadSpec


def parts(d=0.0, a=0.0, e=1.0, E=0.0, emb=0.0, head=0.0):
    return {k: np.asarray(float(v)) for k, v in dict(d=d, a=a, e=e, E=E, emb=emb, head=head).items()}


def test_embedding_and_head_take_their_own_share():
    # embedding 5, four dense layers of 1, head 5 over 3 stages: [5], [1, 1, 1, 1], [5], peak 5. The even split of
    # layers (1, 1, 2) put 5 + 1 = 6 on the first stage and 2 + 5 = 7 on the last.
    p = parts(d=1, emb=5, head=5)
    f = stagesplit.least_peak([False] * 4, p, 3, record=True)
    assert float(f.top) == 5.0 and float(f.cross) == 0.0
    assert [float(s) for s in f.start] == [1.0, 1.0, 1.0, 1.0]
    assert float(stagesplit.stages_needed([False] * 4, p, 5.0)) == 3
    assert float(stagesplit.stages_needed([False] * 4, p, 4.9)) == np.inf   # the embedding alone overflows


def test_a_moe_layers_experts_continue_on_the_next_wafer():
    # embedding 1, one MoE layer (attention part 2, four experts of 1), head 1: 8 bytes over 2 stages. Whole
    # layers give [1], [2 + 4 + 1] (peak 7); cut inside the experts, [1, 2, 1], [1, 1, 1, 1]: peak 4, one crossing.
    p = parts(a=2, e=1, E=4, emb=1, head=1)
    f = stagesplit.least_peak([True], p, 2)
    assert float(f.top) == 4.0 and float(f.cross) == 1.0
    # at capacity 2 the greedy fill is [1], [2], [1, 1], [1, 1], [1]: five stages, the experts across two of them
    assert float(stagesplit.stages_needed([True], p, 2.0)) == 5
    g = stagesplit.run([True], p, 2.0)
    assert float(g.cross) == 2.0 and float(g.top) == 2.0


def expand(moe, p):
    """The split's items one by one (each expert its own), with whether a cut before each is inside a MoE layer."""
    items, inside = [float(p["emb"])], [False]
    for is_moe in moe:
        if is_moe:
            items.append(float(p["a"]))
            inside.append(False)
            items += [float(p["e"])] * int(p["E"])
            inside += [True] * int(p["E"])
        else:
            items.append(float(p["d"]))
            inside.append(False)
    return items + [float(p["head"])], inside + [False]


def best_by_enumeration(items, stages):
    n, best = len(items), float("inf")
    for k in range(1, min(stages, n) + 1):
        for cuts in itertools.combinations(range(1, n), k - 1):
            edges = (0, *cuts, n)
            best = min(best, max(sum(items[a:b]) for a, b in zip(edges, edges[1:])))
    return best


@settings(max_examples=80, deadline=None)
@given(st.lists(st.booleans(), min_size=1, max_size=3), st.integers(1, 9), st.integers(1, 9), st.integers(1, 4),
       st.integers(0, 3), st.integers(1, 9), st.integers(1, 9), st.integers(1, 4))
def test_least_peak_and_fewest_stages_are_the_best_contiguous_cut(moe, d, a, e, E, emb, head, stages):
    p = parts(d=d, a=a, e=e, E=E, emb=emb, head=head)
    items, _ = expand(moe, p)
    want = best_by_enumeration(items, stages)
    assert float(stagesplit.least_peak(moe, p, stages).top) == pytest.approx(want, rel=2e-5)
    fewest = min(k for k in range(1, len(items) + 1) if best_by_enumeration(items, k) <= want)
    assert float(stagesplit.stages_needed(moe, p, want)) == fewest <= stages


def test_arrays_give_what_each_combination_gives_alone():
    moe = [False, True, True, False, True]
    d, a, W = np.array([3.0, 5.0, 1.0]), np.array([2.0, 7.0, 4.0]), np.array([2.0, 3.0, 4.0])
    p = {"d": d, "a": a, "e": np.array(1.5), "E": np.array(6.0), "emb": np.array(4.0), "head": np.array(2.0)}
    both = stagesplit.least_peak(moe, p, W)
    for i in range(3):
        one = stagesplit.least_peak(moe, {**p, "d": d[i], "a": a[i]}, W[i])
        assert float(one.top) == both.top[i] and float(one.cross) == both.cross[i]
    got = regions.split(NS(num_hidden_layers=5, first_k_dense_replace=np.array([0.0, 2.0]), num_experts=6, layers=None),
                        np.array([[2.0], [3.0]]), {"dense": 3.0, "moe": 2.0 + 6 * 1.5, "expert": 1.5, "embedding": 4.0,
                                                   "head": 2.0})
    assert got["peak"].shape == (2, 2)


def test_qwen3_235b_fits_13_cs3_where_the_even_split_of_layers_needed_14():
    # 94 MoE layers of 4.7 GB (bf16, S 8192, B 1) beside a 1.2 GB embedding and head: in bytes 12 stages of at most
    # 8 layers hold them (the even split, ⌊w·L/W⌋ layers, embedding and head on top, needed 14); in whole tiles of
    # the lattice (test_tile_lattice.py) 13 do.
    m = NS(**presets.load_model("qwen3-235b-a22b").model_dump())
    wl = NS(**WorkloadSpec(mode="decode", B=1, seq_len=8192).model_dump())
    pe = pe_facts(NS(pe=presets.load_hardware("cs3").pe))
    assert float(regions.fewest_wafers(pe, m, wl)) == 13.0
    nb = regions.region_bytes(m, wl, 1.0)
    cap = float(regions.wafer_pes(pe) * regions.room(pe, m, wl)[0])
    assert float(regions.stage_peak(m, 12, nb)) <= cap < float(regions.stage_peak(m, 11, nb))


def test_a_pattern_of_one_repeated_layer_splits_as_the_uniform_model():
    m = presets.load_model("qwen3-30b-a3b")
    pattern = NS(**{**m.model_dump(), "layers": {"ffn": {"every": 1}}})
    wl = NS(**WorkloadSpec(mode="decode", B=4, seq_len=8192).model_dump())
    nb = regions.region_bytes(m, wl, 4.0)
    for W in (1, 3, 7):
        a, b = regions.split(m, W, nb), regions.split(pattern, W, nb)
        assert all(float(a[k]) == float(b[k]) for k in a)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_a_combinations_split_never_depends_on_the_others_beside_it(seed):
    """Each bracket stops moving once it is narrow enough, so a combination's split is the same bit for bit alone
    and among others that need more rounds (the search's stopping rule is per combination, not per batch)."""
    rng = np.random.default_rng(seed)
    n = 12
    moe = [bool(x) for x in rng.integers(0, 2, 30)]
    p = {"d": rng.uniform(1e8, 2e9, n), "a": rng.uniform(5e7, 5e8, n), "e": rng.uniform(1e6, 5e7, n),
         "E": rng.choice([0.0, 8.0, 64.0, 256.0], n), "emb": rng.uniform(1e8, 2e9, n), "head": rng.uniform(1e8, 2e9, n)}
    W = rng.integers(1, 20, n).astype(float)
    for precision in (stagesplit.PRECISION, 0.05):   # coarse: brackets stop rounds apart, where it would show
        with unittest.mock.patch.object(stagesplit, "PRECISION", precision):
            both = stagesplit.least_peak(moe, p, W)
            for i in range(n):
                one = stagesplit.least_peak(moe, {k: v[i] for k, v in p.items()}, W[i])
                got = (float(one.top), float(one.cross), float(one.stages))
                assert got == (both.top[i], both.cross[i], both.stages[i]), (precision, i)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.booleans())
def test_the_stage_count_is_the_greedy_pass_bit_for_bit(seed, tiles):
    """`count` (the search's pass, fewer array operations per layer) gives the stages the greedy pass opens, exactly:
    whole tiles and fractional bytes, a dense prefix varying across the combinations, layers of every kind."""
    rng = np.random.default_rng(seed)
    n = 64
    draw = (lambda lo, hi: rng.integers(lo, hi, n).astype(float)) if tiles else (lambda lo, hi: rng.uniform(lo, hi, n))
    k = rng.integers(0, 4, n).astype(float)
    moe = [i >= k for i in range(int(rng.integers(1, 20)))] if seed % 2 else [bool(x) for x in rng.integers(0, 2, 20)]
    p = {"d": draw(1, 200), "a": draw(1, 100), "e": draw(1, 20), "E": rng.choice([0.0, 8.0, 128.0], n),
         "emb": draw(1, 200), "head": draw(1, 200)}
    C = draw(20, 3000)
    assert np.array_equal(stagesplit.count(moe, p, C), stagesplit.run(moe, p, C).stages)


def test_a_wide_search_halves_its_brackets_for_the_same_split():
    """Where many combinations are open a round finds the first capacity that fits by halving (3 passes of one
    capacity) instead of trying its 7 at once: the same split bit for bit, for less than half the arithmetic."""
    rng = np.random.default_rng(7)
    n = 1500
    p = {"d": rng.uniform(1e8, 2e9, n), "a": rng.uniform(5e7, 5e8, n), "e": rng.uniform(1e6, 5e7, n),
         "E": rng.choice([8.0, 64.0, 256.0], n), "emb": rng.uniform(1e8, 2e9, n), "head": rng.uniform(1e8, 2e9, n)}
    moe = [False] * 3 + [True] * 40
    W = rng.integers(2, 40, n).astype(float)
    passes = {True: [], False: []}

    def search(wide):
        real = stagesplit.count

        def tally(moe, parts, C):
            passes[wide].append(np.size(C))
            return real(moe, parts, C)
        with unittest.mock.patch.object(stagesplit, "count", tally), \
                unittest.mock.patch.object(stagesplit, "WIDE", stagesplit.WIDE if wide else np.inf):
            return stagesplit.least_peak(moe, p, W)
    halved, at_once = search(True), search(False)
    for key in ("top", "cross", "visits", "stages"):
        assert np.array_equal(getattr(halved, key), getattr(at_once, key))
    assert sum(passes[True]) < 0.5 * sum(passes[False])
