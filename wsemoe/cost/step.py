"""One design point (or an array of them): stage times, step time, throughput, MFU, memory, feasibility.

Layer time = attention stage (G tiles at B, + TP all-reduce) + MoE stage (router and experts
once on G·B, + dispatch, combine and the output reduction). `workload.overlap` states in one place
how far weight movement and memory traffic hide behind compute (stages.Layer); `workload.comm_overlap`
whether communication follows the core or hides behind a second micro-batch's core. Resident weights and
the KV cache share one memory, so they are one HBM term. Step time adds dense layers and the
embedding/head; training counts forward and backward.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import NamedTuple

import numpy as np

from wsemoe.cost.node import compute, memory, params, weights
from wsemoe.cost.fabric import topology
from wsemoe.cost.balance.migration import Window
from wsemoe.cost.node.stages import Coded, Layer, Stage, argmax_of

# Communication phases each stage runs after its concurrent terms (serial unless comm_overlap hides them).
STAGE_COMM = {"attention": ("allreduce_s", "gradient_s"), "moe": ("dispatch_s", "combine_s", "reduce_s")}


class Shape(NamedTuple):
    """How one micro-batch spreads over the nodes."""

    nodes: int
    tp: object      # nodes per attention group (array or scalar)
    groups: object  # attention groups
    seqs: object    # sequences per micro-batch, all groups
    T: object       # tokens per micro-batch, all groups


class Flops(NamedTuple):
    """Forward FLOPs of one layer and one micro-batch, by stage (all groups)."""

    proj: object
    core: object
    router: object
    expert: object
    dense: object
    head: object


def evaluate(hw, m, wl, mp, comm=None, coded: bool = False) -> dict:
    """All output columns for the points described by hw, m, wl, mp (scalars or broadcast arrays).

    `comm`, if given, is a callable (T, groups, tp) -> {"allreduce_s", "dispatch_s", "combine_s", ...}
    per layer, from the fabric model; without it communication costs nothing (one group, no EP traffic).
    
    Outputs keep the broadcast shape of the inputs they depend on (a scalar when they depend on none).
    With `coded`, `bound` is a `Coded` (integer codes and their labels) instead of an array of strings.
    """
    wl = with_batch(hw, wl, mp)
    shape = micro_batch(hw, wl, mp)
    flops = layer_flops(m, wl, shape)
    c = comm(shape.T, shape.groups, shape.tp) if comm is not None else {}
    (attn, moe, dense, head), work = stages(hw, m, wl, mp, shape, flops, c)
    L, Lm = m.num_hidden_layers, params.moe_layers(m)
    co = getattr(wl, "comm_overlap", "none")
    # Under HER a dense layer dispatches nothing, so its attention needs only the home wafer's all-reduce.
    attn_dense = attn if "dense_allreduce_s" not in c else \
        Stage("attention", attn.terms, {**attn.comm, "allreduce_s": c["dense_allreduce_s"]})
    layers = (Layer("moe_layer", [attn, moe], Lm, wl.overlap, co),
              Layer("dense_layer", [attn_dense, dense], L - Lm, wl.overlap, co),
              Layer("head", [head], 1, wl.overlap, co))
    if comm is not None and hasattr(comm, "migration"):
        c.update(comm.migration(idle_windows(layers, co)))
    # Migration the balancer could not hide is paid once per step, on the critical path.
    step = sum(la.count * la.time_s for la in layers) + c.get("migration_exposed_s", 0.0)
    out = throughput(hw, m, wl, shape, flops, layers, step, c)
    out.update(_stage_columns(wl, layers, (attn, moe, dense, head)))
    for name, w in work.items():  # each stage on the roofline: FLOPs executed against bytes on its weight path
        out[f"{name}_hw_flops"], out[f"{name}_traffic_bytes"] = w.flops, traffic_bytes(hw, wl, w, shape.nodes)
    if "dense_allreduce_s" in c:  # HER: a dense layer all-reduces on its home wafer only
        out["dense_layer_allreduce_s"] = c["dense_allreduce_s"]
    out["per_device_moe_block_tokens_per_s"] = shape.T / (out["moe_time_s"] * shape.nodes)
    out.update(_balance_columns(hw, m, wl, shape, flops, c))
    bound = _step_bound(layers, step)
    out["bound"] = bound if coded else bound.decode()
    out["kept_act_io_bytes"] = streamed_kept_bytes(hw, m, wl, shape)
    slots = c.get("expert_slots_max", weights.experts_per_node(m, shape.nodes))
    out.update(memory.memory_terms(hw, m, wl, shape.groups, shape.T, shape.seqs,
                                   weights.resident_weights_node(hw, m, wl, shape.tp, slots), shape.nodes,
                                   kv_node(hw, m, wl, mp, shape), co == "microbatch"))
    return out


def _stage_columns(wl, layers, stage_list) -> dict:
    """Per-layer and per-stage times, and every stage's terms and communication phases."""
    co = getattr(wl, "comm_overlap", "none")
    out = {f"{la.name}_time_s": la.time_s for la in layers}
    for st in stage_list:
        out[f"{st.name}_time_s"] = st.time(wl.overlap != "none", co)
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


