"""What each stage's peak holds beyond the kept activations: the weights prefetched while attention computes under
`overlap: layer`, each stage's own layer-norm input, and the bytes per attention score with and without attention
dropout. Every expected value is derived here by hand (docs/cost-model.md, Memory per node) for Qwen3-30B-A3B on
one CS-2 (84 dies, 150 GB/s in, weights streamed), bf16 activations (s = 1)."""

from __future__ import annotations

import pytest

import wsemoe
from wsemoe import load_hardware
from wsemoe.config.hf import model_from_hf_config
from wsemoe.errors import PresetError

REL = 1e-12
H, NH, NKV, DH, E, F, S, N = 2048, 32, 4, 128, 128, 768, 8192, 84
BW_IN = 150e9
ATTN_PARAMS = H * (NH + 2 * NKV) * DH + NH * DH * H          # Q, K, V and output projections: 18,874,368
MOE_BYTES = (E * 3 * H * F + H * E) * 2                      # routed experts and router, bf16: 1,208,483,840


def _rows(k=8, **workload):
    cfg = {"name": "mem", "hardware": "cs2", "model": "qwen3-30b-a3b",
           "workload": {"mode": "train", "seq_len": S, "B": 1, "G": 1, "attn_kernel": "per_head",
                        "recompute": "full", **workload},
           "sparsity": {"vary": "num_experts_per_tok", "values": [k], "hold": "active"},
           "axes": {"workload.B": [1, 2, 8, 64]}}
    return wsemoe.evaluate(cfg).set_index("workload.B")


def _window(B, G=1):
    """The attention stage's backward pass (2 forward-equivalents + 1 recomputed, full recompute) in seconds."""
    hw = load_hardware("cs2")
    rate = hw.rows * hw.cols * hw.node_peak_flops * hw.matmul_efficiency
    seqs = G * B
    proj = 2 * seqs * S * ATTN_PARAMS
    core = 2 * NH * (DH + DH) * seqs * S * S          # per_head computes every score (no causal skip)
    return 3 * (proj + core) / rate


def test_layer_overlap_holds_the_moe_weights_streamed_during_attention():
    """min(window · BW_in, W_moe) / N: at B = 1 the backward attention pass (1.13 ms) brings 170 MB of the 1.21 GB
    of experts and router, at B = 2 twice that; from B = 8 on the window outlasts the whole stream (9.0 ms × 150 GB/s
    = 1.36 GB)."""
    r = _rows()
    assert _window(2) * BW_IN < MOE_BYTES < _window(8) * BW_IN    # the two regimes the rows sit in
    for B in (1, 2):
        assert r.loc[B, "mem_prefetch_node_bytes"] == pytest.approx(_window(B) * BW_IN / N, rel=1e-9)
    for B in (8, 64):
        assert r.loc[B, "mem_prefetch_node_bytes"] == pytest.approx(MOE_BYTES / N, rel=REL)
    for B in (1, 2, 8, 64):   # charged at the attention stage's peak only
        row = r.loc[B]
        terms = sum(row[f"mem_{t}_node_bytes"] for t in ("weights", "kept_act", "kv", "attn_transient", "bta_buffer",
                                                          "prefetch", "attn_grads"))
        assert row["mem_attn_peak_node_bytes"] == pytest.approx(terms, rel=REL)
        moe = sum(row[f"mem_{t}_node_bytes"] for t in ("weights", "kept_act", "kv", "moe_transient", "moe_deltas"))
        assert row["mem_moe_peak_node_bytes"] == pytest.approx(moe, rel=REL)


def test_top_k_1_at_uniform_batching_the_prefetch_fills_what_b_62_left_free():
    """k = 1 at constant active parameters: experts of width 8·768, W_moe = 9.66 GB, 115 MB a die. At G = 1 the
    backward attention window of B sequences (1.13 ms each) streams it whole above B ≈ 57, so uniform batching's
    B = 64 holds it beside its one-head scores (2 bytes a score without attention dropout)."""
    r = _rows(k=1)
    w = (E * 3 * H * 8 * F + H * E) * 2
    assert r.loc[64, "mem_prefetch_node_bytes"] == pytest.approx(w / N, rel=REL)
    assert r.loc[64, "mem_prefetch_node_bytes"] > 100e6


@pytest.mark.parametrize("changes", [{"overlap": "stage"}, {"overlap": "none"}])
def test_no_prefetch_where_each_stage_streams_its_own_weights(changes):
    assert (_rows(**changes)["mem_prefetch_node_bytes"] == 0).all()


def test_resident_weights_prefetch_nothing():
    cfg = {"name": "res", "hardware": "wsc-b200-8x8", "model": "qwen3-30b-a3b",
           "workload": {"mode": "train", "seq_len": 4096, "B": 8, "G": 1}}
    assert (wsemoe.evaluate(cfg)["mem_prefetch_node_bytes"] == 0).all()


def test_each_stage_holds_its_own_layer_norm_input():
    """Korthikanti's 4·H of norms is two layer norms keeping their 2·H inputs: attention's tile holds 11·H + 2·H
    per token (flash: no scores), the MoE stage a_moe + 2·H over all G·B sequences."""
    r = _rows(attn_kernel="flash")
    T = 64 * S
    a_moe = 2 * H + 2 * 8 * H + 6 * 8 * F
    assert r.loc[64, "mem_attn_transient_node_bytes"] == pytest.approx(T * 13 * H / N, rel=REL)
    assert r.loc[64, "mem_moe_transient_node_bytes"] == pytest.approx(T * (a_moe + 2 * H) / N, rel=REL)


