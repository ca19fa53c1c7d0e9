"""One design point (or an array of them): stage times, step time, throughput, MFU, memory, feasibility.

Layer time = attention stage (G tiles at B, + TP all-reduce) + MoE stage (router and experts
once on G·B, + dispatch, combine and the output reduction). `workload.overlap` states in one place
how far weight movement and memory traffic hide behind compute (stages.Layer); `workload.comm_overlap`
whether communication follows the core or hides behind a second micro-batch's core. Resident weights and
the KV cache share one memory, so they are one HBM term. Step time adds dense layers and the
embedding/head; training counts forward and backward.
"""

from __future__ import annotations

import numpy as np

from wsemoe.cost.balance.migration import Window
from wsemoe.cost.batch import Flops, Shape, layer_flops, micro_batch, with_batch, with_kernel
from wsemoe.cost.node import compute, formats, params, weights
from wsemoe.cost.node.stages import Coded, Layer, Stage, argmax_of
from wsemoe.cost.stagecost import (STAGE_COMM, compute_time, ideal_seconds, node_memory, roofline_columns, shared_split,
                                   stage_work, work_columns,
                                   stages, streamed_kept_bytes)

__all__ = ["STAGE_COMM", "evaluate", "micro_batch", "with_batch"]


def evaluate(hw, m, wl, mp, comm=None, coded: bool = False) -> dict:
    """All output columns for the points described by hw, m, wl, mp (scalars or broadcast arrays).

    `comm`, if given, is a callable (T, groups, tp) -> {"allreduce_s", "dispatch_s", "combine_s", ...}
    per layer, from the fabric model; without it communication costs nothing (one group, no EP traffic).
    
    Outputs keep the broadcast shape of the inputs they depend on (a scalar when they depend on none).
    With `coded`, `bound` is a `Coded` (integer codes and their labels) instead of an array of strings.
    """
    wl = with_kernel(hw, with_batch(hw, wl, mp))
    shape = micro_batch(hw, wl, mp)
    flops = layer_flops(m, wl, shape)
    c = comm(shape.T, shape.groups, shape.tp) if comm is not None else {}
    extra = c.pop("columns", {})   # columns a fabric model reports as they are (the PE fabric's times)
    work = stage_work(hw, m, wl, mp, shape, flops, c)
    attn, moe, dense, head = stages(hw, m, wl, shape, work, c)
    L, Lm = m.num_hidden_layers, params.moe_layers(m)
    co = getattr(wl, "comm_overlap", "none")
    # Under HER a dense layer dispatches nothing, so its attention needs only the home wafer's all-reduce.
    attn_dense = attn if "dense_allreduce_s" not in c else \
        Stage("attention", attn.terms, {**attn.comm, "allreduce_s": c["dense_allreduce_s"]}, attn.launch)
    layers = (Layer("moe_layer", [attn, moe], Lm, wl.overlap, co),
              Layer("dense_layer", [attn_dense, dense], L - Lm, wl.overlap, co),
              Layer("head", [head], 1, wl.overlap, co))
    if comm is not None and hasattr(comm, "migration"):
        c.update(comm.migration(idle_windows(layers, co)))
    # Migration the balancer could not hide is paid once per step, on the critical path.
    step = sum(la.count * la.time_s for la in layers) + c.get("migration_exposed_s", 0.0)
    out = throughput(hw, m, wl, shape, flops, layers, step, c)
    out.update(extra)
    out.update(_stage_columns(wl, layers, (attn, moe, dense, head)))
    out.update(roofline_columns(hw, wl, work, shape.nodes))   # each stage's FLOPs, bytes, roof: its terms' numerators
    out.update(work_columns(hw, m, wl, stage_work(hw, m, wl, mp, shape, flops, c, mean=True), shape.nodes))
    if "dense_allreduce_s" in c:  # HER: a dense layer all-reduces on its home wafer only
        out["dense_layer_allreduce_s"] = c["dense_allreduce_s"]
    out["per_device_moe_block_tokens_per_s"] = shape.T / (out["moe_time_s"] * shape.nodes)
    out.update(_balance_columns(hw, m, wl, shape, flops, c))
    bound = _step_bound(layers, step, c.get("migration_exposed_s", 0.0))
    out["bound"] = bound if coded else bound.decode()
    out["kept_act_io_bytes"] = streamed_kept_bytes(hw, m, wl, shape)
    out.update(node_memory(hw, m, wl, mp, shape, c.get("expert_slots_max", weights.experts_per_node(m, shape.nodes)),
                           c.get("expert_optimizer_shares_max"), shared_split(wl, shape, c)))
    return out


def _stage_columns(wl, layers, stage_list) -> dict:
    """Per-layer and per-stage times, and every stage's terms, kernel launches and communication phases."""
    co = getattr(wl, "comm_overlap", "none")
    out = {f"{la.name}_time_s": la.time_s for la in layers}
    for st in stage_list:
        out[f"{st.name}_time_s"] = st.time(wl.overlap != "none", co)
        out[f"{st.name}_launch_s"] = st.launch
        for term, v in {**st.terms, **st.comm}.items():
            out[f"{st.name}_{term.removesuffix('_s')}_s"] = v
    return out


