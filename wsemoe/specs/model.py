"""Model spec: a transformer MoE described with Hugging Face config.json field names."""

from __future__ import annotations

from typing import Literal, Optional

from pydantic import Field, NonNegativeInt, PositiveInt, model_validator

from wsemoe.specs.base import MAX_COUNT, MAX_LAYERS, MAX_VOCAB, MAX_WIDTH, Spec
from wsemoe.specs.layers import LayerPattern
from wsemoe.specs.rules import MODEL_RULES, check


class ModelSpec(Spec):
    """Shape of a MoE transformer; E = num_experts, k = num_experts_per_tok, F = moe_intermediate_size."""

    name: str = Field("custom", description="label of this model")
    hidden_size: PositiveInt = Field(le=MAX_WIDTH, description="model width H")
    num_hidden_layers: PositiveInt = Field(le=MAX_LAYERS, description="transformer layers L")
    num_attention_heads: PositiveInt = Field(le=MAX_COUNT, description="query heads n_h")
    num_key_value_heads: PositiveInt = Field(le=MAX_COUNT, description="key/value heads n_kv (GQA)")
    head_dim: PositiveInt = Field(le=MAX_WIDTH, description="per-head width d_h (GQA)")
    attention: Literal["gqa", "mla"] = Field("gqa", description="grouped-query or multi-head latent attention")
    q_lora_rank: Optional[NonNegativeInt] = Field(None, le=MAX_WIDTH, description="MLA query low-rank width (0/None: direct)")
    kv_lora_rank: NonNegativeInt = Field(0, le=MAX_WIDTH, description="MLA compressed KV width")
    qk_nope_head_dim: NonNegativeInt = Field(0, le=MAX_WIDTH, description="MLA non-rotary q/k width per head")
    qk_rope_head_dim: NonNegativeInt = Field(0, le=MAX_WIDTH, description="MLA rotary q/k width per head")
    v_head_dim: NonNegativeInt = Field(0, le=MAX_WIDTH, description="MLA value width per head")
    qkv_bias: bool = Field(False, description="q/k/v projections carry biases (Qwen2)")
    qk_norm: bool = Field(False, description="per-head RMSNorm on q and k (Qwen3)")
    moe_intermediate_size: PositiveInt = Field(le=MAX_WIDTH, description="routed expert FFN width F")
    num_experts: PositiveInt = Field(le=MAX_COUNT, description="routed experts per MoE layer E")
    num_experts_per_tok: PositiveInt = Field(le=MAX_COUNT, description="experts per token k (top-k)")
    n_shared_experts: NonNegativeInt = Field(0, le=MAX_COUNT, description="shared experts per MoE layer")
    shared_expert_intermediate_size: Optional[PositiveInt] = Field(None, le=MAX_WIDTH, description="width of one shared expert (default F)")
    shared_expert_gate: bool = Field(False, description="a sigmoid gate scales the shared expert (Qwen2-MoE)")
    router_bias: bool = Field(False, description="router carries a per-expert bias (DeepSeek-V3)")
    router_bias_learned: bool = Field(False, description="the router's bias is learned, with a gradient and optimizer "
                                                         "state in training (gpt-oss's nn.Linear bias); false: a "
                                                         "correction bias load balancing sets, with none "
                                                         "(DeepSeek-V3's e_score_correction_bias, a buffer)")
    first_k_dense_replace: NonNegativeInt = Field(0, le=MAX_LAYERS, description="leading dense (non-MoE) layers")
    intermediate_size: NonNegativeInt = Field(0, le=MAX_WIDTH, description="FFN width of the dense layers")
    vocab_size: PositiveInt = Field(le=MAX_VOCAB, description="vocabulary size")
    tie_word_embeddings: bool = Field(False, description="input embedding and output head share weights")
    attention_dropout: float = Field(0.0, ge=0.0, lt=1.0, allow_inf_nan=False,
                                     description="dropout probability on the attention scores (config.json's "
                                                 "attention_dropout); above 0 training keeps each score's dropout "
                                                 "mask and output beside the softmax output (5 bytes, not 2)")
    published_total_params: Optional[float] = Field(None, gt=0, le=1e18, allow_inf_nan=False, description="published total parameter count (for checks)")
    published_active_params: Optional[float] = Field(None, gt=0, le=1e18, allow_inf_nan=False, description="published active parameter count (for checks)")
    published_active_excludes: Literal["none", "embeddings", "input_embedding"] = Field(
        "none", description="what the vendor's published active count leaves out: none, the embedding table and "
                            "output head (GLM, MiniMax), or the input embedding table only (Moonshot's Kimi K2, "
                            "DeepSeek's convention); totals always count them")
    source: str = Field("", description="where the shape comes from")
    hf_id: str = Field("", max_length=200, description="Hugging Face id of the checkpoint this shape is (e.g. "
                                                       "deepseek-ai/DeepSeek-V3); `--model` and `model:` accept it")
    hf_aliases: tuple[str, ...] = Field((), max_length=32, description="other Hugging Face ids of the same shape "
                                                                      "(fine-tunes, FP8/NVFP4 re-releases)")
    layers: Optional[LayerPattern] = Field(None, description="per-layer pattern when layers differ (specs/layers.py)")
    num_nextn_predict_layers: NonNegativeInt = Field(0, le=8, description="multi-token-prediction layers (not in the totals)")

    @model_validator(mode="after")
    def _consistent(self):
        """Reject shapes that cannot exist (the errors name the field)."""
        check(self, MODEL_RULES)  # the rules sweep axes meet too (specs/rules.py)
        if self.num_experts_per_tok > self.num_experts:
            raise ValueError(f"num_experts_per_tok ({self.num_experts_per_tok}) exceeds num_experts ({self.num_experts})")
        if self.router_bias_learned and not self.router_bias:
            raise ValueError("router_bias_learned needs router_bias")
        if self.first_k_dense_replace > self.num_hidden_layers:
            raise ValueError("first_k_dense_replace exceeds num_hidden_layers")
        if self.first_k_dense_replace and not self.intermediate_size:
            raise ValueError("intermediate_size is required when first_k_dense_replace > 0")
        if self.attention == "mla" and not (self.kv_lora_rank and self.qk_nope_head_dim and self.v_head_dim):
            raise ValueError("MLA needs kv_lora_rank, qk_nope_head_dim and v_head_dim")
        if self.layers is not None:
            self.layers.check_layers(self.num_hidden_layers)
            ffn = self.layers.ffn
            has_dense = (isinstance(ffn, list) and "dense" in ffn) or (ffn is not None and not isinstance(ffn, list)
                                                                        and ffn.every > 1)
            if (has_dense or any(o.ffn == "dense" for o in self.layers.overrides)) and not self.intermediate_size:
                raise ValueError("intermediate_size is required when layers.ffn has dense layers")
        return self
