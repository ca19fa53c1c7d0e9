"""Workload spec: mode, sequence length, attention batch B, tiling factor G, precisions."""

from __future__ import annotations

from typing import Literal, Optional

from pydantic import Field, PositiveFloat, PositiveInt

from wsemoe.specs.base import MAX_FIGURE, MAX_TILES, MAX_TOKENS, Spec


class WorkloadSpec(Spec):
    """What runs: one micro-batch of G·B sequences, attention in G tiles of B sequences."""

    mode: Literal["train", "prefill", "decode"] = Field("train", description="training step, prompt prefill, or one decode token")
    seq_len: PositiveInt = Field(2048, le=MAX_TOKENS, description="sequence length S (context length in decode), tokens")
    B: PositiveInt = Field(1, le=MAX_TOKENS, description="attention batch: sequences per attention tile")
    G: PositiveInt = Field(1, le=MAX_TILES, description="batch-tiling factor: attention runs G tiles; router and experts see G·B sequences")
    bytes_per_weight: PositiveFloat = Field(2.0, le=64, description="bytes per weight (2 = bf16)")
    bytes_per_act: PositiveFloat = Field(2.0, le=64, description="bytes per activation element")
    bytes_per_grad: PositiveFloat = Field(2.0, le=64, description="bytes per gradient element streamed out")
    recompute: Literal["none", "selective", "full"] = Field(
        "full", description="activations kept for backward: all, all but attention scores, or layer inputs only")
    attn_kernel: Literal["materialized", "flash"] = Field(
        "materialized", description="attention scores held as n_h·S×S per sequence, or tiled (linear in S)")
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