def with_batch(hw, wl, mp):
    """The workload with B set from tokens_per_device (decode): B = tokens_per_device·tp/G; else unchanged."""
    per_device = getattr(wl, "tokens_per_device", None)
    if per_device is None:
        return wl
    nodes = topology.system_nodes(hw)
    tp = nodes if mp.tp is None else mp.tp
    fields = wl.model_dump() if hasattr(wl, "model_dump") else dict(vars(wl))
    fields["B"] = per_device * tp / wl.G
    return SimpleNamespace(**fields)


def micro_batch(hw, wl, mp) -> Shape:
    """Nodes, TP groups and the tokens of one micro-batch (every group runs its own G·B sequences)."""
    nodes = topology.system_nodes(hw)
    tp = nodes if mp.tp is None else mp.tp
    groups = nodes // tp
    return Shape(nodes, tp, groups, groups * wl.G * wl.B, compute.tokens(wl) * groups)


def kv_node(hw, m, wl, mp, shape: Shape):
    """KV cache a node holds: its group's sequences × context × layers × what one TP rank keeps per token.

    A weight-streaming wafer runs attention as one group over the whole fabric, not as TP ranks
    splitting heads: its cache spreads evenly over the dies.
    """
    if wl.mode == "train":
        return 0.0
    if hw.weight_source == "streamed":
        return shape.seqs * wl.seq_len * m.num_hidden_layers * memory.kv_bytes_per_token_layer(m, wl) / shape.nodes
    per_rank = memory.kv_bytes_per_rank(m, wl, shape.tp, getattr(mp, "mla_cache", "replicated"))
    return shape.seqs / shape.groups * wl.seq_len * m.num_hidden_layers * per_rank


def layer_flops(m, wl, shape: Shape) -> Flops:
    """Forward FLOPs per stage for one layer and one micro-batch."""
    T = shape.T
    return Flops(compute.attn_proj_flops(m, T), compute.attn_core_flops(m, wl) * shape.groups,
                 compute.router_flops(m, T), compute.expert_flops(m, T), compute.dense_ffn_flops(m, T),
                 compute.head_flops(m, T))


def _io_time(hw, wl, nbytes, kept=0.0):
    """Seconds to move a stage's weights once per pass: streamed over the wafer I/O, or read from node memory.

    `kept` bytes of activations leave over the same I/O after the forward pass and come back for the
    backward pass (kept_activations: streamed); weights in and gradients out share it, full duplex.
    """
    if hw.weight_source == "streamed":
        passes_in = 2.0 if wl.mode == "train" else 1.0  # forward and backward each stream the weights
        t_in = (passes_in * nbytes + kept) / hw.io_in_bw_bytes_per_s
        if wl.mode != "train":
            return t_in
        grads = nbytes / wl.bytes_per_weight * wl.bytes_per_grad
        return np.maximum(t_in, (grads + kept) / hw.io_out_bw_bytes_per_s)
    return nbytes / hw.node_memory_bw_bytes_per_s


def _compute_time(hw, wl, flops, nodes, eff, recomputed=0.0):
    """Seconds of compute: forward FLOPs × (1 forward + 2 backward when training), plus the forward
    FLOPs recomputed to rebuild dropped activations, spread over all nodes at efficiency `eff`."""
    return (compute.pass_factor(wl.mode) * flops + recomputed) / (nodes * hw.node_peak_flops * eff)


