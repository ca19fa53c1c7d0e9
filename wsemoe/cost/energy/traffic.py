"""What one step does on each energy tier, read from the columns the cost model computed (no physics redone).

A step (every mode but SRAM serving) runs one micro-batch of `tokens_per_microbatch` tokens over the whole
system: the FLOPs all nodes execute (`work_flops16`, in 16-bit equivalents) and the bytes on their weight paths
(`work_read_bytes`), the mean node's work times the nodes (stagecost.work_columns). SRAM serving reports one
token's latency through a pipeline of wafers; its per-token work follows from the model and the workload
(active weights and the sequence's KV cache read from the PEs' SRAM, dispatch and combine over
`dispatch_path_hops` PE hops, `wafer_hops` inter-wafer transfers).

Communication is what the fabric model says each phase moves per layer (`<phase>_hop_bytes`, Σ bytes × hops,
a switch path one hop and an in-switch reduction one path per member; `<phase>_cross_bytes`, bytes × wafer
crossings or between a switch's scale-up domains), so a copy that stays on its die, a ring's long edges, a
reduction in the switch and an all-reduce crossing wafers are priced as the timing model moves them.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from wsemoe.cost.batch import Shape, layer_flops
from wsemoe.cost.fabric import topology
from wsemoe.cost.node import compute, formats, memory, params
from wsemoe.cost.stagecost import passes_in, stage_counts
from wsemoe.cost.wafer.steprate import step_tokens


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


def _col(out, name):
    v = out.get(name)
    return 0.0 if v is None else v


def step_work(hw, m, wl, mp, out: dict) -> Work:
    """A step's work on every tier from its columns (resident or streamed weights): the work all nodes do
    (`work_flops16`, `work_read_bytes`: the mean node's times the nodes, not the busiest node's, which paces the
    step but whose surplus no other node runs)."""
    nodes = topology.system_nodes(hw)
    flops16, path = out["work_flops16"], out["work_read_bytes"]
    sent = sum(c * _col(out, f"{s}_io_out_bytes") for s, c in stage_counts(m).items())   # streamed training: out
    streamed = hw.weight_source == "streamed"
    hop, off = comm_bytes(m, wl, out)
    seconds = out["step_time_s"]
    mem_bw = hw.io_in_bw_bytes_per_s if streamed else nodes * hw.node_memory_bw_bytes_per_s
    # mean utilisation: the work all nodes do over what they could do in the step
    busy = np.maximum(flops16 / (nodes * hw.node_peak_flops * seconds), path / (mem_bw * seconds))
    return Work(flops16=flops16, sram_bytes=path, memory_bytes=0.0 * path if streamed else path, hop_bytes=hop,
                offchip_bytes=off + (path + sent if streamed else 0.0), seconds=seconds,
                tokens=out["tokens_per_microbatch"], nodes=nodes, busy=busy)


def comm_bytes(m, wl, out: dict) -> tuple:
    """(byte-hops on the node fabric, bytes across wafer boundaries or between scale-up domains) of one step's
    communication: what the fabric model says each phase moves per layer (`<phase>_hop_bytes`,
    `<phase>_cross_bytes`), over the layers that run it. A MoE layer runs the attention all-reduce, dispatch,
    combine and output reduction; a dense layer its attention's all-reduce (HER: the home wafer's only) and its
    FFN's; training runs the activation phases in the forward and the backward pass and reduces gradients once
    (every layer's across groups, and inside each group a MoE layer's share of the sequence-parallel ones, a dense
    layer's in a model without MoE layers)."""
    L, Lm = m.num_hidden_layers, params.moe_layers(m)
    tp_layers = params.tp_grad_layers(m)   # the TP group's one gradient all-reduce, a share on each
    both = passes_in(wl)

    def moved(kind: str):
        col = lambda name: _col(out, f"{name}_{kind}")   # noqa: E731  (a phase the point does not run: 0)
        dense_attn = out.get(f"dense_allreduce_{kind}", out.get(f"allreduce_{kind}", 0.0))
        moe = col("allreduce") + col("dispatch") + col("combine") + col("reduce")
        dense = dense_attn + col("ffn_allreduce")
        return both * (Lm * moe + (L - Lm) * dense) + L * col("gradient") + tp_layers * col("router_gradient") \
            + Lm * col("expert_load")

    return moved("hop_bytes"), moved("cross_bytes")


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
