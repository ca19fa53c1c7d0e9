"""Config keys an importer does not read: each is either known not to change the cost, or refused by name.

A Hugging Face config.json carries generation defaults, token ids, training-only settings and routing details
next to the shape. wsemoe models bytes, FLOPs and KV cache, so a key whose value could change them and that
the importer did not read (a new layer-type list, an attention variant, an extra projection) must not be dropped
in silence: `check_unmodelled` raises a one-line error naming the first such key. A key set to null, false, 0 or
an empty list or mapping describes a feature that is off, and is let through.
"""

from __future__ import annotations

# Keys that never change parameters, FLOPs or KV bytes. Grouped by why.
_GENERIC = {  # transformers' PretrainedConfig bookkeeping and generation defaults
    "_name_or_path", "architectures", "auto_map", "model_type", "transformers_version", "torch_dtype", "dtype",
    "use_bfloat16", "torchscript", "return_dict", "output_attentions", "output_hidden_states", "output_scores",
    "return_dict_in_generate", "is_decoder", "is_encoder_decoder", "add_cross_attention", "tie_encoder_decoder",
    "cross_attention_hidden_size", "chunk_size_feed_forward", "pruned_heads", "id2label", "label2id",
    "problem_type", "finetuning_task", "tokenizer_class", "prefix", "task_specific_params", "tf_legacy_loss",
    "max_length", "min_length", "do_sample", "early_stopping", "num_beams", "num_beam_groups", "diversity_penalty",
    "temperature", "top_k", "top_p", "typical_p", "repetition_penalty", "length_penalty", "no_repeat_ngram_size",
    "encoder_no_repeat_ngram_size", "bad_words_ids", "num_return_sequences", "remove_invalid_values",
    "exponential_decay_length_penalty", "suppress_tokens", "begin_suppress_tokens", "forced_bos_token_id",
    "forced_eos_token_id", "decoder_start_token_id", "bos_token_id", "eos_token_id", "pad_token_id",
    "sep_token_id", "use_cache", "initializer_range", "pretraining_tp", "ep_size", "quantization_config",
}
_POSITION = {  # position encoding: which dimensions rotate and how far, not how many weights or FLOPs
    "rope_theta", "rope_scaling", "rope_parameters", "rope_interleave", "partial_rotary_factor", "rotary_dim",
    "max_position_embeddings", "initial_context_length",
}
_NUMERICS = {  # epsilons, clamps and hidden dropout (training-time or elementwise; attention_dropout is read)
    "rms_norm_eps", "hidden_dropout", "swiglu_limit", "clip_qkv", "hidden_act",
}   # `mamba_ssm_dtype` is read (the linear layers' state format, hf_layers.qwen3_next)
_ROUTING = {  # which experts a token picks and how their outputs are weighted, not how many run
    "norm_topk_prob", "routed_scaling_factor", "scoring_func", "topk_method", "n_group", "topk_group",
    "aux_loss_alpha", "seq_aux", "router_aux_loss_coef", "output_router_logits", "router_jitter_noise",
}
# Multi-token-prediction modules: not in the published totals the importers reproduce (DeepSeek-V3 671B,
# GLM-4.5 355B, MiniMax-M2 230B); a speculative-decoding draft is set on the workload, not read from here.
_MTP = {"num_nextn_predict_layers", "num_mtp_modules", "mtp_transformer_layers", "use_mtp", "mtp_num_hidden_layers",
        "mtp_use_dedicated_embeddings"}
NEUTRAL = frozenset(_GENERIC | _POSITION | _NUMERICS | _ROUTING | _MTP)

# Keys a family's architecture does not use, given what its importer checked.
_MLA = {"num_key_value_heads"}  # multi-head latent attention: keys and values come from the shared latent
_ALL_MOE = {"intermediate_size"}  # the dense width of mlp_only_layers / sparse-step layers, refused unless none
UNUSED = {"deepseek_v2": _MLA, "deepseek_v3": _MLA, "kimi_k2": _MLA, "kimi_k25": _MLA,
          "qwen2_moe": _ALL_MOE, "qwen3_moe": _ALL_MOE}

# Keys that matter only when a switch beside them is on (Hugging Face's own semantics).
_SWITCHED = {"sliding_window": "use_sliding_window", "max_window_layers": "use_sliding_window"}


def _off(value) -> bool:
    """A value describing a feature that is absent."""
    return value is None or value is False or (not isinstance(value, bool) and value in (0, "", [], {}))


def unmodelled(data: dict, read: set) -> list[str]:
    """Keys of `data` that the importer did not `read`, are not NEUTRAL, and are switched on."""
    out = []
    for key, value in data.items():
        if key in read or key in NEUTRAL or _off(value):
            continue
        switch = _SWITCHED.get(key)
        if switch is not None and switch in data and _off(data[switch]):
            continue
        out.append(key)
    return out


def check_unmodelled(r, mtype: str) -> None:
    """Refuse the first key of the reader's config that may change the cost and that `mtype`'s importer ignored."""
    keys = unmodelled(r.data, set(r.origin.values()) | set(getattr(r, "read", ())) | UNUSED.get(mtype, set()))
    if keys:
        key = keys[0]
        raise r.fail(key, f"'{key}' is not modelled by the {mtype} importer and may change bytes, FLOPs or KV "
                          f"cache; wsemoe refuses it rather than drop it (remove the key to import without it)")
