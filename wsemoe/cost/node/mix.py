"""A model's layers as classes of identical layers: compiled once per unique model from its `layers:` pattern.

A uniform model (no pattern) has no mix: every caller keeps its closed form (L layers of the model's attention,
L − first_k_dense_replace of them MoE), so its numbers are exactly those of before. A patterned model compiles
into its ordered sequence of (FFN kind, attention kind) and the counts of each class; the cost model then sums
class costs × counts, and per-layer figures (attention FLOPs, KV bytes) are the mean over the layers, so every
total (parameters, model FLOPs, KV cache) is exact. Structural fields of a patterned model are scalars (a pattern
cannot be swept). Per attention kind (docs/layers.md), for a query at context S:

    full     S keys            KV holds S tokens
    sliding  min(W, S) keys    KV holds min(W, S) tokens
    chunked  min(C, S) keys    KV holds min(C, S) tokens (the query's own chunk)
    sparse   min(k, S) keys    KV holds S tokens, plus the indexer over all S keys (its key cache too)
    linear   no keys           a fixed state per sequence: n_v·d_k·d_v plus the short convolution's window
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

KINDS = ("full", "sliding", "chunked", "sparse", "linear")


def _plain(obj):
    """The pattern as plain data (a spec's dump, or the dict a design frame's namespace carries)."""
    if obj is None:
        return None
    return obj.model_dump() if hasattr(obj, "model_dump") else obj


@dataclass(frozen=True)
class Mix:
    """Compiled layers: ordered (ffn, attention) per layer, class counts, and the pattern's shapes."""

    sequence: tuple          # ((ffn, attention), ...) one per layer, in order
    counts: dict             # {(ffn, attention): layers}
    attention: dict          # {attention kind: layers}
    moe: int
    dense: int
    cum_dense: np.ndarray    # dense layers among the first i layers, i = 0 … L
    pattern: dict

    @property
    def layers(self) -> int:
        return len(self.sequence)

    def describe(self) -> str:
        """The pattern in one line: `48 layers: 24 dense + 24 MoE; 36 chunked + 12 full`."""
        ffn = " + ".join(f"{n} {k}" for k, n in (("dense", self.dense), ("MoE", self.moe)) if n)
        attn = " + ".join(f"{n} {k}" for k, n in self.attention.items())
        return f"{self.layers} layers: {ffn}; {attn}"


def _ffn_kind(pattern: dict, i: int, first_dense: int) -> str:
    if i < first_dense:
        return "dense"
    ffn = pattern.get("ffn")
    if ffn is None:
        return "moe"
    if isinstance(ffn, list):
        return ffn[i % len(ffn)]
    return "moe" if i % ffn["every"] == ffn.get("offset", 0) else "dense"


@lru_cache(maxsize=256)
def _compile(layers: int, first_dense: int, text: str) -> Mix:
    pattern = json.loads(text)
    attn = pattern.get("attention") or ["full"]
    over = {o["layer"]: o for o in pattern.get("overrides") or ()}
    seq = []
    for i in range(layers):
        f, a = _ffn_kind(pattern, i, first_dense), attn[i % len(attn)]
        o = over.get(i, {})
        seq.append((o.get("ffn") or f, o.get("attention") or a))
    counts, kinds = {}, {}
    for f, a in seq:
        counts[(f, a)] = counts.get((f, a), 0) + 1
        kinds[a] = kinds.get(a, 0) + 1
    dense = np.concatenate([[0], np.cumsum([f == "dense" for f, _ in seq])]).astype(np.int64)
    dense.setflags(write=False)
    return Mix(tuple(seq), counts, kinds, layers - int(dense[-1]), int(dense[-1]), dense, pattern)


def mix(m) -> Mix | None:
    """The compiled layers of a patterned model (cached per unique model), None for a uniform one."""
    pattern = _plain(getattr(m, "layers", None))
    if pattern is None:
        return None
    for key in ("num_hidden_layers", "first_k_dense_replace"):
        if np.ndim(getattr(m, key)) != 0 and np.unique(getattr(m, key)).size > 1:
            raise ValueError(f"model.{key} cannot be swept on a model with a layers: pattern")
    first = int(np.max(m.first_k_dense_replace))
    return _compile(int(np.max(m.num_hidden_layers)), first, json.dumps(pattern, sort_keys=True, default=str))


