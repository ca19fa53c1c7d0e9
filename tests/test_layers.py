"""Per-layer models (specs/layers.py, cost/node/mix.py): hand-derived FLOPs, KV bytes and parameters of each
attention kind, the pattern compiled once into classes, a pattern of one repeated layer equal to the uniform model
in every output column, the wafer stages following the real layer sequence, and every invariant holding on a
patterned model. Released models' configs read into patterns: tests/test_layers_hf.py."""

from __future__ import annotations

from types import SimpleNamespace as NS

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import wsemoe
from wsemoe.cost.node import compute, memory, mix, params
from wsemoe.cost.wafer import regions
from wsemoe.errors import ConfigError
from wsemoe.specs import ModelSpec, WorkloadSpec

# H 64, 4 query heads and 2 KV heads of 16, 4 experts (top-2) of width 32, 4 layers, vocabulary 100.
BASE = dict(hidden_size=64, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
            moe_intermediate_size=32, num_experts=4, num_experts_per_tok=2, vocab_size=100)
SHAPES = {"sliding_window": 128, "attention_chunk_size": 256,
          "sparse": {"index_topk": 64, "index_n_heads": 2, "index_head_dim": 8},
          "linear": {"num_key_heads": 2, "key_head_dim": 8, "num_value_heads": 4, "value_head_dim": 8, "conv_kernel": 4}}


def model(attention, **changes):
    return ModelSpec(**{**BASE, "layers": {"attention": attention, **SHAPES}, **changes})


def wl(mode="decode", S=1000, B=1):
    return WorkloadSpec(mode=mode, seq_len=S, B=B)


# ------------------------------------------------------------------ FLOPs of the attention core, per kind

# A softmax pair over all heads: 2·n_h·(d_qk + d_v) = 2·4·(16 + 16) = 256 FLOP.
@pytest.mark.parametrize("kind, per_query", [
    ("full", 256 * 1000),                          # every one of S = 1000 keys
    ("sliding", 256 * 128),                        # the last W = 128
    ("chunked", 256 * 256),                        # its own chunk of C = 256
    ("sparse", 256 * 64 + 2 * 2 * 8 * 1000),       # top-k 64 keys + the indexer 2·n_idx·d_idx over all 1000
    ("linear", 6 * 4 * 8 * 8),                     # state read, update, read: 6·n_v·d_k·d_v, no keys
])
def test_core_flops_per_kind_by_hand(kind, per_query):
    m = model([kind])
    assert compute.attn_core_flops(m, wl("decode", B=3)) == per_query * 3            # one query per sequence
    assert compute.attn_core_flops(m, wl("prefill", S=1000, B=2)) == per_query * 2 * 1000   # S queries each


def test_a_window_longer_than_the_context_reads_the_context():
    """W = 128 at S = 100: 100 keys, as a full layer."""
    assert compute.attn_core_flops(model(["sliding"]), wl(S=100)) == compute.attn_core_flops(model(["full"]), wl(S=100))


def test_mixed_layers_cost_their_mean():
    """[sliding, full] over 4 layers: (2·128 + 2·1000)·256 / 4 per layer, so L × that is the model's sum."""
    m = model(["sliding", "full"])
    assert compute.attn_core_flops(m, wl()) == pytest.approx((2 * 128 + 2 * 1000) * 256 / 4, rel=1e-15)


# ------------------------------------------------------------------ KV cache per kind

# A full layer: 2 (K, V) · 2 heads · 16 · 2 bytes = 128 B per token.
@pytest.mark.parametrize("kind, per_sequence", [
    ("full", 128 * 1000),
    ("sliding", 128 * 128),                       # holds W tokens
    ("chunked", 128 * 256),                       # holds its chunk
    ("sparse", (128 + 8 + 4) * 1000),             # every token, plus the indexer's 8-wide FP8 key and its FP32 scale
    # state 4·8·8 = 256 plus the convolution's 3 last inputs of q, k, v (2·2·8 + 4·8 = 64 wide): 448 × 2 B
    ("linear", (256 + 3 * 64) * 2),
])
def test_kv_bytes_per_kind_by_hand(kind, per_sequence):
    w = wl(S=1000)
    assert memory.kv_bytes_per_token_layer(model([kind]), w) * 1000 == pytest.approx(per_sequence, rel=1e-12)


