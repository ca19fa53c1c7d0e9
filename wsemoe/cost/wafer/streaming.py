"""A weight-streaming wafer at PE level (`hardware.pe_fabric`): what its PE fabric adds to the node-level model. One
callable per categorical group of points, like cost.comm.CommModel: `__call__(T, groups, tp)` gives the MoE stage's
token dispatch and combine on the PE mesh, the busiest expert region's pipelined matmuls (the stages' `regions`
term, cost/stagecost.py), the experts' layout, SRAM per PE with its constraints, and the attention batch caps.
The weights' way through the fabric's edge is a stage term of its own (cost/wafer/edge.py, via stagecost.terms).

Structures (candidate layouts with their region traffic) are built once per unique combination of what they depend
on and gathered per point (`streamlayout.table`); every output keeps the points' broadcast shape. Formulas:
docs/cost-model.md, "Weight streaming at PE level".
"""

from __future__ import annotations

import functools

import numpy as np

from wsemoe.cost.balance import routing
from wsemoe.cost.batch import layer_flops, micro_batch
from wsemoe.cost.comm import balance_key, comm_model, unique_rows
from wsemoe.cost.node import compute, weights
from wsemoe.cost.stagecost import compute_time, node_memory, passes_in, prefetch_parts, stage_work, terms
from wsemoe.cost.wafer import edge, expertgrid, geometry, pememory, streamlayout
from wsemoe.cost.wafer.fabric import pe_facts, program_rectangle, seconds

BOUNDS = np.array(["link", "latency"], dtype=object)   # what limits a dispatch or combine at PE level
CHOSEN = streamlayout.FIELDS


def passes(wl):
    """Forward-equivalents of a layer's matmuls per step: 1 in inference, 3 in training (two backward per forward),
    one more with full recompute."""
    return compute.pass_factor(wl.mode) + compute.recomputed_shares(wl.mode, wl.recompute)[0]


def moves(wl):
    """Times a step moves a layer's tokens through its dispatch and combine: once forward; in training once back
    (the gradients retrace the all-to-all: a combine's backward is one dispatch of the output gradients, a
    dispatch's one combine of the input gradients; no weight gradient crosses it, unlike a matmul's backward, which
    is two), and once more where full recompute reruns the forward."""
    return 1.0 + (wl.mode == "train") + compute.recomputed_shares(wl.mode, wl.recompute)[0]


def fabric_model(hw, m, wl, mp, bal=None, histogram=None):
    """The comm model of the points: the PE fabric's (`StreamingFabric`) on a weight-streaming wafer with
    `hardware.pe_fabric`, else the node-level one (`cost.comm.comm_model`, None when nothing crosses nodes)."""
    if hw.weight_source == "streamed" and getattr(hw, "pe_fabric", False):
        return StreamingFabric(hw, m, wl, mp, bal, histogram)
    return comm_model(hw, m, wl, mp, bal, histogram)