def describe(m) -> str:
    """One line: the layer pattern of any model (uniform ones too)."""
    mx = mix(m)
    if mx is not None:
        return mx.describe()
    L, k = int(m.num_hidden_layers), int(m.first_k_dense_replace)
    ffn = " + ".join(f"{n} {s}" for s, n in (("dense", k), ("MoE", L - k)) if n)
    kind = "MLA" if getattr(m, "attention", "gqa") == "mla" else "full"
    return f"{L} layers: {ffn}; {L} {kind}"


def dense_before(m, index):
    """Dense layers among the first `index` layers (arrays broadcast): the pipeline's stages count theirs."""
    mx = mix(m)
    i = np.asarray(index, dtype=np.int64)
    if mx is None:
        return np.minimum(i, m.first_k_dense_replace)
    return mx.cum_dense[np.clip(i, 0, mx.layers)]


def keys_read(kind: str, pattern: dict, S):
    """Keys one query of a layer of `kind` attends to at context S (its softmax over them)."""
    if kind == "sliding":
        return np.minimum(pattern["sliding_window"], S)
    if kind == "chunked":
        return np.minimum(pattern["attention_chunk_size"], S)
    if kind == "sparse":
        return np.minimum(pattern["sparse"]["index_topk"], S)
    if kind == "linear":
        return 0.0 * S
    return S + 0.0


def mean_keys_read(kind: str, pattern: dict, S):
    """Mean of keys_read over the queries at positions 1 … S of a causal sweep: min(c, s) averaged, c the kind's
    window (full attention: s itself, (S+1)/2)."""
    S = np.asarray(S, dtype=float)
    if kind == "linear":
        return 0.0 * S
    c = np.asarray(keys_read(kind, pattern, np.inf), dtype=float)
    inside = np.minimum(c, S)   # positions up to the window read all their keys
    with np.errstate(invalid="ignore"):
        return np.where(S > c, (inside * (inside + 1.0) / 2.0 + (S - inside) * inside) / S, (S + 1.0) / 2.0)


def tokens_held(kind: str, pattern: dict, S):
    """Tokens of one sequence a layer of `kind` keeps keys and values of (linear: none, it keeps a state)."""
    if kind in ("sliding", "chunked"):
        return keys_read(kind, pattern, S)
    return 0.0 * S if kind == "linear" else S + 0.0


def linear_params(m, pattern: dict):
    """(matmul weights, other weights) of one Gated DeltaNet block (HF Qwen3NextGatedDeltaNet): the q/k/v/z and
    b/a input projections and the output projection; the short convolution over q, k and v, the per-head decay
    (A_log, dt_bias) and the gated RMSNorm over a value head."""
    lin, H = pattern["linear"], m.hidden_size
    key, value = lin["num_key_heads"] * lin["key_head_dim"], lin["num_value_heads"] * lin["value_head_dim"]
    proj = H * (2 * key + 2 * value) + H * 2 * lin["num_value_heads"] + value * H
    other = (2 * key + value) * lin["conv_kernel"] + 2 * lin["num_value_heads"] + lin["value_head_dim"]
    return proj, other


def linear_flops_per_token(pattern: dict):
    """Recurrent core of one token in a Gated DeltaNet layer: per value head, the state's read by the key, its
    rank-one update and its read by the query, each a d_k × d_v product (2 FLOP per multiply-add): 6·n_v·d_k·d_v."""
    lin = pattern["linear"]
    return 6.0 * lin["num_value_heads"] * lin["key_head_dim"] * lin["value_head_dim"]


# Bytes per value of a recurrent state kept in a format of its own (LinearAttention.state_format, from a config's
# `mamba_ssm_dtype`): IEEE binary32 and the two 16-bit formats. vLLM keeps the Gated DeltaNet state in the config's
# `mamba_ssm_dtype` (model_executor/models/config.py Qwen3_5ForConditionalGenerationConfig sets
# mamba_ssm_cache_dtype from it; layers/mamba/mamba_utils.gated_delta_net_state_dtype), SGLang likewise
# (configs/mamba_utils.mamba2_state_dtype reads config.mamba_ssm_dtype, default float32).
STATE_BYTES = {"fp32": 4.0, "bf16": 2.0, "fp16": 2.0}
# Neither state is in the KV cache's format: an FP8 KV cache (vLLM --kv-cache-dtype, SGLang --kv-cache-dtype)
# quantizes the softmax layers' keys and values only. vLLM keeps the convolution inputs, and the recurrent state
# unless mamba_ssm_cache_dtype says otherwise, in CacheConfig.mamba_cache_dtype, whose "auto" is the model's dtype
# (16-bit; layers/mamba/mamba_utils.MambaStateDtypeCalculator._mamba_state_dtype); SGLang keeps the convolution
# inputs in bfloat16 (configs/mamba_utils.mamba2_state_dtype: SGLANG_MAMBA_CONV_DTYPE, default bfloat16).
CONV_BYTES = 2.0
STATE_UNSET_BYTES = 2.0   # vLLM's "auto"; SGLang defaults an unstated state to float32 (4 bytes)


