"""What one step does on each energy tier, read from the columns the cost model computed (no physics redone).

A step (every mode but SRAM serving) runs one micro-batch of `tokens_per_microbatch` tokens over the whole
system: the stages' executed FLOPs (`<stage>_hw_flops`, with `<stage>_roof_flops` their formats' peak) and
weight-path bytes (`<stage>_traffic_bytes`) per layer, times the layers of each kind. SRAM serving reports one
token's latency through a pipeline of wafers; its per-token work follows from the model and the workload
(active weights and the sequence's KV cache read from the PEs' SRAM, dispatch and combine over
`dispatch_path_hops` PE hops, `wafer_hops` inter-wafer transfers).

Communication bytes are the energy model's own closed forms (the fabric model reports times and peaks, not
totals): dispatch and combine move each routed copy of a token's activation once (remote copies only), over the
mean path the mesh reports (`dispatch_mean_hops`) or once through a switch; a TP all-reduce moves 2(tp − 1)
activations per token (ring), once per layer, and the MoE output reduction (MoE layers with replicated tokens)
or the FFN's all-reduce (dense layers) as much again.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from wsemoe.cost.batch import Shape, layer_flops, micro_batch, with_batch
from wsemoe.cost.fabric import scaleout, topology
from wsemoe.cost.node import compute, formats, memory, params
from wsemoe.cost.stagecost import passes_in
from wsemoe.cost.structure import slices
from wsemoe.cost.wafer.steprate import step_tokens

STAGES = ("attention", "moe", "dense_ffn", "head")


class Work(NamedTuple):
    """What one step (or one token, `tokens` = 1) does on each tier, whole system."""

    flops16: object       # FLOPs in 16-bit-equivalent energy: Σ F × peak16 / peak(format)
    sram_bytes: object    # bytes read from on-chip SRAM
    memory_bytes: object  # bytes read from node memory (HBM)
    hop_bytes: object     # byte-hops on the node fabric (a switch path counts one hop)
    offchip_bytes: object  # bytes over inter-wafer links, scale-out or the wafer I/O
    seconds: object       # time the step takes
    tokens: object        # tokens it produces or trains on
    nodes: object         # nodes drawing static power over `seconds`
    busy: object          # utilisation: the larger of compute and memory busy fractions (top-down view)


def stage_counts(m) -> dict:
    """How many times a step runs each stage's per-layer columns: attention in every layer, the MoE stage
    in MoE layers, the dense FFN in the others, the head once."""
    L, Lm = m.num_hidden_layers, params.moe_layers(m)
    return {"attention": L, "moe": Lm, "dense_ffn": L - Lm, "head": 1}


def _col(out, name):
    v = out.get(name)
    return 0.0 if v is None else v


def step_work(hw, m, wl, mp, out: dict) -> Work:
    """A step's work on every tier from its columns (resident or streamed weights)."""
    counts, nodes = stage_counts(m), topology.system_nodes(hw)
    at_peak = sum(c * _col(out, f"{s}_hw_flops") / _roof(out, s) for s, c in counts.items())
    path = sum(c * _col(out, f"{s}_traffic_bytes") for s, c in counts.items())
    sent = sum(c * _col(out, f"{s}_io_out_bytes") for s, c in counts.items())   # streamed training: out again
    streamed = hw.weight_source == "streamed"
    hop, off = comm_bytes(hw, m, wl, mp, out)
    seconds = out["step_time_s"]
    mem_bw = hw.io_in_bw_bytes_per_s if streamed else nodes * hw.node_memory_bw_bytes_per_s
    busy = np.maximum(at_peak / seconds, path / (mem_bw * seconds))
    return Work(flops16=at_peak * nodes * hw.node_peak_flops, sram_bytes=path,
                memory_bytes=0.0 * path if streamed else path, hop_bytes=hop,
                offchip_bytes=off + (path + sent if streamed else 0.0), seconds=seconds,
                tokens=out["tokens_per_microbatch"], nodes=nodes, busy=busy)


def _roof(out, stage):
    """A stage's compute roof over all nodes; 1 where the stage runs nothing (its FLOPs are 0 then)."""
    r = out.get(f"{stage}_roof_flops")
    return 1.0 if r is None else np.where(r > 0, r, 1.0)


