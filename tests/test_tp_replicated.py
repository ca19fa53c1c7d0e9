"""Attention weights tensor parallelism cannot split: K/V projections past the KV heads, MLA's down-projections.

Head-parallel TP gives each rank its heads' Q and output projections. A GQA rank keeps at least one KV head, so
past tp = n_kv its K and V projections are shared by tp/n_kv ranks each; MLA's down-projections to the query and
KV latents feed every head, so every rank runs them whole (SGLang's fused_qkv_a_proj_with_mqa is a
ReplicatedLinear; TensorRT-LLM's kv_a_proj_with_mqa a Linear without a TP mode). Both the GPU serving model and
the node-level model hold and run those weights per rank; hand-derived here from the model presets' fields.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import wsemoe
from wsemoe import load_model
from wsemoe.cost.gpu import serving
from wsemoe.cost.gpu.shape import shape
from wsemoe.cost.node import params


def _mla_by_hand(m):
    H, nh = m.hidden_size, m.num_attention_heads
    rq, rkv, dn, dr, dv = m.q_lora_rank, m.kv_lora_rank, m.qk_nope_head_dim, m.qk_rope_head_dim, m.v_head_dim
    attn = H * rq + rq * nh * (dn + dr) + H * (rkv + dr) + rkv * nh * (dn + dv) + nh * dv * H
    return attn, H * (rq + rkv + dr)


def test_mla_down_projections_are_whole_on_every_rank():
    m = load_model("deepseek-v3")
    attn, down = _mla_by_hand(m)
    assert params.attn_params(m) == attn and params.attn_kv_params(m) == down
    for tp in (1, 8, 64):
        assert params.attn_params_per_rank(m, tp) == pytest.approx((attn - down) / tp + down, rel=1e-12)
    # at TP 8 a rank holds 56% more than attn/8; at TP 64, 6.6 times as much
    assert params.attn_params_per_rank(m, 8) / (attn / 8) == pytest.approx(1.56, abs=0.01)


def test_gqa_kv_projections_split_only_up_to_the_kv_heads():
    m = load_model("llama-3.1-8b")   # 32 query heads, 8 KV heads of 128, H 4096
    H, nkv, dh = m.hidden_size, m.num_key_value_heads, m.head_dim
    attn, kv = params.attn_params(m), H * 2 * nkv * dh
    assert params.attn_kv_params(m) == kv
    assert params.attn_params_per_rank(m, 8) == pytest.approx(attn / 8, rel=1e-12)     # one KV head a rank
    assert params.attn_params_per_rank(m, 16) == pytest.approx((attn - kv) / 16 + kv / 8, rel=1e-12)


@settings(max_examples=40, deadline=None)
@given(name=st.sampled_from(["deepseek-v3", "llama-3.1-8b", "qwen3-235b-a22b", "qwen3-30b-a3b"]),
       tp=st.sampled_from([1, 2, 4, 8, 16, 32, 64]))
def test_a_rank_never_holds_more_at_wider_tp_and_the_ranks_hold_every_weight(name, tp):
    m = load_model(name)
    per, wider = params.attn_params_per_rank(m, tp), params.attn_params_per_rank(m, 2 * tp)
    assert wider <= per
    assert tp * per >= params.attn_params(m) * (1 - 1e-12)
    assert params.attn_params_per_rank(m, 1) == pytest.approx(params.attn_params(m), rel=1e-12)


def test_gpu_serving_reads_and_runs_a_ranks_share():
    """Decode of one sequence on DeepSeek-V3 at TP 8, bandwidth-bound: the attention kernel reads the rank's
    weights (the down-projections whole), not attn/8."""
    m = load_model("deepseek-v3")
    s = shape(m)
    X = {k: np.array([v], float) for k, v in
         {"attn_w": s.attn_w, "attn_kv_w": s.attn_kv_w, "heads": s.heads, "kv_shards": s.kv_shards, "tp": 8.0}.items()}
    attn, down = _mla_by_hand(m)
    assert serving._attn_rank(X)[0] == pytest.approx((attn - down) / 8 + down, rel=1e-12)


def _node_row(model, tp):
    cfg = {"name": "tp", "hardware": "nvl72", "model": model,
           "workload": {"mode": "decode", "seq_len": 4096, "B": 8, "G": 1}, "mapping": {"tp": tp}}
    return wsemoe.evaluate(cfg).iloc[0]


def test_node_model_executes_the_replicated_projections_and_counts_model_flops_once():
    """At TP 8 on DeepSeek-V3 every rank runs the down-projections for its group's tokens: the attention stage
    executes tp·attn_rank/attn times the projection FLOPs the model counts; the model FLOPs stay 2·T·attn."""
    m = load_model("deepseek-v3")
    row = _node_row("deepseek-v3", 8)
    attn, down = _mla_by_hand(m)
    T = row["tokens_per_microbatch"]
    assert row["attn_proj_flops"] == pytest.approx(2 * T * attn, rel=1e-12)
    executed = 2 * T * 8 * ((attn - down) / 8 + down) + row["attn_core_flops"] * row["attn_core_executed_share"]
    assert row["attention_hw_flops"] == pytest.approx(executed, rel=1e-9)


def test_tp_splits_whole_heads_so_the_busiest_rank_sets_the_pace():
    """TP 72 over Qwen3-30B-A3B's 32 query and 4 KV heads: the busiest rank holds one whole query head (1/32 of
    the heads' work, not 1/72) and one KV head's K/V projections (1/4); 128 heads over TP 72 leave it two."""
    assert params.head_share(32, 72) == 1 / 32 and params.head_share(128, 72) == 2 / 128
    assert params.head_share(128, 8) == 1 / 8   # a TP that divides the heads: the even share
    m = load_model("qwen3-30b-a3b")
    H, nh, nkv, dh = m.hidden_size, m.num_attention_heads, m.num_key_value_heads, m.head_dim
    attn, kv = params.attn_params(m), H * 2 * nkv * dh
    rank = (attn - kv) / nh + kv / nkv
    assert params.attn_params_per_rank(m, 72) == pytest.approx(rank, rel=1e-12)
    row = _node_row("qwen3-30b-a3b", 72)
    T = row["tokens_per_microbatch"]
    core = row["attn_core_flops"] * row["attn_core_executed_share"]
    assert row["attention_hw_flops"] == pytest.approx(2 * T * 72 * rank + core * 72 / nh, rel=1e-9)


def test_eval_shows_how_the_busiest_rank_makes_the_executed_attention_flops():
    from wsemoe.analysis.explain.point import breakdown

    sets = ["workload.mode=decode", "workload.seq_len=8192", "workload.B=1", "mapping.tp=72"]
    _, rows = breakdown(hardware="nvl72", model="qwen3-30b-a3b", sets=sets)
    line = next(text for g, name, _, _, text in rows if g.startswith("how") and name == "attention_hw_flops")
    assert "× 4 + core" in line and "× 2.25 = " in line and "✓" in line and "⌈32/72⌉" in line
    _, rows = breakdown(hardware="nvl72", model="qwen3-30b-a3b", sets=[*sets[:-1], "mapping.tp=4"])
    # TP 4 divides every head count: no line in how the step adds up
    assert not any(g.startswith("how") and name == "attention_hw_flops" for g, name, *_ in rows)
