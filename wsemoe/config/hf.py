"""Import a ModelSpec from a Hugging Face config.json (Qwen-MoE, Mixtral, OLMoE, DeepSeek-V2/V3, dense)."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any, Callable

from pydantic import ValidationError

from wsemoe.errors import ConfigError, PresetError
from wsemoe.config import hf_fields, hf_layers, hf_moe, hf_wrappers
from wsemoe.config.files import model_json, read_text
from wsemoe.specs.base import error_line, not_integer, not_positive
from wsemoe.specs.model import ModelSpec

MAX_HF_BYTES = 4 * 2**20  # real config.json files are a few kB
_REQUIRED = object()  # sentinel: the key has no default and must be present

# Architecture class names, for configs that carry `architectures` but no `model_type`.
_ARCHITECTURES = {
    "Qwen2MoeForCausalLM": "qwen2_moe",
    "Qwen3MoeForCausalLM": "qwen3_moe",
    "MixtralForCausalLM": "mixtral",
    "OlmoeForCausalLM": "olmoe",
    "DeepseekV2ForCausalLM": "deepseek_v2",
    "DeepseekV3ForCausalLM": "deepseek_v3",
    "LlamaForCausalLM": "llama",
    "MistralForCausalLM": "mistral",
    "Qwen2ForCausalLM": "qwen2",
    "Qwen3ForCausalLM": "qwen3",
    **hf_moe.ARCHITECTURES,
    **hf_layers.ARCHITECTURES,
}


class _Reader:
    """Typed access to a config dict; every failure is a PresetError naming (source, key).

    It also remembers which config key fed which ModelSpec field, so a pydantic error on
    e.g. `num_experts` can be reported against Mixtral's `num_local_experts`.
    """

    def __init__(self, data: dict, where: str):
        self.data, self.where, self.origin = data, where, {}

    def fail(self, key: str, message: str) -> PresetError:
        return PresetError(message, (self.where, key))

    def _raw(self, key: str, default: Any, field: str | None) -> Any:
        self.origin[field or key] = key
        value = self.data.get(key)
        if value is None:  # HF writes null for "use the default"
            if default is _REQUIRED:
                raise self.fail(key, f"required key '{key}' is missing or null")
            return default
        return value

    def int(self, key: str, default: Any = _REQUIRED, field: str | None = None) -> Any:
        """An integer (JSON ints; integral floats tolerated). Sign is checked by the spec."""
        value = self._raw(key, default, field)
        if value is default:
            return value
        if isinstance(value, float) and math.isfinite(value) and value.is_integer():
            return int(value)
        if isinstance(value, str) and len(value) <= 300 and re.fullmatch(r"\s*[+-]?[0-9]+\s*", value):
            return int(value)   # a quoted whole number, read as YAML, --set and the specs read one
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(key, not_integer(value))
        return value

    def fraction(self, key: str, default: float, field: str | None = None) -> float:
        """A probability in [0, 1) (a dropout rate)."""
        value = self._raw(key, default, field)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1:
            raise self.fail(key, f"'{key}' must be a number in [0, 1), got {value!r:.40}")
        return float(value)

    def bool(self, key: str, default: bool, field: str | None = None) -> bool:
        value = self._raw(key, default, field)
        if not isinstance(value, bool):
            raise self.fail(key, f"'{key}' must be true or false, got {value!r:.40}")
        return value

    def empty_list(self, key: str) -> None:
        """A key that must be absent, null or an empty list (layers we cannot model)."""
        value = self.data.get(key)
        if value is None or value == []:
            return
        if not isinstance(value, list):
            raise self.fail(key, f"'{key}' must be a list, got {value!r:.40}")
        raise self.fail(key, f"'{key}' must be empty: only leading dense layers are modelled")

    def equals_one(self, key: str) -> None:
        """A layer-interleave step that must be 1 (every layer past the dense prefix is MoE)."""
        step = self.int(key, 1)
        if step != 1:
            raise self.fail(key, f"'{key}' is {step}; only 1 is supported (every layer MoE after the dense prefix)")


_gqa_attention = hf_layers.gqa_attention   # one reading of GQA attention fields for every family


def _common(r: _Reader) -> dict:
    """Fields every family shares."""
    return {
        "num_hidden_layers": r.int("num_hidden_layers"),
        "vocab_size": r.int("vocab_size"),
        # The families here all default to untied weights in their HF config classes.
        "tie_word_embeddings": r.bool("tie_word_embeddings", False),
        # the families' HF config classes default to 0.0, as every shipped config states
        "attention_dropout": r.fraction("attention_dropout", 0.0),
    }


def _qwen_sparse_layout(r: _Reader) -> None:
    """Qwen-MoE may interleave dense MLPs; we model only a leading dense prefix (here none)."""
    r.equals_one("decoder_sparse_step")
    r.empty_list("mlp_only_layers")


def _shared_qwen(r: _Reader, default: Any = 0) -> dict:
    """Qwen-style single shared expert behind a sigmoid gate; width 0 means none."""
    width = r.int("shared_expert_intermediate_size", default)
    if not width:
        return {"n_shared_experts": 0}
    return {"n_shared_experts": 1, "shared_expert_intermediate_size": width, "shared_expert_gate": True}


def _routed(r: _Reader, experts_key: str, width_key: str) -> dict:
    return {
        "num_experts": r.int(experts_key, field="num_experts"),
        "num_experts_per_tok": r.int("num_experts_per_tok"),
        "moe_intermediate_size": r.int(width_key, field="moe_intermediate_size"),
    }


def _qwen2_moe(r: _Reader) -> dict:
    _qwen_sparse_layout(r)
    # Qwen2-MoE's shared expert is always built in HF code, so its width is required.
    shared = _shared_qwen(r, default=_REQUIRED)
    # HF Qwen2-MoE hard-codes bias=True on the q/k/v projections.
    return {**_gqa_attention(r), **_routed(r, "num_experts", "moe_intermediate_size"), **shared, "qkv_bias": True}


def _qwen3_moe(r: _Reader) -> dict:
    _qwen_sparse_layout(r)
    # Released Qwen3-MoE configs have no shared expert; a user-set width is honoured Qwen2-style.
    return {
        **_gqa_attention(r),
        **_routed(r, "num_experts", "moe_intermediate_size"),
        **_shared_qwen(r),
        "qk_norm": True,
        "qkv_bias": r.bool("attention_bias", False, field="qkv_bias"),
    }


def _mixtral(r: _Reader) -> dict:
    # Mixtral's `intermediate_size` is the width of each expert; there are no dense layers.
    return {**_gqa_attention(r), **_routed(r, "num_local_experts", "intermediate_size")}


def _olmoe(r: _Reader) -> dict:
    # OLMoE normalizes q and k over the whole projection (2*H weights per layer) while our
    # qk_norm counts 2*head_dim: ~60K params per layer short, negligible against ~400M.
    return {
        **_gqa_attention(r),
        **_routed(r, "num_experts", "intermediate_size"),
        "qk_norm": True,
        "qkv_bias": r.bool("attention_bias", False, field="qkv_bias"),
    }


def _deepseek(r: _Reader, v3: bool) -> dict:
    """DeepSeek-V2/V3: MLA attention, shared experts, a leading block of dense layers. MLA has no GQA heads, so
    n_kv = n_h and head_dim = v_head_dim just to satisfy the spec (the MLA formulas do not read them)."""
    r.equals_one("moe_layer_freq")
    heads = r.int("num_attention_heads")
    dense = r.int("first_k_dense_replace", 0)
    return {
        "hidden_size": r.int("hidden_size"),
        "num_attention_heads": heads,
        "num_key_value_heads": heads,
        "head_dim": r.int("v_head_dim", field="head_dim"),
        "attention": "mla",
        "q_lora_rank": r.int("q_lora_rank", None),  # null: queries projected directly (V2-Lite)
        "kv_lora_rank": r.int("kv_lora_rank"),
        "qk_nope_head_dim": r.int("qk_nope_head_dim"),
        "qk_rope_head_dim": r.int("qk_rope_head_dim"),
        "v_head_dim": r.int("v_head_dim"),
        **_routed(r, "n_routed_experts", "moe_intermediate_size"),
        "n_shared_experts": r.int("n_shared_experts", 0),
        "first_k_dense_replace": dense,
        "intermediate_size": r.int("intermediate_size") if dense else r.int("intermediate_size", 0),
        "router_bias": v3,  # V3's e_score_correction_bias
        # MTP layers (V3/R1: 1; Kimi K2: 0): kept apart from the totals, as the published 671B does
        "num_nextn_predict_layers": r.int("num_nextn_predict_layers", 0),
    }


def _dense(r: _Reader, qkv_bias: bool | None, qk_norm: bool) -> dict:
    """Dense model as an all-dense-layer MoE (see model_from_hf_config)."""
    width = r.int("intermediate_size")
    bias = r.bool("attention_bias", False, field="qkv_bias") if qkv_bias is None else qkv_bias
    layers = r.int("num_hidden_layers")
    return {
        **_gqa_attention(r),
        "num_experts": 1,
        "num_experts_per_tok": 1,
        "moe_intermediate_size": width,
        "first_k_dense_replace": layers,
        "intermediate_size": width,
        "qkv_bias": bias,
        "qk_norm": qk_norm,
    }


_FAMILIES: dict[str, Callable[[_Reader], dict]] = {
    "qwen2_moe": _qwen2_moe,
    "qwen3_moe": _qwen3_moe,
    "mixtral": _mixtral,
    "olmoe": _olmoe,
    "deepseek_v2": lambda r: _deepseek(r, v3=False),
    "deepseek_v3": lambda r: _deepseek(r, v3=True),
    "llama": lambda r: _dense(r, qkv_bias=None, qk_norm=False),
    "mistral": lambda r: _dense(r, qkv_bias=False, qk_norm=False),
    "qwen2": lambda r: _dense(r, qkv_bias=True, qk_norm=False),  # Qwen2 always biases q/k/v
    "qwen3": lambda r: _dense(r, qkv_bias=None, qk_norm=True),
    **hf_moe.families(_gqa_attention=_gqa_attention, _routed=_routed, _deepseek=_deepseek, _Reader=_Reader),
    **hf_layers.families(_deepseek),  # llama4, gpt_oss, qwen3_next/3.5, deepseek_v32, glm_moe_dsa: layers that differ
}
SUPPORTED_MODEL_TYPES = tuple(_FAMILIES)


def _load(source: Any) -> tuple[dict, str]:
    """The config dict and a label for error locations (the file path, or "hf_config")."""
    if isinstance(source, dict):
        return source, "hf_config"
    if not isinstance(source, (str, Path)):
        raise PresetError(f"expected a config.json path or a dict, got {type(source).__name__}", ("hf_config",))
    where = str(source)
    path = Path(source)
    if path.is_dir() and (path / "config.json").is_file():  # a model folder as downloaded from the Hub
        path, where = path / "config.json", str(path / "config.json")
    try:
        text = read_text(path, MAX_HF_BYTES, "config file")
    except ConfigError as exc:
        raise PresetError(exc.message, exc.loc) from None
    try:
        data = model_json(text)
    except (ValueError, RecursionError) as exc:   # json.JSONDecodeError is a ValueError
        raise PresetError(f"invalid JSON: {exc}", (where,)) from None
    if not isinstance(data, dict):
        raise PresetError(f"config must be a JSON object, got {type(data).__name__}", (where,))
    return data, where


def _model_type(r: _Reader) -> str:
    """model_type if given (authoritative), else the first known `architectures` entry."""
    supported = ", ".join(SUPPORTED_MODEL_TYPES)
    mtype = r.data.get("model_type")
    if mtype is not None:
        if not isinstance(mtype, str) or mtype not in _FAMILIES:
            raise r.fail("model_type", f"unsupported model_type {mtype!r:.60}; supported: {supported}")
        return mtype
    archs = r.data.get("architectures")
    names = archs if isinstance(archs, list) else [archs]
    for arch in names:
        if isinstance(arch, str) and arch in _ARCHITECTURES:
            return _ARCHITECTURES[arch]
    raise r.fail("architectures", f"unsupported architectures {archs!r:.80} and no model_type; supported: {supported}")


def name_for_path(path) -> str:
    """A model's name from where it lives: its folder for `<folder>/config.json` (or a folder), else the
    file's stem, so `mixtral-8x7b/config.json` and `mixtral-8x22b.json` stay apart."""
    p = Path(path)
    if p.is_dir() or p.name == "config.json":
        return (p if p.is_dir() else p.parent).resolve().name or "model"
    return p.stem