@pytest.mark.parametrize("kv_format", ["bf16", "fp8", "fp4"])
def test_a_linear_layers_state_and_convolution_inputs_are_16_bit_whatever_the_kv_format(kv_format):
    """An FP8 (or FP4) KV cache quantizes the softmax layers' keys and values only: vLLM keeps a Gated DeltaNet's
    convolution inputs and state in mamba_cache_dtype ("auto": the model's 16 bits), SGLang its convolution inputs
    in bfloat16. (256 + 3·64) values × 2 B = 896 B a sequence at every kv_format (448 B at fp8 before); a stated
    fp32 state: 256·4 + 192·2 = 1,408 B."""
    w = WorkloadSpec(mode="decode", seq_len=1000, kv_format=kv_format)
    assert memory.kv_bytes_per_token_layer(model(["linear"]), w) * 1000 == pytest.approx(896, rel=1e-12)
    fp32 = model(["linear"], layers={**SHAPES, "attention": ["linear"],
                                     "linear": {**SHAPES["linear"], "state_format": "fp32"}})
    assert memory.kv_bytes_per_token_layer(fp32, w) * 1000 == pytest.approx(1408, rel=1e-12)


@pytest.mark.parametrize("kv_format, latent_bytes", [("bf16", 2), ("fp8", 1)])
def test_indexer_keys_are_fp8_whatever_the_kv_format(kv_format, latent_bytes):
    """GLM-5 (and DeepSeek-V3.2): a sparse layer caches MLA's 512 + 64 latent in `kv_format` and the indexer's
    128-wide key in FP8 with one FP32 scale per 128 values, 132 bytes (DeepSeek V3.2-Exp inference/model.py:
    k_cache float8_e4m3fn, k_scale_cache float32); 78 layers: 100,152 bytes per token at bf16 (not 109,824 as a
    16-bit indexer key), 55,224 at fp8."""
    from wsemoe.config.hf import model_from_hf_config
    m = model_from_hf_config("tests/data/hf/glm-5.json")
    w = WorkloadSpec(mode="decode", seq_len=4096, kv_format=kv_format)
    per_layer = memory.kv_bytes_per_token_layer(m, w)
    assert per_layer == (512 + 64) * latent_bytes + 128 + 4
    assert per_layer * 78 == {"bf16": 100_152, "fp8": 55_224}[kv_format]


def test_kv_node_is_the_sum_over_layers():
    """[linear, linear, linear, full]: 3·896 + 128,000 bytes per sequence over the model's 4 layers."""
    row = wsemoe.evaluate({"name": "p", "hardware": "wsc-b200-8x8", "workload": {"mode": "decode", "seq_len": 1000,
                           "B": 2}, "model": {**BASE, "layers": {"attention": ["linear"] * 3 + ["full"], **SHAPES}},
                           "mapping": {"tp": 64}}).iloc[0]
    # one TP group of all 64 dies: each holds ⌈2/64⌉ = 1 KV head of the full layer (as the uniform model) and
    # ⌈4/64⌉ = 1 of the 4 value heads' states: 3·896/4 + 1000·(2·1·16·2) = 672 + 64,000 per sequence
    assert row["mem_kv_node_bytes"] == pytest.approx(2 * (3 * 896 / 4 + 64_000), rel=1e-12)


def test_training_scores_per_kind_by_hand():
    """Materialized scores (2·n_h·keys·bytes/2 per token: the softmax output, no attention dropout; 5 was the count
    with dropout): the widest layer sets the transient, with its backward's dP beside the scores in training (2 more
    bytes a score), the mean over the layers what they keep with recompute none (the scores alone).
    [sliding W = 128, full] at S = 1000: keep (128 + 1000)/2 keys."""
    w = WorkloadSpec(mode="train", seq_len=1000, attn_kernel="materialized", recompute="none")
    m = model(["sliding", "full"])
    assert memory.attn_score_bytes_per_token(m, w) == 4.0 * 4 * 1000
    assert memory.attn_score_bytes_per_token(m, w, widest=False) == 2.0 * 4 * (128 + 1000) / 2
    assert memory.attn_score_bytes_per_token(model(["sliding"]), w) == 4.0 * 4 * 128


# ------------------------------------------------------------------ parameters

