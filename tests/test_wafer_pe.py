"""The wafer at PE level: fabric, line collectives and operators on PE regions (wsemoe.cost.wafer).

Hand-derived small cases (every number derived in the comments), a wavelet-by-wavelet simulation of the
reductions as an independent reference, physical invariants, and vectorized = scalar.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wsemoe.config import presets
from wsemoe.cost.wafer import collectives, decode, fabric, operators

# A round PE: 1 cycle per hop, 5 per relay stage, no turn cost, one 32-bit wavelet per cycle, 4 FP16 MACs
# per cycle, 10 cycles per operator invocation, 1 GHz.
PE = SimpleNamespace(clock_hz=1e9, hop_cycles=1.0, turn_cycles=0.0, relay_cycles=5.0, link_bytes_per_cycle=4.0,
                     fmac_width=4, op_overhead_cycles=10.0, sram_per_pe_bytes=48000.0, fabric_rows=12,
                     fabric_cols=9, kernel_margin_rows=2, kernel_margin_cols=7)


def test_gemv_on_a_2x2_region_by_hand():
    # W is 8×8 on 2×2 PEs: each holds a 4×4 block. MACs: 4 vector FMACs over 4 outputs, 4 wide: 4 cycles.
    # Partial sums: 4 FP16 values = 4 wavelets (one element per wavelet). All-reduce over a line of 2 by a
    # 2-level tree (group 2): round 0 joins both PEs (one side: 4 wavelets, 1 hop, 1 relay), round 1 has
    # one member left (nothing); the broadcast from the root reaches the other PE: 4 wavelets, 1 hop,
    # 1 relay. Volume 8, latency 2 hops + 2 relays = 12. One token: 4 + 8 (nothing overlaps); overhead:
    # one local kernel + one collective = 2 × 10. Total 4 + 8 + 12 + 20 = 44.
    g = operators.gemv(8, 8, 2, 2, PE)
    assert (g["compute_cycles"], g["link_cycles"], g["latency_cycles"], g["overhead_cycles"]) == (4, 8, 12, 20)
    assert g["cycles"] == 44 and g["seconds"] == pytest.approx(44e-9)
    assert operators.BOUNDS[int(g["bound"])] == "overhead"
    assert g["weight_bytes_per_pe"] == 4 * 4 * 2


def test_a_link_twice_as_wide_moves_the_same_wavelets_in_half_the_cycles():
    # The 2×2 GEMV above on links of 8 bytes a cycle: the partial sums are still 4 + 4 wavelets of one FP16 value
    # each (a 32-bit wavelet per element), but a link now moves two wavelets a cycle: link cycles 8 → 4, MACs,
    # path latency and overhead unchanged (4, 12, 20): 40. At 2 bytes a cycle a wavelet takes 2 cycles: 16, and 52.
    wide, narrow = (SimpleNamespace(**{**vars(PE), "link_bytes_per_cycle": b}) for b in (8.0, 2.0))
    g, n = operators.gemv(8, 8, 2, 2, wide), operators.gemv(8, 8, 2, 2, narrow)
    assert (g["compute_cycles"], g["link_cycles"], g["latency_cycles"], g["overhead_cycles"]) == (4, 4, 12, 20)
    assert g["cycles"] == 40 and n["link_cycles"] == 16 and n["cycles"] == 52
    # Packed, 16-bit values fill a 32-bit wavelet two at a time: 5 values → 3 wavelets, 1.5 cycles on the wide link.
    assert fabric.wavelets(5, 2, PE, packed=True) == 3 and fabric.wavelets(5, 2, wide, packed=True) == 1.5
    assert fabric.wavelets(5, 4, wide) == 2.5 and fabric.wavelets(5, 8, PE) == 10   # 8-byte values: 2 wavelets


@pytest.mark.parametrize("pattern,link,latency", [
    # k = 8 over 4 PEs of one column (n = 4 on 1): blocks 2×4, MACs 2 FMACs over 4 = 2 cycles; 4 wavelets.
    # chain: reduce to the end (4 wavelets, 3 hops, 3 relays), broadcast from the end (4, 3 hops, 1 relay):
    # volume 8, latency 6 + 4·5 = 26.
    ("chain", 8, 26),
    # tree, 2 levels, group 2: round 0 pairs (4, 1 hop, 1 relay), round 1 joins the two roots 2 apart
    # (4, 2 hops, 1 relay), broadcast from the middle (4, 2 hops, 1 relay): volume 12, latency 5 + 15 = 20.
    ("tree", 12, 20),
    # ring: 2·3 = 6 rounds of ⌈4/4⌉ = 1 wavelet, each 2 hops (folded ring) and 1 relay: volume 6,
    # latency 12 + 30 = 42.
    ("ring", 6, 42),
])
def test_gemv_on_a_4x1_column_by_hand(pattern, link, latency):
    g = operators.gemv(8, 4, 4, 1, PE, pattern=pattern)
    assert (g["compute_cycles"], g["link_cycles"], g["latency_cycles"]) == (2, link, latency)
    assert g["cycles"] == 2 + link + latency + 20


def test_many_tokens_pipeline_behind_the_slowest_stage():
    # 2×2 case with 10 tokens: stages 4 (MACs) and 8 (all-reduce volume) per token. The reduction paces
    # the stream (10 × 8 = 80), the MACs add their fill once (4): 84, plus latency 12 and overhead 20.
    g = operators.gemv(8, 8, 2, 2, PE, tokens=10)
    assert (g["compute_cycles"], g["link_cycles"]) == (4, 80) and g["cycles"] == 116


def test_cyclic_gemm_by_hand():
    # 8×8×8 on 2×2: tiles 4×4; a step: 16 FMACs over 4 = 16 cycles, shifting 16 + 16 = 32 wavelets
    # (longer), 1 hop (2 PEs) + 1 relay = 6, overhead 10: 48 per step, 2 steps = 96; efficiency 32/96.
    g = operators.cyclic_gemm(8, 8, 8, 2, PE)
    assert g["cycles"] == 96 and g["efficiency"] == pytest.approx(1 / 3)
    # Cannon on 4×4 crosses p − 1 = 3 hops per step, MeshGEMM at most 2.
    assert operators.cyclic_gemm(16, 16, 16, 4, PE, "cannon")["latency_cycles"] == 4 * (3 + 5)
    assert operators.cyclic_gemm(16, 16, 16, 4, PE, "meshgemm")["latency_cycles"] == 4 * (2 + 5)


def test_path_latency_counts_hops_turns_and_relays():
    pe = SimpleNamespace(**{**vars(PE), "turn_cycles": 20.0})
    # (3, 4) displacement: 7 hops and one turn; 2 relays: 7 + 20 + 10.
    assert fabric.xy_path_cycles(3, -4, pe, relays=2) == 37
    assert fabric.xy_route(0, 5) == (5, 0)


def test_program_rectangle_of_the_presets():
    cs2, cs3 = presets.load_hardware("cs2").pe, presets.load_hardware("cs3").pe
    assert fabric.program_rectangle(cs2) == (994, 750)   # 996 − 2 rows, 757 − 7 columns
    assert fabric.program_rectangle(cs3) == (1170, 755)
    assert fabric.fits(720, 720, cs2) and not fabric.fits(751, 751, cs2)


# --- an independent reference: the reductions simulated wavelet by wavelet -----------------------------

def _emit(free, b):
    """A PE free at `free` emits its b wavelets one per cycle (the first one cycle later)."""
    return [free + w + 1.0 for w in range(b)]


def _stream(ready, hops, h, r, start_after=0.0):
    """Times the next PE (busy until `start_after`) has taken each wavelet of a stream ready at `ready`,
    sent over `hops` hops: arrival plus one relay stage, one wavelet per cycle."""
    out, last = [], start_after
    for t in ready:
        last = max(t + hops * h + r, last + 1)
        out.append(last)
    return out


def _chain_into(side, free, b, spacing, h, r):
    """A side of a chain (farthest PE first) relayed towards its root: each PE adds its own part to the
    stream as it passes; returns the stream as it leaves the last relay (ready to cross to the root)."""
    ready = _emit(free[side[0]], b)
    for pe in side[1:]:
        ready = _stream(ready, spacing, h, r, start_after=free[pe])
        free[pe] = ready[-1]
    return ready


def simulate_tree(p, b, levels, group, h, r):
    """The tree reduce of collectives.tree_reduce, each wavelet timed. A PE runs its instructions one
    after another: it starts a round's sends when it has finished the previous round, a middle root takes
    one side and then the other (the longer first), a relay adds r, a hop h, one wavelet per cycle."""
    free = {i: 0.0 for i in range(p)}
    members, spacing = list(range(p)), 1
    for k in range(levels):
        size = len(members) if k == levels - 1 else group
        nxt = []
        for g0 in range(0, len(members), size):
            grp = members[g0:g0 + size]
            root = grp[len(grp) // 2]
            sides = [s for s in (grp[:len(grp) // 2], grp[len(grp) // 2 + 1:][::-1]) if s]
            for side in sorted(sides, key=len, reverse=True):
                free[root] = _stream(_chain_into(side, free, b, spacing, h, r), spacing, h, r, free[root])[-1]
            nxt.append(root)
        members, spacing = nxt, spacing * group
    return free[members[0]]


def simulate_chain(p, b, h, r):
    """Chain reduce to PE 0, wavelet by wavelet."""
    free = {i: 0.0 for i in range(p)}
    return _stream(_chain_into(list(range(p - 1, 0, -1)), free, b, 1, h, r), 1, h, r)[-1] if p > 1 else 0.0


@pytest.mark.parametrize("p", [2, 3, 5, 8])
@pytest.mark.parametrize("b", [1, 4, 9])
def test_chain_reduce_matches_wavelet_simulation(p, b):
    # The simulation starts the count at the first wavelet's emission (cycle 1), as the closed form does.
    assert collectives.chain_reduce(p, b).cycles(PE) == simulate_chain(p, b, 1.0, 5.0)


@pytest.mark.parametrize("p,levels,group", [(9, 2, 3), (27, 3, 3), (25, 2, 5), (16, 2, 4), (8, 3, 2), (7, 1, 7)])
@pytest.mark.parametrize("b", [1, 6])
def test_tree_reduce_matches_wavelet_simulation_on_full_groups(p, levels, group, b):
    # With p = group^levels (or one level) every group finishes together: the closed form is exact.
    closed = collectives.tree_reduce(p, b, levels, group).cycles(PE)
    assert closed == simulate_tree(p, b, levels, group, 1.0, 5.0)


@pytest.mark.parametrize("p,levels,group", [(10, 2, 3), (20, 2, 4), (30, 3, 3), (11, 2, 5)])
def test_tree_reduce_bounds_the_simulation_on_partial_groups(p, levels, group):
    # A partial last group finishes early; the closed form charges every round its fullest group: an
    # upper bound, and exact when the partial group is not on the critical path.
    closed = collectives.tree_reduce(p, 5, levels, group).cycles(PE)
    assert simulate_tree(p, 5, levels, group, 1.0, 5.0) <= closed


def simulate_ring(p, b, h, r):
    """Ring reduce-scatter + all-gather on the folded ring (even positions out, odd ones back), each
    wavelet timed; a PE sends a round's chunk when it has taken the previous round's."""
    order = list(range(0, p, 2)) + list(range(p - 1 if p % 2 == 0 else p - 2, 0, -2))
    nxt = {order[i]: order[(i + 1) % p] for i in range(p)}
    c = -(-b // p)
    free = {i: 0.0 for i in order}
    for _ in range(2 * (p - 1)):
        sent = {i: _emit(free[i], c) for i in order}
        free = {nxt[i]: _stream(sent[i], abs(nxt[i] - i), h, r, free[nxt[i]])[-1] for i in order}
    return max(free.values())


@pytest.mark.parametrize("p", [2, 3, 4, 6, 9])
@pytest.mark.parametrize("b", [3, 12])
def test_ring_allreduce_bounds_the_simulation(p, b):
    # The closed form charges every round its longest edge (2 hops; 1 on a line of two); in the simulation
    # a PE behind a 1-hop edge may run a hop ahead, so the closed form bounds it from above by at most
    # one hop per round.
    closed = collectives.ring_allreduce(p, b).cycles(PE)
    sim = simulate_ring(p, b, 1.0, 5.0)
    assert sim <= closed <= sim + 2 * (p - 1)


def test_broadcast_by_hand():
    # 9 PEs, root in the middle: 4 hops to either end, 1 relay for the ramps, 7 wavelets: 7 + 4 + 5.
    assert collectives.broadcast(9, 7).cycles(PE) == 16
    assert collectives.broadcast(9, 7, root="end").cycles(PE) == 7 + 8 + 5
    assert collectives.broadcast(1, 7).cycles(PE) == 0


# --- invariants -------------------------------------------------------------------------------------------

@settings(max_examples=60, deadline=None)
@given(p=st.integers(1, 3000), b=st.integers(1, 200), levels=st.integers(1, 4), group=st.integers(2, 40))
def test_reduction_time_never_falls_as_the_line_grows(p, b, levels, group):
    # A fixed recipe (chain; tree of given levels and group; broadcast) on a longer line is never faster.
    for cost in (collectives.chain_reduce, collectives.broadcast,
                 lambda p, b: collectives.tree_reduce(p, b, levels, group)):
        assert cost(p + 1, b).cycles(PE) >= cost(p, b).cycles(PE)


def test_the_best_reduction_never_falls_as_the_line_grows():
    # Every line length from 1 to 800 PEs: the best of chain and trees (any levels and group) never gets
    # faster on a longer line, a recipe chosen from p can always run on fewer PEs.
    p = np.arange(1, 801)
    for b in (1, 17, 300):
        best = collectives.best_allreduce(p, b, PE, max_levels=4, max_group=32, patterns=("chain", "tree"))[0]
        assert np.all(np.diff(best) >= 0), b


def test_quantization_can_make_a_longer_line_faster():
    # Not physics broken but whole wavelets: a ring's chunks are ⌈b/p⌉ (17 wavelets over 16 PEs: chunks
    # of 2, 30 rounds = 60; over 17 PEs: chunks of 1, 32 rounds = 32), and the default tree group ⌈p^(1/K)⌉
    # jumps (8 PEs, 3 levels: groups of 2; 9 PEs: groups of 3, one level fewer in use).
    assert collectives.ring_allreduce(17, 17).cycles(PE) < collectives.ring_allreduce(16, 17).cycles(PE)
    assert collectives.allreduce(9, 1, "tree", 3).cycles(PE) < collectives.allreduce(8, 1, "tree", 3).cycles(PE)


@settings(max_examples=60, deadline=None)
@given(k=st.integers(1, 5000), n=st.integers(1, 5000), ks=st.integers(1, 64), ns=st.integers(1, 63),
       tokens=st.integers(1, 64))
def test_more_pes_across_the_output_never_slower(k, n, ks, ns, tokens):
    # Splitting the output over more columns shrinks every PE's MACs and partial sums; the reduction runs
    # along the other axis, so its latency does not change.
    a = operators.gemv(k, n, ks, ns, PE, tokens=tokens)["cycles"]
    assert operators.gemv(k, n, ks, ns + 1, PE, tokens=tokens)["cycles"] <= a + 1e-9


@settings(max_examples=60, deadline=None)
@given(k=st.integers(1, 5000), n=st.integers(1, 5000), ks=st.integers(1, 64), ns=st.integers(1, 64))
def test_more_pes_never_slower_when_the_fabric_is_free(k, n, ks, ns):
    # Without fabric costs (no latency, unbounded links) only MACs and overheads remain: more PEs on
    # either axis never add time.
    free = SimpleNamespace(**{**vars(PE), "hop_cycles": 0.0, "relay_cycles": 0.0, "link_bytes_per_cycle": np.inf})
    a = operators.gemv(k, n, ks, ns, free)["cycles"]
    assert operators.gemv(k, n, ks + 1, ns, free)["cycles"] <= a
    assert operators.gemv(k, n, ks, ns + 1, free)["cycles"] <= a


@settings(max_examples=60, deadline=None)
@given(k=st.integers(1, 5000), n=st.integers(1, 5000), ks=st.integers(1, 64), ns=st.integers(1, 64),
       element_bytes=st.sampled_from([1, 2, 4, 8]))
def test_more_link_bandwidth_never_slower(k, n, ks, ns, element_bytes):
    fast = SimpleNamespace(**{**vars(PE), "link_bytes_per_cycle": 8.0})
    kw = {"element_bytes": element_bytes, "input_broadcast": True}
    assert operators.gemv(k, n, ks, ns, fast, **kw)["cycles"] <= operators.gemv(k, n, ks, ns, PE, **kw)["cycles"]


def test_best_allreduce_is_no_worse_than_any_pattern():
    p, b = np.array([2, 16, 100, 420, 750]), np.array([1, 8, 64, 512, 4096])[:, None]
    best, pattern, levels, group = collectives.best_allreduce(p, b, PE, max_levels=4, max_group=32)
    for pat in ("chain", "ring", "tree"):
        for k in (1, 2, 3):
            assert np.all(best <= collectives.allreduce(p, b, pat, k).cycles(PE) + 1e-9)
    # The returned recipe costs what it says.
    i, j = 3, 2
    recipe = collectives.allreduce(p[j], b[i, 0], collectives.PATTERNS[pattern[i, j]], max(levels[i, j], 1),
                                   group[i, j] or None)
    assert recipe.cycles(PE) == best[i, j]
    # Small messages on long lines take trees; long messages on short lines the chain or the ring.
    assert collectives.PATTERNS[pattern[0, -1]] == "tree" and levels[0, -1] >= 2
    assert collectives.PATTERNS[pattern[-1, 0]] in ("chain", "ring")


# --- vectorized = scalar, terms add up -------------------------------------------------------------------

def test_vectorized_equals_scalar():
    rows, cols = np.array([4, 60, 420]), np.array([[8], [420]])
    m = SimpleNamespace(hidden_size=4096, num_attention_heads=32, num_key_value_heads=8, head_dim=128,
                        intermediate_size=14336)
    layer = decode.dense_layer(m, rows, cols, 4096, PE, batch=2)["layer"]["cycles"]
    g = operators.gemv(4096, 6144, rows, cols, PE, tokens=3)["cycles"]
    for i, c in enumerate(cols[:, 0]):
        for j, r in enumerate(rows):
            assert layer[i, j] == decode.dense_layer(m, int(r), int(c), 4096, PE, batch=2)["layer"]["cycles"]
            assert g[i, j] == operators.gemv(4096, 6144, int(r), int(c), PE, tokens=3)["cycles"]


def test_terms_add_up():
    m = SimpleNamespace(hidden_size=512, num_attention_heads=8, num_key_value_heads=2, head_dim=64,
                        intermediate_size=1024)
    ops = decode.dense_layer(m, 16, 32, 1000, PE, batch=4)
    keys = ("compute_cycles", "link_cycles", "latency_cycles", "overhead_cycles")
    for name, t in ops.items():
        assert t["cycles"] == pytest.approx(sum(t[k] for k in keys)), name
    assert ops["layer"]["cycles"] == pytest.approx(sum(t["cycles"] for n, t in ops.items() if n != "layer"))


def test_the_preset_overhead_is_the_gemv_fit():
    # The one fitted PE constant is reproducible: the presets carry the least-squares fit to WaferLLM's
    # two GEMV times, rounded to a cycle.
    from wsemoe.validate import waferllm

    fit = waferllm.fit_overhead()
    assert presets.load_hardware("cs2").pe.op_overhead_cycles == round(fit)
    assert presets.load_hardware("cs3").pe.op_overhead_cycles == round(fit)