def _stage_weight_bytes(hw, m, wl, shape: Shape, slots) -> dict:
    """Weight bytes each stage moves per pass: resident reads happen per node; streamed ones cross the wafer I/O."""
    w = weights.layer_weight_bytes(m, wl)
    if hw.weight_source != "resident":
        return {"attn": w["attn"], "moe": w["experts"] + w["shared"] + w["router"],
                "dense": w["dense_ffn"], "head": w["head"]}
    # each hosted copy is read if any token reaches its expert (expected share of active experts)
    experts = slots * weights.active_experts(m, shape.T) / m.num_experts * params.expert_params(m) * wl.bytes_per_weight
    return {"attn": wl.G * w["attn"] / shape.tp,  # each tile re-reads the group's attention shard
            "moe": experts + (w["shared"] + w["router"]) / shape.tp,
            "dense": w["dense_ffn"] / shape.tp, "head": w["head"] / shape.tp}


def streamed_kept_bytes(hw, m, wl, shape: Shape):
    """Activation bytes of one layer and micro-batch streamed out and back in (0 when kept in node memory)."""
    if memory.kept_in_node_memory(hw):
        return 0.0 * shape.T
    return shape.T * memory.kept_bytes_per_token_layer(m, wl)


class Work(NamedTuple):
    """What one stage does per layer and micro-batch, from which its roofline terms follow."""

    flops: object        # FLOPs executed: forward × passes + recomputed (experts at the busiest node's load)
    eff: object          # achieved fraction of peak of its matmuls
    weights: object      # weight bytes per pass (streamed: over the wafer I/O; resident: read per node)
    kv: object = None    # KV-cache bytes read per node (attention, inference)
    kept: object = 0.0   # activation bytes streamed out and back in (kept_activations: streamed)


def stage_work(hw, m, wl, mp, shape: Shape, flops: Flops, c: dict) -> dict:
    """{stage: Work} of the attention, MoE, dense-FFN and head stages."""
    eff, P = hw.matmul_efficiency, compute.pass_factor(wl.mode)
    eff_exp = compute.expert_efficiency(hw, compute.tokens_per_expert(m, shape.T))
    imbalance = c.get("expert_imbalance", 1.0)  # the expert stage runs at the busiest node's pace
    wbytes = _stage_weight_bytes(hw, m, wl, shape, c.get("expert_slots_max", weights.experts_per_node(m, shape.nodes)))
    kv_bytes = kv_node(hw, m, wl, mp, shape) / m.num_hidden_layers   # one layer's cache, read once per step
    full, core = compute.recomputed_shares(wl.mode, wl.recompute)
    attn, moe = flops.proj + flops.core, flops.router + flops.expert * imbalance
    return {"attention": Work(P * attn + (full * attn + core * flops.core), eff, wbytes["attn"], kv_bytes,
                              streamed_kept_bytes(hw, m, wl, shape)),  # the layer input is what is kept
            "moe": Work(P * moe + full * moe, eff_exp, wbytes["moe"]),
            "dense_ffn": Work(P * flops.dense + full * flops.dense, eff, wbytes["dense"]),
            "head": Work(P * flops.head + full * flops.head, eff, wbytes["head"])}


def _terms(hw, wl, w: Work, nodes) -> dict:
    """A stage's roofline terms: compute, and resident weights with the KV cache as one HBM term (they share
    one memory); streamed weights cross the wafer I/O, a resource apart from the node memory's KV reads."""
    flops_time = w.flops / (nodes * hw.node_peak_flops * w.eff)
    kv = 0.0 if w.kv is None else w.kv
    if hw.weight_source == "resident":
        return {"compute": flops_time, "hbm": (w.weights + kv) / hw.node_memory_bw_bytes_per_s}
    terms = {"compute": flops_time, "weights": _io_time(hw, wl, w.weights, w.kept)}
    if w.kv is not None:
        terms["memory"] = kv / hw.node_memory_bw_bytes_per_s
    return terms


