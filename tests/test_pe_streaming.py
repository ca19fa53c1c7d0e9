"""Weight streaming at PE level (hardware.pe_fabric): the edge's stream, the expert grids' all-to-all against brute
force, the layout ladder and choice, SRAM per PE and the attention batch caps, config checks, eval's breakdown and the
figures, hand-derived on small cases."""

from __future__ import annotations

from types import SimpleNamespace as NS

import numpy as np
import pytest

from wsemoe.analysis.explain import point as explain

from wsemoe.analysis.invariants import streaming_laws
from wsemoe.config import presets
from wsemoe.config.loader import load_config
from wsemoe.cost.fabric import patterns, topology
from wsemoe.cost.fabric.mesh import hops_matrix
from wsemoe.cost.wafer import decode, edge, expertgrid, streamlayout
from wsemoe.cost.wafer.decode import add
from wsemoe.errors import ConfigError
from wsemoe.sweep import engine

CS2 = presets.load_hardware("cs2").pe
BASE = {"name": "pe", "hardware": {"preset": "cs2", "pe_fabric": True}, "model": "qwen3-30b-a3b",
        "workload": {"mode": "train", "seq_len": 8192, "attn_kernel": "per_head", "recompute": "full"}}


def test_edge_stream_by_hand():
    # 2 edges × 60 channels × 1.1 GHz = 1.32e11 wavelets/s. 1e6 bf16 weights streamed once (inference): 1e6
    # wavelets → 7.576 µs. Training: in 2 passes × 1e6, out 1e6 fp32 gradients (4 B, one wavelet each): 2e6 wavelets
    # in binds → 15.15 µs. fp8 weights: still one value per wavelet, the same 1e6 wavelets (the edge, unlike the
    # wafer I/O, does not gain from narrower weights).
    assert edge.rate(CS2) == pytest.approx(1.32e11)
    assert edge.stream_seconds(CS2, 1.0, 1e6, 2e6, 0.0, 2.0, 4.0, False) == pytest.approx(1e6 / 1.32e11)
    assert edge.stream_seconds(CS2, 2.0, 1e6, 2e6, 0.0, 2.0, 4.0, True) == pytest.approx(2e6 / 1.32e11)
    assert edge.stream_seconds(CS2, 1.0, 1e6, 1e6, 0.0, 2.0, 4.0, False) == pytest.approx(1e6 / 1.32e11)


def test_the_edge_carries_1_76_times_the_wafer_io_at_16_bits():
    # 1.32e11 wavelets/s × 2 B = 264 GB/s against the 150 GB/s system I/O: the edge never binds before it.
    assert edge.rate(CS2) * 2.0 / presets.load_hardware("cs2").io_in_bw_bytes_per_s == pytest.approx(1.76)


@pytest.mark.parametrize("rows,cols,per_edge", [(24, 10, 3), (17, 9, 4), (8, 6, 8)])
def test_no_crossing_link_carries_more_than_its_channel(rows, cols, per_edge):
    loads, ports = edge.crossing_loads(rows, cols, per_edge)
    busiest = max(a.max(initial=0.0) for a in (loads.east, loads.west, loads.south, loads.north))
    assert busiest <= ports.max() and ports.sum() == rows * cols
    assert np.count_nonzero(ports) == 2 * per_edge   # every channel feeds its band's PEs


def brute_multicast(experts: int, rows: int, cols: int):
    """Every source tile's XY tree to every expert tile, link by link (1/E on each link of each tree)."""
    east, west = np.zeros((rows, cols - 1)), np.zeros((rows, cols - 1))
    south, north = np.zeros((rows - 1, cols)), np.zeros((rows - 1, cols))
    dest = [divmod(e, cols) for e in range(experts)]
    for r0, c0 in dest:
        links = set()
        for r1, c1 in dest:
            step = 1 if c1 > c0 else -1
            links |= {("ew", r0, min(c, c + step), step) for c in range(c0, c1, step)}
            step = 1 if r1 > r0 else -1
            links |= {("ns", min(r, r + step), c1, step) for r in range(r0, r1, step)}
        for kind, r, c, step in links:
            {("ew", 1): east, ("ew", -1): west, ("ns", 1): south, ("ns", -1): north}[(kind, step)][r, c] += 1 / experts
    return east, west, south, north