def comm_bytes(hw, m, wl, mp, out: dict) -> tuple:
    """(byte-hops on the node fabric, bytes leaving a wafer or scale-up domain) of one step's communication."""
    wl = with_batch(hw, wl, mp)
    shape = micro_batch(hw, wl, mp)
    nodes, tp, T = shape.nodes, shape.tp, shape.T
    act = m.hidden_size * wl.bytes_per_act * passes_in(wl)
    sent = m.hidden_size * formats.dispatch_bytes(hw, wl) * passes_in(wl)     # quantized before the dispatch
    L, Lm = m.num_hidden_layers, params.moe_layers(m)
    routed = T * m.num_experts_per_tok * (sent + act) * Lm * (1.0 - 1.0 / nodes)   # dispatch + combine
    # TP all-reduce after attention (every layer), a dense FFN's all-reduce (dense layers) and the MoE output
    # reduction, which only replicated tokens need: sliced tokens (a switch, token_source slice) come back whole
    # to their owner (fabric/collectives.reduce_steps; HER's other wafers sending theirs home are not counted)
    sliced = slices(hw.topology, getattr(mp, "token_source", "auto"), shape.groups)   # structure.token_flow
    reduce = 2.0 * (tp - 1.0) * T * act * (L + (L - Lm) + np.where(sliced, 0.0, Lm))
    if hw.topology == "switch":
        hops = ring = 1.0
        domain = getattr(hw, "scale_up_size", None) or nodes
        # per-server kernels send a token once to each server it reaches (fabric/scaleout.py)
        leave = (1.0 - domain / nodes) * scaleout.system_share(hw, m, getattr(mp, "scale_out_dispatch", "auto"),
                                                               wl.mode)
    else:
        rows, cols = hw.rows * topology.wafer_grid(hw)[0], hw.cols * topology.wafer_grid(hw)[1]
        hops = out.get("dispatch_mean_hops", (rows + cols) / 3.0)   # mean XY distance of a uniform pair
        # NaN where a statistic does not apply (one wafer: no boundary to cross; no remote copy): none moved
        hops, leave = np.nan_to_num(hops, nan=0.0), np.nan_to_num(out.get("dispatch_inter_wafer_share", 0.0), nan=0.0)
        # a ring's bytes travel its edges' hops: 4 on an entwined ring's edges (MoEntwine ER), 1 on a block's
        ring = np.nan_to_num(out.get("allreduce_mean_hops", 1.0), nan=1.0)
    return routed * hops + reduce * ring, routed * leave


def sram_work(hw, m, wl, mp, out: dict) -> Work:
    """One output token of SRAM serving: its FLOPs, the active weights and its sequence's KV cache read from the
    PEs' SRAM, dispatch and combine over the PE mesh, the hops between wafers, for each of the q/a tokens a step
    processes per token it keeps (speculative decoding verifies q = drafts + 1 and accepts a); the pipeline's
    wafers draw static power for 1 / tokens_per_s."""
    T = compute.tokens(wl)   # one attention group of all sequences (mapping.tp does not apply to SRAM serving)
    shape = Shape(1, 1, 1, wl.G * wl.B, T)
    f = layer_flops(m, wl, shape)
    c = stage_counts(m)
    p16 = hw.node_peak_flops
    rel = {fmt: p16 / formats.peak(hw, fmt) for fmt in {formats.HIGH, getattr(wl, "attn_weight_format", "bf16"),
                                                         getattr(wl, "expert_weight_format", "bf16")}}
    fa, fe = rel[getattr(wl, "attn_weight_format", "bf16")], rel[getattr(wl, "expert_weight_format", "bf16")]
    flops = (c["attention"] * (f.proj * fa + f.core) + c["moe"] * (f.router + f.routed * fe + f.shared * fa)
             + c["dense_ffn"] * f.dense * fa + f.head) / shape.T
    ab, eb = formats.attn_bytes(wl), formats.expert_bytes(wl)
    weights = (c["attention"] * params.attn_params(m) * ab + c["dense_ffn"] * params.dense_ffn_params(m) * ab
               + c["moe"] * (m.num_experts_per_tok * params.expert_params(m) * eb
                             + params.shared_expert_params(m) * ab + params.router_params(m) * 2.0)
               + params.head_params(m) * 2.0)
    kv = c["attention"] * wl.seq_len * memory.kv_bytes_per_token_layer(m, wl)
    act = m.hidden_size * wl.bytes_per_act
    pe_hop = hw.rows / hw.pe["fabric_rows"] if isinstance(hw.pe, dict) else hw.rows / hw.pe.fabric_rows
    # a model without MoE layers dispatches nothing (serving emits no dispatch path for it)
    hop = 2.0 * m.num_experts_per_tok * act * c["moe"] * (out["dispatch_path_hops"] if c["moe"] else 0.0) * pe_hop
    verified = step_tokens(wl) / getattr(wl, "accepted_tokens_per_step", 1.0) if wl.mode == "decode" else 1.0
    flops, weights, kv, hop = flops * verified, weights * verified, kv * verified, hop * verified
    wafers = out["wafers"]
    rate = out["tokens_per_s"]
    dies = hw.rows * hw.cols * wafers
    sram_bw = _pe_field(hw, "sram_bw_total_bytes_per_s")
    busy = np.maximum(flops * rate / (p16 * dies), (weights + kv) * rate / (sram_bw * wafers))
    return Work(flops16=flops, sram_bytes=weights + kv, memory_bytes=0.0 * flops, hop_bytes=hop,
                offchip_bytes=(out["wafer_hops"] + 1.0) * act * verified, seconds=1.0 / rate, tokens=1.0, nodes=dies,
                busy=busy)


def _pe_field(hw, name):
    pe = hw.pe if isinstance(hw.pe, dict) else vars(hw.pe) if not hasattr(hw.pe, "model_dump") else hw.pe.model_dump()
    v = pe.get(name)
    return np.inf if v is None else v
