"""Decode step, prefill, TPOT and TTFT of continuous-batching GPU serving, vectorized over runs.

A run serves `C` concurrent requests of `isl` input and `osl` output tokens (closed loop: a finished request
is replaced by a new one). Per GPU, each kernel class costs max(bytes / (HBM bandwidth · eta_bw), FLOPs /
(peak · eta_mm)) — attention projections, attention over the KV cache, dense FFN, routed experts (their own
bandwidth share eta_moe and matmul share eta_xmm: grouped GEMMs over many experts with few tokens each, tiled and
scheduled unlike one dense GEMM), shared experts, the router (16-bit, whole on every GPU), head — plus
tensor-parallel all-reduces and, with attention DP, the MoE layer's exchange of tokens over the GPUs' links (_comm), plus the stack's fixed time per layer, per MoE layer (routing, token permutation and the grouped-GEMM
launches a dense layer does not have), per step, and per running sequence per step (the host's scheduling,
sampling and detokenization, which grow with the batch a scheduler runs). Pipeline stages run one after
the other for a token, so stage times add up to the whole model's work on one tensor group.

Steady state (per decode step every running sequence emits one token, and C/osl requests start):
  TPOT = t_decode(C) + alpha · (C / osl) · t_prefill(isl)        prefills share the GPU with decode
  TTFT = t_req + t_prefill + t_decode + sync · (C − 1) · t_prefill + KV queue
`sync` is the share of the other in-flight requests' prefills a new one waits behind (0: arrivals spread
out; 1: all arrive together); all C count, attention-DP ranks included, as the ranks step together.
When the KV cache holds fewer than C/dp sequences per rank, the rest wait for a slot: (C/dp − S) / S request lifetimes (Little's law in a closed loop).

X is a dict of arrays (one entry per run; names in FEATURES), P a dict of the stack's arrays (STACK).
X["kv_held"], X["kv_read"], X["pair_share"]: for a model whose layers mix attention kinds (sliding, chunked,
sparse, linear; cost/node/mix.py), the mean over layers of the tokens a layer's KV cache holds and of the keys a
decode query reads, each over the context, and the prefill's (query, key) pairs over causal full attention's;
all 1 for a model of full-attention layers only. X["idx_bytes"], X["idx_flops"]: a sparse (DSA) layer's indexer
keys per cached token and its FLOPs per (query, key) pair over every key of the context, summed over the layers;
X["state_bytes"], X["state_flops"]: a linear layer's recurrent state per sequence (bytes, read and written each
decode step) and its FLOPs per token, summed over the layers; all on the busiest TP rank, 0 for a
model without such layers (validate/silicon/features.cache_extras).
X["kv_share"], X["kv_of_total"]: the backend's KV memory budget (kv_budget).
X["b_attn"], X["F_attn"]: bytes a weight and matmul peak of the attention projections, which a checkpoint may keep
apart from its other GEMMs (`b_gemm`, `F_gemm`: dense FFNs, shared experts; validate/silicon/checkpoints.py).
X["agg"] is 1 where prefill and decode share the GPUs, 0 for a disaggregated worker (a prefill worker's
TTFT has no decode step in it; a decode worker's TPOT no prefill).
X["dp_gather"] is 1 where the backend gathers its attention-DP ranks' tokens before the whole MoE block, gate and
shared experts included, and splits the shared experts over the MoE TP group (SGLang), 0 where the gate and the
shared experts run on each rank's own tokens before the experts' exchange (vLLM, TensorRT-LLM): `_shared_split`.
"""

from __future__ import annotations

import numpy as np

from wsemoe.cost.node import params, weights

