"""One design point (or an array of them): stage times, step time, throughput, MFU, memory, feasibility.

Layer time = attention stage (G tiles at B, + TP all-reduce) + MoE stage (router and experts
once on G·B, + dispatch and combine). `workload.overlap` states in one place how far weight
movement and memory traffic hide behind compute (stages.Layer); communication is serial.
Step time adds dense layers and the embedding/head; training counts forward and backward.
"""

from __future__ import annotations

import numpy as np

from wsemoe.cost import compute, memory, params, weights
from wsemoe.cost.stages import Layer, Stage, argmax_of


def _io_time(hw, wl, nbytes):
    """Seconds to move a stage's weights once per pass: streamed over the wafer I/O, or read from node memory."""
    if hw.weight_source == "streamed":
        passes_in = 2.0 if wl.mode == "train" else 1.0  # forward and backward each stream the weights
        t_in = passes_in * nbytes / hw.io_in_bw_bytes_per_s
        if wl.mode != "train":
            return t_in
        grads = nbytes / wl.bytes_per_weight * wl.bytes_per_grad
        return np.maximum(t_in, grads / hw.io_out_bw_bytes_per_s)
    return nbytes / hw.node_memory_bw_bytes_per_s


def _compute_time(hw, wl, flops, nodes, eff):
    """Seconds of compute for forward FLOPs spread over all nodes (backward and recompute added)."""
    factor = compute.pass_factor(wl.mode) + compute.recompute_factor(wl.mode, wl.recompute)
    return factor * flops / (nodes * hw.node_peak_flops * eff)


