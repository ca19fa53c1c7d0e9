"""Weight parameters and bytes per layer component (each in its format), what is streamed per pass, and what
stays resident per node."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from wsemoe.cost.fabric import topology
from wsemoe.cost.node import formats, params


class Part(NamedTuple):
    """A component's weights: parameters with a gradient (they leave in training) and the bytes of all it stores
    in their format (a buffer with no gradient, as a correction bias, in `nbytes` only)."""

    params: object
    nbytes: object


def layer_weights(m, wl) -> dict:
    """One layer's weights by component, each in its format (docs/cost-model.md, Weight movement).

    Attention projections, shared experts and dense FFNs take `attn_weight_format`, routed experts
    `expert_weight_format`; the router, norms, small attention parameters, embedding and head stay 16-bit.
    `embedding` is what the model stores (table, head, final norm), not what a step reads (`head_reads`).
    """
    b_attn, b_exp, b16 = formats.attn_bytes(wl), formats.expert_bytes(wl), formats.nbytes(formats.HIGH)
    proj = params.attn_params(m)
    small = params.attn_extra_params(m) + params.norm_params_per_layer(m)
    experts = m.num_experts * params.expert_params(m)
    shared, router = params.shared_expert_params(m), params.router_params(m)
    dense, emb = params.dense_ffn_params(m), params.embedding_params(m)
    return {
        "attn": Part(proj + small, proj * b_attn + small * b16),
        "experts": Part(experts, experts * b_exp),
        "shared": Part(shared, shared * b_attn),
        "router": Part(params.router_grad_params(m), router * b16),   # a correction bias stored, not trained
        "dense_ffn": Part(dense, dense * b_attn),
        "embedding": Part(emb, emb * b16),
    }


def attn_rank(m, wl, tp) -> Part:
    """One layer's attention weights the busiest of `tp` tensor-parallel ranks holds: the projections as
    params.attn_params_per_rank (whole heads a rank; K/V projections only as far as the KV heads split; MLA's
    down-projections whole on every rank), the small parameters as `small_rank`."""
    proj, small = params.attn_params_per_rank(m, tp), small_rank(m, tp)
    return Part(proj + small, proj * formats.attn_bytes(wl) + small * formats.nbytes(formats.HIGH))


def small_rank(m, tp):
    """One layer's small parameters (norms, biases, sinks) a TP rank holds: the norms and the output bias whole
    (params.tp_whole_small), the rest split tp ways with the heads."""
    whole = params.tp_whole_small(m)
    return whole + (params.attn_extra_params(m) + params.norm_params_per_layer(m) - whole) / tp


def attn_mean_rank(m, wl, tp) -> Part:
    """One layer's attention weights the mean of `tp` ranks holds (all ranks', over tp): `attn_rank` without the
    extra head a TP that does not divide the heads leaves on some ranks."""
    proj, small = params.attn_params_mean_rank(m, tp), small_rank(m, tp)
    return Part(proj + small, proj * formats.attn_bytes(wl) + small * formats.nbytes(formats.HIGH))


def head_reads(m, T, tp=1, nodes=1) -> Part:
    """What the head stage reads per step: the head matrix (split over `tp` ranks) and the final norm (whole on every
    rank: params.tp_whole_small), plus the embedding rows of the T tokens (spread over `nodes`; one row per token,
    never more than the V-row table).

    The embedding table is stored whole (`layer_weights`) but a lookup touches only its tokens' rows. A tied
    model's lookup rows are rows of the head matrix, so their gradients are the head's (`params` counts the
    parameters whose gradients leave in training).
    """
    head, rows = params.head_params(m), params.lookup_params(m, T)
    own_rows = rows * np.where(m.tie_word_embeddings, 0.0, 1.0)
    H = m.hidden_size
    return Part(head + own_rows, ((head - H) / tp + H + rows / nodes) * formats.nbytes(formats.HIGH))


def experts_per_node(m, nodes):
    """Routed experts each node hosts under expert parallelism over all nodes (≥1: replicas when E < N)."""
    return np.maximum(np.ceil(m.num_experts / nodes), 1.0)


def active_experts(m, T):
    """Expected distinct experts receiving ≥1 token when T tokens each pick k of E uniformly."""
    return m.num_experts * hit_share(m.num_experts_per_tok, m.num_experts, T)


def hit_share(k, E, T):
    """Share of the experts (and of their copies) any of T tokens reaches when each picks k of E uniformly."""
    return 1.0 - np.power(1.0 - k / E, T)


def busiest_hits(p, copies, nodes):
    """Expected most expert copies any of `nodes` nodes has a token for: `copies` spread as evenly as they go
    (⌈C/N⌉ on C mod N nodes, ⌊C/N⌋ on the rest, as the default placement and a balancer's spare slots hold
    them), each reached with probability `p` (`hit_share`) independently. The step waits for the node that reads
    the most, not for the mean one: one DeepSeek-V3 token on 72 GPUs (4 or 3 experts each, p = 8/256) reads
    8/72 = 0.11 experts on the mean GPU, 1.28 on the busiest. E[max] = Σ_x (1 − Π_n P(X_n < x)), X_n binomial."""
    p, copies, nodes = np.broadcast_arrays(np.asarray(p, float), np.asarray(copies, float), np.asarray(nodes, float))
    flat = np.stack([p.ravel(), copies.ravel(), nodes.ravel()])
    one = flat[2] <= 1.0   # one node: the max is the mean, C·p
    keys, inv = np.unique(flat[:, ~one], axis=1, return_inverse=True)
    q, c, n = keys
    lo = np.floor(c / n)
    n_hi = c - lo * n                 # nodes holding one copy more
    hi = lo + (n_hi > 0)
    q = np.minimum(q, 1.0 - 1e-15)    # a sure hit: logs stay finite, the max is ⌈C/N⌉ to within 1e-12
    with np.errstate(divide="ignore", invalid="ignore"):
        step = np.log(q) - np.log1p(-q)
        log_hi, log_lo = hi * np.log1p(-q), lo * np.log1p(-q)   # log P(X = 0)
    cdf_hi, cdf_lo, out = np.zeros_like(q), np.zeros_like(q), np.zeros_like(q)
    for x in range(int(hi.max(initial=0))):   # P(X ≤ x), then P(max ≥ x + 1)
        cdf_hi = np.minimum(cdf_hi + np.exp(log_hi), 1.0)
        cdf_lo = np.minimum(cdf_lo + np.where(x <= lo, np.exp(log_lo), 0.0), 1.0)
        below = np.power(cdf_hi, n_hi) * np.power(np.where(lo > 0, cdf_lo, 1.0), n - n_hi)
        out = out + np.where(x < hi, 1.0 - below, 0.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            log_hi = log_hi + np.log(np.maximum(hi - x, 0.0)) - np.log(x + 1.0) + step
            log_lo = log_lo + np.log(np.maximum(lo - x, 0.0)) - np.log(x + 1.0) + step
    result = flat[0] * flat[1]
    result[~one] = out[inv.ravel()]
    return result.reshape(p.shape)


def expert_copy_bytes(m, wl):
    """Bytes of one routed expert's weights in one layer (in the expert format)."""
    return params.expert_params(m) * formats.expert_bytes(wl)


