"""Training's gradient collectives inside a TP group: what the flattened all-reduce of the sequence-parallel
gradients sums (Megatron-Core, megatron/core/distributed/finalize_model_grads.py,
_allreduce_non_tensor_model_parallel_grads), and which phases an in-switch reduction takes over. Expected values
derived by hand from the model's shape."""

from __future__ import annotations

import numpy as np

from wsemoe.cost import structure


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
