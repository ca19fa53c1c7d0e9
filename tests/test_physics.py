"""Hand-derived cases of the physics fixes: absorbed MLA in decode, the embedding lookup, shared experts and the
imbalance, per-stage formats and their peaks, kernel launches and collective software latency.

Each expected value is written out from the model's published shape and the preset's figures, with the
arithmetic in comments; only `wsemoe.evaluate` is under test.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import wsemoe
from wsemoe import load_hardware, load_model

REL = 1e-12


def _one(hardware, model, workload, mapping=None, balance=None):
    cfg = {"name": "p", "hardware": hardware, "model": model, "workload": workload}
    if mapping:
        cfg["mapping"] = mapping
    if balance:
        cfg["balance"] = balance
    return wsemoe.evaluate(cfg).iloc[0]


# ------------------------------------------------------------------ MLA: absorbed in decode, per-head in prefill

def test_mla_decode_core_is_absorbed_into_the_latent():
    """DeepSeek-V3 decode, one query over S = 4096 keys, B = 3 sequences on one TP group of the 8×8 mesh.

    Absorbed MLA scores the 512-wide latent plus the 64-wide rope key and sums the latent, per head:
    2·(512 + 64) + 2·512 = 2176 FLOP per (query, key) pair per head, ×128 heads = 278,528.
    attn_core = 278,528 × 3 sequences × 1 query × 4096 keys = 3,422,552,064 FLOP.
    The per-head form would be 2·128·(192 + 128) = 81,920 per pair: absorbed is 278,528/81,920 = 3.4× more.
    """
    row = _one("wsc-b200-8x8", "deepseek-v3", {"mode": "decode", "seq_len": 4096, "B": 3})
    assert row["attn_core_flops"] == 278_528 * 3 * 1 * 4096 == 3_422_552_064
    assert 278_528 / 81_920 == pytest.approx(3.4)
    # the cache stays the latent: (512 + 64) × 2 bytes per token and layer, 61 layers, 4096 tokens, 3 sequences,
    # on every rank of the one 64-die group (mla_cache: replicated)
    assert row["mem_kv_node_bytes"] == 3 * 4096 * 61 * 576 * 2


def test_mla_prefill_keeps_per_head_widths():
    """Prefill up-projects K and V once per token: 2·128·(128 + 64 + 128) = 81,920 FLOP per pair.
    S = 256, B = 2: attn_core = 81,920 × 2 × 256 queries × 256 keys = 10,737,418,240."""
    row = _one("wsc-b200-8x8", "deepseek-v3", {"mode": "prefill", "seq_len": 256, "B": 2})
    assert row["attn_core_flops"] == 81_920 * 2 * 256 * 256 == 10_737_418_240


def test_gqa_decode_is_unchanged():
    """Qwen3-30B-A3B (GQA, 32 heads of 128): 2·32·(128 + 128) = 16,384 per pair; S = 1000, B = 5:
    16,384 × 5 × 1000 = 81,920,000."""
    row = _one("wsc-b200-8x8", "qwen3-30b-a3b", {"mode": "decode", "seq_len": 1000, "B": 5})
    assert row["attn_core_flops"] == 16_384 * 5 * 1000


# ------------------------------------------------------------------ the head reads T embedding rows, not V

def test_resident_head_reads_the_head_matrix_and_the_tokens_rows():
    """NVL72, DeepSeek-V3 decode, TP 8 (9 groups), B = 4: T = 9 × 4 = 36 tokens.

    Per GPU the head reads its 1/8 of the head matrix, 129,280 × 7168 × 2 B / 8, the final norm whole (every TP
    rank holds it: 7168 × 2 B), and the embedding rows of its share of the tokens, 36 × 7168 × 2 B / 72, never the
    129,280-row input table: head_hbm = (231,673,856 / 8 + 7,168) × 2 / 8 TB/s + 36 × 7168 × 2 / 72 / 8 TB/s.
    """
    row = _one("nvl72", "deepseek-v3", {"mode": "decode", "seq_len": 2048, "B": 4}, {"tp": 8})
    head = (129_280 * 7168 / 8 + 7168) * 2
    rows = 36 * 7168 * 2 / 72
    assert row["head_hbm_s"] == pytest.approx((head + rows) / 8.0e12, rel=REL)
    # the whole input table would have added another 129,280 × 7168 × 2 / 8 bytes: 14.5 µs per step, not 7.2 µs
    assert row["head_hbm_s"] < 1.01 * head / 8.0e12


def test_streamed_head_streams_the_head_and_the_looked_up_rows():
    """CS-2 training, Qwen3-30B-A3B (untied, V = 151,936, H = 2048), S = 2048, B = 1, G = 1: T = 2048 < V.

    Forward and backward stream the head matrix and final norm plus the 2048 looked-up rows:
    W = (151,936 × 2048 + 2048 + 2048 × 2048) × 2 B = 630,722,560 B, in twice; gradients of the same parameters
    out once (untied: the rows have gradients of their own), 2 B each: head weights = 2W / 150 GB/s.
    """
    hw = load_hardware("cs2")
    row = _one("cs2", "qwen3-30b-a3b", {"mode": "train", "seq_len": 2048, "B": 1, "attn_kernel": "flash"})
    W = (151_936 * 2048 + 2048 + 2048 * 2048) * 2
    assert W == 630_722_560
    assert row["head_weights_s"] == pytest.approx(max(2 * W / hw.io_in_bw_bytes_per_s,
                                                      W / hw.io_out_bw_bytes_per_s), rel=REL)


# ------------------------------------------------------------------ shared experts are not imbalanced

def test_imbalance_scales_routed_experts_only():
    """NVL72, DeepSeek-V3 decode, TP 1, 1 token per GPU (T = 72), Zipf skew on the experts.

    moe compute = (router + routed × imbalance + shared) / (72 GPUs × 2.5 PFLOP/s × 0.4), with
    router = 2·72·7168·256, routed = 2·72·8·3·7168·2048, shared = 2·72·3·7168·2048 (one shared expert, F = 2048);
    the imbalance factor is the model's structural column. The shared expert sees every token of its group.
    """
    row = _one("nvl72", "deepseek-v3", {"mode": "decode", "seq_len": 1024, "tokens_per_device": 1}, {"tp": 1},
               {"distribution": "zipf", "zipf_s": 1.0, "seed": 3})
    imb = row["expert_imbalance"]
    assert imb > 1.5
    T = 72
    router, routed, shared = 2 * T * 7168 * 256, 2 * T * 8 * 3 * 7168 * 2048, 2 * T * 3 * 7168 * 2048
    peak = 72 * 2.5e15 * 0.4   # matmul_efficiency: the fitted SGLang stack's dense-GEMM share (tests/test_calibrated_gpu.py)
    assert row["moe_compute_s"] == pytest.approx((router + routed * imb + shared) / peak, rel=REL)
    assert row["moe_compute_s"] < (router + (routed + shared) * imb) / peak   # the old charge was higher


# ------------------------------------------------------------------ formats and their peaks

def test_fp8_experts_halve_their_bytes_and_run_at_the_fp8_peak():
    """NVL72 (dense FP8 peak 5 PFLOP/s = 2 × BF16, GB200), DeepSeek-V3 decode, B = 200 per group of TP 8.

    Routed expert FLOPs halve their time (same FLOPs at twice the peak); the expert bytes each GPU reads halve
    (1 byte per weight); shared experts, router and attention stay bf16 (2 bytes, 2.5 PFLOP/s). Expert e lives on
    GPU e mod 72, so 40 GPUs host 4 of 256 experts and 32 host 3, against a mean of 256/72 (expected shares:
    4·72/256 = 1.125). The step waits for the GPU with the most of its 1,800 tokens' copies: each (token, hosted
    expert) pair hits with probability 8/256, so a GPU's copies are Binomial(1800·4, 1/32) or Binomial(1800·3, 1/32),
    and E[max] = Σ_x (1 − F₄(x)^40 F₃(x)^32) = 257.5 against the mean 1800·8/72 = 200: imbalance 1.2875, on the
    routed FLOPs only."""
    wl = {"mode": "decode", "seq_len": 2048, "B": 200}
    bf, f8 = (_one("nvl72", "deepseek-v3", {**wl, "expert_weight_format": f}, {"tp": 8}) for f in ("bf16", "fp8"))
    T = 9 * 200
    router, routed, shared = 2 * T * 7168 * 256, 2 * T * 8 * 3 * 7168 * 2048, 2 * T * 3 * 7168 * 2048

    def cdf(n, q=1 / 32):   # binomial CDF over x = 0…T·4, from log-pmfs (the coefficients overflow a float)
        x = np.arange(T * 4 + 1)
        logs = [math.lgamma(n + 1) - math.lgamma(v + 1) - math.lgamma(n - v + 1) + v * math.log(q)
                + (n - v) * math.log1p(-q) if v <= n else -np.inf for v in x]
        return np.minimum(np.cumsum(np.exp(logs)), 1.0)

    imb = float((1.0 - cdf(T * 4) ** 40 * cdf(T * 3) ** 32).sum()) / (T * 8 / 72)
    assert imb == pytest.approx(1.2875, abs=1e-4)
    n_eff = 72 * 0.4   # 72 GPUs at the calibrated matmul_efficiency 0.4
    assert f8["expert_imbalance"] == pytest.approx(imb, rel=1e-6)
    assert f8["moe_compute_s"] == pytest.approx(
        (router / 2.5e15 + routed * imb / 5e15 + shared / 2.5e15) / n_eff, rel=1e-6)
    assert bf["moe_compute_s"] == pytest.approx((router + routed * imb + shared) / 2.5e15 / n_eff, rel=1e-6)
    assert f8["expert_peak_flops"] == 5e15 and f8["attention_peak_flops"] == 2.5e15
    # resident expert weights: 58 MoE layers × 4 hosted experts (256 over 72 GPUs) × 3·7168·2048 × (2 − 1) bytes
    assert bf["mem_weights_node_bytes"] - f8["mem_weights_node_bytes"] == pytest.approx(58 * 4 * 3 * 7168 * 2048)


def test_a_format_without_a_peak_runs_at_the_16_bit_peak_and_kv_format_sets_cache_bytes():
    """CS-2 has no FP8/FP4 peak: fp4 experts stream a quarter of the bytes but compute at the FP16 peak.
    kv_format fp8 stores one byte per latent value: half the bf16 cache."""
    wl = {"mode": "decode", "seq_len": 4096, "B": 2, "attn_kernel": "flash"}
    bf = _one("cs2", "qwen3-30b-a3b", wl)
    f4 = _one("cs2", "qwen3-30b-a3b", {**wl, "expert_weight_format": "fp4", "kv_format": "fp8"})
    assert f4["moe_compute_s"] == pytest.approx(bf["moe_compute_s"], rel=REL)
    assert f4["expert_peak_flops"] == bf["expert_peak_flops"] == load_hardware("cs2").node_peak_flops
    # MoE weights stream once per pass: 48 layers... per layer E·3HF experts (bytes ÷ 4) plus router (16-bit)
    m = load_model("qwen3-30b-a3b")
    experts, router = 128 * 3 * 2048 * 768, 2048 * 128
    io = load_hardware("cs2").io_in_bw_bytes_per_s
    assert f4["moe_weights_s"] == pytest.approx((experts * 0.5 + router * 2) / io, rel=REL)
    assert bf["moe_weights_s"] == pytest.approx((experts * 2 + router * 2) / io, rel=REL)
    # GQA cache: 2 × 4 KV heads × 128 × bytes per value, per token and layer
    assert f4["mem_kv_node_bytes"] * 2 == pytest.approx(bf["mem_kv_node_bytes"], rel=REL)
    assert bf["mem_kv_node_bytes"] == pytest.approx(2 * 4096 * m.num_hidden_layers * 2 * 4 * 128 * 2 / 84, rel=REL)


def test_bytes_per_weight_says_what_replaced_it(runner, tmp_path):
    from wsemoe.cli import app

    path = tmp_path / "old.yaml"
    path.write_text("name: old\nhardware: nvl72\nmodel: deepseek-v3\nworkload: {mode: decode, bytes_per_weight: 1}\n")
    r = runner.invoke(app, ["check", str(path)])
    assert r.exit_code != 0 and "Traceback" not in r.output
    assert "attn_weight_format" in r.output and "expert_weight_format" in r.output and "workload" in r.output


# ------------------------------------------------------------------ fixed latencies

def test_kernel_launches_per_stage():
    """NVL72 kernel_launch_s = 1 µs. MLA attention launches 8 kernels per tile (G = 3 tiles: 24 µs), the MoE block
    4, a dense FFN 2, the head 2; Qwen3's GQA attention 4. Training launches 3× (forward, data and weight
    gradients), 4× with full recompute."""
    row = _one("nvl72", "deepseek-v3", {"mode": "decode", "seq_len": 1024, "B": 2, "G": 3}, {"tp": 8})
    assert (row["attention_launch_s"], row["moe_launch_s"], row["dense_ffn_launch_s"], row["head_launch_s"]) == \
        pytest.approx((24e-6, 4e-6, 2e-6, 2e-6), rel=REL)
    gqa = _one("nvl72", "qwen3-30b-a3b", {"mode": "train", "seq_len": 512, "B": 1, "recompute": "full"}, {"tp": 8})
    assert gqa["attention_launch_s"] == pytest.approx(4 * 4 * 1e-6, rel=REL)
    assert gqa["moe_launch_s"] == pytest.approx(4 * 4 * 1e-6, rel=REL)
    cs2 = _one("cs2", "qwen3-30b-a3b", {"mode": "train", "seq_len": 512, "B": 1})
    assert cs2["attention_launch_s"] == 0.0   # a dataflow wafer launches no kernels from a host


def test_collective_software_latency_on_the_switch():
    """NVL72, DeepSeek-V3 decode, TP 1, 1 token per GPU (72 groups of one): one token's 8 copies are a unit of
    8 × 7168 × 2 = 114,688 bytes; expert e lives on GPU e mod 72, so GPUs 0–39 host 4 experts, the rest 3.

    A 4-expert GPU receives 4/256 of every other GPU's unit: 71 × 1792 = 127,232 bytes, more than any GPU sends
    (at most 253/256 × 114,688 = 113,344) in expectation. A step's 72 tokens route at random: a 4-expert GPU's port
    takes the other 71 tokens' copies, Binomial(71·4, 1/32), a 3-expert GPU's Binomial(71·3, 1/32), and the busiest
    port receives E[max] = Σ_x (1 − F₄(x)^40 F₃(x)^32) = 15.83 copies where the expected shares give 71·4/32 = 8.875:
    it takes 15.83/8.875 = 1.78× the 127,232 bytes (fabric/spread.py: the port's own maximum; its own token's copy
    stays local). Dispatch = that / 900 GB/s + one switch traversal (0.5 µs) + alltoall_latency_s (26 µs). TP 1 has
    no all-reduce: no collective call, no latency.
    """
    row = _one("nvl72", "deepseek-v3", {"mode": "decode", "seq_len": 1024, "tokens_per_device": 1}, {"tp": 1})
    assert row["dispatch_fixed_s"] == row["combine_fixed_s"] == 26e-6
    assert row["allreduce_fixed_s"] == 0.0 and row["attention_allreduce_s"] == 0.0
    x = np.arange(72 * 4 + 1)
    f4, f3 = (np.minimum(np.cumsum([math.comb(n, v) * (1 / 32) ** v * (31 / 32) ** (n - v) if v <= n else 0.0
                                    for v in x]), 1.0) for n in (71 * 4, 71 * 3))
    busiest = float((1.0 - f4 ** 40 * f3 ** 32).sum())
    assert busiest == pytest.approx(15.83, abs=0.01)
    assert row["moe_dispatch_s"] == pytest.approx(127_232 * busiest / 8.875 / 9.0e11 + 0.5e-6 + 26e-6, rel=1e-6)


def test_allreduce_pays_one_collective_latency_per_tile():
    """NVL72 with in-switch reduction, TP 8, G = 2 tiles of B = 4 decode tokens: each tile's all-reduce sends its
    4 × 7168 × 2 = 57,344-byte message up once and reads the sum once (57,344 / 900 GB/s), crosses the switch
    twice (2 × 0.5 µs) and costs one call (4.5 µs): 2 × (63.7 ns + 1 µs + 4.5 µs)."""
    row = _one("nvl72", "deepseek-v3", {"mode": "decode", "seq_len": 1024, "B": 4, "G": 2}, {"tp": 8})
    msg = 4 * 7168 * 2
    assert row["attention_allreduce_s"] == pytest.approx(2 * (msg / 9.0e11 + 2 * 0.5e-6 + 4.5e-6), rel=REL)
    assert row["allreduce_fixed_s"] == pytest.approx(2 * 4.5e-6, rel=REL)


def test_a_tensor_parallel_dense_ffn_all_reduces_its_partial_sums():
    """Llama-3.1-70B decode on H100 TP 8 (in-switch reduction), B = 32: the dense FFN's weights are split over the
    8 GPUs (W_d / tp each), so each leaves a partial sum of every token's output and the layer needs a second
    all-reduce, after the FFN, of all 32 tokens: 32 × 8192 × 2 = 524,288 bytes / 450 GB/s + 2 switch traversals
    (2 × 0.5 µs) + one call (4.5 µs) = 6.665 µs, as the attention's. The dense layer pays both."""
    row = _one("h100-sxm", "llama-3.1-70b", {"mode": "decode", "seq_len": 4096, "B": 32}, {"tp": 8})
    one = 32 * 8192 * 2 / 4.5e11 + 2 * 0.5e-6 + 4.5e-6
    assert row["attention_allreduce_s"] == pytest.approx(one, rel=REL)
    assert row["dense_ffn_allreduce_s"] == pytest.approx(one, rel=REL)
    core = max(row["attention_compute_s"] + row["dense_ffn_compute_s"],
               row["attention_hbm_s"] + row["dense_ffn_hbm_s"])
    launches = row["attention_launch_s"] + row["dense_ffn_launch_s"]
    assert row["dense_layer_time_s"] == pytest.approx(core + launches + 2 * one, rel=REL)