FEATURES = ("L", "Lm", "H", "heads", "attn_w", "attn_kv_w", "dense_w", "expert_w", "shared_w", "router_w", "head_w", "E", "k",
            "kv_values",
            "kv_shards", "sf_decode", "sf_prefill", "b_gemm", "b_attn", "F_attn", "b_moe", "b_kv", "b_dispatch",
            "F_gemm", "F_moe", "F16",
            "B", "link", "link_ep", "ep_remote", "mem", "tp", "dp", "pp", "moe_tp", "moe_ep", "C", "isl", "osl", "ar_lat",
            "a2a_lat", "agg", "dp_gather",
            "kv_share", "kv_of_total", "kv_held", "kv_read", "pair_share", "idx_bytes", "idx_flops", "state_bytes",
            "state_flops")
STACK = ("eta_bw", "eta_mm", "eta_moe", "eta_xmm", "t_layer", "t_moe", "t_step", "t_seq", "t_req", "sync", "alpha")
ACT_BYTES = 2.0   # activations exchanged between GPUs are 16-bit, except expert-parallel dispatch: X["b_dispatch"],
                  # the expert matmul's operand format where the GPU multiplies in it (cost/node/formats.dispatched_bytes:
                  # FP8 with its scales, 1.03 bytes, as DeepSeek-V3 §3.3 and DeepEP; NVFP4, 0.5625, as TensorRT-LLM's
                  # post-quant dispatch), 16-bit otherwise; the combine returns 16-bit
# The KV cache's memory budget, per backend at its defaults: (share, of_total). of_total 1: the share is of the
# whole HBM and holds weights and cache (vLLM gpu_memory_utilization, default 0.9 in the 0.10-0.12 engine
# arguments); of_total 0: the share is of the memory left after the weights (TensorRT-LLM
# KvCacheConfig.free_gpu_memory_fraction, default 0.9). Where weights fill most of the HBM the two rules differ
# by far more than 10%: 0.9 of what is left is not 0.9 of the whole minus the weights. SGLang's
# mem_fraction_static is a share of the whole too, but its 0.5 releases size it from the memory they reserve for
# activations and graphs, not as a fixed share (the given SGLang runs hold DeepSeek-V3 FP8 on 4 B200s, 168 GB of
# weights a GPU in 180 GB, which the older fixed 0.85 could not load); read as the share of what is left.
KV_BUDGET = {"vllm": (0.9, 1.0), "trtllm": (0.9, 0.0), "sglang": (0.9, 0.0)}


# Backends whose DP attention gathers the ranks' tokens before the whole MoE block (X["dp_gather"], _shared_split):
# SGLang; vLLM and TensorRT-LLM run the gate and the shared experts on each rank's own tokens (an unknown backend
# as TensorRT-LLM).
DP_GATHER = {"sglang": 1.0}


def kv_budget(backend: str) -> tuple[float, float]:
    """(share, of_total) of the KV budget of `backend` (an unknown backend: TensorRT-LLM's rule)."""
    return KV_BUDGET.get(backend, KV_BUDGET["trtllm"])


def _kernel(bytes_, flops, X, P, peak, eta_bw=None, eta_mm=None):
    """Roofline time of one kernel class: memory or compute, whichever is longer."""
    return np.maximum(bytes_ / (X["B"] * (P["eta_bw"] if eta_bw is None else eta_bw)),
                      flops / (peak * (P["eta_mm"] if eta_mm is None else eta_mm)))


def _heads(X):
    """Share of the query heads the busiest TP rank holds (params.head_share: whole heads a rank)."""
    return params.head_share(X["heads"], X["tp"])


def _kv_part(X):
    """Share of a token's KV the busiest TP rank holds: ⌈n_kv/tp⌉/n_kv (MLA: kv_shards 1, the whole latent)."""
    return params.head_share(X["kv_shards"], X["tp"])


def _attn_rank(X):
    """Attention projection weights per layer the busiest TP rank holds and runs: its heads' share of the heads'
    projections, its KV share of the K/V ones (MLA: the down-projections, which every rank runs whole)."""
    return params.per_rank(X["attn_w"], X["attn_kv_w"], _heads(X), _kv_part(X))


def _dense_layers(X):
    return X["L"] - X["Lm"]


