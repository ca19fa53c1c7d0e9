"""Norm weights tensor parallelism does not split: every TP rank holds each RMSNorm (the layer's two and the final
one), the GQA q/k norms, MLA's query and KV latent norms and a row-parallel output bias whole. Megatron-Core builds
them over the full width (megatron/core/transformer/multi_latent_attention.py: q_layernorm over q_lora_rank,
kv_layernorm over kv_lora_rank; the layer norms are (TE)RMSNorm), and sums their gradients over the TP group
(finalize_model_grads.py, _allreduce_layernorm_grads); vLLM's RMSNorm is not a parallel layer either. Only the
q/k/v biases (and sinks) split with the heads' columns. Expected values derived by hand from the model presets."""

from __future__ import annotations

import pytest

import wsemoe
from wsemoe.cost.node import params, weights
from wsemoe.specs.workload import WorkloadSpec

WL = WorkloadSpec(mode="train", seq_len=4096, B=1, G=1)


def test_mla_latent_and_layer_norms_stay_whole_on_every_tp_rank():
    """DeepSeek-V3 (H 7168, r_q 1536, r_kv 512): a layer's small parameters are its two RMSNorms 2·7168 = 14,336 and
    the latent norms 1536 + 512 = 2,048, all whole on every rank: 16,384 at any TP. The projections a TP 4 rank
    holds are (187,105,280 − 15,138,816)/4 + 15,138,816 = 58,130,432, so its attention weights are 58,146,816
    (bf16 small parameters: 16,384 · 2 = 32,768 B of them). The norms were split tp ways: 4,096, 58,134,528."""
    v3 = wsemoe.load_model("deepseek-v3")
    assert params.tp_whole_small(v3) == 2 * 7168 + 1536 + 512 == 16_384
    for tp in (1, 4, 8):
        assert weights.small_rank(v3, tp) == 16_384
    rank = weights.attn_rank(v3, WL, 4)
    assert rank.params == pytest.approx(58_130_432 + 16_384, rel=1e-15)
    assert weights.attn_mean_rank(v3, WL, 4).params == pytest.approx(187_105_280 / 4 + 15_138_816 * 3 / 4 + 16_384,
                                                                     rel=1e-15)


def test_gqa_q_k_norms_stay_whole_the_qkv_biases_split():
    """Qwen3-30B-A3B (H 2048, d_h 128, q/k norms): 2·2048 + 2·128 = 4,352 whole on every rank (TP 4 split them to
    1,088). Qwen1.5-MoE-A2.7B (H 2048, 16 heads, 16 KV heads, d_h 128, q/k/v biases): the norms 4,096 whole and the
    biases (16 + 2·16)·128 = 6,144 split with the heads' columns: 4,096 + 6,144/4 = 5,632 at TP 4 (was 2,560)."""
    q3 = wsemoe.load_model("qwen3-30b-a3b")
    assert weights.small_rank(q3, 4) == 2 * 2048 + 2 * 128 == 4_352
    q15 = wsemoe.load_model("qwen1.5-moe-a2.7b")
    assert weights.small_rank(q15, 4) == 2 * 2048 + (16 + 2 * 16) * 128 / 4 == 5_632


def test_a_node_holds_the_final_norm_whole():
    """The resident attention-side parameters of a TP 4 node of wsc-b200-8x8 (64 GPUs, 16 groups) for DeepSeek-V3
    differ from a TP 1 node's quarter of the splittable part by exactly the whole norms: 61 layers × 16,384 and the
    final norm 7,168 held whole instead of a quarter: 61·16,384·3/4 + 7,168·3/4 = 754,944 parameters more than the
    old tp-way split gave (an all-bf16 1.51 MB)."""
    hw, v3 = wsemoe.load_hardware("wsc-b200-8x8"), wsemoe.load_model("deepseek-v3")
    shared = weights.resident_node(hw, v3, WL, 4)[0].params
    L, Lm = 61, 58
    proj = 187_105_280 / 4 + 15_138_816 * 3 / 4                     # the busiest rank's projections (128 heads / 4)
    split = (L - Lm) * params.dense_ffn_params(v3) + params.embedding_params(v3) - 7168
    by_hand = (L * (proj + 16_384) + Lm * (params.shared_expert_params(v3) / 4 + params.router_grad_params(v3))
               + split / 4 + 7168)
    assert shared == pytest.approx(by_hand, rel=1e-14)
    head = weights.head_reads(v3, 4096, tp=4, nodes=64)
    assert head.nbytes == pytest.approx((129_280 * 7168 / 4 + 7168 + 4096 * 7168 / 64) * 2, rel=1e-15)
