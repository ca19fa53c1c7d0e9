"""Hugging Face importers of today's uniform MoE types: glm4_moe (GLM-4.5/4.6/4.7), minimax_m2 (MiniMax-M2/M2.5)
and the DeepSeek-V3 variants kimi_k2 (Kimi K2) and kimi_k25 (Kimi K2.5, its text model nested in `text_config`).

Each family reads a `_Reader` (wsemoe.config.hf) and returns ModelSpec fields, as the families in hf.py do; hf.py
hands in the helpers they share (`families(...)`), so this module does not import it back.
Multi-token-prediction modules (GLM's `num_nextn_predict_layers`, MiniMax's `num_mtp_modules`) are not counted:
the vendors' published totals (GLM-4.5 355B, MiniMax-M2 230B) exclude them, as DeepSeek-V3's 671B does.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, Callable

_hf = SimpleNamespace()  # hf.py's shared helpers (_gqa_attention, _routed, _deepseek, _Reader), set by families()


def _glm4_moe(r) -> dict:
    """GLM-4.5 family: GQA with q/k/v biases (`attention_bias`), optional per-head q/k norms (`use_qk_norm`),
    DeepSeek-V3-style routing (sigmoid with a per-expert correction bias, `e_score_correction_bias` in HF's
    Glm4MoeTopkRouter), shared experts of the routed width and a leading run of dense layers."""
    hf = _hf
    dense = r.int("first_k_dense_replace", 0)
    return {
        **hf._gqa_attention(r),
        **hf._routed(r, "n_routed_experts", "moe_intermediate_size"),
        "n_shared_experts": r.int("n_shared_experts", 0),
        "first_k_dense_replace": dense,
        "intermediate_size": r.int("intermediate_size") if dense else r.int("intermediate_size", 0),
        "qkv_bias": r.bool("attention_bias", False, field="qkv_bias"),
        "qk_norm": r.bool("use_qk_norm", False, field="qk_norm"),
        "router_bias": True,
        "num_nextn_predict_layers": r.int("num_nextn_predict_layers", 0),  # MTP: the draft, not in the totals
    }


def _minimax_m2(r) -> dict:
    """MiniMax-M2: every layer MoE with full GQA attention; `intermediate_size` is each expert's width (as in
    Mixtral); the router carries a per-expert bias (`use_routing_bias`); no shared expert (a nonzero
    `shared_intermediate_size` is refused below, since HF's MiniMaxM2 builds none).

    Its q/k norms (`qk_norm_type: per_layer`) normalize the whole q and k projections (n_h·d_h + n_kv·d_h weights
    per layer) where ModelSpec's qk_norm counts 2·d_h: 6,912 weights per layer short, 0.4M of 230B."""
    hf = _hf
    r.read = {"attn_type_list", "qk_norm_type"}  # checked here; qk_norm_type documented above
    attn_types = r.data.get("attn_type_list")
    if attn_types is not None and (not isinstance(attn_types, list) or any(t != 1 for t in attn_types)):
        # MiniMax-01's lightning (linear) attention is type 0; M2 ships all 1 (full softmax attention).
        raise r.fail("attn_type_list", "'attn_type_list' marks layers with another attention than full (1); "
                                       "minimax_m2 is imported with full attention in every layer")
    shared = r.int("shared_intermediate_size", 0)
    if shared:
        raise r.fail("shared_intermediate_size", f"'shared_intermediate_size' is {shared}; MiniMax-M2 has no shared "
                                                 "expert and this importer models none")
    return {
        **hf._gqa_attention(r),
        **hf._routed(r, "num_local_experts", "intermediate_size"),
        "qk_norm": r.bool("use_qk_norm", False, field="qk_norm"),
        "router_bias": r.bool("use_routing_bias", False, field="router_bias"),
        # MTP modules of mtp_transformer_layers layers each: the draft, not in the totals
        "num_nextn_predict_layers": (r.int("num_mtp_modules", 0) * r.int("mtp_transformer_layers", 1)
                                     if r.bool("use_mtp", False) else 0),
    }


def _kimi_k2(r) -> dict:
    """Kimi K2: the DeepSeek-V3 architecture (`DeepseekV3ForCausalLM`) with 384 experts, 64 heads, one dense layer
    and no MTP module (`num_nextn_predict_layers: 0`)."""
    return _hf._deepseek(r, v3=True)


def families(**helpers) -> dict[str, Callable[[Any], dict]]:
    """model_type -> importer, given hf.py's shared helpers (hf.py merges these into its table)."""
    vars(_hf).update(helpers)
    return {"glm4_moe": _glm4_moe, "minimax_m2": _minimax_m2, "kimi_k2": _kimi_k2,
            "kimi_k25": _kimi_k2}  # kimi_k25 is read from its text_config (hf_wrappers)


ARCHITECTURES = {
    "Glm4MoeForCausalLM": "glm4_moe",
    "MiniMaxM2ForCausalLM": "minimax_m2",
    "KimiK25ForConditionalGeneration": "kimi_k25",
}