def traffic_bytes(hw, wl, w: Work, nodes):
    """Bytes on a stage's weight path per layer and micro-batch (the roofline's memory side): streamed, what
    enters over the wafer I/O (weights every pass in, kept activations back); resident, the weights and KV
    cache a node reads, times the nodes (the busiest node's reads, as the HBM term charges them)."""
    if hw.weight_source == "streamed":
        return (2.0 if wl.mode == "train" else 1.0) * w.weights + w.kept
    return (w.weights + (0.0 if w.kv is None else w.kv)) * nodes


def stages(hw, m, wl, mp, shape: Shape, flops: Flops, c: dict) -> tuple[list, dict]:
    """([attention, MoE, dense-FFN, head] stages, each a roofline of named terms plus its communication; their
    Work)."""
    work = stage_work(hw, m, wl, mp, shape, flops, c)
    phase = {k: v for k, v in c.items() if k.endswith("_s") and not k.startswith("migration")}
    built = [Stage(name, _terms(hw, wl, w, shape.nodes), {k: phase[k] for k in STAGE_COMM.get(name, ()) if k in phase})
             for name, w in work.items()]
    return built, work


def throughput(hw, m, wl, shape: Shape, flops: Flops, layers, step, c: dict) -> dict:
    """Throughput, MFU and the per-micro-batch counts (outputs may stay scalars; the engine broadcasts)."""
    L, Lm = m.num_hidden_layers, params.moe_layers(m)
    model_flops = compute.pass_factor(wl.mode) * (
        L * (flops.proj + flops.core) + Lm * (flops.router + flops.expert) + (L - Lm) * flops.dense + flops.head)
    phase = {k: v for k, v in c.items() if k.endswith("_s") and not k.startswith("migration")}
    n_exp = compute.tokens_per_expert(m, shape.T)
    out = {
        "tokens_per_microbatch": shape.T,
        "sequences_per_microbatch": shape.seqs,
        "tokens_per_expert": n_exp,
        "expert_efficiency": compute.expert_efficiency(hw, n_exp),
        "attn_proj_flops": flops.proj, "attn_core_flops": flops.core,
        "router_flops": flops.router, "expert_flops": flops.expert,
        "model_flops_per_step": model_flops,
        "step_time_s": step,
        "tokens_per_s": shape.T / step,
        "sequences_per_s": shape.seqs / step,
        "mfu": model_flops / (step * shape.nodes * hw.node_peak_flops),
        "per_device_moe_tokens_per_s": shape.T / (layers[0].time_s * shape.nodes),
        "moe_comm_s": sum(phase.get(k, 0.0) for k in ("allreduce_s", "dispatch_s", "combine_s", "reduce_s")),
        "tokens_per_device": shape.T / shape.nodes,
        "attention_batch": wl.B + 0.0 * shape.T,
    }
    out.update({k: v for k, v in c.items() if not k.endswith("_s") or k.startswith("migration")})
    return out


def _balance_columns(hw, m, wl, shape: Shape, flops: Flops, c: dict) -> dict:
    """What balancing saves and costs on the busiest node, per MoE layer: expert compute saved by the lower
    imbalance, and HBM time spent reading the replica copies it added (resident weights)."""
    if "expert_imbalance" not in c:
        return {}
    eff_exp = compute.expert_efficiency(hw, compute.tokens_per_expert(m, shape.T))
    saved = flops.expert * (c["imbalance_before"] - c["expert_imbalance"])
    extra = 0.0 * shape.T
    if hw.weight_source == "resident":
        copies = c["expert_slots_max"] - c["expert_slots_before"]
        extra = copies * weights.active_experts(m, shape.T) / m.num_experts * params.expert_params(m) \
            * wl.bytes_per_weight / hw.node_memory_bw_bytes_per_s
    return {"moe_balance_saving_s": _compute_time(hw, wl, saved, shape.nodes, eff_exp), "moe_replica_hbm_s": extra}


def _step_bound(layers, step) -> Coded:
    """`layer:term` of the layer kind that takes the largest share of the step, as codes into the labels."""
    _, idx = argmax_of([la.count * la.time_s + 0.0 * step for la in layers])
    offsets = np.cumsum([0] + [len(la.labels) for la in layers[:-1]])
    code = np.zeros(np.shape(step), dtype=np.int16)
    for i, (la, o) in enumerate(zip(layers, offsets)):
        code = np.where(idx == i, la.bound_idx + o, code)
    return Coded(code, tuple(lab for la in layers for lab in la.labels))
