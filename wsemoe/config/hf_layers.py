"""Import the Hugging Face model types whose layers differ (a `layers:` pattern, specs/layers.py).

llama4 (MoE every `interleave_moe_layer_step` layers, dense `intermediate_size_mlp` between; chunked attention on
the RoPE layers, full on the NoPE ones), gpt_oss (sliding-window and full layers from `layer_types`, sinks,
biases), qwen3_next and qwen3_5_moe (Gated DeltaNet linear layers with gated full attention every
`full_attention_interval`), and the sparse-attention indexer of deepseek_v32 and glm_moe_dsa. Each importer
reads every key that changes cost; a layer type it does not know is an error naming the key.

Functions take the config reader of hf.py (`r.int`, `r.bool`, `r.fail`, `r.data`, `r.origin`) and return
ModelSpec fields.
"""

from __future__ import annotations

from typing import Any

from wsemoe.specs.base import MAX_LAYERS, got, not_positive

# Hugging Face layer-type names -> attention kinds.
_LAYER_TYPES = {"full_attention": "full", "sliding_attention": "sliding", "chunked_attention": "chunked",
                "linear_attention": "linear"}


def _seen(r, *keys: str) -> None:
    """Keys read for their meaning but not stored (the unknown-key check counts them as read)."""
    for key in keys:
        r.origin.setdefault(f"_{key}", key)


def gqa_attention(r) -> dict:
    """Common GQA attention fields; head_dim falls back to hidden/heads as in HF (both sizes positive first, so a
    bad one is named as itself, not as a divisibility)."""
    hidden, heads = r.int("hidden_size"), r.int("num_attention_heads")
    head_dim = r.int("head_dim", None)
    if head_dim is None:
        for k, v in (("hidden_size", hidden), ("num_attention_heads", heads)):
            if not isinstance(v, int) or v <= 0:
                raise r.fail(k, not_positive(v))
        if hidden % heads:
            raise r.fail("num_attention_heads", f"hidden_size {hidden} is not divisible by num_attention_heads {heads}")
        head_dim = hidden // heads
    return {"hidden_size": hidden, "num_attention_heads": heads, "head_dim": head_dim,
            "num_key_value_heads": r.int("num_key_value_heads", heads)}


def layer_count(r) -> int:
    """`num_hidden_layers`, checked before a list of one entry per layer is built from it: the spec's own bound
    came too late (1e308 layers, read as an integer, built a list until memory ran out)."""
    layers = r.int("num_hidden_layers")
    if not isinstance(layers, int) or layers <= 0:
        raise r.fail("num_hidden_layers", not_positive(layers))
    if layers > MAX_LAYERS:
        raise r.fail("num_hidden_layers", got(f"Input should be less than or equal to {MAX_LAYERS}", layers))
    return layers


def period(r, key: str, default: int) -> int:
    """Every how many layers a kind recurs (`full_attention_interval`): 0 was a division by zero."""
    value = r.int(key, default)
    if not isinstance(value, int) or value <= 0:
        raise r.fail(key, not_positive(value))
    return value


def _int_list(r, key: str, length: int) -> list | None:
    value = r.data.get(key)
    r.origin[f"_{key}"] = key
    if value is None:
        return None
    if not isinstance(value, list) or len(value) != length or not all(isinstance(v, int) for v in value):
        raise r.fail(key, f"'{key}' must be a list of {length} integers (one per layer), got {value!r:.60}")
    return value


def layer_types(r, layers: int, default: list[str]) -> list[str]:
    """Attention kind per layer from `layer_types` (or `default`): an unknown type is an error naming the key."""
    value = r.data.get("layer_types")
    r.origin["_layer_types"] = "layer_types"
    if value is None:
        return default
    if not isinstance(value, list) or len(value) != layers:
        raise r.fail("layer_types", f"'layer_types' must list one type per layer ({layers}), got {value!r:.60}")
    unknown = [v for v in value if v not in _LAYER_TYPES]
    if unknown:
        raise r.fail("layer_types", f"unknown layer type {unknown[0]!r:.40}; known: {', '.join(_LAYER_TYPES)}")
    return [_LAYER_TYPES[v] for v in value]


