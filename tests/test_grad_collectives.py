"""Training's gradient collectives inside a TP group: what the flattened all-reduce of the sequence-parallel
gradients sums (Megatron-Core, megatron/core/distributed/finalize_model_grads.py,
_allreduce_non_tensor_model_parallel_grads), and which phases an in-switch reduction takes over. Expected values
derived by hand from the model's shape."""

from __future__ import annotations

import numpy as np
import pytest

import wsemoe
from wsemoe.cost import structure
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
    # the router gradient's ring all-reduce over a TP 4 ring (no norms or latent projections yet): 2·3/4 of the
    # 2-byte gradients of the gate on the busiest link
    assert _row("deepseek-v3")["router_gradient_max_link_bytes"] == pytest.approx(2 * 3 / 4 * 1_835_008 * 2, rel=1e-12)