def state_bytes(pattern: dict) -> float:
    """Bytes per value of a linear layer's recurrent state: its `state_format`, else the model's 16 bits."""
    fmt = pattern["linear"].get("state_format")
    return STATE_BYTES[fmt] if fmt else STATE_UNSET_BYTES


def linear_state_bytes(pattern: dict):
    """Bytes one sequence keeps per linear layer: n_v·d_k·d_v of recurrent state (state_bytes) and (kernel − 1)
    inputs of the convolution over q, k and v, 16-bit (CONV_BYTES); neither follows `kv_format`."""
    lin = pattern["linear"]
    conv = (2 * lin["num_key_heads"] * lin["key_head_dim"] + lin["num_value_heads"] * lin["value_head_dim"])
    return lin["num_value_heads"] * lin["key_head_dim"] * lin["value_head_dim"] * state_bytes(pattern) + \
        conv * (lin["conv_kernel"] - 1) * CONV_BYTES


def indexer_params(m, pattern: dict):
    """(matmul weights, other weights) of the sparse-attention indexer (DeepSeek-V3.2 Indexer): queries from the
    query latent (or the hidden state without one), one key head from the hidden state, a weight per head; the
    key LayerNorm's weight and bias."""
    sp, H = pattern["sparse"], m.hidden_size
    q_in = (getattr(m, "q_lora_rank", None) or H)
    proj = q_in * sp["index_n_heads"] * sp["index_head_dim"] + H * sp["index_head_dim"] + H * sp["index_n_heads"]
    return proj, 2 * sp["index_head_dim"]


# The indexer's key cache is FP8 E4M3 with one FP32 scale per 128 values whatever the KV cache's format: DeepSeek's
# V3.2-Exp inference/model.py (Indexer: k_cache float8_e4m3fn, k_scale_cache float32 of head_dim // block_size,
# block_size 128) and LightLLM's Deepseek3_2MemoryManager (k_cache_dtype float8_e4m3fn, k_scale_dtype float32).
INDEX_KEY_BLOCK, INDEX_SCALE_BYTES = 128, 4


def indexer_key_bytes(pattern: dict):
    """Bytes one token's indexer key takes in a sparse layer's cache: d_idx FP8 values and an FP32 scale per 128
    (132 for d_idx 128), independent of `kv_format`."""
    dim = pattern["sparse"]["index_head_dim"]
    return dim + -(-dim // INDEX_KEY_BLOCK) * INDEX_SCALE_BYTES


def indexer_flops_per_pair(pattern: dict):
    """The indexer's score of one (query, key) pair over its heads: 2·n_idx·d_idx (its per-head weighting and
    ReLU are negligible)."""
    sp = pattern["sparse"]
    return 2.0 * sp["index_n_heads"] * sp["index_head_dim"]


def context_of(m, ffn: str | None, S):
    """Keys a layer of FFN kind `ffn` ("dense", "moe"; None: any) scores per query at context S, the mean over the
    model's layers of that kind (the PE-level operators' context): S for a uniform model; for a pattern, each
    layer's window, chunk or top-k (a linear layer scores none; cost/wafer/attnkinds.py prices its state and a
    sparse layer's indexer at PE level)."""
    mx = mix(m)
    if mx is None:
        return S
    of = {}
    for (f, a), n in mx.counts.items():
        if ffn is None or f == ffn:
            of[a] = of.get(a, 0) + n
    if set(of) <= {"full"}:
        return S
    return sum(n * keys_read(a, mx.pattern, S) for a, n in of.items()) / sum(of.values())


def widest_context(m, S):
    """Most keys any layer scores per query at context S (S for a uniform model)."""
    mx = mix(m)
    if mx is None or "full" in mx.attention:
        return S
    return np.max(np.broadcast_arrays(*(keys_read(a, mx.pattern, S) for a in mx.attention)), axis=0)