def _experts(X, P, tokens):
    """The routed experts' grouped GEMMs for `tokens` tokens over the expert GPUs: k matmul rows per token, and
    the weights of every touched expert on the EP rank that reads the most (weights.busiest_hits, the node-level
    model's rule: the step waits for it), each split moe_tp ways."""
    moe_gpus = X["moe_tp"] * X["moe_ep"]
    read = weights.busiest_hits(weights.hit_share(X["k"], X["E"], np.maximum(tokens, 0.0)), X["E"], X["moe_ep"])
    return _kernel(X["Lm"] * read * X["expert_w"] * X["b_moe"] / X["moe_tp"],
                   2 * X["Lm"] * X["expert_w"] * tokens * X["k"] / moe_gpus, X, P, X["F_moe"], P["eta_moe"], P["eta_xmm"])


def _comm(X, tokens_rank):
    """Per-layer communication for `tokens_rank` tokens per attention rank: two TP all-reduces of the hidden
    state over the TP group's link (`link`), and, over one pipeline stage's GPUs (`link_ep`), what the MoE layer
    of data-parallel attention ranks exchanges:
    - with expert parallelism, a dispatch (`b_dispatch` bytes a value) and a 16-bit combine of the k copies of
      each token that leave the link's near side (`ep_remote`: a copy for an expert on the sender's own GPU
      crosses no link, 1/moe_ep of them; validate/silicon/features.ep_remote);
    - without it (experts split by TP over every rank), an all-gather of every rank's tokens before the experts
      and a reduce-scatter of their outputs after, 16-bit, (dp − 1) shares of a rank's tokens each (ring), as
      any TP split of the experts over ranks that attend to different tokens must (vLLM's naive dispatch and
      combine over its DP group, SGLang's DP-attention gather and scatter).
    Without attention DP (dp 1) every rank holds every token after the attention's all-reduce: an
    expert-parallel layer runs its own experts over all of them and the MoE output's all-reduce (one of the two
    counted) sums the ranks' shares, so no all-to-all runs (vLLM's FusedMoEParallelConfig:
    use_all2all_kernels = use_ep and dp_size > 1; TensorRT-LLM's and SGLang's all-to-all MoE backends likewise
    come with attention DP)."""
    msg = tokens_rank * X["H"] * ACT_BYTES
    ar = np.where(X["tp"] > 1, 2 * (X["ar_lat"] + 2 * (X["tp"] - 1) / X["tp"] * msg / X["link"]), 0.0)
    a2a_bytes = tokens_rank * X["H"] * X["k"] * X["ep_remote"] * (X["b_dispatch"] + ACT_BYTES)  # dispatch, combine
    gather_bytes = 2 * (X["dp"] - 1) * msg                                        # all-gather + reduce-scatter
    moe = np.where(X["moe_ep"] > 1, 2 * X["a2a_lat"] + a2a_bytes / X["link_ep"],
                   2 * X["ar_lat"] + gather_bytes / X["link_ep"])
    return X["L"] * ar + X["Lm"] * np.where(X["dp"] > 1, moe, 0.0)


def _gathered(X):
    """1 where the MoE block runs on the attention-DP ranks' gathered tokens (`dp_gather`: SGLang's DP attention
    without expert parallelism), else 0."""
    return np.where((X["dp"] > 1) & (X["moe_ep"] <= 1), X["dp_gather"], 0.0)


