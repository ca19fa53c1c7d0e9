"""The four stages of a layer (attention, MoE, dense FFN, head): each a roofline of named terms (compute at its
operands' format peak, weight movement, KV reads), a serial kernel-launch term, and its fabric phases.

Resident weights and the KV cache share one memory, so they are one HBM term; streamed weights cross the
wafer I/O, a resource apart from the node memory's KV reads. What a stage does (`Work`) is stated once; its
terms and its place on the roofline (`roofline_columns`) both follow from it, so the columns are the
numerators of the terms.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from wsemoe.cost.batch import Flops, Shape, layer_flops
from wsemoe.cost.node import compute, formats, kernels, memory, params, weights
from wsemoe.cost.node.stages import Stage

# Communication phases each stage runs after its concurrent terms (serial unless comm_overlap hides them).
STAGE_COMM = {"attention": ("allreduce_s", "gradient_s"),
              "moe": ("dispatch_s", "combine_s", "reduce_s", "gradient_s",   # gradient: the router's (training)
                      "load_s"),   # the experts' token counts a correction bias moves by (training)
              "dense_ffn": ("allreduce_s", "gradient_s")}   # gradient: the norms' (training, no MoE layers)
# The phase of the fabric model behind a stage's communication term, where its name differs from the term's.
COMM_SOURCE = {("dense_ffn", "allreduce_s"): "ffn_allreduce_s", ("moe", "gradient_s"): "router_gradient_s",
               ("dense_ffn", "gradient_s"): "ffn_gradient_s", ("moe", "load_s"): "expert_load_s"}


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


def shared_split(wl, shape: Shape, c: dict):
    """Ways a node's TP group splits the MoE stage's shared experts (the router is whole: `router_tokens`): `tp`
    where every member holds all of its group's tokens (the replicated flow, `token_flow`), 1 in serving under
    the slice flow, where each member holds only its own 1/tp of them: it routes its slice and runs the whole
    shared experts on it, so it holds and reads them whole (the same FLOPs; no collective). That is what every
    serving engine does when the tokens are sliced over the attention-TP ranks before the MoE: SGLang builds the
    shared experts with tp_size=1 under its all-to-all backends (DeepEP, Mooncake, FlashInfer), whose MoE layers
    run SCATTERED (github.com/sgl-project/sglang: python/sglang/srt/models/deepseek_v2.py, DeepseekV2MoE;
    python/sglang/srt/layers/communicator.py, _compute_mlp_mode); vLLM's sequence-parallel MoE replicates them,
    "no collective ops are needed" (github.com/vllm-project/vllm: vllm/model_executor/models/deepseek_v2.py,
    DeepseekV2MLP is_sequence_parallel); TensorRT-LLM's attention DP sets shared_tp_size = 1
    (github.com/NVIDIA/TensorRT-LLM: tensorrt_llm/_torch/models/modeling_deepseekv3.py,
    _compute_shared_expert_tp_size); the three replicate the gate. Training keeps `tp`: Megatron-Core's shared
    expert stays TP-split under sequence parallelism, gathering its group's tokens and reduce-scattering its output
    (github.com/NVIDIA/Megatron-LM: megatron/core/transformer/moe/shared_experts.py); that gather and
    reduce-scatter ride the MoE output reduction (structure.Collectives.gather_shared)."""
    flow = c.get("token_flow")
    if flow is None or wl.mode == "train":   # no fabric model: one group, every member holds every token
        return shape.tp
    return np.where(np.asarray(flow) == "slice", 1, shape.tp)


def router_tokens(hw, wl, shape: Shape, c: dict):
    """Tokens a node routes, over its even share of the step's (T / nodes). Every engine holds the gate (E × H)
    whole on every rank, and each rank routes the tokens it holds: SGLang's MoEGate is one unsplit
    (n_routed_experts, hidden_size) parameter (github.com/sgl-project/sglang:
    python/sglang/srt/models/deepseek_v2.py), vLLM's gate a ReplicatedLinear / GateLinear
    (github.com/vllm-project/vllm: vllm/model_executor/models/deepseek_v2.py, qwen3_moe.py), TensorRT-LLM's
    DeepseekV3Gate one (num_experts, hidden_size) weight (github.com/NVIDIA/TensorRT-LLM:
    tensorrt_llm/_torch/models/modeling_deepseekv3.py). So in serving's replicated flow every member routes all of
    its group's tokens (tp times its share: the gate's FLOPs are not split by TP, as the attention projections TP
    cannot split are not, `busiest_rank`), and under the slice flow its own slice (1). Training routes the
    sequence-parallel slice (1): Megatron-Core's router weight is one replicated (num_moe_experts, hidden_size)
    parameter marked sequence_parallel, each TP rank routing its own 1/tp of the tokens and the TP group summing
    its gradient (github.com/NVIDIA/Megatron-LM: megatron/core/transformer/moe/router.py, Router.__init__ and
    reset_parameters; moe_layer.py refuses TP without sequence parallelism in training). 1 on a wafer that does not
    keep weights resident (its attention runs as one group over the fabric, `busiest_rank`)."""
    if hw.weight_source != "resident" or wl.mode == "train":
        return 1.0 + 0.0 * shape.tp
    return 1.0 * shared_split(wl, shape, c)   # tp where members hold all of their group's tokens, 1 on a slice


def node_memory(hw, m, wl, mp, shape: Shape, slots, optimizer_shares=None, split=None) -> dict:
    """Memory per node of the attention and MoE stages, by term (cost/node/memory.py), with `slots` expert copies
    on the fullest node and, in training, `optimizer_shares` whole experts' optimizer state on the node keeping
    the most (None: the default placement's); shared experts split `split` ways, the router whole (`shared_split`;
    None: the TP group)."""
    return memory.memory_terms(hw, m, wl, shape.groups, shape.T, shape.seqs,
                               weights.resident_weights_node(hw, m, wl, shape.tp, slots, split), shape.nodes,
                               kv_node(hw, m, wl, mp, shape), getattr(wl, "comm_overlap", "none") == "microbatch",
                               weights.training_state_node(hw, m, wl, shape.tp, slots, optimizer_shares),
                               prefetch_node(hw, m, wl, shape), weights.held_gradients_node(hw, m, wl))


def prefetch_parts(hw, m, wl, shape: Shape) -> tuple:
    """(bytes the wafer I/O brings in per node during the attention stage's longest pass, the next stage's weights
    per node): what `prefetch_node` takes the smaller of. Both 0 where no stage's weights stream during another's
    compute: resident weights, or `overlap` other than `layer` (each stage then streams its own weights)."""
    if hw.weight_source != "streamed" or wl.overlap != "layer":
        return 0.0 * shape.T, 0.0 * shape.T
    window = pass_time(hw, wl, shape.nodes, *attention_parts(hw, m, wl, shape, layer_flops(m, wl, shape)))
    w, L, Lm = weights.layer_weights(m, wl), m.num_hidden_layers, params.moe_layers(m)
    moe = w["experts"].nbytes + w["shared"].nbytes + w["router"].nbytes
    # a MoE layer's attention is followed by its MoE stage, a dense layer's by its FFN: the larger one sets the peak
    following = np.maximum(np.where(Lm > 0, moe, 0.0), np.where(L - Lm > 0, w["dense_ffn"].nbytes, 0.0))
    return window * hw.io_in_bw_bytes_per_s / shape.nodes, following / shape.nodes


def prefetch_node(hw, m, wl, shape: Shape):
    """Weight bytes per node held for the stage after attention while attention computes (`overlap: layer` on a
    weight-streaming wafer): the stream keeps the I/O busy across the layer (what lets the layer time be the max
    of its summed terms), so the next stage's weights arrive during attention at the inbound rate and wait in
    SRAM until that stage runs: min(window · BW_in, W_next) / N. The MoE stage's own peak already holds the next
    layer's attention weights whole (`mem_weights_node_bytes`), so nothing is added there."""
    streamed, following = prefetch_parts(hw, m, wl, shape)
    return np.minimum(streamed, following)