@pytest.mark.parametrize("experts,rows,cols", [(7, 3, 3), (10, 2, 5), (5, 5, 1), (6, 3, 2), (1, 1, 1)])
def test_multicast_loads_equal_the_trees_walked(experts, rows, cols):
    got = expertgrid.multicast_loads(experts, rows, cols)
    for a, b in zip((got.east, got.west, got.south, got.north), brute_multicast(experts, rows, cols)):
        np.testing.assert_allclose(a, b, atol=1e-12)
    g = expertgrid.build(experts, rows, cols, np.full(experts, 1 / experts), "multicast")
    assert got.total() == pytest.approx(streaming_laws.multicast_total(g))


def test_unicast_loads_equal_routed_transfers():
    # Zipf-like popularity on a 3 × 4 grid of 11 experts: the closed form equals the transfers routed XY one by one.
    shares = np.arange(11, 0, -1) / np.arange(11, 0, -1).sum()
    g = expertgrid.build(11, 3, 4, shares, "unicast")
    dense = g.pattern.dense()
    src, dst = np.nonzero(dense)
    routed = patterns.Transfers(12, src, dst, dense[src, dst]).loads(topology.Layout("mesh", 3, 4))
    for side in ("east", "west", "south", "north"):
        np.testing.assert_allclose(getattr(g.dispatch, side), getattr(routed, side), atol=1e-12)
    assert g.dispatch.total() == pytest.approx((dense * hops_matrix(3, 4)).sum())


@pytest.mark.parametrize("extent", [37, 750, 994])
@pytest.mark.parametrize("parts", [1, 3, 7, 32])
def test_twice_the_pes_keeps_every_tile_side(extent, parts):
    assert set(streamlayout.ladder(extent, parts)) <= set(streamlayout.ladder(2 * extent, parts))


def table(**cols):
    n = len(cols["A"])
    base = {f: np.zeros(n) for f in streamlayout.FIELDS}
    return streamlayout.Table(**{**base, **{k: np.asarray(v, float) for k, v in cols.items()}})


def test_choose_by_hand():
    # Two layouts: A 10 cycles/token, no fill, 100 PEs; A 5, fill 100, 50 PEs. At 10 tokens 100 < 150 cycles; at 100
    # tokens 1000 > 600. Needing 60 PEs leaves the first only. Under a floor of 2000 both pipelines hide and the
    # dispatch (1 cycle per token of 10 for the first) decides.
    t = table(A=[10, 5], B=[0, 100], h=[10, 5], w=[10, 10], Dd=[1, 0])
    assert list(streamlayout.choose(t, [0, 0], [10, 100], [0, 0])) == [0, 1]
    assert list(streamlayout.choose(t, [0], [100], [60])) == [0]
    assert list(streamlayout.choose(t, [10], [10], [0], floor=[2000])) == [1]
    # with interleaved micro-batches the layer is max(core, comm): at 0 tokens to move, 1000 against 600 cycles
    assert list(streamlayout.choose(t, [0], [100], [0], microbatch=True)) == [1]


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_pareto_never_drops_the_best(seed):
    rng = np.random.default_rng(seed)
    n = 60
    cols = {f: rng.integers(1, 20, n).astype(float) for f in streamlayout.FIELDS}
    keep = streamlayout.pareto(cols)
    full, kept = table(**cols), table(**{k: v[keep] for k, v in cols.items()})
    pts = rng.integers(1, 500, (4, 30)).astype(float)
    for micro in (False, True):
        i = streamlayout.choose(full, pts[0], pts[1], pts[2] % 300, pts[3] * 10, 5.0, micro)
        j = streamlayout.choose(kept, pts[0], pts[1], pts[2] % 300, pts[3] * 10, 5.0, micro)
        time = lambda t, k: (np.maximum(t.A[k] * pts[1] + t.B[k], pts[3] * 10) + 5.0,   # noqa: E731
                             pts[0] * (t.Dd[k] + t.Dc[k]) + t.Ld[k] + t.Lc[k])
        a, b = time(full, i), time(kept, j)
        total = (lambda x: np.maximum(*x)) if micro else (lambda x: x[0] + x[1])
        np.testing.assert_allclose(total(a), total(b))


@pytest.fixture(scope="module")
def points():
    cfg = load_config({**BASE, "axes": {"workload.B": [1, 4, 16], "workload.G": [1, 8],
                                        "hardware.pe_fabric": [False, True], "model.num_experts_per_tok": [8, 1],
                                        "mapping.pe_dispatch": ["multicast", "unicast"]}})
    return engine.evaluate_points(cfg)


