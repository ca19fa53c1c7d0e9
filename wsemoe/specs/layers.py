"""Per-layer pattern of a model whose layers differ: which layers are MoE, which attention each layer runs.

A uniform model (a leading run of `first_k_dense_replace` dense layers, then identical MoE layers with the
model's attention) has no `layers:` at all. A pattern states the rest compactly:

    layers:
      ffn: {every: 2, offset: 1}                     # MoE where i % every == offset (others dense), or a list
      attention: [chunked, chunked, chunked, full]   # repeats over the layers (or one entry per layer)
      overrides: [{layer: 0, attention: full}]       # single layers that break the pattern
      attention_chunk_size: 8192

Kinds of attention: `full` (every earlier key), `sliding` (the last `sliding_window` keys), `chunked` (keys of
the query's own `attention_chunk_size` chunk), `linear` (Gated DeltaNet: a fixed recurrent state per sequence),
`sparse` (the `index_topk` keys an indexer picks over all keys). The pattern is compiled once per model into
classes of identical layers with counts (cost/node/mix.py); here it is only validated.
"""

from __future__ import annotations

from typing import Literal, Optional, Union

from pydantic import Field, NonNegativeInt, PositiveInt, model_validator

from wsemoe.specs.base import MAX_COUNT, MAX_LAYERS, MAX_WIDTH, Spec

AttentionKind = Literal["full", "sliding", "chunked", "linear", "sparse"]
FfnKind = Literal["dense", "moe"]
StateFormat = Literal["fp32", "bf16", "fp16"]   # a linear layer's recurrent state (bytes: cost/node/mix.STATE_BYTES)
MAX_CONTEXT = 1 << 24   # keys a window, chunk or top-k selection can name (16M tokens)


class Every(Spec):
    """MoE on the layers i (0-based) with i % every == offset; the others dense."""

    every: PositiveInt = Field(le=MAX_LAYERS, description="period of the MoE layers")
    offset: NonNegativeInt = Field(0, le=MAX_LAYERS, description="index of the MoE layer within each period")

    @model_validator(mode="after")
    def _inside(self):
        if self.offset >= self.every:
            raise ValueError(f"offset ({self.offset}) must be below every ({self.every})")
        return self


class Override(Spec):
    """One layer that breaks the pattern."""

    layer: NonNegativeInt = Field(le=MAX_LAYERS, description="0-based layer index")
    ffn: Optional[FfnKind] = Field(None, description="its FFN kind")
    attention: Optional[AttentionKind] = Field(None, description="its attention kind")


class LinearAttention(Spec):
    """Gated DeltaNet (Qwen3-Next): per value head a d_k × d_v recurrent state instead of a KV cache."""

    num_key_heads: PositiveInt = Field(le=MAX_COUNT, description="key (and query) heads")
    key_head_dim: PositiveInt = Field(le=MAX_WIDTH, description="width of a key head d_k")
    num_value_heads: PositiveInt = Field(le=MAX_COUNT, description="value heads (each keeps its own state)")
    value_head_dim: PositiveInt = Field(le=MAX_WIDTH, description="width of a value head d_v")
    conv_kernel: PositiveInt = Field(4, le=64, description="causal short-convolution width over q, k, v")
    state_format: Optional[StateFormat] = Field(
        None, description="format the recurrent state is kept in (a config.json's `mamba_ssm_dtype`; unset: 16-bit, the "
                          "model's dtype, whatever `kv_format`)")


class SparseAttention(Spec):
    """DeepSeek Sparse Attention: an indexer scores every key, the layer attends to the top `index_topk`."""

    index_topk: PositiveInt = Field(le=MAX_CONTEXT, description="keys each query attends to")
    index_n_heads: PositiveInt = Field(le=MAX_COUNT, description="indexer heads")
    index_head_dim: PositiveInt = Field(le=MAX_WIDTH, description="indexer key/query width (its cache per token)")


class LayerPattern(Spec):
    """Which FFN and attention each layer has (see the module docstring)."""

    ffn: Optional[Union[Every, list[FfnKind]]] = Field(
        None, description="MoE layers: {every, offset} or a list of dense/moe (repeats); default MoE past the dense prefix")
    attention: Optional[list[AttentionKind]] = Field(
        None, description="attention kinds, repeating over the layers (one entry per layer, or a period)")
    overrides: list[Override] = Field(default_factory=list, description="single layers that break the pattern")
    sliding_window: Optional[PositiveInt] = Field(None, le=MAX_CONTEXT, description="keys a sliding layer reads (W)")
    attention_chunk_size: Optional[PositiveInt] = Field(None, le=MAX_CONTEXT, description="chunk of a chunked layer")
    linear: Optional[LinearAttention] = Field(None, description="shape of the linear-attention layers")
    sparse: Optional[SparseAttention] = Field(None, description="indexer of the sparse-attention layers")
    sinks: bool = Field(False, description="one learned attention-sink logit per head in softmax layers (gpt-oss)")
    o_bias: bool = Field(False, description="the attention output projection carries a bias (gpt-oss)")
    output_gate: bool = Field(False, description="softmax layers gate their output per channel (Qwen3-Next)")
    ffn_bias: bool = Field(False, description="expert and router projections carry biases (gpt-oss)")

    @model_validator(mode="after")
    def _kinds_have_shapes(self):
        """A kind used must have its shape (the error names the missing field)."""
        used = set(self.attention or ()) | {o.attention for o in self.overrides if o.attention}
        needs = {"sliding": "sliding_window", "chunked": "attention_chunk_size", "linear": "linear", "sparse": "sparse"}
        for kind, key in needs.items():
            if kind in used and getattr(self, key) is None:
                raise ValueError(f"attention kind '{kind}' needs layers.{key}")
        return self

    def check_layers(self, layers: int) -> None:
        """Lists longer than the model, or overrides past its last layer, describe another model."""
        for key in ("ffn", "attention"):
            value = getattr(self, key)
            if isinstance(value, list) and (len(value) > layers or layers % len(value) and len(value) != layers):
                raise ValueError(f"layers.{key} has {len(value)} entries: give one per layer ({layers}) or a period "
                                 f"that divides {layers}")
        for o in self.overrides:
            if o.layer >= layers:
                raise ValueError(f"layers.overrides: layer {o.layer} is past the last layer ({layers - 1})")