def io_time(hw, wl, part: weights.Part, kept=0.0):
    """Seconds to move a stage's weights once per pass: streamed over the wafer I/O, or read from node memory.

    `kept` bytes of activations leave over the same I/O after the forward pass and come back for the
    backward pass (kept_activations: streamed); weights in and gradients out (one per parameter, bytes_per_grad
    each) share it, full duplex.
    """
    if hw.weight_source == "streamed":
        t_in = (passes_in(wl) * part.nbytes + kept) / hw.io_in_bw_bytes_per_s
        if wl.mode != "train":
            return t_in
        return np.maximum(t_in, (part.params * wl.bytes_per_grad + kept) / hw.io_out_bw_bytes_per_s)
    return part.nbytes / hw.node_memory_bw_bytes_per_s


def passes_in(wl) -> float:
    """Times streamed weights cross the wafer I/O per step: forward and backward each stream them."""
    return 2.0 if wl.mode == "train" else 1.0


def compute_time(hw, wl, nodes, *parts):
    """Seconds of compute of (forward FLOPs, recomputed FLOPs, format, efficiency) parts: forward × (1 forward
    + 2 backward when training) plus the FLOPs recomputed to rebuild dropped activations, over all nodes at
    the peak of each part's format and its efficiency."""
    return sum(x / (nodes * formats.peak(hw, fmt) * eff) for x, (_, _, fmt, eff) in zip(executed(wl, parts), parts))