def test_the_dense_ffn_all_reduces_all_tiles_at_once_and_not_at_tp_1():
    """G = 2 tiles of B = 4 on the 8×8 mesh, TP 4: attention all-reduces each tile (2 calls of one tile's
    message), the FFN runs once on both tiles and all-reduces them in one call of twice the message; at TP 1 nothing
    is split and nothing is reduced."""
    tiled = _one("wsc-b200-8x8", "qwen3-32b", {"mode": "decode", "seq_len": 1024, "B": 4, "G": 2}, {"tp": 4})
    whole = _one("wsc-b200-8x8", "qwen3-32b", {"mode": "decode", "seq_len": 1024, "B": 8, "G": 1}, {"tp": 4})
    assert tiled["dense_ffn_allreduce_s"] == pytest.approx(whole["attention_allreduce_s"], rel=REL)
    assert tiled["dense_ffn_allreduce_s"] < tiled["attention_allreduce_s"]   # one call's latency, not two
    alone = _one("wsc-b200-8x8", "qwen3-32b", {"mode": "decode", "seq_len": 1024, "B": 8}, {"tp": 1})
    assert alone["dense_ffn_allreduce_s"] == 0.0


def test_alltoall_latency_defaults_to_the_collective_latency():
    """A hardware that sets only collective_latency_s charges it on dispatch and combine too."""
    hw = {"preset": "nvl72", "alltoall_latency_s": None, "collective_latency_s": 7.0e-6}
    row = _one(hw, "deepseek-v3", {"mode": "decode", "seq_len": 1024, "tokens_per_device": 2}, {"tp": 1})
    assert row["dispatch_fixed_s"] == row["combine_fixed_s"] == 7.0e-6


