"""Weight bytes per layer component, what is streamed per pass, and what stays resident per node."""

from __future__ import annotations

import numpy as np

from wsemoe.cost.fabric import topology
from wsemoe.cost.node import params


def layer_weight_bytes(m, wl):
    """Bytes of one layer's weights by component (attention incl. norms, experts, router, dense FFN)."""
    b = wl.bytes_per_weight
    attn = (params.attn_params(m) + params.attn_extra_params(m) + params.norm_params_per_layer(m)) * b
    return {
        "attn": attn,
        "experts": m.num_experts * params.expert_params(m) * b,
        "shared": params.shared_expert_params(m) * b,
        "router": params.router_params(m) * b,
        "dense_ffn": params.dense_ffn_params(m) * b,
        "head": params.embedding_params(m) * b,
    }


def experts_per_node(m, nodes):
    """Routed experts each node hosts under expert parallelism over all nodes (≥1: replicas when E < N)."""
    return np.maximum(np.ceil(m.num_experts / nodes), 1.0)


def active_experts(m, T):
    """Expected distinct experts receiving ≥1 token when T tokens each pick k of E uniformly."""
    miss = np.power(1.0 - m.num_experts_per_tok / m.num_experts, T)
    return m.num_experts * (1.0 - miss)


def resident_weights_node(hw, m, wl, tp, slots=None):
    """Bytes each node keeps: all weights (resident) or the attention weights held across G tiles (streamed).

    Resident: attention, dense FFN, shared experts and embeddings split over the TP group;
    routed experts spread over all nodes (expert parallelism).
    """
    w = layer_weight_bytes(m, wl)
    L, Lm = m.num_hidden_layers, params.moe_layers(m)
    nodes = topology.system_nodes(hw)
    if hw.weight_source == "streamed":
        # Attention weights of the current layer stay on-wafer while its G tiles run.
        return w["attn"] / nodes
    tp_split = (L * w["attn"] + Lm * (w["shared"] + w["router"]) + (L - Lm) * w["dense_ffn"] + w["head"]) / tp
    slots = experts_per_node(m, nodes) if slots is None else slots  # balancer replicas fill spare slots
    expert = Lm * slots * params.expert_params(m) * wl.bytes_per_weight
    return tp_split + expert