def pass_time(hw, wl, nodes, *parts):
    """Seconds of compute of the longest single pass over (forward FLOPs, recomputed FLOPs, format, efficiency)
    parts: in training the backward pass (2 forward-equivalents plus the recomputed FLOPs, which rerun in it),
    otherwise the forward pass; at each part's format peak and efficiency, over all nodes."""
    longest = [2.0 * f + r if wl.mode == "train" else f for f, r, _, _ in parts]
    return sum(x / (nodes * formats.peak(hw, fmt) * eff) for x, (_, _, fmt, eff) in zip(longest, parts))


def executed(wl, parts) -> list:
    """FLOPs each (forward, recomputed, format, efficiency) part executes: forward × passes + recomputed."""
    P = compute.pass_factor(wl.mode)
    return [P * f + r for f, r, _, _ in parts]


def stage_weights(hw, m, wl, shape: Shape, copies, mean: bool = False, split=None) -> dict:
    """Weights each stage moves per pass: resident reads happen per node (the busiest node's, or with `mean` the
    mean node's); streamed ones cross the wafer I/O. `copies`: the routed experts' copies over all nodes; `split`:
    the ways shared experts are split (`shared_split`; None: the TP group); the router is read whole."""
    split = shape.tp if split is None else split
    w = weights.layer_weights(m, wl)
    if hw.weight_source != "resident":
        moe = [w["experts"], w["shared"], w["router"]]
        return {"attn": w["attn"], "moe": weights.Part(*(sum(x) for x in zip(*moe))),
                "dense": w["dense_ffn"], "head": weights.head_reads(m, shape.T)}
    # a hosted copy is read if any token reaches its expert; the step waits for the node that reads the most
    # (weights.busiest_hits). Resident reads stream no gradients, so their parameter counts are not used
    hit = weights.hit_share(m.num_experts_per_tok, m.num_experts, shape.T)
    read = copies * hit / shape.nodes if mean else weights.busiest_hits(hit, copies, shape.nodes)
    rank = weights.attn_mean_rank if mean else weights.attn_rank
    per_node = {"attn": wl.G * rank(m, wl, shape.tp).nbytes,  # each tile re-reads its rank's share
                "moe": read * weights.expert_copy_bytes(m, wl) + w["shared"].nbytes / split + w["router"].nbytes,
                "dense": w["dense_ffn"].nbytes / shape.tp,
                "head": weights.head_reads(m, shape.T, shape.tp, shape.nodes).nbytes}
    return {k: weights.Part(0.0, v) for k, v in per_node.items()}


def streamed_kept_bytes(hw, m, wl, shape: Shape):
    """Activation bytes of one layer and micro-batch streamed out and back in (0 when kept in node memory)."""
    if memory.kept_in_node_memory(hw):
        return 0.0 * shape.T
    return shape.T * memory.kept_bytes_per_token_layer(m, wl)


def terms(hw, wl, flops_time, part: weights.Part, kv_bytes=None, kept=0.0) -> dict:
    """A stage's roofline terms: compute, and resident weights with the KV cache as one HBM term (they share
    one memory); streamed weights cross the wafer I/O, a resource apart from the node memory's KV reads."""
    kv = 0.0 if kv_bytes is None else kv_bytes
    if hw.weight_source == "resident":
        return {"compute": flops_time, "hbm": (part.nbytes + kv) / hw.node_memory_bw_bytes_per_s}
    out = {"compute": flops_time, "weights": io_time(hw, wl, part, kept)}
    if kv_bytes is not None:
        out["memory"] = kv / hw.node_memory_bw_bytes_per_s
    return out