@pytest.mark.parametrize("dropout,per_score", [(0.0, 2 + 2), (0.1, 5 + 2)])
def test_score_bytes_follow_attention_dropout(dropout, per_score):
    """One head's S scores per query: the softmax output (2 bytes), plus the dropout mask (1) and output (2) only
    when the model drops attention probabilities; in training the backward's dP (2) beside them."""
    r = _rows(attn_kernel="per_head").loc[[2]]
    cfg = {"name": "drop", "hardware": "cs2", "model": {"preset": "qwen3-30b-a3b", "attention_dropout": dropout},
           "workload": {"mode": "train", "seq_len": S, "B": 2, "G": 1, "attn_kernel": "per_head", "recompute": "full"}}
    row = wsemoe.evaluate(cfg).iloc[0]
    T = 2 * S
    assert row["mem_attn_transient_node_bytes"] == pytest.approx(T * (13 * H + per_score * S) / N, rel=REL)
    if dropout == 0.0:   # the preset's own: its source config states attention_dropout 0.0
        assert row["mem_attn_transient_node_bytes"] == pytest.approx(r.iloc[0]["mem_attn_transient_node_bytes"])


def test_attention_dropout_is_read_from_config_json():
    base = {"model_type": "qwen3_moe", "hidden_size": H, "num_hidden_layers": 48, "num_attention_heads": NH,
            "num_key_value_heads": NKV, "head_dim": DH, "moe_intermediate_size": F, "num_experts": E,
            "num_experts_per_tok": 8, "vocab_size": 151936}
    assert model_from_hf_config(base).attention_dropout == 0.0                    # absent: the HF classes' 0.0
    assert model_from_hf_config({**base, "attention_dropout": 0.1}).attention_dropout == 0.1
    with pytest.raises(PresetError, match="attention_dropout"):
        model_from_hf_config({**base, "attention_dropout": 1.5})


@pytest.mark.parametrize("name", ["qwen3-30b-a3b.json", "deepseek-v3.json", "mixtral-8x7b-v0.1.json",
                                  "llama-3.1-8b.json"])
def test_shipped_configs_state_no_attention_dropout(name):
    from pathlib import Path
    assert model_from_hf_config(Path(__file__).parent / "data" / "hf" / name).attention_dropout == 0.0


def test_the_moe_backward_holds_the_deltas_of_its_tokens_and_copies():
    """Korthikanti's count is what the forward saves; the MoE stage's backward also holds its deltas (the loss
    gradients of its outputs): each token's g (2·H) and each of its k routed copies' dy = p·g (2·H), 36,864 B a token
    at k = 8 beside the transient's 2·H + 2·8·H + 6·8·F + 2·H = 77,824 (+47%). bta_topk's one-group best at k = 8
    (B 1, G 54: T = 442,368 tokens) held 442,368 · 77,824 / 84 + 18,878,720 · 2 / 84 = 410,292,912.8 B against
    0.85 · 850,000 · 48,000 / 84 = 412,857,142.9 usable; the deltas add 442,368 · 36,864 / 84 = 194,136,356.6 B
    (604.4 MB). A sequence now costs 8,192 · 114,688 / 84 B at the MoE stage: (412,857,142.9 − 449,493.3) /
    11,184,761.9 = 36.9, so G = 36 fits at B = 1 and G = 37 does not (54.3 sequences before). None in inference."""
    capacity, w = 0.85 * 850_000 * 48_000 / 84, 18_878_720 * 2 / 84
    a_moe, deltas = 2 * H + 2 * 8 * H + 6 * 8 * F + 2 * H, (8 + 1) * 2 * H
    assert (a_moe, deltas) == (77_824, 36_864)
    cfg = {"name": "deltas", "hardware": "cs2", "model": "qwen3-30b-a3b",
           "workload": {"mode": "train", "seq_len": S, "B": 1, "attn_kernel": "per_head", "recompute": "full"},
           "axes": {"workload.G": [36, 37, 54]}}
    r = wsemoe.evaluate(cfg).set_index("workload.G")
    T = 54 * S
    assert r.loc[54, "mem_moe_deltas_node_bytes"] == pytest.approx(T * deltas / N, rel=REL)
    assert r.loc[54, "mem_moe_peak_node_bytes"] == pytest.approx(w + T * (a_moe + deltas) / N, rel=REL)
    assert r.loc[54, "mem_moe_peak_node_bytes"] == pytest.approx(604_429_269.3, abs=0.1)
    assert (capacity - w) / (S * (a_moe + deltas) / N) == pytest.approx(36.87, abs=0.005)
    assert list(r["feasible"]) == [True, False, False]
    assert r.loc[36, "g_mem_moe"] < 0 < r.loc[37, "g_mem_moe"]
    prefill = {**cfg, "workload": {k: v for k, v in cfg["workload"].items() if k != "recompute"} | {"mode": "prefill"}}
    assert (wsemoe.evaluate(prefill)["mem_moe_deltas_node_bytes"] == 0).all()


def test_a_dense_model_s_ffn_backward_holds_one_delta_a_token():
    """No routed copies without MoE layers: the FFN's dy is the token's g itself, 2·H a token (Llama-3.1-8B, H 4,096,
    20 sequences of 8,192 on one CS-2: 163,840 · 8,192 / 84 = 15,978,666.7 B a die)."""
    cfg = {"name": "dense", "hardware": "cs2", "model": "llama-3.1-8b",
           "workload": {"mode": "train", "seq_len": S, "B": 20, "G": 1, "attn_kernel": "per_head",
                        "recompute": "full"}}
    row = wsemoe.evaluate(cfg).iloc[0]
    assert row["mem_moe_deltas_node_bytes"] == pytest.approx(20 * S * 2 * 4096 / N, rel=REL)
