"""Training's gradient collectives inside a TP group: what the flattened all-reduce of the sequence-parallel
gradients sums (Megatron-Core, megatron/core/distributed/finalize_model_grads.py,
_allreduce_non_tensor_model_parallel_grads), and which phases an in-switch reduction takes over. Expected values
derived by hand from the model's shape."""

from __future__ import annotations

import numpy as np
import pytest

import wsemoe
from wsemoe.cost import stagecost, structure
from wsemoe.cost.node import params, weights
from wsemoe.specs.workload import WorkloadSpec


def _switch(reduction: bool) -> structure.Structure:
    """NVL72 as 8×9 GPUs in one 72-GPU scale-up domain, TP 4 blocks (18 groups), training's slice flow with
    TP-split shared experts (their gather and reduce-scatter ride the output reduction)."""
    coll = structure.Collectives(1, "xy", reduction, True)
    return structure.build("switch", 8, 9, 4, "block", None, 0, None, "slice", 256, domain=72, coll=coll)


def test_an_in_switch_reduction_leaves_the_output_reduction_no_steps_as_its_peaks_say():
    """Without the switch reduction the output reduction is each group's ring all-reduce: 2 steps (reduce-scatter,
    all-gather) of 3/4 of a member's message from each of 72 GPUs, 2 · 3/4 · 72 = 108 bytes per unit. With it,
    `collective_phases` gives the phase the switch's peaks (each member's message up once, the sum down once: 72
    GPU-switch-GPU paths), so its steps are none, as the attention all-reduce's and the router gradient's are.
    `phase_steps` skipped only those and still gave the ring's 2 steps (108 bytes) under the switch's peaks."""
    ring, nvls = _switch(False), _switch(True)
    assert len(structure.phase_steps(ring, "reduce")) == 2
    assert structure.phase_traffic(ring, "reduce").sum() == 108.0
    assert nvls.phases["reduce"].byte_hops == nvls.phases["allreduce"].byte_hops == 72.0
    for name in ("allreduce", "router_gradient", "reduce"):
        assert structure.phase_steps(nvls, name) == []
        assert not np.any(structure.phase_traffic(nvls, name))
    assert len(structure.phase_steps(nvls, "gradient")) == 1   # across groups: the ring, not the switch's


def _row(model, hardware="wsc-b200-8x8", **sets):
    """One training point: TP 4 blocks of 2×2 dies on wsc-b200-8x8, S 4096, B 1, G 1."""
    sets = {"workload.mode": "train", "workload.seq_len": 4096, "workload.B": 1, "workload.G": 1,
            "mapping.tp": 4, "mapping.strategy": "block", **sets}
    return wsemoe.evaluate(wsemoe.point_config(hardware, model, [f"{k}={v}" for k, v in sets.items()])).iloc[0]


def test_a_correction_bias_takes_no_gradient_a_learned_router_bias_does():
    """DeepSeek-V3's e_score_correction_bias (256 per MoE layer) is set from the experts' loads, not by the
    optimizer (a buffer in HF and Megatron-Core): the gate's gradient is H·E = 7168·256 = 1,835,008 values, not
    1,835,264 (512 B more at 2 B a gradient). gpt-oss's router bias is nn.Linear's, learned: 2880·128 + 128."""
    v3, oss = wsemoe.load_model("deepseek-v3"), wsemoe.load_model("gpt-oss-120b")
    assert params.router_grad_params(v3) == 7168 * 256 == 1_835_008
    assert params.router_params(v3) == 1_835_264   # stored: the bias is in the checkpoint
    assert params.router_grad_params(oss) == params.router_params(oss) == 2880 * 128 + 128
    wl = WorkloadSpec(mode="train", seq_len=4096, B=1, G=1)
    router = weights.layer_weights(v3, wl)["router"]
    assert (router.params, router.nbytes) == (1_835_008, 1_835_264 * 2)