def _name(r: _Reader, name: str | None, mtype: str, source=None) -> str:
    """The given name; else the file's or folder's name; else the config's `_name_or_path`; else its type."""
    if name:
        return name
    if isinstance(source, (str, Path)):
        return name_for_path(source)
    hf_name = r.data.get("_name_or_path")
    return hf_name if isinstance(hf_name, str) and hf_name else mtype


# Families whose Hugging Face attention derives head_dim = hidden_size / num_attention_heads, ignoring a stated
# head_dim: a config stating another value describes a model the loader would build differently.
_DERIVED_HEAD_DIM = ("qwen2_moe", "olmoe", "qwen2")


def _positive_number(r: _Reader, key: str) -> None:
    """An optional float setting that must be a finite positive number when present (rope_theta, factors)."""
    value = r.data.get(key)
    if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                              or not math.isfinite(value) or value <= 0):
        raise r.fail(key, f"'{key}' must be a positive number, got {value!r:.40}")


def _check_consistent(f: dict, r: _Reader, mtype: str) -> None:
    """What a model loader checks before it builds the model: sizes positive, key/value heads dividing the
    attention heads, routed experts at least top-k (and expert groups that can hold the chosen experts),
    head and rotary widths that fit together; the first violation is one line naming its key."""
    def key(field):
        return r.origin.get(field, field)

    for field in ("hidden_size", "num_attention_heads", "num_key_value_heads", "head_dim", "num_hidden_layers",
                  "vocab_size", "num_experts", "num_experts_per_tok", "moe_intermediate_size"):
        if not isinstance(f.get(field), int) or f[field] <= 0:
            raise r.fail(key(field), not_positive(f.get(field)))
    heads, kv = f["num_attention_heads"], f["num_key_value_heads"]
    if heads % kv:
        raise r.fail(key("num_key_value_heads"), f"num_key_value_heads {kv} does not divide num_attention_heads {heads} "
                     "(each key/value head serves a whole group of query heads)")
    if f["num_experts_per_tok"] > f["num_experts"]:
        raise r.fail("num_experts_per_tok", f"num_experts_per_tok {f['num_experts_per_tok']} exceeds the "
                     f"{f['num_experts']} routed experts ('{key('num_experts')}')")
    if f.get("attention", "gqa") == "gqa":
        stated = r.data.get("head_dim")
        if mtype in _DERIVED_HEAD_DIM and stated is not None and stated * heads != f["hidden_size"]:
            raise r.fail("head_dim", f"head_dim {stated} × num_attention_heads {heads} is not hidden_size "
                         f"{f['hidden_size']}, which this family's attention requires")
        if f["head_dim"] % 2:
            raise r.fail("head_dim", f"head_dim {f['head_dim']} is odd; rotary embeddings rotate pairs of dimensions")
        factor = r.data.get("partial_rotary_factor")
        if factor is not None and (isinstance(factor, bool) or not isinstance(factor, (int, float))
                                   or not 0 < factor <= 1):
            raise r.fail("partial_rotary_factor", f"partial_rotary_factor must be in (0, 1], got {factor!r:.40}")
    else:
        _check_mla(f, r)
    for k in ("rope_theta", "max_position_embeddings", "rms_norm_eps"):
        _positive_number(r, k)