def test_parameters_by_hand():
    m = model(["linear", "full"], qk_norm=True)
    lin = 64 * (2 * 16 + 2 * 32) + 64 * 2 * 4 + 32 * 64             # qkvz, b/a, out: 6144 + 512 + 2048
    lin_small = (2 * 16 + 32) * 4 + 2 * 4 + 8                       # conv 64·4, A_log and dt_bias, gated norm
    full = 64 * (4 + 4) * 16 + 4 * 16 * 64                          # q, k, v; o
    assert mix.linear_params(m, m.layers.model_dump()) == (lin, lin_small)
    assert params.attn_params(m) * 4 == 2 * lin + 2 * full
    assert params.attn_extra_params(m) * 4 == 2 * lin_small + 2 * (2 * 16)   # q/k norms on the full layers
    gated = model(["full"], layers={"attention": ["full"], "output_gate": True, "sinks": True, "o_bias": True})
    assert params.attn_params(gated) == full + 64 * 4 * 16                   # the gate doubles q's output
    assert params.attn_extra_params(gated) == 4 + 64                         # a sink per head, the output bias


def test_indexer_parameters_by_hand():
    """DeepSeek-V3.2's indexer: q from the 1536-wide query latent to 64 heads × 128, one 128-wide key from H,
    64 head weights from H, the key LayerNorm (2·128)."""
    from wsemoe.config.hf import model_from_hf_config
    m = model_from_hf_config("tests/data/hf/deepseek-v3.2.json")
    v3 = model_from_hf_config("tests/data/hf/deepseek-v3.json")
    extra = 1536 * 64 * 128 + 7168 * 128 + 7168 * 64 + 2 * 128
    assert params.total_params(m) - params.total_params(v3) == 61 * extra


# ------------------------------------------------------------------ the pattern compiles once, in order

def test_pattern_compiles_to_classes_and_sequence():
    m = ModelSpec(**{**BASE, "num_hidden_layers": 8, "intermediate_size": 48,
                     "layers": {"ffn": {"every": 2, "offset": 1}, "attention": ["chunked", "chunked", "chunked", "full"],
                                "overrides": [{"layer": 0, "attention": "full"}], "attention_chunk_size": 64}})
    mx = mix.mix(m)
    assert [f for f, _ in mx.sequence] == ["dense", "moe"] * 4
    assert [a for _, a in mx.sequence] == ["full", "chunked", "chunked", "full"] + ["chunked"] * 3 + ["full"]
    assert mx.counts == {("dense", "full"): 1, ("moe", "chunked"): 2, ("dense", "chunked"): 3, ("moe", "full"): 2}
    assert (mx.moe, mx.dense) == (4, 4)
    assert mix.mix(ModelSpec(**m.model_dump())) is mx   # compiled once per unique model
    assert mix.describe(m) == "8 layers: 4 dense + 4 MoE; 3 full + 5 chunked"


def test_stages_follow_the_layer_sequence():
    """Dense/MoE alternating over 4 stages: every stage holds a MoE layer beside a dense one; as a leading dense
    prefix the dense layers share the first stages and the MoE layers the last."""
    m = ModelSpec(**{**BASE, "num_hidden_layers": 8, "intermediate_size": 48,
                     "layers": {"ffn": {"every": 2, "offset": 1}}})
    nb = regions.region_bytes(m, WorkloadSpec(mode="decode", B=1, seq_len=64), 1.0)
    dense, moe = regions.stage_layers(m, 4, nb)
    assert dense.sum() == 4 and moe.sum() == 4 and np.any((dense > 0) & (moe > 0))
    prefix = ModelSpec(**{**BASE, "num_hidden_layers": 8, "intermediate_size": 48, "first_k_dense_replace": 4})
    dense, moe = regions.stage_layers(prefix, 4, nb)
    first_moe = int(np.argmax(moe > 0))
    assert dense[first_moe + 1:].sum() == 0 and moe[:first_moe].sum() == 0