def compact(kinds: list) -> list:
    """The shortest period that repeats to `kinds` (a 48-entry alternation becomes two entries)."""
    n = len(kinds)
    for p in range(1, n + 1):
        if n % p == 0 and kinds == kinds[:p] * (n // p):
            return kinds[:p]
    return kinds


def llama4(r) -> dict:
    """Llama 4 text model: MoE (routed top-k plus one shared expert of the expert width) on every
    `interleave_moe_layer_step`-th layer (or the layers `moe_layers` lists), dense `intermediate_size_mlp` FFNs on
    the others; chunked attention (`attention_chunk_size`) on the RoPE layers and full attention on the NoPE ones
    (`no_rope_layers`, by default every fourth layer). Its qk-norm is an L2 norm without weights."""
    L = layer_count(r)
    step = r.int("interleave_moe_layer_step", 1)
    if not isinstance(step, int) or step < 1:
        raise r.fail("interleave_moe_layer_step", f"interleave_moe_layer_step must be a positive integer, got {step!r}")
    listed = r.data.get("moe_layers")
    r.origin["_moe_layers"] = "moe_layers"
    ffn: Any = None
    if listed is not None:
        if not isinstance(listed, list) or not all(isinstance(i, int) and 0 <= i < L for i in listed):
            raise r.fail("moe_layers", f"'moe_layers' must list layer indices 0 … {L - 1}, got {listed!r:.60}")
        ffn = compact(["moe" if i in set(listed) else "dense" for i in range(L)])
    elif step > 1:
        ffn = {"every": step, "offset": step - 1}
    chunk = r.int("attention_chunk_size", None)
    rope = _int_list(r, "no_rope_layers", L)
    interval = period(r, "no_rope_layer_interval", 4)
    if rope is None:
        rope = [int((i + 1) % interval != 0) for i in range(L)]
    kinds = layer_types(r, L, ["chunked" if (use and chunk) else "full" for use in rope])
    _seen(r, "use_qk_norm", "attn_temperature_tuning", "floor_scale", "attn_scale", "router_jitter_noise")
    pattern: dict = {"attention": compact(kinds)}
    if ffn is not None:
        pattern["ffn"] = ffn
    if chunk and "chunked" in kinds:
        pattern["attention_chunk_size"] = chunk
    dense = r.int("intermediate_size_mlp") if ffn is not None else r.int("intermediate_size_mlp", 0)
    return {**gqa_attention(r), "num_experts": r.int("num_local_experts", field="num_experts"),
            "num_experts_per_tok": r.int("num_experts_per_tok"),
            "moe_intermediate_size": r.int("intermediate_size", field="moe_intermediate_size"),
            "n_shared_experts": 1, "intermediate_size": dense,
            "qkv_bias": r.bool("attention_bias", False, field="qkv_bias"), "layers": pattern}


def gpt_oss(r) -> dict:
    """gpt-oss: sliding-window (`sliding_window`) and full layers from `layer_types`, a learned sink per head,
    biases on q/k/v/o, on the router and on every expert; experts of width `intermediate_size`."""
    L = layer_count(r)
    bias = r.bool("attention_bias", True, field="qkv_bias")
    kinds = layer_types(r, L, ["sliding", "full"] * (L // 2) + ["sliding"] * (L % 2))
    pattern: dict = {"attention": compact(kinds), "sinks": True, "o_bias": bias, "ffn_bias": True}
    if "sliding" in kinds:
        pattern["sliding_window"] = r.int("sliding_window")
    top_k = r.int("num_experts_per_tok", None) or r.int("experts_per_token")
    _seen(r, "experts_per_token")
    return {**gqa_attention(r), "num_experts": r.int("num_local_experts", field="num_experts"),
            "num_experts_per_tok": top_k,
            "moe_intermediate_size": r.int("intermediate_size", field="moe_intermediate_size"),
            "qkv_bias": bias, "router_bias": True, "router_bias_learned": True, "layers": pattern}


# torch dtype names a config's `mamba_ssm_dtype` takes -> LinearAttention.state_format
_STATE_DTYPES = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}


def _state_format(r):
    """The recurrent state's format from `mamba_ssm_dtype` (Qwen3.5 states float32; vLLM and SGLang keep the
    state in it, cost/node/mix.STATE_BYTES), None when the config does not say; another dtype is an error."""
    value = r.data.get("mamba_ssm_dtype")
    r.origin["_mamba_ssm_dtype"] = "mamba_ssm_dtype"
    if value is None:
        return None
    if value not in _STATE_DTYPES:
        raise r.fail("mamba_ssm_dtype", f"'mamba_ssm_dtype' must be one of {', '.join(_STATE_DTYPES)}, got {value!r:.40}")
    return _STATE_DTYPES[value]


def qwen3_next(r) -> dict:
    """Qwen3-Next / Qwen3.5-MoE: Gated DeltaNet layers and gated full-attention layers (full every
    `full_attention_interval`-th layer, or as `layer_types` lists them), qk-norm, every layer MoE with a gated
    shared expert; Qwen3.5 states the output gate (`attn_output_gate`) and its MTP layers."""
    r.equals_one("decoder_sparse_step")
    r.empty_list("mlp_only_layers")
    L = layer_count(r)
    interval = period(r, "full_attention_interval", 4)
    kinds = layer_types(r, L, ["full" if (i + 1) % interval == 0 else "linear" for i in range(L)])
    pattern: dict = {"attention": compact(kinds), "output_gate": r.bool("attn_output_gate", True, field="_gate")}
    if "linear" in kinds:
        pattern["linear"] = {"num_key_heads": r.int("linear_num_key_heads"), "key_head_dim": r.int("linear_key_head_dim"),
                             "num_value_heads": r.int("linear_num_value_heads"),
                             "value_head_dim": r.int("linear_value_head_dim"),
                             "conv_kernel": r.int("linear_conv_kernel_dim", 4)}
        state = _state_format(r)
        if state is not None:
            pattern["linear"]["state_format"] = state
    if r.bool("use_sliding_window", False, field="_sliding"):
        raise r.fail("use_sliding_window", "use_sliding_window is on: a Qwen3-Next sliding window is not modelled")
    shared = r.int("shared_expert_intermediate_size", 0)
    out = {**gqa_attention(r), "num_experts": r.int("num_experts"), "num_experts_per_tok": r.int("num_experts_per_tok"),
           "moe_intermediate_size": r.int("moe_intermediate_size"), "qk_norm": True,
           "qkv_bias": r.bool("attention_bias", False, field="qkv_bias"), "layers": pattern,
           "num_nextn_predict_layers": r.int("mtp_num_hidden_layers", 0, field="num_nextn_predict_layers")}
    if shared:
        out.update(n_shared_experts=1, shared_expert_intermediate_size=shared, shared_expert_gate=True)
    _seen(r, "intermediate_size", "mtp_use_dedicated_embeddings")   # the dense width no layer of these models uses
    return out


def sparse(r, fields: dict) -> dict:
    """DeepSeek Sparse Attention on every layer of an MLA model (deepseek_v32, glm_moe_dsa): its indexer's
    heads, width and top-k; the multi-token-prediction layers kept apart."""
    pattern = {"attention": ["sparse"], "sparse": {"index_topk": r.int("index_topk"),
                                                   "index_n_heads": r.int("index_n_heads"),
                                                   "index_head_dim": r.int("index_head_dim")}}
    _seen(r, "indexer_rope_interleave", "qk_head_dim", "head_dim", "num_key_value_heads")   # MLA's derived widths
    return {**fields, "layers": pattern, "num_nextn_predict_layers": r.int("num_nextn_predict_layers", 0)}


# model_type -> importer
FAMILIES = {"llama4": llama4, "llama4_text": llama4, "gpt_oss": gpt_oss, "qwen3_next": qwen3_next,
            "qwen3_5_moe": qwen3_next, "qwen3_5_moe_text": qwen3_next}


def families(deepseek) -> dict:
    """FAMILIES, and the sparse-attention types, which extend hf.py's DeepSeek importer (`deepseek(r, v3=True)`)
    with their indexer; passed in so this module does not import hf.py back."""
    dsa = {t: (lambda r: sparse(r, deepseek(r, v3=True))) for t in ("deepseek_v32", "glm_moe_dsa")}
    return {**FAMILIES, **dsa}


ARCHITECTURES = {"Llama4ForConditionalGeneration": "llama4", "Llama4ForCausalLM": "llama4_text",
                 "GptOssForCausalLM": "gpt_oss", "Qwen3NextForCausalLM": "qwen3_next",
                 "Qwen3_5MoeForConditionalGeneration": "qwen3_5_moe", "DeepseekV32ForCausalLM": "deepseek_v32",
                 "GlmMoeDsaForCausalLM": "glm_moe_dsa"}