class StreamingFabric:
    """The PE fabric's terms for one categorical group of weight-streaming points (numeric fields may be arrays)."""

    def __init__(self, hw, m, wl, mp, bal=None, histogram=None):
        self.hw, self.m, self.wl, self.mp, self.bal, self.histogram = hw, m, wl, mp, bal, histogram

    def __call__(self, T, groups, tp) -> dict:
        hw, m, wl = self.hw, self.m, self.wl
        pe, shape = pe_facts(hw), micro_batch(hw, wl, self.mp)
        node = node_memory(hw, m, wl, self.mp, shape, weights.experts_per_node(m, shape.nodes))
        tables, inverse, pshape = self.tables(pe, T, node)
        T = np.broadcast_to(np.asarray(T, dtype=float), pshape)
        # the busiest region's tokens: a step's expected maximum over its routing of T tokens (routing.py), not the
        # hottest expert's expected k·p_max·T (they agree at a training step's 10⁵ tokens, not at a few)
        k = m.num_experts_per_tok
        copies = np.broadcast_to(T * k, pshape)
        busiest = np.clip(routing.busiest_expert([t.shares for t in tables], inverse.reshape(pshape), copies, k),
                          np.minimum(T, 1.0), T)
        imbalance = np.where(copies > 0, busiest * m.num_experts / np.where(copies > 0, copies, 1.0),
                             np.asarray([t.p_max for t in tables])[inverse].reshape(pshape) * m.num_experts)
        region = pememory.region_bytes(m, wl, T, busiest)
        base = pememory.moe_base(node, shape.nodes, pe)
        work = stage_work(hw, m, wl, self.mp, shape, layer_flops(m, wl, shape), {"expert_imbalance": imbalance})
        edges = self.edges(pe, work)
        floor, offset = self.rest(pe, shape, work, edges)
        pick = self.layouts(tables, inverse, pshape, (T, busiest, pememory.need_area(pe, base, region), floor, offset),
                            getattr(wl, "comm_overlap", "none") == "microbatch", moves(wl) / passes(wl))
        out = {**self.times(pe, T, busiest, pick), **edges, "expert_tokens": busiest}
        out.update(self.layout_columns(pick, imbalance))
        out.update(pememory.attention(pe, m, wl, node, shape.nodes, shape.groups))
        out.update(pememory.moe(pe, base, region, pick["h"] * pick["w"]))
        prefetch = prefetch_parts(hw, m, wl, shape)
        out["attn_batch_cap_node"] = pememory.node_cap(node, wl.B, prefetch)
        out["attn_batch_cap_pe"] = pememory.pe_cap(pe, m, wl, node, shape.nodes, shape.groups, prefetch)
        return out

    def structures(self, tp) -> list:
        """No node-to-node structure: the token all-to-all is on the PE mesh (`grids` lists its layouts)."""
        return []

    def grids(self) -> list:
        """Every expert grid (`expertgrid.Grid`) the points' candidate layouts use, once each (invariants)."""
        pe, shape = pe_facts(self.hw), micro_batch(self.hw, self.wl, self.mp)
        keys, _ = self.keys(pe, np.shape(shape.T))
        return [expertgrid.grid(k.experts, a, b, k.mode, k.bal) for k in keys
                for a, b in streamlayout.grid_shapes(k)]

    def keys(self, pe, shape) -> tuple[list[streamlayout.Key], np.ndarray]:
        """(unique keys, each point's key index) over the numeric fields the layouts depend on."""
        m, wl, bal = self.m, self.wl, self.bal
        rows, cols = program_rectangle(pe)
        numeric = [m.num_experts, m.num_experts_per_tok, m.hidden_size, m.moe_intermediate_size, wl.bytes_per_act,
                   rows, cols, *(getattr(pe, f) for f in streamlayout.PE_FIELDS)]
        numeric += [np.nan if v is None else v for v in geometry.balance_fields(bal)]   # unset: −1 in the keys
        stacked = np.stack([np.broadcast_to(np.asarray(v, dtype=float), shape).ravel() for v in numeric], axis=1)
        uniq, inverse = unique_rows(stacked)
        return [self.key(row) for row in uniq], inverse

    def key(self, row) -> streamlayout.Key:
        """The key of one unique row of numeric fields."""
        E, k, H, F, b, R, C, *rest = row
        facts, numeric = rest[:len(streamlayout.PE_FIELDS)], rest[len(streamlayout.PE_FIELDS):]
        bal = self.bal
        if bal is not None:
            zipf_s, seed, skew = numeric
            bk = balance_key(bal, (zipf_s, int(seed), 0, None if skew < 0 else skew,
                                   getattr(bal, "skew_devices", None)), self.histogram, int(k))
        else:
            bk = balance_key(None, None)
        return streamlayout.Key(int(E), int(k), int(H), int(F), float(b), int(R), int(C),
                                tuple(zip(streamlayout.PE_FIELDS, (float(f) for f in facts))),
                                getattr(self.mp, "pe_dispatch", "multicast"), bk)

    def tables(self, pe, T, node) -> tuple[list, np.ndarray, tuple]:
        """(candidate tables per unique key, each point's index, the points' broadcast shape)."""
        m, wl = self.m, self.wl
        # every swept field, not only those the layouts read: the chosen layout's floor and offset (`rest`) come
        # from the bandwidths, peaks and efficiencies, so the points' shape must hold their axes as well
        swept = [v for ns in (self.hw, wl, self.mp) for v in vars(ns).values() if isinstance(v, np.ndarray)]
        fields = [T, node["mem_moe_peak_node_bytes"], m.num_experts, m.num_experts_per_tok, m.moe_intermediate_size,
                  wl.bytes_per_act, *vars(pe).values(), *swept]
        pshape = np.broadcast_shapes(*(np.shape(f) for f in fields if not isinstance(f, str) and f is not None))
        keys, inverse = self.keys(pe, pshape)
        return [streamlayout.table(k) for k in keys], inverse, pshape

    def edges(self, pe, work: dict) -> dict:
        """`edge_<stage>_s`: each stage's stream through the fabric's edge per layer (cost/wafer/edge.py), the term
        cost/stagecost.stages adds beside the stage's weights term."""
        wl = self.wl
        return {f"edge_{name}_s": edge.stream_seconds(pe, passes_in(wl), w.weights.params, w.weights.nbytes, w.kept,
                                                      wl.bytes_per_act, wl.bytes_per_grad, wl.mode == "train")
                for name, w in work.items()}

    def rest(self, pe, shape, work: dict, edges: dict) -> tuple:
        """(floor, offset) in cycles per pass. The MoE layer's core is max(X, S + pipeline): X the largest of its
        other terms, S its regions term without the routed experts' pipeline (overlap layer: each term summed over
        the layer's stages; stage: the MoE stage's own). A layout is judged by max(floor, pipeline) + offset with
        floor = X − S and offset = S, the layer's own time (cost/node/stages.Layer)."""
        hw, wl = self.hw, self.wl
        names = ("attention", "moe") if wl.overlap == "layer" else ("moe",)
        own = [{**terms(hw, wl, compute_time(hw, wl, shape.nodes, *work[n].parts), work[n].weights, work[n].kv,
                        work[n].kept), "edge": edges[f"edge_{n}_s"]} for n in names]
        X = functools.reduce(np.maximum, [sum(o.get(k, 0.0) for o in own) for k in dict.fromkeys(k for o in own for k in o)])
        S = sum(o["compute"] for o in own) - compute_time(hw, wl, shape.nodes, work["moe"].parts[1])
        per = pe.clock_hz / passes(wl)
        return (X - S) * per, S * per

    @staticmethod
    def layouts(tables, inverse, pshape, per_point: tuple, microbatch: bool, comm_weight=1.0) -> dict:
        """Each point's chosen layout (`streamlayout.choose` on its tokens, busiest region's tokens, area needed,
        floor and offset; the all-to-all weighed by its moves per pass of the matmuls): the fields of its candidate
        (flattened per key, reshaped to the points)."""
        flat = {f: np.zeros(int(np.prod(pshape))) for f in CHOSEN}
        cols = [np.broadcast_to(x, pshape).ravel() for x in per_point]
        for i, t in enumerate(tables):
            at = np.flatnonzero(inverse == i)
            idx = streamlayout.choose(t, *(c[at] for c in cols), microbatch=microbatch, comm_weight=comm_weight)
            for f in CHOSEN:
                flat[f][at] = getattr(t, f)[idx]
        return {f: v.reshape(pshape) for f, v in flat.items()}

    def times(self, pe, T, busiest, pick: dict) -> dict:
        """Seconds per layer and micro-batch (all passes) of the busiest region's pipeline, its fill and drain, and
        the dispatch and combine (all moves; their paths and overheads apart), with what limits each and the
        dispatch's busiest PE link and longest path; the times that are columns as they are under `columns`."""
        P, M, wl = passes(self.wl), moves(self.wl), self.wl
        dispatch, combine = T * pick["Dd"], T * pick["Dc"]
        pipeline = seconds(P * (pick["A"] * busiest + pick["B"]), pe)
        return {"expert_pipeline_s": pipeline,
                "dispatch_s": seconds(M * (dispatch + pick["Ld"]), pe), "combine_s": seconds(M * (combine + pick["Lc"]), pe),
                "dispatch_bound": BOUNDS[(pick["Ld"] > dispatch).astype(int)],
                "combine_bound": BOUNDS[(pick["Lc"] > combine).astype(int)],
                "dispatch_max_link_bytes": T * pick["link"] * self.m.hidden_size * wl.bytes_per_act,
                "combine_max_link_bytes": T * pick["linkc"] * self.m.hidden_size * wl.bytes_per_act,
                "dispatch_max_hops": pick["hops"], "expert_pacing_cycles": pick["A"],
                "columns": {"expert_pipeline_s": pipeline, "expert_fill_s": seconds(P * pick["B"], pe),
                            "dispatch_path_s": seconds(M * pick["Ld"], pe), "combine_path_s": seconds(M * pick["Lc"], pe)}}

    def layout_columns(self, pick: dict, imbalance) -> dict:
        """The chosen layout: expert tiles (grid and PEs) and the busiest expert's load over the mean (a step's
        expected maximum)."""
        return {"expert_grid_rows": pick["a"], "expert_grid_cols": pick["b"], "expert_region_rows": pick["h"],
                "expert_region_cols": pick["w"], "expert_region_pes": pick["h"] * pick["w"],
                "expert_reduction": np.asarray(streamlayout.REDUCTIONS, dtype=object)[pick["pattern"].astype(int)],
                "expert_imbalance": imbalance}