# ------------------------------------------------------------------ the GPU baseline at both ends of decode

def test_gpu_baseline_is_sensible_at_both_ends_of_decode():
    """NVL72, DeepSeek-V3 decode at context 4096, best TP, presets as shipped, against published serving numbers.

    1 token per GPU: TensorRT-LLM (tech blog 1) runs DeepSeek-R1 on 8 × B200 at batch 1 without MTP at 111 tokens/s
    per user, 9.0 ms per step; the model's best step must lie within 2× of it (4.5–18 ms). Before per-kernel and
    per-collective latencies it took 3.26 ms: 2.8× too fast.
    256 tokens per GPU with FP8 experts: SGLang on GB200 NVL72 (LMSYS, Part II) decodes 9,087 tokens/s per GPU with
    BF16 attention and FP8 MoE (2,000-token inputs); the model must lie within 2× of it.
    """
    cfg = {"name": "sanity", "hardware": "nvl72", "model": "deepseek-v3", "workload": {"mode": "decode", "seq_len": 4096},
           "axes": {"workload.tokens_per_device": [1, 256], "mapping.tp": [1, 2, 4, 8],
                    "workload.expert_weight_format": ["bf16", "fp8"]}}
    df = wsemoe.evaluate(cfg)
    df = df[df["feasible"]]
    best = df.groupby(["workload.tokens_per_device", "workload.expert_weight_format"])["tokens_per_s"].max() / 72
    one = 1.0 / best.loc[(1, "bf16")]                       # one token per GPU: step = 1 / (tokens/s per GPU)
    # the value docs/sources.md quotes: 7.47 ms before the busiest GPU's expert reads (weights.busiest_hits), 7.73 ms
    # before each GPU of TP 8's nine groups held and read the whole shared expert and router (58 layers × 91,750,912
    # × 7/8 B at 8 TB/s: +0.58 ms)
    assert one == pytest.approx(8.31e-3, rel=0.01)
    assert 9.0e-3 / 2 <= one <= 9.0e-3 * 2
    fp8 = best.loc[(256, "fp8")]
    # GB200 peaks; 6,569 and 5,580 before the routed experts waited for the busiest GPU of a step's routing
    assert fp8 == pytest.approx(6501, rel=0.01) and best.loc[(256, "bf16")] == pytest.approx(5495, rel=0.01)
    assert 9087 / 2 <= fp8 <= 9087 * 2