def _shared_split(X):
    """Ways a GPU's shared experts are split (the router is whole: `_router`):
    - 1 where attention-DP ranks of tp > 1 GPUs dispatch over an all-to-all (each GPU then holds only its 1/tp of
      its rank's tokens, routes them and runs the whole shared experts on them: SGLang's shared experts take
      tp_size=1 under its all-to-all backends, its MoE layers run SCATTERED; cost/stagecost.shared_split has the
      sources);
    - tp·dp where attention DP runs without expert parallelism on a backend that gathers the ranks' tokens first
      (`_gathered`): SGLang builds the shared experts with the MoE's tensor-parallel size, its tp_size over every
      DP rank (github.com/sgl-project/sglang: python/sglang/srt/models/deepseek_v2.py, DeepseekV2MoE: DeepseekV2MLP
      without tp_size, so get_tensor_model_parallel_world_size()), and its MoE layers run FULL, on all ranks'
      tokens (python/sglang/srt/layers/communicator.py, _compute_mlp_mode);
    - the attention TP group otherwise (every member holds all of its rank's tokens): vLLM's shared experts take
      the attention TP group and run on the rank's own tokens before its naive dispatch
      (github.com/vllm-project/vllm: vllm/model_executor/models/deepseek_v2.py, DeepseekV2MLP without
      is_sequence_parallel), TensorRT-LLM's attention DP sets shared_tp_size = 1 with tp 1
      (tensorrt_llm/_torch/models/modeling_deepseekv3.py, _compute_shared_expert_tp_size).
    The shared FLOPs a GPU runs are the same in all three: 2·W·b/tp (b/tp tokens on whole weights; b·dp tokens on
    1/(tp·dp) of them; b tokens on 1/tp)."""
    return np.where((X["dp"] > 1) & (X["moe_ep"] > 1), 1.0, np.where(_gathered(X) > 0, X["tp"] * X["dp"], X["tp"]))


def _router(X, P, tokens):
    """The gate's GEMM for `tokens` tokens of one attention rank: its 16-bit weights whole on every GPU (every engine
    replicates it: SGLang's MoEGate is one unsplit (n_routed_experts, hidden_size) parameter, vLLM's gate a
    ReplicatedLinear, TensorRT-LLM's DeepseekV3Gate one (num_experts, hidden_size) weight;
    cost/stagecost.router_tokens has the sources), run by each GPU over the tokens it holds: its 1/tp slice under
    an all-to-all, its ranks' gathered tokens where the backend gathers first (`_gathered`), its rank's otherwise."""
    held = np.where((X["dp"] > 1) & (X["moe_ep"] > 1), tokens / X["tp"],
                    np.where(_gathered(X) > 0, tokens * X["dp"], tokens))
    return _kernel(X["Lm"] * X["router_w"] * ACT_BYTES, 2 * X["Lm"] * X["router_w"] * held, X, P, X["F16"])


def decode_step(X, P, seqs):
    """Time of one decode step with `seqs` running sequences in all (seqs / dp per attention rank)."""
    b = seqs / X["dp"]
    ctx = X["isl"] + X["osl"] / 2.0  # mean context over a request's decode
    tp = X["tp"]
    attn = X["L"] * _attn_rank(X)
    t = _kernel(attn * X["b_attn"], 2 * attn * b, X, P, X["F_attn"])
    keys = ctx * X["kv_read"]  # a sliding, chunked or sparse layer reads fewer keys (and their KV); linear none
    kv = b * keys * X["L"] * X["kv_values"] * X["b_kv"] * _kv_part(X)
    t = t + _kernel(kv, b * keys * X["L"] * X["sf_decode"] * _heads(X), X, P, X["F16"])
    t = t + _kernel(b * (ctx * X["idx_bytes"] + 2 * X["state_bytes"]),
                    b * (ctx * X["idx_flops"] + X["state_flops"]), X, P, X["F16"])   # indexer keys; linear states
    ld = _dense_layers(X)
    t = t + _kernel(ld * X["dense_w"] * X["b_gemm"] / tp, 2 * ld * X["dense_w"] / tp * b, X, P, X["F_gemm"])
    t = t + _experts(X, P, seqs)
    t = t + _kernel(X["Lm"] * X["shared_w"] * X["b_gemm"] / _shared_split(X), 2 * X["Lm"] * X["shared_w"] / tp * b, X, P,
                    X["F_gemm"]) + _router(X, P, b)
    t = t + _kernel(X["head_w"] * ACT_BYTES / tp, 2 * X["head_w"] / tp * b, X, P, X["F16"])
    return t + _comm(X, b) + X["L"] * P["t_layer"] + X["Lm"] * P["t_moe"] + P["t_step"] + P["t_seq"] * b