def _check_mla(f: dict, r: _Reader) -> None:
    """Multi-head latent attention: every width positive, the rotary part even, expert groups consistent."""
    for k in ("kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"):
        if not isinstance(f.get(k), int) or f[k] <= 0:
            raise r.fail(k, not_positive(f.get(k), "multi-head latent attention's width"))
    if f["qk_rope_head_dim"] % 2:
        raise r.fail("qk_rope_head_dim", f"qk_rope_head_dim {f['qk_rope_head_dim']} is odd; rotary embeddings "
                     "rotate pairs of dimensions")
    if f.get("q_lora_rank") is not None and f["q_lora_rank"] < 0:
        raise r.fail("q_lora_rank", "q_lora_rank must be positive, or null for direct query projections")
    groups, chosen = r.int("n_group", None), r.int("topk_group", None)
    experts, topk = f["num_experts"], f["num_experts_per_tok"]
    if groups is not None:
        if groups <= 0 or experts % groups:
            raise r.fail("n_group", f"n_group {groups} does not divide the {experts} routed experts into groups")
        chosen = groups if chosen is None else chosen
        if not 0 < chosen <= groups:
            raise r.fail("topk_group", f"topk_group {chosen} must be between 1 and n_group {groups}")
        if topk > chosen * (experts // groups):
            raise r.fail("num_experts_per_tok", f"num_experts_per_tok {topk} exceeds the {chosen * (experts // groups)} "
                         f"experts of the topk_group {chosen} groups a token may use")


def _build(fields: dict, r: _Reader) -> ModelSpec:
    """Validate through ModelSpec, reporting the first error against the config key."""
    try:
        return ModelSpec(**fields)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = str(err["loc"][0]) if err["loc"] else None
        key = r.origin.get(field, field) if field else "config"
        raise r.fail(key, error_line(err)) from None


def model_from_hf_config(source: str | Path | dict, name: str | None = None) -> ModelSpec:
    """A ModelSpec from a Hugging Face config.json path or an already-parsed dict.

    Supported model_type values: qwen2_moe, qwen3_moe, mixtral, olmoe, deepseek_v2,
    deepseek_v3 (MLA), and dense llama, mistral, qwen2, qwen3. A dense model is expressed
    as a model whose every layer is dense: first_k_dense_replace = num_hidden_layers,
    intermediate_size from the config, num_experts = num_experts_per_tok = 1 and
    moe_intermediate_size = intermediate_size (the expert fields are then unused).
    Unknown keys are ignored; any problem raises PresetError with loc (file or "hf_config", key).
    """
    data, where = _load(source)
    r = _Reader(data, where)
    mtype = _model_type(r)
    r = hf_wrappers.language_model(r, mtype)   # a vision-language wrapper's text model
    fields = {**_common(r), **_FAMILIES[mtype](r)}
    _check_consistent(fields, r, mtype)
    hf_fields.check_unmodelled(r, mtype)
    fields.update(name=_name(r, name, mtype, source),
                  source=f"hf:{where}" if where != "hf_config" else f"hf:{mtype}")
    return _build(fields, r)