def test_the_pe_view_only_adds_terms_and_constraints(points):
    keys = ["workload.B", "workload.G", "model.num_experts_per_tok", "mapping.pe_dispatch"]
    off = points[~points["hardware.pe_fabric"].astype(bool)].set_index(keys).sort_index()
    on = points[points["hardware.pe_fabric"].astype(bool)].set_index(keys).sort_index()
    assert (on["step_time_s"].to_numpy() >= off["step_time_s"].to_numpy() * (1 - 1e-12)).all()
    assert not (on["feasible"].astype(bool) & ~off["feasible"].astype(bool)).any()
    for col in ("attention_weights_s", "mem_peak_node_bytes"):
        np.testing.assert_allclose(on[col].to_numpy(), off[col].to_numpy())
    # the PE view's experts are regions of one expert each, the busiest of them a step's expected maximum over its
    # routing (tests/test_routing_pe.py); the node view's one node holds them all (its busiest is its mean)
    assert (on["moe_compute_s"].to_numpy() >= off["moe_compute_s"].to_numpy() * (1 - 1e-12)).all()
    np.testing.assert_allclose(on["attention_edge_s"] / on["attention_weights_s"], 150e9 / 264e9)


def test_the_attention_batch_cap_per_pe_sits_at_its_boundary():
    # At the cap B the attention stage fits every PE (g ≤ 0); at B + 1 it does not.
    cfg = load_config({**BASE, "workload": {**BASE["workload"], "B": 4, "G": 8}})
    cap = int(engine.evaluate_points(cfg)["attn_batch_cap_pe"].iloc[0])
    at = load_config({**BASE, "axes": {"workload.B": [cap, cap + 1]}, "workload": {**BASE["workload"], "G": 8}})
    g = engine.evaluate_points(at)["g_pe_sram_attn"].to_numpy()
    assert g[0] <= 0 < g[1]


@pytest.mark.parametrize("changes,message", [
    ({"workload": {**BASE["workload"], "overlap": "none"}}, "overlap none"),
    ({"mapping": {"tp": 84}}, "mapping.tp applies"),
    ({"hardware": {"preset": "wsc-b200-8x8", "pe_fabric": True}}, "pe_fabric"),
])
def test_what_the_pe_view_does_not_model_is_refused(changes, message):
    with pytest.raises((ConfigError, ValueError), match=message):
        load_config({**BASE, **changes})


def test_eval_breaks_a_pe_point_into_terms_that_add_up():
    _, rows = explain.breakdown(hardware="cs2", model="qwen3-30b-a3b",
                                sets=["hardware.pe_fabric=true", "workload.mode=train", "workload.seq_len=8192",
                                      "workload.B=4", "workload.G=8", "workload.attn_kernel=per_head"])
    pe = [r for r in rows if r[0].startswith("how the PE fabric")]
    assert {r[1] for r in pe} >= {"attention_edge_s", "moe_edge_s", "expert_pipeline_s", "moe_regions_s",
                                  "moe_dispatch_s", "moe_combine_s", "pe_mem_attn_peak_bytes", "g_pe_sram_moe"}
    assert all(r[4].endswith("✓") for r in pe), [r[4] for r in pe if not r[4].endswith("✓")]


def test_the_figures_draw_what_binds_and_what_the_fabric_costs(tmp_path):
    import wsemoe
    from wsemoe.report.figures import plots

    res = wsemoe.run_sweep({**BASE, "hardware": "cs2", "sparsity": {"vary": "num_experts_per_tok", "values": [8, 1],
                                                                    "hold": "active"},
                            "axes": {"workload.B": [1, 2, 4], "workload.G": [1, 4]},
                            "zip": [{"hardware.pe_fabric": [False, True]}]}, out_root=tmp_path)
    stems = {s: f for s, f in plots.figures(res.path, only=["streaming"])}
    assert set(stems) == {"pe_binding", "pe_cost"} and all(f is not None for f in stems.values())
    title = stems["pe_binding"]._suptitle.get_text()
    assert "fabric edge binds 0" in title   # 264 GB/s of edge against 150 GB/s of wafer I/O
    from wsemoe.report.figures import fig_streaming
    from wsemoe.report.figures.claims import caption_of

    binds = caption_of(stems["pe_binding"])  # the claim, then the counts the title shows, said once more
    assert binds.endswith("Claim tested: " + fig_streaming.CLAIMS['pe_binding'].rstrip(".") + ".") and "At PE level the fabric edge binds 0" in binds
    costs = caption_of(stems["pe_cost"])
    assert costs.endswith("Claim tested: " + fig_streaming.CLAIMS['pe_cost'].rstrip(".") + ".") and "the best PE-level point loses" in costs