def prefill(X, P):
    """Time to prefill one request of isl tokens on its attention rank (experts spread over every GPU)."""
    n = X["isl"]
    tp = X["tp"]
    attn = X["L"] * _attn_rank(X)
    t = _kernel(attn * X["b_attn"], 2 * attn * n, X, P, X["F_attn"])
    pairs = X["pair_share"] * n * n / 2.0  # causal: half the pairs (fewer where layers attend to a window)
    t = t + X["L"] * X["sf_prefill"] * pairs * _heads(X) / (X["F16"] * P["eta_mm"])
    indexer_pairs = n * (n + 1.0) / 2.0   # the indexer scores every earlier key, whatever top-k it keeps
    t = t + (X["idx_flops"] * indexer_pairs + X["state_flops"] * n) / (X["F16"] * P["eta_mm"])
    ld = _dense_layers(X)
    t = t + _kernel(ld * X["dense_w"] * X["b_gemm"] / tp, 2 * ld * X["dense_w"] / tp * n, X, P, X["F_gemm"])
    t = t + _experts(X, P, n)
    t = t + _kernel(X["Lm"] * X["shared_w"] * X["b_gemm"] / _shared_split(X), 2 * X["Lm"] * X["shared_w"] / tp * n, X, P,
                    X["F_gemm"]) + _router(X, P, n)
    return t + _comm(X, n) + X["L"] * P["t_layer"] + X["Lm"] * P["t_moe"]


def weights_per_gpu(X):
    """Weight bytes one GPU holds (its pipeline stage's share; embedding and head 16-bit, split by TP; the router
    16-bit and whole, `_router`; attention in the format its checkpoint keeps it, `b_attn`)."""
    dense = (X["L"] * _attn_rank(X) * X["b_attn"]
             + (_dense_layers(X) * X["dense_w"] / X["tp"] + X["Lm"] * X["shared_w"] / _shared_split(X)) * X["b_gemm"]
             + X["Lm"] * X["router_w"] * ACT_BYTES)
    experts = X["Lm"] * X["E"] * X["expert_w"] * X["b_moe"] / (X["moe_tp"] * X["moe_ep"])
    return (dense + experts) / X["pp"] + 2 * X["head_w"] * ACT_BYTES / X["tp"]


def kv_slots(X):
    """Requests the KV cache of one attention rank holds at their mean context (isl + osl/2: paged caches take
    blocks as tokens come, and requests in flight are spread over their lives); < 1: the model does not fit."""
    w = weights_per_gpu(X)
    free = np.where(X["kv_of_total"] > 0, X["kv_share"] * X["mem"] - w, X["kv_share"] * (X["mem"] - w))
    held = (X["isl"] + X["osl"] / 2.0) * X["kv_held"]
    per_seq = held * X["L"] / X["pp"] * X["kv_values"] * X["b_kv"] * _kv_part(X)
    per_seq = per_seq + ((X["isl"] + X["osl"] / 2.0) * X["idx_bytes"] + X["state_bytes"]) / X["pp"]
    return np.floor(np.maximum(free, 0.0) / per_seq)


def predict(X, P) -> dict:
    """TTFT and TPOT (seconds) of each run, with the parts they are made of."""
    slots = kv_slots(X)
    per_rank = X["C"] / X["dp"]
    running = np.minimum(per_rank, np.maximum(slots, 1.0)) * X["dp"]
    t_d = decode_step(X, P, running)
    t_p = prefill(X, P)
    tpot = t_d + X["agg"] * P["alpha"] * (running / X["osl"]) * t_p
    ttft0 = P["t_req"] + t_p + X["agg"] * t_d + P["sync"] * np.maximum(running - 1.0, 0.0) * t_p
    waiting = np.maximum(per_rank - slots, 0.0) / np.maximum(slots, 1.0)
    ttft = ttft0 + waiting * (ttft0 + X["osl"] * tpot)
    return {"ttft": ttft, "tpot": tpot, "decode_step": t_d, "prefill": t_p, "kv_slots": slots,
            "fits": slots >= 1}