@pytest.mark.parametrize("layers, message", [
    ({"attention": ["sliding"]}, "layers.sliding_window"),
    ({"attention": ["full", "full", "sliding"], "sliding_window": 4}, "layers.attention has 3 entries"),
    ({"overrides": [{"layer": 9, "attention": "full"}]}, "past the last layer"),
    ({"ffn": {"every": 2, "offset": 2}}, "offset"),
    ({"attention": ["mamba"]}, "layers -> attention"),
])
def test_bad_patterns_are_one_line_errors(layers, message):
    with pytest.raises(ConfigError) as err:
        wsemoe.evaluate({"name": "p", "hardware": "cs2", "workload": {"mode": "decode"},
                         "model": {**BASE, "intermediate_size": 8, "layers": layers}})
    assert message in str(err.value) and "\n" not in str(err.value)


# ------------------------------------------------------------------ a pattern repeating one layer is the uniform model

def _rows(model_fields, hardware, workload, mapping=None):
    cfg = {"name": "p", "hardware": hardware, "model": model_fields, "workload": workload}
    if mapping:
        cfg["mapping"] = mapping
    return wsemoe.evaluate(cfg)


def _same(a, b):
    """Every column bit for bit (labels, NaNs and all), the model's name and source aside."""
    pd.testing.assert_frame_equal(a, b, check_exact=True)


@settings(max_examples=12)
@given(kv=st.sampled_from([1, 2, 4]), dense=st.integers(0, 3), layers=st.integers(4, 8),
       experts=st.sampled_from([4, 8, 16]), k=st.integers(1, 4), mode=st.sampled_from(["decode", "prefill", "train"]),
       source=st.sampled_from(["resident", "streamed"]), seq=st.sampled_from([64, 1000]))
def test_one_repeated_layer_equals_the_uniform_model(kv, dense, layers, experts, k, mode, source, seq):
    """Node level: the same model with `layers:` stating its uniform shape gives every column bit for bit."""
    fields = {**BASE, "num_key_value_heads": kv, "num_hidden_layers": layers, "num_experts": experts,
              "num_experts_per_tok": min(k, experts), "first_k_dense_replace": dense, "intermediate_size": 96}
    hw = {"preset": "wsc-b200-8x8", "weight_source": source} if source == "resident" else "cs2"
    wk = {"mode": mode, "seq_len": seq, "B": 2}
    uniform = _rows(fields, hw, wk)
    _same(uniform, _rows({**fields, "layers": {"attention": ["full"]}}, hw, wk))
    _same(uniform, _rows({**fields, "layers": {"ffn": ["moe"]}}, hw, wk))


def test_one_repeated_layer_equals_the_uniform_model_at_pe_level():
    fields = {**BASE, "num_hidden_layers": 6, "first_k_dense_replace": 2, "intermediate_size": 96}
    hw = {"preset": "cs3", "weight_source": "sram"}
    wk = {"mode": "decode", "seq_len": 512, "B": 4}
    _same(_rows(fields, hw, wk), _rows({**fields, "layers": {"attention": ["full"], "ffn": ["moe"]}}, hw, wk))


def test_perturbing_the_pattern_moves_the_columns():
    """The property above can fail: a sliding window shorter than the context changes the attention columns."""
    fields = {**BASE, "num_hidden_layers": 4}
    wk = {"mode": "decode", "seq_len": 1000, "B": 2}
    a = _rows(fields, "cs2", wk)
    b = _rows({**fields, "layers": {"attention": ["sliding", "full"], "sliding_window": 128}}, "cs2", wk)
    assert b["attn_core_flops"].iloc[0] < a["attn_core_flops"].iloc[0]


def test_a_swept_layer_count_is_refused_on_a_pattern():
    m = NS(**{**model(["full"]).model_dump(), "num_hidden_layers": np.array([4.0, 8.0])})
    with pytest.raises(ValueError, match="num_hidden_layers"):
        mix.mix(m)


# ------------------------------------------------------------------ multi-token prediction, counted apart