class Work(NamedTuple):
    """What one stage does per layer and micro-batch, from which its roofline terms follow."""

    parts: tuple              # (forward FLOPs, recomputed FLOPs, format, efficiency) of each group of its matmuls
    weights: weights.Part     # weights per pass (streamed: over the wafer I/O; resident: read per node)
    kv: object = None         # KV-cache bytes read per node (attention, inference)
    kept: object = 0.0        # activation bytes streamed out and back in (kept_activations: streamed)


def routed_part(hw, m, wl, shape: Shape, flops: Flops, imbalance=1.0) -> tuple:
    """(forward FLOPs, recomputed FLOPs, format, efficiency) of the routed experts, at the busiest node's pace."""
    routed = flops.routed * imbalance
    eff_exp = compute.expert_efficiency(hw, compute.tokens_per_expert(m, shape.T))
    return (routed, compute.recomputed_shares(wl.mode, wl.recompute)[0] * routed,
            getattr(wl, "expert_weight_format", formats.HIGH), eff_exp)


def busiest_rank(hw, m, tp, mean: bool = False, train: bool = False) -> tuple:
    """(projections, core): the attention FLOPs the busiest TP rank of resident weights runs, over its even
    1/tp share. TP splits attention by whole heads (params.head_share), so a TP that does not divide the heads
    leaves some ranks a head more; and every rank runs the projections TP cannot split (K/V past the KV heads,
    MLA's down-projections) for all its group's tokens. In `train`ing MLA's down-projections run on the rank's
    sequence-parallel slice, 1/tp of them: Megatron-Core holds them whole on every rank (TELinear 'duplicated')
    and feeds them the [s/TP] slice (megatron/core/transformer/multi_latent_attention.py,
    _qkv_down_projection), their gradients summed over the group (params.tp_attn_params). With `mean`, the mean
    rank's (what all ranks run, over tp): whole heads cost nothing extra, the projections TP cannot split do. 1 on
    a weight-streaming wafer, whose attention runs as one group over the whole fabric."""
    if hw.weight_source != "resident":
        return 1.0 + 0.0 * tp, 1.0 + 0.0 * tp
    proj = params.attn_params_mean_rank(m, tp) if mean else params.attn_params_per_rank(m, tp)
    if train:   # the down-projections' tokens split tp ways (a rank held them whole in `proj`: kv_share 1)
        proj = proj - params.mla_down_params(m) * (1.0 - 1.0 / tp)
    on_proj = tp * proj / params.attn_params(m)
    return on_proj, (1.0 + 0.0 * tp) if mean else tp * params.head_share(m.num_attention_heads, tp)


def attention_parts(hw, m, wl, shape: Shape, flops: Flops, mean: bool = False) -> tuple:
    """(forward FLOPs, recomputed FLOPs, format, efficiency) of the attention stage: projections at the attention
    weight format's peak, the core at the 16-bit peak, both at the busiest TP rank's share (`busiest_rank`; with
    `mean` the mean rank's); the core runs the FLOPs its kernel executes (`Flops.core_share`: a tiled kernel skips
    masked keys)."""
    eff, hi = hw.matmul_efficiency, formats.HIGH
    full, core = compute.recomputed_shares(wl.mode, wl.recompute)
    on_proj, on_core = busiest_rank(hw, m, shape.tp, mean, wl.mode == "train")
    executed = flops.core * flops.core_share * on_core   # a tiled kernel skips the causal mask's half
    proj = flops.proj * on_proj
    return (proj, full * proj, getattr(wl, "attn_weight_format", hi), eff), (executed, (full + core) * executed, hi, eff)


