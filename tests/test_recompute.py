"""Recompute policies, attention kernels and activation bytes in the memory and compute model: every expected
value derived here by hand from docs/cost-model.md (Qwen3-30B-A3B on CS-2, kept activations in SRAM)."""

from __future__ import annotations

import pytest

import wsemoe
from wsemoe import load_hardware, load_model

REL = 1e-12
CS2_SRAM = {"preset": "cs2", "kept_activations": "node"}


def _recompute_rows(mode="train", **workload):
    cfg = {"name": "rc", "hardware": CS2_SRAM, "model": "qwen3-30b-a3b",  # the policy's memory stays in SRAM
           "workload": {"mode": mode, "seq_len": 8192, "B": 1, "G": 2, "attn_kernel": "materialized",  # as derived
                        **workload},
           "axes": {"workload.recompute": ["none", "selective", "full"]}}
    df = wsemoe.evaluate(cfg)
    return {r: df.iloc[i] for i, r in enumerate(["none", "selective", "full"])}


def test_recompute_memory_order_and_exact_differences():
    r = _recompute_rows()
    m = load_model("qwen3-30b-a3b")
    H, L, nh, k, F, S, N = m.hidden_size, m.num_hidden_layers, m.num_attention_heads, m.num_experts_per_tok, \
        m.moe_intermediate_size, 8192, 84
    T = 2 * 8192
    # bytes per token and layer, bf16 (s = 1); a score keeps 2 bytes without attention dropout (Qwen3: 0.0)
    a_lin, a_score, a_norm = 11 * H, 2 * nh * S, 4 * H
    a_moe = 2 * H + 2 * k * H + 6 * k * F
    kept = {"none": a_lin + a_score + a_moe + a_norm, "selective": a_lin + a_moe + a_norm, "full": 2 * H}
    for policy, per_token in kept.items():
        assert r[policy]["mem_kept_act_node_bytes"] == pytest.approx(T * L * per_token / N, rel=REL)
    kept_bytes = [r[p]["mem_kept_act_node_bytes"] for p in ("none", "selective", "full")]
    assert kept_bytes[0] > kept_bytes[1] > kept_bytes[2]
    assert kept_bytes[0] - kept_bytes[1] == pytest.approx(T * L * a_score / N, rel=1e-9)
    assert r["none"]["mem_peak_node_bytes"] > r["selective"]["mem_peak_node_bytes"] > r["full"]["mem_peak_node_bytes"]
    for col in ("mem_attn_transient_node_bytes", "mem_bta_buffer_node_bytes", "mem_moe_transient_node_bytes",
                "mem_weights_node_bytes"):  # only what is kept for backward depends on the policy
        assert r["none"][col] == r["selective"][col] == r["full"][col]


def test_recompute_compute_order_and_exact_differences():
    r = _recompute_rows()
    hw, m = load_hardware("cs2"), load_model("qwen3-30b-a3b")
    H, nh, dh, nkv, E, k, F, V, S = m.hidden_size, m.num_attention_heads, m.head_dim, m.num_key_value_heads, \
        m.num_experts, m.num_experts_per_tok, m.moe_intermediate_size, m.vocab_size, 8192
    seqs, T = 2, 2 * 8192
    rate = hw.rows * hw.cols * hw.node_peak_flops * hw.matmul_efficiency
    n_exp = T * k / E
    rate_exp = rate * n_exp / (n_exp + hw.expert_half_tokens)
    core = 2 * nh * (dh + dh) * seqs * S * S
    proj = 2 * T * (H * (nh + 2 * nkv) * dh + nh * dh * H)
    router, experts = 2 * T * H * E, 2 * T * k * 3 * H * F   # the router: one GEMM over every token, at `rate`
    head = 2 * T * V * H

    def t(policy, stage):
        return r[policy][f"{stage}_compute_s"]

    assert t("full", "attention") > t("selective", "attention") > t("none", "attention")
    assert t("none", "attention") == pytest.approx(3 * (proj + core) / rate, rel=REL)
    assert t("selective", "attention") - t("none", "attention") == pytest.approx(core / rate, rel=1e-9)
    assert t("full", "attention") - t("none", "attention") == pytest.approx((proj + core) / rate, rel=1e-9)
    assert t("selective", "moe") == t("none", "moe")                    # selective reruns attention only
    assert t("full", "moe") - t("none", "moe") == pytest.approx(router / rate + experts / rate_exp, rel=1e-9)
    assert t("selective", "head") == t("none", "head")
    assert t("full", "head") - t("none", "head") == pytest.approx(head / rate, rel=1e-9)
    # recomputed FLOPs are hardware FLOPs: model FLOPs and streamed weights do not change
    for col in ("model_flops_per_step", "attention_weights_s", "moe_weights_s", "head_weights_s"):
        assert r["none"][col] == r["selective"][col] == r["full"][col]
    assert r["full"]["step_time_s"] >= r["selective"]["step_time_s"] >= r["none"]["step_time_s"]