def evaluate(hw, m, wl, mp, comm=None) -> dict:
    """All output columns for the points described by hw, m, wl, mp (scalars or broadcast arrays).

    `comm`, if given, is a callable (T, groups, tp) -> {"allreduce_s", "dispatch_s", "combine_s"}
    per layer, from the mesh model; without it communication costs nothing (one group, no EP traffic).
    """
    nodes = hw.rows * hw.cols
    tp = nodes if mp.tp is None else mp.tp
    groups = nodes // tp
    seqs = groups * wl.G * wl.B
    T = compute.tokens(wl) * groups
    resident = hw.weight_source == "resident"

    # FLOPs, forward, one layer, one micro-batch (all groups).
    f_proj = compute.attn_proj_flops(m, T)
    f_core = compute.attn_core_flops(m, wl) * groups
    f_router = compute.router_flops(m, T)
    f_expert = compute.expert_flops(m, T)
    f_dense = compute.dense_ffn_flops(m, T)
    f_head = compute.head_flops(m, T)

    w = weights.layer_weight_bytes(m, wl)
    n_exp = compute.tokens_per_expert(m, T)
    eff = hw.matmul_efficiency
    eff_exp = compute.expert_efficiency(hw, n_exp)

    c = comm(T, groups, tp) if comm is not None else {}
    imbalance = c.get("expert_imbalance", 1.0)  # the expert stage runs at the busiest node's pace
    slots = c.get("expert_slots_max", weights.experts_per_node(m, nodes))  # copies on the fullest node
    # Weight bytes moved per stage: resident reads happen per node; streamed ones cross the wafer I/O.
    if resident:
        attn_w = wl.G * w["attn"] / tp  # each tile re-reads the group's attention shard
        # each hosted copy is read if any token reaches its expert (expected share of active experts)
        exp_w = slots * weights.active_experts(m, T) / m.num_experts * params.expert_params(m) \
            * wl.bytes_per_weight + (w["shared"] + w["router"]) / tp
        dense_w, head_w = w["dense_ffn"] / tp, w["head"] / tp
    else:
        attn_w, exp_w = w["attn"], w["experts"] + w["shared"] + w["router"]
        dense_w, head_w = w["dense_ffn"], w["head"]

    kv_bytes = 0.0
    if wl.mode != "train":
        kv_bytes = seqs * wl.seq_len * memory.kv_bytes_per_token_layer(m, wl) / nodes
    phase = {k: v for k, v in c.items() if k.endswith("_s") and not k.startswith("migration")}
    L, Lm = m.num_hidden_layers, params.moe_layers(m)
    attn = Stage("attention", {
        "compute": _compute_time(hw, wl, f_proj + f_core, nodes, eff),
        "weights": _io_time(hw, wl, attn_w),
        "memory": kv_bytes / hw.node_memory_bw_bytes_per_s,
    }, {k: phase[k] for k in ("allreduce_s", "gradient_s") if k in phase})
    moe = Stage("moe", {
        "compute": _compute_time(hw, wl, f_router + f_expert * imbalance, nodes, eff_exp),
        "weights": _io_time(hw, wl, exp_w),
    }, {k: phase[k] for k in ("dispatch_s", "combine_s") if k in phase})
    dense = Stage("dense_ffn", {
        "compute": _compute_time(hw, wl, f_dense, nodes, eff),
        "weights": _io_time(hw, wl, dense_w),
    })
    head = Stage("head", {
        "compute": _compute_time(hw, wl, f_head, nodes, eff),
        "weights": _io_time(hw, wl, head_w),
    })
    layers = (Layer("moe_layer", [attn, moe], Lm, wl.overlap),
              Layer("dense_layer", [attn, dense], L - Lm, wl.overlap),
              Layer("head", [head], 1, wl.overlap))

    # Migration the balancer could not hide is paid once per step, on the critical path.
    step = sum(la.count * la.time_s for la in layers) + c.get("migration_exposed_s", 0.0)
    model_flops = compute.pass_factor(wl.mode) * (
        L * (f_proj + f_core) + Lm * (f_router + f_expert) + (L - Lm) * f_dense + f_head)
    # Outputs may stay scalars where nothing varies; the engine broadcasts them to the frame.
    out = {
        "tokens_per_microbatch": T,
        "sequences_per_microbatch": seqs,
        "tokens_per_expert": n_exp,
        "expert_efficiency": eff_exp,
        "attn_proj_flops": f_proj, "attn_core_flops": f_core,
        "router_flops": f_router, "expert_flops": f_expert,
        "model_flops_per_step": model_flops,
        "step_time_s": step,
        "tokens_per_s": T / step,
        "sequences_per_s": seqs / step,
        "mfu": model_flops / (step * nodes * hw.node_peak_flops),
        "per_device_moe_tokens_per_s": T / (layers[0].time_s * nodes),
        "moe_comm_s": sum(phase.get(k, 0.0) for k in ("allreduce_s", "dispatch_s", "combine_s")),
    }
    out.update({k: v for k, v in c.items() if not k.endswith("_s") or k.startswith("migration")})
    for la in layers:
        out[f"{la.name}_time_s"] = la.time_s
    for st in (attn, moe, dense, head):
        out[f"{st.name}_time_s"] = st.time(wl.overlap != "none")
        for term, v in {**st.terms, **st.comm}.items():
            out[f"{st.name}_{term.removesuffix('_s')}_s"] = v
    out["bound"] = _step_bound(layers, step)
    out.update(memory.memory_terms(hw, m, wl, groups, T, seqs,
                                   weights.resident_weights_node(hw, m, wl, tp, slots), nodes))
    return out


def _step_bound(layers, step):
    """`layer:term` of the layer kind that takes the largest share of the step."""
    _, idx = argmax_of([la.count * la.time_s + 0.0 * step for la in layers])
    offsets = np.cumsum([0] + [len(la.labels) for la in layers[:-1]])
    code = np.zeros(np.shape(step), dtype=np.int16)
    for i, (la, o) in enumerate(zip(layers, offsets)):
        code = np.where(idx == i, la.bound_idx + o, code)
    labels = np.asarray([lab for la in layers for lab in la.labels], dtype=object)
    return labels[code]