def test_the_pe_invariants_can_fail(monkeypatch):
    # Choosing the slowest layout that fits makes more PEs (more candidates) slower; a multicast dispatch that drops
    # its trees' north links no longer carries what the trees do. Both laws must say so.
    from wsemoe.analysis.invariants.cases import Case
    from wsemoe.analysis.invariants.laws import REGISTRY

    cfg = load_config({**BASE, "model": "qwen3-30b-a3b", "axes": {"workload.B": [1, 4], "workload.G": [1, 8]}})
    more, grids = REGISTRY["streaming_more_pes_or_sram_never_hurt"], REGISTRY["streaming_grids_are_whole_and_conserve_traffic"]
    assert more.run(Case(cfg)).status == "pass" and grids.run(Case(cfg)).status == "pass"
    choose = streamlayout.choose

    def slowest(t, tokens, busiest, need, floor=0.0, offset=0.0, microbatch=False, comm_weight=1.0):
        flipped = streamlayout.Table(**{**{f: getattr(t, f) for f in streamlayout.FIELDS}, "A": -t.A, "B": -t.B,
                                        "Dd": -t.Dd, "Dc": -t.Dc, "Ld": -t.Ld, "Lc": -t.Lc})
        return choose(flipped, tokens, busiest, need, -np.inf, offset, microbatch, comm_weight)
    monkeypatch.setattr(streamlayout, "choose", slowest)
    assert more.run(Case(cfg)).status == "fail"
    monkeypatch.undo()
    build = expertgrid.build

    def leaky(experts, rows, cols, shares, mode):
        g = build(experts, rows, cols, shares, mode)
        if mode == "multicast":
            g.dispatch.north[...] = 0.0
        return g
    expertgrid.grid.cache_clear()
    monkeypatch.setattr(expertgrid, "build", leaky)
    try:
        assert grids.run(Case(cfg)).status == "fail"
    finally:
        expertgrid.grid.cache_clear()


def test_the_cost_figure_legends_cover_no_bar(tmp_path):
    """pe_cost's legends sat inside its panels, over the bars (lower left on the throughput bars, which start at
    0): no legend overlaps a bar once drawn."""
    import wsemoe
    from wsemoe.report.figures import plots
    from wsemoe.report.figures.style import figure_bytes

    res = wsemoe.run_sweep({**BASE, "hardware": "cs2", "sparsity": {"vary": "num_experts_per_tok", "values": [8, 1],
                                                                    "hold": "active"},
                            "axes": {"workload.B": [1, 2, 4], "workload.G": [1, 4],
                                     "mapping.pe_dispatch": ["multicast", "unicast"]},
                            "zip": [{"hardware.pe_fabric": [False, True]}]}, out_root=tmp_path)
    fig = dict(plots.figures(res.path, only=["pe_cost"]))["pe_cost"]
    figure_bytes(fig, "png")
    renderer = fig._get_renderer()
    legends = [*fig.legends, *(ax.get_legend() for ax in fig.axes if ax.get_legend())]
    bars = [p.get_window_extent(renderer) for ax in fig.axes for p in ax.patches if p.get_height() > 0]
    assert legends and bars
    for legend in legends:
        box = legend.get_window_extent(renderer)
        assert not any(box.overlaps(b) for b in bars), legend.get_texts()[0].get_text()


def test_a_dense_model_runs_on_the_pe_fabric():
    """`eval --hardware cs2 --model llama-3.1-8b --set hardware.pe_fabric=true` was an internal error: a dense
    model is one expert, whose grid has no dispatch path, and its 0 hops came back a scalar beside the tile arrays.
    Now its FFN is one region, dispatch and combine pay their path overhead only, and no link carries a byte."""
    import wsemoe

    row, _ = wsemoe.explain(hardware="cs2", model="llama-3.1-8b", sets=["hardware.pe_fabric=true"])
    assert bool(row["feasible"]) and row["tokens_per_s"] > 0 and row["moe_dispatch_s"] == row["dispatch_path_s"]


