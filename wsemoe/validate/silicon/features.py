"""The GPU serving model's inputs (wsemoe.cost.gpu.serving.FEATURES) for resolved runs, one array per name."""

from __future__ import annotations

import numpy as np

from wsemoe.cost.gpu.serving import ACT_BYTES, DP_GATHER, kv_budget
from wsemoe.cost.gpu.shape import shape
from wsemoe.cost.node import formats, mix
from wsemoe.validate.silicon import checkpoints


def kv_format(res) -> str:
    """The KV cache's format: the row's column, else its backend's default for the checkpoint it serves
    (validate/silicon/checkpoints.py has the rule and its sources)."""
    return checkpoints.kv_format(res)


def attention_shares(m, isl: float, osl: float) -> dict:
    """kv_held, kv_read and pair_share (wsemoe.cost.gpu.serving) of model spec `m` at a run's mean context
    isl + osl/2: means over the layers of their attention kinds' tokens held and keys read (cost/node/mix.py),
    over the context; the prefill's pairs over a causal sweep of the isl positions. 1 for full attention only."""
    mx = mix.mix(m)
    if mx is None or set(mx.attention) <= {"full"}:
        return {"kv_held": 1.0, "kv_read": 1.0, "pair_share": 1.0}
    ctx, n = isl + osl / 2.0, sum(mx.attention.values())
    pos = np.linspace(1.0, isl, 256)  # prefill: query at position s reads keys_read(s) keys
    mean = lambda f: sum(c * f(a) for a, c in mx.attention.items()) / n  # noqa: E731
    return {"kv_held": float(mean(lambda a: mix.tokens_held(a, mx.pattern, ctx)) / ctx),
            "kv_read": float(mean(lambda a: mix.keys_read(a, mx.pattern, ctx)) / ctx),
            "pair_share": float(mean(lambda a: np.mean(mix.keys_read(a, mx.pattern, pos))) / np.mean(pos))}


def cache_extras(m, tp: int) -> dict:
    """What a patterned model's layers keep and compute beyond their KV (the node-level rules, cost/node/mix.py and
    memory.held_per_token), summed over its layers, on the busiest of `tp` ranks:
    `idx_bytes`: the sparse (DSA) layers' indexer keys per cached token (FP8 with FP32 scales whatever the KV
    format, on every rank: the indexer's projections are replicated, as vLLM's and SGLang's V3.2 indexers are);
    `idx_flops`: their indexer's FLOPs per (query, key) pair, every key of the context (replicated the same way);
    `state_bytes`: the linear layers' recurrent state and convolution inputs per sequence (bytes: the state in the
    model's `state_format`, else 16-bit, the convolution inputs 16-bit, whatever the KV format; value heads
    split over the ranks, whole heads a rank); `state_flops`: their recurrent core's FLOPs per token on that rank.
    All 0 for a model without such layers."""
    out = {"idx_bytes": 0.0, "idx_flops": 0.0, "state_bytes": 0.0, "state_flops": 0.0}
    mx = mix.mix(m)
    if mx is None:
        return out
    n_sparse, n_linear = mx.attention.get("sparse", 0), mx.attention.get("linear", 0)
    if n_sparse:
        out["idx_bytes"] = float(n_sparse * mix.indexer_key_bytes(mx.pattern))
        out["idx_flops"] = float(n_sparse * mix.indexer_flops_per_pair(mx.pattern))
    if n_linear:
        heads = mx.pattern["linear"]["num_value_heads"]
        share = np.ceil(heads / tp) / heads
        out["state_bytes"] = float(n_linear * mix.linear_state_bytes(mx.pattern) * share)
        out["state_flops"] = float(n_linear * mix.linear_flops_per_token(mx.pattern) * share)
    return out


def _link(hw, gpus):
    """Per-GPU bandwidth of a collective over `gpus` GPUs: NVLink inside a scale-up domain, else the network's
    share. Each collective is read by its own group: a TP all-reduce over its tp GPUs, an expert-parallel
    all-to-all (or the gather of attention-DP ranks' tokens) over one pipeline stage's GPUs."""
    if hw.scale_up_size and gpus > hw.scale_up_size:
        return hw.scale_out_bw_bytes_per_s / hw.scale_up_size
    return hw.port_bw_bytes_per_s


