"""Attention kinds at PE level (cost/wafer/attnkinds.py): a Gated DeltaNet layer's operators and a sparse layer's
indexer, hand-derived on a tiny region; the mean layer of a pattern is the count-weighted mean of its kinds'
layers (so the pipeline's sum over layers is exact); a uniform model keeps its attention as before."""

from __future__ import annotations

from types import SimpleNamespace as NS

import numpy as np
import pytest

from wsemoe.config import presets
from wsemoe.config.hf import model_from_hf_config
from wsemoe.cost.wafer import attnkinds, layer

COLL = {"pattern": "tree", "levels": 2}
LINEAR = {"num_key_heads": 1, "key_head_dim": 4, "num_value_heads": 2, "value_head_dim": 4, "conv_kernel": 4}


def simd_pe(**changes):
    """CS-3's PE facts at the SIMD rate (no SRAM bound) so cycles count by hand: 8 16-bit MACs per cycle."""
    pe = NS(**{**presets.load_hardware("cs3").pe.model_dump(), "mac_memory_operands": 0, **changes})
    pe.kernels = "per_primitive"
    return pe


def test_the_delta_rule_state_by_hand():
    # d_k 4 on 2 rows, n_v·d_v = 8 on 2 columns: each PE holds a 2 × 4 block of the state. The reads by the key
    # and by the query are GEMVs of that block: 2 rows × ⌈4/8⌉ = 2 cycles each; the rank-one update 8 elements ×
    # 2 operations / 8 lanes = 2 cycles: 6 cycles of MACs for one token. With 3 tokens the update is 3 × 2 and
    # each read's MACs are paced by its all-reduce (the GEMV pipeline counts them once): 2 + 6 + 2 = 10.
    m = NS(hidden_size=8)
    one = attnkinds.linear(m, {"linear": LINEAR}, 2.0, 2.0, simd_pe(), 1.0, 2, COLL)
    assert float(one["lin_state"]["compute_cycles"]) == 6
    three = attnkinds.linear(m, {"linear": LINEAR}, 2.0, 2.0, simd_pe(), 3.0, 2, COLL)
    assert float(three["lin_state"]["compute_cycles"]) == 10
    # projections H 8 → 2·4 + 2·8 + 2·2 = 28 outputs on 2 × 2: a 4 × 14 block, 4 × ⌈14/8⌉ = 8 cycles per token
    assert float(one["lin_proj"]["compute_cycles"]) == 8


def test_the_indexer_scores_every_key_and_merges_its_top_k():
    # 2 index heads of 4 on a 2 × 2 region at S 40: 10 keys per PE × 8 query values, 10 × ⌈8/8⌉ = 10 cycles per
    # query. The top-k (k 16) merge: a row line holds ⌈40/2⌉ = 20 keys, so at most 16 candidates travel.
    m = NS(hidden_size=8, q_lora_rank=None)
    pattern = {"sparse": {"index_n_heads": 2, "index_head_dim": 4, "index_topk": 16}}
    ops = attnkinds.indexer(m, pattern, 2.0, 2.0, 40.0, simd_pe(), 1.0, 2, COLL)
    assert float(ops["idx_score"]["compute_cycles"]) == 10
    short = attnkinds.indexer(m, pattern, 2.0, 2.0, 4.0, simd_pe(), 1.0, 2, COLL)   # S 4 < k: all 4 keys chosen
    assert float(short["idx_topk"]["link_cycles"]) < float(ops["idx_topk"]["link_cycles"])


def geometry(side=8.0):
    return layer.Geometry(side, side, side, side, side, side, side, side, side, 1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.1)


def with_attention(m, kinds):
    """The model with every layer's attention one kind (the pattern's other fields kept)."""
    return NS(**{**vars(m), "layers": {**m.layers, "attention": kinds}})


@pytest.mark.parametrize("kernels", ["per_primitive", "fused"])
def test_the_mean_layer_is_the_count_weighted_mean_of_its_kinds(kernels):
    # Qwen3-Next: 36 linear and 12 full MoE layers. Its layer time is ¾ of an all-linear layer's plus ¼ of an
    # all-full one's (every other op is the same), overheads included, so 48 × mean = the layers' sum.
    m = NS(**model_from_hf_config("tests/data/hf/qwen3-next-80b-a3b-thinking.json").model_dump())
    pe = simd_pe(mac_memory_operands=3.0)
    pe.kernels = kernels
    args = (geometry(), pe, 1.0, 8192.0, 2, COLL, 16.0)
    time = lambda model: float(layer.total(layer.fused(layer.moe_layer(model, *args), pe))["cycles"])  # noqa: E731
    full, linear = time(with_attention(m, ["full"])), time(with_attention(m, ["linear"]))
    assert time(m) == pytest.approx(0.75 * linear + 0.25 * full, rel=1e-12)
    assert linear < full   # at 8K context the full layer's score and p·V over every key cost more than the state


def test_a_uniform_model_keeps_its_attention():
    m = NS(**presets.load_model("qwen3-30b-a3b").model_dump())
    pe = simd_pe()
    ops = layer.layer_attention(m, "moe", 8.0, 8.0, 4096.0, pe, 1.0, 2, COLL)
    plain = layer.attention(m, 8.0, 8.0, 4096.0, pe, 1.0, 2, COLL)
    assert ops.keys() == plain.keys()
    assert all(np.array_equal(ops[k]["cycles"], plain[k]["cycles"]) for k in ops)


def test_the_state_is_read_in_its_own_format_not_the_kv_caches():
    """A Gated DeltaNet state is kept 16-bit (unset `state_format`) or in its stated format whatever `kv_format`
    (vLLM's mamba_cache_dtype, SGLang's state dtype; an FP8 KV cache quantizes softmax layers only). On CS-3's
    SRAM-bound PE (3 operands a MAC, 21.2 B a cycle) each read of a 32 × 64 state block (d_k 64 on 2 rows, 128 on
    2 columns) is 2,048 MACs: 2,048 · 6 B at 16 bits, 2,048 · 8 B with an FP32 state. The FP8 KV cache read it
    at 2,048 · 5 B (194 cycles fewer over the two reads), and an FP32 state at the KV cache's 2 B."""
    from wsemoe.cost.wafer import fabric, operands

    pe = NS(**presets.load_hardware("cs3").pe.model_dump())
    pe.kernels = "per_primitive"
    lin = {"num_key_heads": 1, "key_head_dim": 64, "num_value_heads": 2, "value_head_dim": 64, "conv_kernel": 4}

    def cycles(kv, state=None):
        ob = operands.Operands(2.0, 2.0, 2.0, kv, 2.0)
        pattern = {"linear": {**lin, **({"state_format": state} if state else {})}}
        return float(attnkinds.linear(NS(hidden_size=64), pattern, 2.0, 2.0, pe, 1.0, ob, COLL)["lin_state"]["compute_cycles"])

    per_cycle = float(fabric.sram_bytes_per_cycle(pe))
    read = lambda b: np.ceil(2048 * (4 + b) / per_cycle)   # noqa: E731 - accumulator in and out 2 B each, the state b
    assert cycles(1.0) == cycles(2.0)
    assert cycles(2.0, "fp32") - cycles(2.0) == pytest.approx(2 * (read(4) - read(2)))
    assert cycles(1.0, "fp32") == cycles(2.0, "fp32")