def idle_windows(layers, comm_overlap: str) -> list:
    """Windows of a step in which no phase uses the links: each layer's core time (compute and memory), or
    with interleaved micro-batches only the part of it that the other micro-batch's communication leaves."""
    out = []
    for la in layers:
        idle = np.maximum(la.core_s - la.comm_s, 0.0) if comm_overlap == "microbatch" else la.core_s
        out.append(Window(idle, 0.0, la.count, None))
    return out


def throughput(hw, m, wl, shape: Shape, flops: Flops, layers, step, c: dict) -> dict:
    """Throughput, MFU and the per-micro-batch counts (outputs may stay scalars; the engine broadcasts)."""
    L, Lm = m.num_hidden_layers, params.moe_layers(m)
    model_flops = compute.pass_factor(wl.mode) * (
        L * (flops.proj + flops.core) + Lm * (flops.router + flops.expert) + (L - Lm) * flops.dense + flops.head)
    ideal_executed = ideal_seconds(hw, wl, m, flops._replace(core=flops.core * flops.core_share))
    phase = {k: v for k, v in c.items() if k.endswith("_s") and not k.startswith("migration")}
    n_exp = compute.tokens_per_expert(m, shape.T)
    # MFU's peak: what the model FLOPs could reach, each at the peak of its format (node_peak_flops when all
    # are 16-bit), so MFU stays at most the matmul efficiency whatever the formats.
    format_peak = model_flops / ideal_seconds(hw, wl, m, flops)
    out = {
        "tokens_per_microbatch": shape.T,
        "sequences_per_microbatch": shape.seqs,
        "tokens_per_expert": n_exp,
        "expert_efficiency": compute.expert_efficiency(hw, n_exp),
        "attn_proj_flops": flops.proj, "attn_core_flops": flops.core,
        "router_flops": flops.router, "expert_flops": flops.expert,
        "model_flops_per_step": model_flops,
        "attn_core_executed_share": flops.core_share + 0.0 * shape.T,
        "step_time_s": step,
        "tokens_per_s": shape.T / step,
        "sequences_per_s": shape.seqs / step,
        "format_peak_flops": format_peak + 0.0 * shape.T,
        "attention_peak_flops": formats.peak(hw, getattr(wl, "attn_weight_format", formats.HIGH)) + 0.0 * shape.T,
        "expert_peak_flops": formats.peak(hw, getattr(wl, "expert_weight_format", formats.HIGH)) + 0.0 * shape.T,
        "mfu": model_flops / (step * shape.nodes * format_peak),
        "executed_mfu": ideal_executed / (step * shape.nodes) + 0.0 * shape.T,
        "per_device_tokens_per_s": shape.T / (step * shape.nodes),
        "per_device_moe_tokens_per_s": shape.T / (layers[0].time_s * shape.nodes),
        "moe_comm_s": sum(phase.get(k, 0.0) for k in ("allreduce_s", "dispatch_s", "combine_s", "reduce_s")),
        "tokens_per_device": shape.T / shape.nodes,
        "attention_batch": wl.B + 0.0 * shape.T,
    }
    out.update({k: v for k, v in c.items()
                if not k.endswith("_s") or k.startswith("migration") or k.endswith("_fixed_s")})
    return out


def _balance_columns(hw, m, wl, shape: Shape, flops: Flops, c: dict) -> dict:
    """What balancing saves and costs on the busiest node, per MoE layer: expert compute saved by the lower
    imbalance, and HBM time spent reading the replica copies it added (resident weights)."""
    if "imbalance_before" not in c:   # no balancer here (or the PE fabric's regions, one expert each)
        return {}
    eff_exp = compute.expert_efficiency(hw, compute.tokens_per_expert(m, shape.T))
    saved = flops.routed * (c["imbalance_before"] - c["expert_imbalance"])   # shared experts are never imbalanced
    extra = 0.0 * shape.T
    if hw.weight_source == "resident":
        copies = c["expert_slots_max"] - c["expert_slots_before"]
        extra = copies * weights.active_experts(m, shape.T) / m.num_experts * weights.expert_copy_bytes(m, wl) \
            / hw.node_memory_bw_bytes_per_s
    fmt = getattr(wl, "expert_weight_format", formats.HIGH)
    return {"moe_balance_saving_s": compute_time(hw, wl, shape.nodes, (saved, 0.0, fmt, eff_exp)),
            "moe_replica_hbm_s": extra}


def _step_bound(layers, step, migration=0.0) -> Coded:
    """`layer:term` of the layer kind that takes the largest share of the step, as codes into the labels; or
    `comm:migration` where the balancer's exposed migration (paid once per step, beside the layers) takes more of
    the step than any layer kind."""
    _, idx = argmax_of([la.count * la.time_s + 0.0 * step for la in layers] + [migration + 0.0 * step])
    offsets = np.cumsum([0] + [len(la.labels) for la in layers])
    code = np.full(np.shape(step), offsets[-1], dtype=np.int16)   # the migration label, after every layer's
    for i, (la, o) in enumerate(zip(layers, offsets)):
        code = np.where(idx == i, la.bound_idx + o, code)
    return Coded(code, tuple(lab for la in layers for lab in la.labels) + ("comm:migration",))