def stage_work(hw, m, wl, mp, shape: Shape, flops: Flops, c: dict, mean: bool = False) -> dict:
    """{stage: Work} of the attention, MoE, dense-FFN and head stages.

    Projections, shared experts and dense FFNs run at the attention weight format's peak, routed experts at the
    expert format's, the attention core, router and head at the 16-bit peak; only the routed experts at the few-rows
    efficiency `eff_exp` (the router is one GEMM over every token, as a projection is; each node routes the tokens
    it holds with the whole gate, `router_tokens`). Attention runs at the busiest TP
    rank's share (`busiest_rank`: whole heads, and the projections TP cannot split). Only routed experts run at
    the busiest node's load (`expert_imbalance`); shared experts see every token of their group. The attention
    core runs the FLOPs its kernel executes (`Flops.core_share`: a tiled kernel skips masked keys). With `mean`,
    the mean node's work instead (no imbalance, the mean TP rank, the mean node's reads): what all nodes do, over
    the nodes, which energy counts (the busiest node's work times the nodes would count work no node does).
    """
    eff, hi = hw.matmul_efficiency, formats.HIGH
    fa = getattr(wl, "attn_weight_format", hi)
    part = stage_weights(hw, m, wl, shape, c.get("expert_copies", np.maximum(m.num_experts, shape.nodes)), mean,
                         shared_split(wl, shape, c))
    kv_bytes = kv_node(hw, m, wl, mp, shape) / m.num_hidden_layers   # one layer's cache, read once per step
    full, _ = compute.recomputed_shares(wl.mode, wl.recompute)
    attn = attention_parts(hw, m, wl, shape, flops, mean)
    router = flops.router * router_tokens(hw, wl, shape, c)   # every member of a replicated group routes all
    return {"attention": Work(attn, part["attn"], kv_bytes, streamed_kept_bytes(hw, m, wl, shape)),  # layer input kept
            "moe": Work(((router, full * router, hi, eff),   # one GEMM over every token, not T·k/E rows
                         routed_part(hw, m, wl, shape, flops, 1.0 if mean else c.get("expert_imbalance", 1.0)),
                         (flops.shared, full * flops.shared, fa, eff)), part["moe"]),
            "dense_ffn": Work(((flops.dense, full * flops.dense, fa, eff),), part["dense"]),
            "head": Work(((flops.head, full * flops.head, hi, eff),), part["head"])}


def stages(hw, m, wl, shape: Shape, work: dict, c: dict) -> tuple[Stage, Stage, Stage, Stage]:
    """Attention, MoE, dense-FFN and head stages from their `Work`: roofline terms, kernel launches and
    communication."""
    passes = compute.pass_factor(wl.mode) + compute.recomputed_shares(wl.mode, wl.recompute)[0]  # kernels launched
    phase = {k: v for k, v in c.items() if k.endswith("_s") and not k.startswith("migration")}
    built = []
    for name, w in work.items():
        tiles = wl.G if name == "attention" else 1.0   # every attention tile launches its kernels
        own = terms(hw, wl, compute_time(hw, wl, shape.nodes, *w.parts), w.weights, w.kv, w.kept)
        if f"edge_{name}_s" in c:   # PE fabric: the same stream through the fabric's edge (cost/wafer/edge.py)
            own["edge"] = c[f"edge_{name}_s"]
        if "expert_pipeline_s" in c:   # PE fabric: the routed experts on their regions (cost/wafer/streaming.py)
            own["regions"] = regions_time(hw, wl, shape, name, w, own["compute"], c["expert_pipeline_s"])
        src = {k: COMM_SOURCE.get((name, k), k) for k in STAGE_COMM.get(name, ())}
        built.append(Stage(name, own, {k: phase[v] for k, v in src.items() if v in phase},
                           kernels.launch_time(hw, m, name, passes, tiles)))
    return tuple(built)


def regions_time(hw, wl, shape: Shape, name: str, w: Work, compute_s, pipeline_s):
    """A stage's time on its PE regions: the MoE stage's router and shared experts at their compute term and its
    routed experts' pipelines on their regions (`pipeline_s`, the busiest region); every other stage's matmuls run
    over the whole wafer, so its region time is its compute term (the layer's sum stays a bound on the PEs' time)."""
    if name != "moe":
        return compute_s
    router, _, shared = w.parts
    return compute_time(hw, wl, shape.nodes, router) + compute_time(hw, wl, shape.nodes, shared) + pipeline_s