def resident_node(hw, m, wl, tp, slots=None, shared_tp=None) -> tuple[Part, Part]:
    """What each node keeps resident, as (attention-side weights, routed experts): attention (`attn_rank`), dense
    FFN and embeddings split over the TP group (every attention group holds a copy; the final norm whole), shared experts split
    `shared_tp` ways (default `tp`; 1 where every member holds them whole: stagecost.shared_split), the router
    whole on every node (every engine replicates the gate: stagecost.router_tokens has the sources); routed
    experts spread over all nodes (expert parallelism), `slots` copies on the node (balancer replicas fill spare
    slots)."""
    w, attn = layer_weights(m, wl), attn_rank(m, wl, tp)
    L, Lm = m.num_hidden_layers, params.moe_layers(m)
    shared_tp = tp if shared_tp is None else shared_tp

    norm = {"params": m.hidden_size, "nbytes": m.hidden_size * formats.nbytes(formats.HIGH)}   # the final norm, whole

    def split(attr):
        return (L * getattr(attn, attr) + Lm * (getattr(w["shared"], attr) / shared_tp + getattr(w["router"], attr))
                + ((L - Lm) * getattr(w["dense_ffn"], attr) + getattr(w["embedding"], attr) - norm[attr]) / tp
                + norm[attr])

    slots = experts_per_node(m, topology.system_nodes(hw)) if slots is None else slots
    experts = Lm * slots * params.expert_params(m)
    return Part(split("params"), split("nbytes")), Part(experts, Lm * slots * expert_copy_bytes(m, wl))


