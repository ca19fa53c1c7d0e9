"""Physics invariants of the cost model, checked on whole frames and with hypothesis."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from wsemoe import load_hardware, load_model
from wsemoe.cost import step
from wsemoe.specs import MappingSpec, WorkloadSpec


def ns(spec, **kw):
    return SimpleNamespace(**{**spec.model_dump(), **kw})


def run(hw=None, model=None, mapping=None, **wl):
    hw = hw or load_hardware("cs2")
    model = model or load_model("qwen3-30b-a3b")
    base = WorkloadSpec(mode="train", seq_len=8192)
    out = step.evaluate(hw, model, ns(base, **wl), mapping or MappingSpec())
    shape = np.shape(out["step_time_s"])  # scalar outputs (nothing varies) broadcast like the engine does
    return {k: np.broadcast_to(v, shape) for k, v in out.items()}


GRID = dict(B=np.arange(1, 9)[:, None], G=np.arange(1, 33)[None, :])


@pytest.mark.parametrize("field", ["io_in_bw_bytes_per_s", "node_peak_flops", "node_memory_bw_bytes_per_s"])
def test_more_bandwidth_or_compute_is_never_slower(field):
    hw = load_hardware("cs2")
    slow = run(hw, **GRID)["step_time_s"]
    fast = run(ns(hw, **{field: getattr(hw, field) * 2}), **GRID)["step_time_s"]
    assert np.all(fast <= slow * (1 + 1e-12))
    assert np.any(fast < slow) or field == "node_memory_bw_bytes_per_s"


def test_more_sram_never_makes_a_feasible_point_infeasible():
    hw = load_hardware("cs2")
    small, big = run(hw, **GRID), run(ns(hw, node_memory_bytes=hw.node_memory_bytes * 1.5), **GRID)
    feas = lambda o: (o["g_mem_attn"] <= 0) & (o["g_mem_moe"] <= 0)  # noqa: E731
    assert np.all(feas(big)[feas(small)])
    assert feas(big).sum() > feas(small).sum()


def test_g1_is_uniform_batching():
    """G = 1 at batch B is the same micro-batch as uniform batching: attention and experts at B."""
    o = run(B=np.array([4]), G=1)
    m = load_model("qwen3-30b-a3b")
    T = 4 * 8192
    assert o["tokens_per_microbatch"][0] == T
    assert o["expert_flops"][0] == pytest.approx(6 * T * 8 * m.hidden_size * m.moe_intermediate_size)
    assert o["mem_bta_buffer_node_bytes"][0] == pytest.approx(T * m.hidden_size * 2 / 84)


def test_tiling_keeps_flops_and_moe_terms_and_shrinks_attention_memory():
    """(B=8, G=1) and (B=1, G=8) process the same tokens: same FLOPs and MoE stage, less attention memory."""
    a, b = run(B=np.array([8]), G=1), run(B=np.array([1]), G=8)
    for col in ("attn_proj_flops", "attn_core_flops", "router_flops", "expert_flops", "moe_compute_s", "moe_weights_s"):
        assert a[col][0] == pytest.approx(b[col][0])
    assert b["mem_attn_transient_node_bytes"][0] == pytest.approx(a["mem_attn_transient_node_bytes"][0] / 8)


def test_vectorized_equals_scalar():
    frame = run(**GRID)
    for bi, gi in [(0, 0), (3, 7), (7, 31), (2, 15)]:
        scalar = run(B=int(GRID["B"][bi, 0]), G=int(GRID["G"][0, gi]))
        for col in ("step_time_s", "mfu", "mem_peak_node_bytes", "g_mem_attn", "bound"):
            assert np.asarray(scalar[col]).item() == (frame[col][bi, gi] if col == "bound"
                                                      else pytest.approx(frame[col][bi, gi], rel=1e-12))


def test_hand_derived_flops_qwen3_30b():
    """attn_proj = 2T·H·(n_h d_h + 2 n_kv d_h) + 2T·n_h d_h·H; core = 4·B̃·n_h·S²·d_h; router = 2T·H·E."""
    o = run(B=np.array([1]), G=1, seq_len=2048)
    T, H = 2048, 2048
    assert o["attn_proj_flops"][0] == 2 * T * H * (32 * 128 + 2 * 4 * 128) + 2 * T * 32 * 128 * H
    assert o["attn_core_flops"][0] == 4 * 1 * 32 * 2048**2 * 128
    assert o["router_flops"][0] == 2 * T * H * 128
    assert o["expert_flops"][0] == 6 * T * 8 * H * 768


def test_hand_derived_streaming_time():
    """An I/O-bound MoE layer: (2 passes in) × expert bytes / 150 GB/s."""
    m = load_model("qwen3-30b-a3b")
    o = run(B=np.array([1]), G=1)
    expert_bytes = (128 * 3 * 2048 * 768 + 2048 * 128) * 2
    assert o["moe_weights_s"][0] == pytest.approx(2 * expert_bytes / 1.5e11)
    assert o["bound"][0] == "moe_layer:weights"
    del m


def test_mfu_never_exceeds_matmul_efficiency():
    o = run(**GRID)
    assert np.all(o["mfu"] <= load_hardware("cs2").matmul_efficiency + 1e-12)


@settings(max_examples=60, deadline=None)
@given(B=st.integers(1, 64), G=st.integers(1, 64), S=st.sampled_from([512, 2048, 8192]),
       k=st.sampled_from([1, 2, 8]), E=st.sampled_from([8, 64, 128]), scale=st.floats(1.01, 10))
def test_property_io_bandwidth_monotone_and_tokens_conserved(B, G, S, k, E, scale):
    hw = load_hardware("cs2")
    model = ns(load_model("qwen3-30b-a3b"), num_experts=E, num_experts_per_tok=k)
    base = run(hw, model, B=B, G=G, seq_len=S)
    fast = run(ns(hw, io_in_bw_bytes_per_s=hw.io_in_bw_bytes_per_s * scale), model, B=B, G=G, seq_len=S)
    assert fast["step_time_s"] <= base["step_time_s"] * (1 + 1e-12)
    # tokens routed to experts: E experts × tokens per expert = T·k
    assert base["tokens_per_expert"] * E == pytest.approx(base["tokens_per_microbatch"] * k)
    assert base["tokens_per_s"] == pytest.approx(base["tokens_per_microbatch"] / base["step_time_s"])


@pytest.mark.parametrize("mode", ["train", "prefill", "decode"])
def test_modes_evaluate_and_training_costs_three_passes(mode):
    o = run(mode=mode, B=np.array([2]), G=2)
    assert np.all(np.isfinite(o["step_time_s"])) and np.all(o["step_time_s"] > 0)
    if mode == "decode":
        assert o["tokens_per_microbatch"][0] == 4  # one token per sequence
        assert o["mem_kv_node_bytes"][0] > 0
    train = run(mode="train", B=np.array([2]), G=2)
    if mode == "prefill":
        assert train["model_flops_per_step"][0] == pytest.approx(3 * o["model_flops_per_step"][0])


def test_layer_overlap_never_slower_than_stage_or_none():
    t = {ov: run(overlap=ov, **GRID)["step_time_s"] for ov in ("layer", "stage", "none")}
    assert np.all(t["layer"] <= t["stage"] + 1e-15)
    assert np.all(t["stage"] <= t["none"] + 1e-15)


@settings(max_examples=40, deadline=None)
@given(B=st.integers(1, 8), G=st.integers(1, 64), S=st.sampled_from([1024, 2048, 4096, 8192]),
       k=st.sampled_from([1, 2, 8]), recompute=st.sampled_from(["none", "selective", "full"]))
def test_streaming_kept_activations_trades_sram_for_io(B, G, S, k, recompute):
    """Streamed checkpoints leave SRAM (peak drops by exactly the kept bytes) and cost I/O time: never faster,
    and the I/O term grows by exactly their bytes both ways."""
    hw = load_hardware("cs2")
    model = ns(load_model("qwen3-30b-a3b"), num_experts_per_tok=k)
    node, streamed = (run(ns(hw, kept_activations=where), model, B=B, G=G, seq_len=S, recompute=recompute)
                      for where in ("node", "streamed"))
    assert streamed["mem_kept_act_node_bytes"] == 0 and streamed["step_time_s"] >= node["step_time_s"] * (1 - 1e-12)
    assert streamed["mem_peak_node_bytes"] == pytest.approx(node["mem_peak_node_bytes"] - node["mem_kept_act_node_bytes"])
    kept = streamed["kept_act_io_bytes"]
    assert kept == pytest.approx(node["mem_kept_act_node_bytes"] * hw.nodes / model.num_hidden_layers)
    assert streamed["attention_weights_s"] == pytest.approx(node["attention_weights_s"] + kept / hw.io_in_bw_bytes_per_s)


def test_kept_activations_streamed_needs_streamed_weights():
    from wsemoe.specs import HardwareSpec

    fields = {**load_hardware("nvl72").model_dump(), "kept_activations": "streamed"}
    with pytest.raises(ValueError, match="kept_activations"):
        HardwareSpec(**fields)