def roofline_columns(hw, wl, work: dict, nodes) -> dict:
    """Each stage on the roofline: `<stage>_hw_flops`, `<stage>_traffic_bytes` and `<stage>_roof_flops`.

    The FLOPs executed (forward × passes + recomputed) are the numerator of the compute term; the compute roof
    of all nodes is those FLOPs over the seconds they take at their formats' peaks,
    roof = nodes · ΣF / Σ(F/peak), so compute_s = Σ F/(nodes·peak·eff) ≥ hw_flops / roof (every eff ≤ 1). The
    bytes are the numerator of the weight-path term over its bandwidth (wafer I/O in, or node memory × nodes).
    """
    out = {}
    for name, w in work.items():
        done = executed(wl, w.parts)
        at_peak = sum(x / formats.peak(hw, fmt) for x, (_, _, fmt, _) in zip(done, w.parts))
        total = sum(done)
        with np.errstate(divide="ignore", invalid="ignore"):   # a stage that runs nothing: the first part's peak
            per_node = np.where(at_peak > 0, np.divide(total, at_peak), formats.peak(hw, w.parts[0][2]))
        out[f"{name}_hw_flops"], out[f"{name}_roof_flops"] = total, nodes * per_node
        out[f"{name}_traffic_bytes"] = traffic_bytes(hw, wl, w, nodes)
        if hw.weight_source == "streamed":
            out[f"{name}_io_out_bytes"] = io_out_bytes(wl, w)
    return out


def stage_counts(m) -> dict:
    """How many times a step runs each stage's per-layer work: attention in every layer, the MoE stage in MoE
    layers, the dense FFN in the others, the head once."""
    L, Lm = m.num_hidden_layers, params.moe_layers(m)
    return {"attention": L, "moe": Lm, "dense_ffn": L - Lm, "head": 1}


def work_columns(hw, m, wl, work: dict, nodes) -> dict:
    """What one micro-batch step does over all nodes, from the mean node's `work` (stage_work(mean=True)) times
    the nodes and each stage's layers: `work_flops16`, its executed FLOPs in 16-bit equivalents (F · peak16 /
    peak(format): a narrower format's FLOP does less work), and `work_read_bytes`, the bytes on its weight path
    (streamed: in over the wafer I/O; resident: weights and KV cache read). The energy model counts these."""
    counts = stage_counts(m)
    flops16 = read = 0.0
    for name, w in work.items():
        done = executed(wl, w.parts)
        flops16 = flops16 + counts[name] * sum(x * formats.peak(hw, formats.HIGH) / formats.peak(hw, fmt)
                                               for x, (_, _, fmt, _) in zip(done, w.parts))
        read = read + counts[name] * traffic_bytes(hw, wl, w, nodes)
    return {"work_flops16": flops16, "work_read_bytes": read}


def io_out_bytes(wl, w: Work):
    """Bytes a streamed stage sends out over the wafer I/O per layer and micro-batch: in training one gradient per
    parameter and the kept activations (which come back in: `traffic_bytes`); nothing in inference (`io_time`)."""
    if wl.mode != "train":
        return 0.0 * w.weights.params
    return w.weights.params * wl.bytes_per_grad + w.kept


def traffic_bytes(hw, wl, w: Work, nodes):
    """Bytes on a stage's weight path per layer and micro-batch (the roofline's memory side): streamed, what
    enters over the wafer I/O (weights every pass in, kept activations back); resident, the weights and KV
    cache a node reads, times the nodes (the busiest node's reads, as the HBM term charges them)."""
    if hw.weight_source == "streamed":
        return passes_in(wl) * w.weights.nbytes + w.kept
    return (w.weights.nbytes + (0.0 if w.kv is None else w.kv)) * nodes


def ideal_seconds(hw, wl, m, flops: Flops):
    """Seconds per node one step's model FLOPs take at the peak of their formats (no efficiency, recompute or
    imbalance): the denominator of MFU when formats have peaks of their own."""
    hi = formats.HIGH
    fa, fe = getattr(wl, "attn_weight_format", hi), getattr(wl, "expert_weight_format", hi)
    pk = {f: formats.peak(hw, f) for f in (hi, fa, fe)}
    L = m.num_hidden_layers
    Lm = params.moe_layers(m)
    per_layer = flops.proj / pk[fa] + flops.core / pk[hi]
    moe = flops.router / pk[hi] + flops.routed / pk[fe] + flops.shared / pk[fa]
    return compute.pass_factor(wl.mode) * (L * per_layer + Lm * moe + (L - Lm) * flops.dense / pk[fa]
                                           + flops.head / pk[hi])