@pytest.mark.parametrize("mode", ["prefill", "decode"])
def test_inference_ignores_recompute(mode, monkeypatch):
    from wsemoe.config import applies
    from wsemoe.errors import ConfigError

    with pytest.raises(ConfigError, match="applies only with mode train"):   # refused as one that cannot apply
        _recompute_rows(mode=mode)
    monkeypatch.setattr(applies, "check_applies", lambda cfg: None)   # given anyway, it moves nothing
    r = _recompute_rows(mode=mode)
    for col in ("attention_compute_s", "moe_compute_s", "head_compute_s", "mem_peak_node_bytes", "step_time_s"):
        assert r["none"][col] == r["selective"][col] == r["full"][col], col
    assert r["none"]["mem_kept_act_node_bytes"] == 0


def test_flash_kernel_drops_the_score_terms():
    """attn_kernel flash: no S-long score tensors, so `none` keeps what `selective` keeps, and the
    attention transient is the linear terms of one tile and its norm input: g·B·S·(11H + 2H)·s/N."""
    flash = _recompute_rows(attn_kernel="flash")
    mat = _recompute_rows(attn_kernel="materialized")
    H, S, N = 2048, 8192, 84
    assert flash["none"]["mem_kept_act_node_bytes"] == flash["selective"]["mem_kept_act_node_bytes"]
    assert flash["full"]["mem_kept_act_node_bytes"] == mat["full"]["mem_kept_act_node_bytes"]
    assert flash["full"]["mem_attn_transient_node_bytes"] == pytest.approx(1 * S * 13 * H / N, rel=REL)
    assert flash["none"]["attn_core_flops"] == mat["none"]["attn_core_flops"]   # the count is unchanged...
    assert flash["none"]["attention_compute_s"] < mat["none"]["attention_compute_s"]   # ...the causal half is skipped
    assert flash["none"]["attn_core_executed_share"] == pytest.approx((S + 1) / (2 * S))


def test_activation_memory_scales_with_bytes_per_act():
    two, four = _recompute_rows(bytes_per_act=2), _recompute_rows(bytes_per_act=4)
    for policy in ("none", "selective", "full"):
        for col in ("mem_kept_act_node_bytes", "mem_attn_transient_node_bytes", "mem_bta_buffer_node_bytes",
                    "mem_moe_transient_node_bytes"):
            assert four[policy][col] == pytest.approx(2 * two[policy][col], rel=REL), (policy, col)
        assert four[policy]["mem_weights_node_bytes"] == two[policy]["mem_weights_node_bytes"]


def test_gqa_kv_cache_in_inference():
    """GQA caches K and V; TP splits heads, so a rank holds ⌈n_kv/tp⌉ of them (at least one: beyond tp = n_kv
    heads are replicated): 2·⌈n_kv/tp⌉·d_h·b_kv bytes per cached token and layer on every rank (kv_format fp8:
    1 byte), read once per layer together with the weights (one HBM term)."""
    cfg = {"name": "kv", "hardware": "wsc-b200-8x8", "model": "qwen3-30b-a3b",
           "workload": {"mode": "prefill", "seq_len": 4096, "B": 4, "G": 3, "kv_format": "fp8"}}
    row = wsemoe.evaluate(cfg).iloc[0]
    hw, m = load_hardware("wsc-b200-8x8"), load_model("qwen3-30b-a3b")
    tp, seqs = 64, 12                                    # tp unset: one group of all 64 dies
    H, nh, nkv, dh = m.hidden_size, m.num_attention_heads, m.num_key_value_heads, m.head_dim
    kv_rank = 2 * -(-nkv // tp) * dh * 1                 # ⌈4/64⌉ = 1 head per rank
    assert row["mem_kv_node_bytes"] == pytest.approx(seqs * 4096 * m.num_hidden_layers * kv_rank, rel=REL)
    proj, kv_proj = H * (nh + 2 * nkv) * dh + nh * dh * H, H * 2 * nkv * dh
    # a rank's share: TP 64 over 32 query heads leaves the busiest rank one whole head (1/32 of the heads'
    # projections), and its own KV head's K and V projections (1/4 of them)
    w_attn = ((proj - kv_proj) / nh + kv_proj / nkv + 2 * dh + 2 * H) * 2   # + q/k and layer norms, whole on a rank
    reads = 3 * w_attn + seqs * 4096 * kv_rank           # G tiles re-read the rank's share; one layer's cache
    assert row["attention_hbm_s"] == pytest.approx(reads / hw.node_memory_bw_bytes_per_s, rel=REL)
    assert row["mem_kept_act_node_bytes"] == 0