def test_the_tp_group_sums_the_norms_and_mla_down_projections_with_the_gates():
    """Megatron-Core's one all-reduce over the TP group a step sums every parameter marked sequence_parallel (and
    q/k layernorms): each rank holds them whole and forms their gradient from its slice of the tokens. DeepSeek-V3
    (H 7168, L 61 of which 58 MoE, E 256, r_q 1536, r_kv 512, d_rope 64), per layer: two RMSNorms 2·7168 = 14,336,
    the latent norms 1536 + 512 = 2,048, the down-projections (TELinear 'duplicated') 7168·(1536 + 512 + 64) =
    15,138,816; 61 layers of them, the final norm 7,168, 58 gates 7168·256: 1,030,904,832 gradients a step,
    2,061,809,664 B at 2 B, 35,548,442.5 B a MoE layer. A TP 4 ring puts 2·3/4 of it on its busiest edge:
    53,322,663.7 B. The gates alone were summed: 2·3/4 · 3,670,016 = 5,505,024 B (~35 KB of norms and ~30 MB of
    down-projections a layer missing)."""
    v3 = wsemoe.load_model("deepseek-v3")
    assert params.tp_summed_params(v3) == 61 * (14_336 + 2_048 + 15_138_816) + 7_168 + 58 * 1_835_008 == 1_030_904_832
    per_moe = 1_030_904_832 * 2 / 58
    assert _row("deepseek-v3")["router_gradient_max_link_bytes"] == pytest.approx(2 * 3 / 4 * per_moe, rel=1e-12)
    # gpt-oss-120b (H 2880, 36 layers all MoE, E 128): two norms and the row-parallel output bias (replicated,
    # added to the sequence-parallel output) a layer, the final norm, 36 gates with their learned bias
    oss = 36 * (2 * 2880 + 2880) + 2880 + 36 * (2880 * 128 + 128)
    assert params.tp_summed_params(wsemoe.load_model("gpt-oss-120b")) == oss == 13_589_568
    assert _row("gpt-oss-120b")["router_gradient_max_link_bytes"] == pytest.approx(1.5 * oss * 2 / 36, rel=1e-12)


def test_training_runs_mla_down_projections_on_each_rank_s_sequence_slice():
    """Megatron-Core holds MLA's down-projections whole on every TP rank and feeds them its [s/TP] sequence-parallel
    slice (multi_latent_attention.py, _qkv_down_projection), so in training TP splits their FLOPs as it splits the
    heads'. DeepSeek-V3: attention projections 187,105,280 weights a layer, of which the down-projections
    15,138,816; the busiest TP 4 rank ran (187,105,280 − 15,138,816)/4 + 15,138,816 = 58,130,432 of them on all its
    group's tokens, 1.2427× its even share (attention compute +16.8% at TP 4, +39% at TP 8), now 46,776,320, 1×.
    Serving keeps them whole on every rank for its group's tokens (SGLang, TensorRT-LLM: params.attn_kv_params)."""
    # the attention's compute per token of a micro-batch is the same at any TP dividing the 128 heads
    per_token = [(r["attention_compute_s"] / r["tokens_per_microbatch"]) for r in
                 (_row("deepseek-v3", **{"mapping.tp": tp}) for tp in (1, 4, 8))]
    assert per_token == pytest.approx([per_token[0]] * 3, rel=1e-12)
    hw = wsemoe.load_hardware("wsc-b200-8x8")
    v3 = wsemoe.load_model("deepseek-v3")
    assert params.mla_down_params(v3) == 7168 * (1536 + 512 + 64) == 15_138_816
    served, trained = stagecost.busiest_rank(hw, v3, 4), stagecost.busiest_rank(hw, v3, 4, train=True)
    assert float(served[0]) == pytest.approx(4 * 58_130_432 / 187_105_280, rel=1e-12)
    assert (float(trained[0]), float(trained[1])) == pytest.approx((1.0, 1.0), rel=1e-12)
