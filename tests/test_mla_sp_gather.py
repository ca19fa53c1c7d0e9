"""The attention's TP collective in training under sequence parallelism: each rank gathers what its heads'
projections read from the group's slices, and reduce-scatters the output projection's partial sums. GQA gathers
the normed hidden state (H), the bytes of an H all-reduce. MLA runs its down-projections on the rank's own slice
(TELinear 'duplicated') and gathers the query latent, the KV latent and the shared RoPE key k_pos_emb, each on its
own (megatron/core/transformer/multi_latent_attention.py: linear_q_up_proj and linear_kv_up_proj gather their
inputs; get_query_key_value_tensors gathers k_pos_emb with gather_from_sequence_parallel_region). The model charged
an H all-reduce for both. Expected values derived by hand."""

from __future__ import annotations

import pytest

import wsemoe
from wsemoe.cost.node import params

REL = 1e-9
# wsc-b200-8x8 (wsemoe/presets/hardware): 900 GB/s a link, 200 ns a hop, 4.5 µs a collective call.
LINK, HOP, CALL = 9.0e11, 2.0e-7, 4.5e-6


def _row(model="deepseek-v3", *extra, **sets):
    sets = {"workload.mode": "train", "workload.seq_len": 4096, "workload.B": 1, "workload.G": 1,
            "mapping.tp": 4, "mapping.strategy": "block", **sets}
    return wsemoe.evaluate(wsemoe.point_config("wsc-b200-8x8", model, [f"{k}={v}" for k, v in sets.items()]
                                               + list(extra))).iloc[0]


def test_mla_gathers_its_latents_and_rope_key_not_the_hidden_state():
    """DeepSeek-V3, TP 4 blocks on the 8×8 mesh, S 4096, B 1, G 1: 16 groups, 4,096 tokens a tile. A rank gathers
    r_q + r_kv + d_rope = 1536 + 512 + 64 = 2,112 values a token and reduce-scatters H = 7,168: on each one-hop ring
    edge 3/4 · 4,096 · (2,112 + 7,168) · 2 B = 57,016,320 B, 63.35 µs at 900 GB/s, + 2·3 · 200 ns + 4.5 µs =
    69.0515 µs a tile. An H all-reduce put 1.5 · 4,096 · 7,168 · 2 = 88,080,384 B there (97.87 µs + 5.7 µs)."""
    row = _row()
    edge = 3 / 4 * 4096 * (2112 + 7168) * 2
    assert edge == 57_016_320
    assert row["allreduce_max_link_bytes"] == pytest.approx(edge, rel=REL)
    assert row["attention_allreduce_s"] == pytest.approx(edge / LINK + 6 * HOP + CALL, rel=REL)
    assert params.sp_gather_width(wsemoe.load_model("deepseek-v3")) == 2112


def test_mla_without_a_query_latent_gathers_more_than_h():
    """Without a query latent the query projection reads the gathered hidden state, and the KV latent and the RoPE
    key are gathered beside it: 7,168 + 512 + 64 = 7,744 a token, 3/4 · 4,096 · (7,744 + 7,168) · 2 B =
    91,619,328 B an edge (the H all-reduce's 88,080,384 left out the latent's and k_pos_emb's gathers)."""
    row = _row("deepseek-v3", "model.q_lora_rank=null")
    assert row["allreduce_max_link_bytes"] == pytest.approx(3 / 4 * 4096 * (7744 + 7168) * 2, rel=REL)


def test_gqa_training_and_mla_serving_keep_the_h_all_reduce():
    """Qwen3-30B-A3B (GQA, H 2048) in training: 1.5 · 4,096 · 2,048 · 2 = 25,165,824 B an edge. DeepSeek-V3 decode
    (serving replicates the attention input and all-reduces the output): 1.5 · (a tile's tokens) · 7,168 · 2 B, a
    tile being one of the 16 groups' tokens at G 1."""
    assert _row("qwen3-30b-a3b")["allreduce_max_link_bytes"] == pytest.approx(1.5 * 4096 * 2048 * 2, rel=REL)
    dec = _row(**{"workload.mode": "decode", "workload.B": 128})
    tile = dec["tokens_per_microbatch"] / 16
    assert dec["allreduce_max_link_bytes"] == pytest.approx(1.5 * tile * 7168 * 2, rel=REL)