def test_mtp_layers_are_counted_apart_by_hand():
    """DeepSeek-V3.2's one MTP layer: eh_proj 2·7168², three norms, one MLA block with its norms and a MoE FFN of
    256 experts + 1 shared + router with bias; outside the total (published 671B excludes it)."""
    from wsemoe.config.hf import model_from_hf_config
    m = model_from_hf_config("tests/data/hf/deepseek-v3.2.json")
    v3 = model_from_hf_config("tests/data/hf/deepseek-v3.json")
    assert m.num_nextn_predict_layers == 1 and v3.num_nextn_predict_layers == 1   # both configs state one
    H = 7168
    attn = params.softmax_attn_params(m) + params.softmax_attn_extra(m) + 2 * H
    ffn = 256 * 3 * H * 2048 + 3 * H * 2048 + H * 256 + 256
    assert params.mtp_params(m) == 2 * H * H + 3 * H + attn + ffn
    active = 2 * H * H + 3 * H + attn + 8 * 3 * H * 2048 + 3 * H * 2048 + H * 256 + 256
    assert params.mtp_flops_per_token(m) == 2.0 * (active + 129280 * H)
    # DeepSeek-V3's MTP layer (config.json num_nextn_predict_layers 1) counts as V3.2's: 2H² + 3H + attention
    # 187,121,664 with its norms + FFN 11,276,536,064 (mtp_params prices the MTP block's attention as full)
    assert params.mtp_params(v3) == params.mtp_params(m) == 11_610_068_224
    kimi = model_from_hf_config("tests/data/hf/kimi-k2-instruct.json")
    assert kimi.num_nextn_predict_layers == 0 and params.mtp_params(kimi) == 0


# ------------------------------------------------------------------ PE level: each layer's window

def test_pe_context_per_ffn_kind_by_hand():
    """Llama 4 Maverick: dense layers (even) are all chunked, MoE layers (odd) half chunked, half full (NoPE every
    fourth): at S = 20,000, dense layers score min(8192, S) keys, MoE layers (8192 + 20,000) / 2."""
    from wsemoe.config.hf import model_from_hf_config
    m = model_from_hf_config("tests/data/hf/llama-4-maverick-17b-128e-instruct.json")
    assert mix.context_of(m, "dense", 20_000.0) == 8192
    assert mix.context_of(m, "moe", 20_000.0) == (8192 + 20_000) / 2
    assert mix.context_of(m, "moe", 4096.0) == 4096          # shorter than a chunk: every layer sees the context
    uniform = model_from_hf_config("tests/data/hf/deepseek-v3.json")
    assert mix.context_of(uniform, "moe", 20_000.0) == 20_000


def test_pe_score_follows_the_window():
    """At PE level a sliding layer's score and value ops run over its W keys, not the context."""
    fields = {**BASE, "num_hidden_layers": 4}
    wk = {"mode": "decode", "seq_len": 4096, "B": 4}
    hw = {"preset": "cs3", "weight_source": "sram"}
    full = _rows(fields, hw, wk).iloc[0]
    window = _rows({**fields, "layers": {"attention": ["sliding"], "sliding_window": 128}}, hw, wk).iloc[0]
    short = _rows(fields, hw, {**wk, "seq_len": 128}).iloc[0]
    core = lambda r: r["moe_op_score_s"] + r["moe_op_softmax_s"] + r["moe_op_pv_s"]  # noqa: E731  (either KV layout)
    assert core(window) < core(full)
    assert window["moe_op_score_s"] == short["moe_op_score_s"]   # W keys of a long context = a W-token context


# ------------------------------------------------------------------ the invariants hold on a patterned model

@pytest.mark.parametrize("hardware, mode", [("cs2", "decode"), ({"preset": "cs3", "weight_source": "sram"}, "decode"),
                                            ({"preset": "wsc-b200-8x8", "weight_source": "resident"}, "prefill")])
def test_invariants_hold_on_a_patterned_model(tmp_path, hardware, mode):
    """Every law (step = Σ count × layer with the pattern's MoE and dense counts, SRAM latency = Σ layers …)."""
    import yaml
    cfg = {"name": "patterned", "hardware": hardware, "workload": {"mode": mode, "seq_len": 512},
           "model": {**BASE, "num_hidden_layers": 8, "intermediate_size": 96,
                     "layers": {"ffn": {"every": 2, "offset": 1}, "attention": ["sliding", "full"],
                                "sliding_window": 64}},
           "axes": {"workload.B": [1, 4]}}
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(cfg))
    report = wsemoe.check_invariants([path], points=4)
    assert report.ok, [(r.invariant.name, r.status, r.error) for r in report.results if r.status in ("fail", "error")]
    assert {r.invariant.name: r.status for r in report.results}["step_time_adds_up" if hardware == "cs2"
                                                           or mode == "prefill" else "serving_time_adds_up"] == "pass"