def ep_remote(hw, lay) -> float:
    """Share of a token's k routed copies that cross the link an expert-parallel all-to-all is charged at
    (`link_ep`). With the experts spread evenly over moe_ep GPUs (moe_tp 1) and top-k uniform over them, a copy
    lands on a given GPU with probability 1/moe_ep: the copies for experts on the sender's own GPU stay in its HBM,
    so (moe_ep − 1)/moe_ep of them cross NVLink (7/8 at EP 8), as the attention-DP gather already sends (dp − 1)
    shares. Past one scale-up domain `link_ep` is the network's share, and the copies for the sender's own server
    go over NVLink beside it (not charged, as the node-level model's scale-out dispatch, cost/fabric/scaleout.py):
    (moe_ep − near)/moe_ep, near the EP ranks of one server. With moe_tp > 1 each copy reaches a TP group of
    GPUs, not one; every copy is charged, as before (no given run dispatches so)."""
    ep, gpus, up = lay["moe_ep"], lay["gpus"] / lay["pp"], hw.scale_up_size
    if lay["moe_tp"] != 1 or ep <= 1:
        return 1.0
    near = min(ep, up * ep / gpus) if up and gpus > up else 1.0
    return (ep - near) / ep


def one(res: dict, worker: str, s=None) -> dict:
    """Features of one resolved run for its `worker` ('agg', 'prefill' or 'decode'); `s`: its model's serving
    shape when the caller has it already."""
    hw, lay = res["hardware"], res["workers"][worker]
    s = shape(res["model"]) if s is None else s
    share, of_total = kv_budget(res.get("backend", ""))
    return {"L": s.layers, "Lm": s.moe_layers, "H": s.hidden, "heads": s.heads, "attn_w": s.attn_w, "attn_kv_w": s.attn_kv_w,
            "dense_w": s.dense_w,
            "expert_w": s.expert_w, "shared_w": s.shared_w, "router_w": s.router_w, "head_w": s.head_w, "E": s.experts, "k": s.top_k,
            "kv_values": s.kv_values, "kv_shards": s.kv_shards, "sf_decode": s.score_flops_decode,
            "sf_prefill": s.score_flops_prefill, "b_gemm": formats.nbytes(res["gemm"]),
            "b_attn": formats.nbytes(checkpoints.attn_format(res)),
            "F_attn": formats.peak(hw, checkpoints.attn_format(res)),
            "b_moe": formats.nbytes(res["moe"]), "b_kv": formats.nbytes(kv_format(res)),
            "F_gemm": formats.peak(hw, res["gemm"]), "F_moe": formats.peak(hw, res["moe"]), "F16": hw.node_peak_flops,
            "b_dispatch": formats.dispatched_bytes(hw, res["moe"], ACT_BYTES),
            "B": hw.node_memory_bw_bytes_per_s, "link": _link(hw, lay["tp"]),
            "link_ep": _link(hw, lay["gpus"] / lay["pp"]), "ep_remote": ep_remote(hw, lay),
            "mem": hw.node_memory_bytes,
            "tp": lay["tp"], "dp": lay["dp"], "pp": lay["pp"], "moe_tp": lay["moe_tp"], "moe_ep": lay["moe_ep"],
            "C": lay["C"], "isl": res["isl"], "osl": res["osl"], "ar_lat": hw.collective_latency_s,
            "a2a_lat": hw.alltoall_latency_s or hw.collective_latency_s, "agg": 1.0 if worker == "agg" else 0.0,
            "dp_gather": DP_GATHER.get(res.get("backend", ""), 0.0),
            "kv_share": share, "kv_of_total": of_total,
            **attention_shares(res["model"], res["isl"], res["osl"]), **cache_extras(res["model"], lay["tp"])}


def arrays(resolved: list[dict], worker_of) -> dict:
    """Features of many runs as arrays; `worker_of(res)` names the worker each run is read for."""
    models = {id(r["model"]): r["model"] for r in resolved}   # each model spec once, however many runs serve it
    shapes = {key: shape(m) for key, m in models.items()}
    rows = [one(r, worker_of(r), shapes[id(r["model"])]) for r in resolved]
    return {k: np.array([r[k] for r in rows], dtype=float) for k in rows[0]} if rows else {}
