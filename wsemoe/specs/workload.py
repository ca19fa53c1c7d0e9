"""Workload spec: mode, sequence length, attention batch B, tiling factor G, precisions."""

from __future__ import annotations

from typing import Literal, Optional

from pydantic import Field, NonNegativeInt, PositiveInt, model_validator

from wsemoe.specs.base import MAX_FIGURE, MAX_TILES, MAX_TOKENS, Spec


# bf16, fp8, fp4: plain values; mxfp4, nvfp4, fp8_block, int4_g32: checkpoint formats with their scale factors
# counted (wsemoe/cost/node/formats.py NATIVE; docs/formats.md).
Format = Literal["bf16", "fp8", "fp4", "mxfp4", "nvfp4", "fp8_block", "int4_g32"]


class WorkloadSpec(Spec):
    """What runs: one micro-batch of G·B sequences, attention in G tiles of B sequences."""

    mode: Literal["train", "prefill", "decode"] = Field("train", description="training step, prompt prefill, or one decode token (unset: train; decode where "
                                            "hardware.weight_source is sram, which serves inference only)")
    seq_len: PositiveInt = Field(2048, le=MAX_TOKENS, description="sequence length S (context length in decode), tokens")
    B: PositiveInt = Field(1, le=MAX_TOKENS, description="attention batch: sequences per attention tile (SRAM serving: "
                                                        "the sequences served together, their tokens streaming "
                                                        "through the pipeline)")
    G: PositiveInt = Field(1, le=MAX_TILES, description="batch-tiling factor: attention runs G tiles; router and experts see G·B sequences")
    attn_weight_format: Format = Field(
        "bf16", description="format of the attention projections, shared experts and dense-layer FFNs (every matmul "
                            "weight outside the routed experts): bf16 2 bytes, fp8 1, fp4 0.5; their matmuls run at "
                            "that format's peak. Embedding, head, router and norms stay 16-bit")
    expert_weight_format: Format = Field(
        "bf16", description="format of the routed experts' weights (bf16 2 bytes, fp8 1, fp4 0.5; checkpoint formats "
                            "with their scales, docs/formats.md: mxfp4 0.531, nvfp4 0.5625, fp8_block 1.0002, "
                            "int4_g32 0.5625); expert matmuls run at that format's peak (int4_g32: the 16-bit peak)")
    kv_format: Format = Field("bf16", description="format of the KV cache (bf16 2 bytes, fp8 1, fp4 0.5)")
    bytes_per_act: float = Field(2.0, ge=0.125, le=64, allow_inf_nan=False, description="bytes per activation element")
    bytes_per_grad: float = Field(2.0, ge=0.125, le=64, allow_inf_nan=False,
                                  description="bytes per gradient element (streamed out of a weight-streaming wafer; "
                                              "held in node memory beside resident weights)")
    optimizer_bytes_per_param: float = Field(
        12.0, ge=0, le=64, allow_inf_nan=False,
        description="training, resident weights: optimizer state per parameter in node memory (12: fp32 master "
                    "weights and Adam's two moments, mixed-precision Adam as ZeRO counts it; 0: kept elsewhere)")
    optimizer_sharding: Literal["data_parallel", "none"] = Field(
        "data_parallel", description="training, resident weights: the optimizer state split over a parameter's "
                                     "copies (data_parallel: ZeRO-1 / a distributed optimizer, as DeepSeek-V3 "
                                     "trained) or held whole by every copy (none)")
    recompute: Literal["none", "selective", "full"] = Field(
        "full", description="activations kept for backward: all, all but attention scores, or layer inputs only")
    attn_kernel: Literal["materialized", "per_head", "flash"] = Field(
        "per_head", description="attention scores held as n_h·S×S per sequence (materialized), one head's S×S at a "
                                "time (per_head, the readings' default: presets/readings.yaml, attn_kernel), or tiled "
                                "(flash: linear in S)")
    overlap: Literal["layer", "stage", "none"] = Field(
        "layer", description="compute overlaps weight/memory movement across a whole layer, within each stage, or not at all")
    comm_overlap: Literal["none", "microbatch"] = Field(
        "none", description="communication after compute (none, default: the per-phase accounting the papers report), "
                            "or two micro-batches interleaved so one communicates while the other computes "
                            "(layer time = max(compute/memory, communication); the second micro-batch's KV cache "
                            "and transients are charged)")
    tokens_per_device: Optional[PositiveInt] = Field(
        None, le=MAX_TOKENS, description="decode only: tokens (sequences) per device per step; when set, B = "
                                         "tokens_per_device·tp/G and workload.B is not used")
    prompt_len: Optional[PositiveInt] = Field(
        None, le=MAX_TOKENS, description="decode only: prompt length in tokens, for the time to first token (ttft_s): "
                                         "the prefill of the batch's prompts at S = prompt_len (at most seq_len, "
                                         "the decode context that holds the prompt); unset: no ttft_s")
    draft_tokens: NonNegativeInt = Field(
        0, le=64, description="SRAM serving, decode: speculative decoding's draft tokens verified per step (the step "
                              "processes draft_tokens + 1 tokens per sequence; the draft model's own time: "
                              "draft_token_s); 0: no speculation")
    draft_token_s: float = Field(
        0.0, ge=0.0, le=1.0, allow_inf_nan=False,
        description="SRAM serving, decode: seconds the draft model takes per draft token (on its own hardware; e.g. "
                    "the inverse of its own tokens/s per user), paid draft_tokens times in each step before the target "
                    "verifies, since each draft token needs the one before; 0: the draft model's time is not charged")
    accepted_tokens_per_step: float = Field(
        1.0, ge=1.0, le=65.0, allow_inf_nan=False,
        description="SRAM serving, decode: tokens a sequence gains per step (accepted drafts + 1; at most "
                    "draft_tokens + 1); 1: no speculation")

    @model_validator(mode="after")
    def _speculation(self):
        """Accepted tokens per step cannot exceed the tokens the step verifies."""
        if self.accepted_tokens_per_step > self.draft_tokens + 1:
            raise ValueError(f"accepted_tokens_per_step ({self.accepted_tokens_per_step:g}) exceeds draft_tokens + 1 "
                             f"({self.draft_tokens + 1}): a step verifies draft_tokens + 1 tokens")
        return self

    @model_validator(mode="before")
    @classmethod
    def _formats_replace_bytes_per_weight(cls, data):
        """The one bytes-per-weight knob became per-stage formats: say so instead of 'unknown key'."""
        if isinstance(data, dict) and "bytes_per_weight" in data:
            raise ValueError("bytes_per_weight was replaced by attn_weight_format and expert_weight_format "
                             "(bf16 = 2 bytes, fp8 = 1, fp4 = 0.5)")
        return data
