"""How one micro-batch spreads over the nodes, and the forward FLOPs of one layer it costs, by stage."""

from __future__ import annotations

from types import SimpleNamespace
from typing import NamedTuple

from wsemoe.cost.fabric import topology
from wsemoe.cost.node import compute


class Shape(NamedTuple):
    """How one micro-batch spreads over the nodes."""

    nodes: int
    tp: object      # nodes per attention group (array or scalar)
    groups: object  # attention groups
    seqs: object    # sequences per micro-batch, all groups
    T: object       # tokens per micro-batch, all groups


class Flops(NamedTuple):
    """Forward FLOPs of one layer and one micro-batch, by stage (all groups); experts split into routed
    (they run at the busiest node's load) and shared (every token, never imbalanced)."""

    proj: object
    core: object
    router: object
    routed: object
    shared: object
    dense: object
    head: object
    core_share: object = 1.0   # of `core` its kernel executes (compute.executed_core_share: a tiled kernel skips
                               # the causal mask's future keys), found once here for every reader

    @property
    def expert(self):
        """Routed and shared expert FLOPs together (the `expert_flops` column)."""
        return self.routed + self.shared


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


def with_kernel(hw, wl):
    """The workload with the attention kernel its hardware runs in training and prefill (hardware.attention_kernel:
    a GPU's stacks run a tiled kernel, whatever the workload's attn_kernel reading says of a wafer whose kernel no
    source describes); unchanged where the hardware names none."""
    own = getattr(hw, "attention_kernel", None)
    # training and prefill only, as the reading: decode's one query per sequence keeps its own accounting
    if own is None or getattr(wl, "mode", None) == "decode" or getattr(wl, "attn_kernel", None) == own:
        return wl
    fields = wl.model_dump() if hasattr(wl, "model_dump") else dict(vars(wl))
    fields["attn_kernel"] = own
    return SimpleNamespace(**fields)


def micro_batch(hw, wl, mp) -> Shape:
    """Nodes, TP groups and the tokens of one micro-batch (every group runs its own G·B sequences)."""
    nodes = topology.system_nodes(hw)
    tp = nodes if mp.tp is None else mp.tp
    groups = nodes // tp
    return Shape(nodes, tp, groups, groups * wl.G * wl.B, compute.tokens(wl) * groups)


def layer_flops(m, wl, shape: Shape) -> Flops:
    """Forward FLOPs per stage for one layer and one micro-batch."""
    T = shape.T
    # a prompt's prefill needs the logits of its last token only (the first output token); training all of them
    logits = shape.seqs if wl.mode == "prefill" else T
    return Flops(compute.attn_proj_flops(m, T), compute.attn_core_flops(m, wl) * shape.groups,
                 compute.router_flops(m, T), compute.routed_expert_flops(m, T), compute.shared_expert_flops(m, T),
                 compute.dense_ffn_flops(m, T), compute.head_flops(m, logits), compute.executed_core_share(m, wl))