@pytest.mark.parametrize("B,G", [(1, 1), (4, 8)])
def test_the_attention_batch_cap_per_node_sits_at_its_boundary(B, G):
    # The node cap solves both branches of the prefetch min(r·B, W_next): evaluated at B = 1, G = 1 the prefetch is
    # r·1 (2 MB a die), but at the cap (B = 86) the window streams all of the MoE weights (14.4 MB), so a cap taking
    # the prefetch as proportional to B would land far below the boundary; at B = 4, G = 8 the point itself is on
    # the capped branch. At the cap B the attention stage fits (g ≤ 0); at B + 1 it does not.
    cfg = load_config({**BASE, "workload": {**BASE["workload"], "B": B, "G": G}})
    cap = int(engine.evaluate_points(cfg)["attn_batch_cap_node"].iloc[0])
    at = load_config({**BASE, "axes": {"workload.B": [cap, cap + 1]}, "workload": {**BASE["workload"], "G": G}})
    g = engine.evaluate_points(at)["g_mem_attn"].to_numpy()
    assert g[0] <= 0 < g[1]


def test_the_expert_pipeline_paces_at_its_slope_not_its_first_step():
    # Qwen3-30B-A3B's expert (H 2048, F 768) on 31 × 187 PEs, chain reductions, on a CS-2 (4-wide SIMD). Per token:
    # up and gate 67 × ⌈9/4⌉ = 201 MAC cycles (⌈2048/31⌉ = 67 rows of ⌈1536/187⌉ = 9), SiLU·mul 7 operations on
    # ⌈768/187⌉ = 5 elements, 4 a cycle: 8.75, down's all-reduce 2 × ⌈2048/31⌉ = 134 wavelets: A = 343.75 cycles.
    # The SiLU·mul of n tokens takes ⌈5n/4⌉·7 cycles: 7 more from one token to two, 8.75 a token over many.
    key = streamlayout.Key(128, 8, 2048, 768, 2.0, 994, 750,
                           tuple((f, float(getattr(CS2, f))) for f in streamlayout.PE_FIELDS), "unicast")
    A, B = streamlayout.pipeline(key, np.array([31.0]), np.array([187.0]), "chain")
    assert A[0] == pytest.approx(343.75)
    ops = decode.ffn(2048, 768, 31.0, 187.0, key.facts(), 27136.0, 2.0, {"pattern": "chain", "levels": 2},
                     input_broadcast=True)
    exact = add(*(ops[o] for o in streamlayout.SWIGLU))["cycles"]
    assert A[0] * 27136 + B[0] == pytest.approx(exact, abs=7.0)   # within one rounding of the SiLU·mul's last word


@pytest.mark.parametrize("mode,recompute,moves", [("train", "full", 3), ("train", "none", 2), ("prefill", "none", 1)])
def test_the_all_to_all_runs_once_a_pass_of_tokens_not_once_a_forward_equivalent(mode, recompute, moves):
    # The backward of a dispatch is one combine of the input gradients and the backward of a combine one dispatch of
    # the output gradients: a step moves the tokens forward, back once, and forward again under full recompute (3),
    # though its matmuls run 4 forward-equivalents (backward 2×). Per move: the busiest PE link's 16-bit values,
    # one link cycle each, then the longest path's hops (no turn cycles on a CS-2) and one operator overhead (133).
    kept = {"recompute": recompute} if mode == "train" else {}   # recompute is training's (config/applies.py)
    cfg = load_config({**BASE, "workload": {**BASE["workload"], "mode": mode, **kept, "B": 1, "G": 8},
                       "mapping": {"pe_dispatch": "unicast"}})
    row = engine.evaluate_points(cfg).iloc[0]
    per_move = (row["dispatch_max_link_bytes"] / 2.0 + row["dispatch_max_hops"] + 133.0) / 1.1e9
    assert row["moe_dispatch_s"] == pytest.approx(moves * per_move, rel=1e-9)
    assert row["moe_combine_s"] == pytest.approx(moves * (row["combine_max_link_bytes"] / 2.0
                                                          + row["dispatch_max_hops"] + 133.0) / 1.1e9, rel=1e-9)


def test_choose_weighs_the_all_to_all_by_its_moves_per_pass():
    # Pipeline 1000 cycles and no traffic, against 600 cycles and 450 cycles of traffic a move: per pass of the
    # matmuls 1000 < 1050 with a move each pass; in training with full recompute (3 moves over 4 passes) 600 + 337.5.
    t = table(A=[10, 6], B=[0, 0], h=[10, 10], w=[10, 10], Dd=[0, 1])
    assert list(streamlayout.choose(t, [450], [100], [0])) == [0]
    assert list(streamlayout.choose(t, [450], [100], [0], comm_weight=0.75)) == [1]
