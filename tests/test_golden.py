"""Golden values: regressions of a few design points (values recorded from this model, v0.1.0).

A change here means the physics changed: update the numbers only with a note on why.
"""

from __future__ import annotations

import pytest

import wsemoe

CFG = {"name": "golden", "hardware": "cs2", "model": "qwen3-30b-a3b",
       "workload": {"mode": "train", "seq_len": 8192},
       "zip": [{"workload.B": [2, 1, 1, 4], "workload.G": [1, 14, 64, 1], "model.num_experts_per_tok": [8, 1, 8, 2]}]}

GOLDEN = [
    # uniform batching at its memory cap, E=128 k=8: streaming-bound
    dict(step_time_s=0.81418993664, tokens_per_s=20123.068663331203, mfu=0.10109230799498976,
         mem_peak_node_bytes=299643178.6666667, bound="moe_layer:weights", feasible=True),
    # BTA's best point at top-k 1: compute-bound
    dict(step_time_s=1.1516667707479615, tokens_per_s=99584.36147768224, mfu=0.3736358958813628,
         mem_peak_node_bytes=404500778.6666666, bound="moe_layer:compute", feasible=True),
    # G = 64 overflows SRAM (kept activations of 64 sequences)
    dict(step_time_s=7.027641386466977, tokens_per_s=74603.69292741851, mfu=0.37478674993169464,
         mem_peak_node_bytes=1687758073.9047618, bound="moe_layer:compute", feasible=False),
    # B = 4 uniform overflows the attention transient
    dict(step_time_s=0.8194045846774417, tokens_per_s=39990.013007919784, mfu=0.1573059921110852,
         mem_peak_node_bytes=598836864.0, bound="moe_layer:weights", feasible=False),
]


@pytest.mark.parametrize("i", range(len(GOLDEN)))
def test_golden_point(i):
    row = wsemoe.evaluate(CFG).iloc[i]
    for col, want in GOLDEN[i].items():
        if isinstance(want, (str, bool)):
            assert row[col] == want, col
        else:
            assert row[col] == pytest.approx(want, rel=1e-9), col