def test_one_group_on_a_switch_reduces_instead_of_all_to_all():
    """NVL72, DeepSeek-V3 decode, TP 72 (one attention group, no attention DP), B 8: every GPU holds all 8 tokens
    after the all-reduce, so its own experts take them; no dispatch or combine runs (vLLM and SGLang run TP with EP
    this way). The partial expert outputs are summed by one in-switch all-reduce of the 8 × 7168 × 2 = 114,688-byte
    message: sent up once and read once (114,688 / 900 GB/s), two switch traversals (2 × 0.5 µs) and one call
    (4.5 µs). At TP 8 (9 groups) the tokens are sliced and the all-to-all runs (26 µs a call)."""
    one = _one("nvl72", "deepseek-v3", {"mode": "decode", "seq_len": 1024, "B": 8}, {"tp": 72})
    assert one["token_flow"] == "replicated"
    assert one["moe_dispatch_s"] == one["moe_combine_s"] == one["dispatch_fixed_s"] == 0.0
    msg = 8 * 7168 * 2
    assert one["moe_reduce_s"] == pytest.approx(msg / 9.0e11 + 2 * 0.5e-6 + 4.5e-6, rel=REL)
    assert one["moe_reduce_s"] == pytest.approx(one["attention_allreduce_s"], rel=REL)   # the same message
    many = _one("nvl72", "deepseek-v3", {"mode": "decode", "seq_len": 1024, "B": 8}, {"tp": 8})
    assert many["token_flow"] == "slice" and many["moe_reduce_s"] == 0.0 and many["dispatch_fixed_s"] == 26e-6
    sliced = _one("nvl72", "deepseek-v3", {"mode": "decode", "seq_len": 1024, "B": 8},
                  {"tp": 72, "token_source": "slice"})   # asked for: the all-to-all of the slices
    assert sliced["token_flow"] == "slice" and sliced["dispatch_fixed_s"] == 26e-6