def resident_weights_node(hw, m, wl, tp, slots=None, shared_tp=None):
    """Bytes each node keeps: all weights (resident, `resident_node`, shared experts split `shared_tp` ways, the
    router whole) or the attention weights held across G tiles (streamed)."""
    if hw.weight_source == "streamed":
        # Attention weights of the current layer stay on-wafer while its G tiles run.
        return layer_weights(m, wl)["attn"].nbytes / topology.system_nodes(hw)
    shared, experts = resident_node(hw, m, wl, tp, slots, shared_tp)
    return shared.nbytes + experts.nbytes


def default_optimizer_shares(m, nodes, slots):
    """Whole experts' optimizer state on the node keeping the most, under ZeRO-1 and the default placement
    (fabric/mapping.place_experts): with E ≥ N every expert has one copy, so a node keeps all of its `slots`;
    with E < N the least-copied expert has ⌊N/E⌋ copies."""
    return slots / np.maximum(np.floor(nodes / m.num_experts), 1.0)


def held_gradients_node(hw, m, wl):
    """Bytes of gradient each node holds through the attention stage's backward on a weight-streaming wafer in
    training: one per parameter of the attention weights it keeps across the G tiles (`resident_weights_node`). Each
    tile adds its share to every weight's gradient, and the wafer sends one gradient per parameter out (`io_time`),
    so the sum over the tiles is held until the last tile's backward, then streams out to the weight store (Cerebras
    docs, "Weight Streaming Execution": weight gradients are computed on the wafer, then streamed to MemoryX). The
    routed experts and dense FFNs stream through without being kept, their gradients leaving as they are computed.
    0 elsewhere: resident weights count their gradients in `training_state_node`."""
    if wl.mode != "train" or hw.weight_source != "streamed":
        return 0.0
    return layer_weights(m, wl)["attn"].params * wl.bytes_per_grad / topology.system_nodes(hw)


def training_state_node(hw, m, wl, tp, slots=None, optimizer_shares=None):
    """Bytes of training state each node keeps beside resident weights: one gradient per parameter it holds
    (`bytes_per_grad`) and the optimizer's state (`optimizer_bytes_per_param`; 12 = fp32 master weights and
    Adam's two moments), sharded over a parameter's copies under `optimizer_sharding: data_parallel` (ZeRO-1:
    each of the nodes/tp replicas of an attention-side weight, or of an expert's copies, keeps its share).
    `optimizer_shares`: the routed experts' state, in whole experts, the node keeping the most holds (from the
    placement in use; None: the default placement's). An expert's copies, not the mean copies per expert, shard
    it: 256 experts on 72 nodes have one copy each, whatever 4·72/256 says.

    Nothing outside training, and nothing on a weight-streaming wafer: its gradients leave over the wafer I/O
    and the optimizer runs in the off-wafer weight store (`io_time`).
    """
    if wl.mode != "train" or hw.weight_source != "resident":
        return 0.0 * tp
    nodes = topology.system_nodes(hw)
    slots = experts_per_node(m, nodes) if slots is None else slots
    shared, experts = (part.params for part in resident_node(hw, m, wl, tp, slots))
    if wl.optimizer_sharding == "data_parallel":
        # copies: nodes/tp attention groups hold each attention-side weight; an expert's copies hold its state
        shares = default_optimizer_shares(m, nodes, slots) if optimizer_shares is None else optimizer_shares
        optimizer = shared * tp / nodes + experts / slots * shares
    else:
        optimizer = shared + experts
    return (shared + experts) * wl.bytes_per_grad + optimizer * wl.optimizer_bytes_per_param
