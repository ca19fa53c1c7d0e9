"""Causal attention under a tiled kernel: the query at position s reads only its earlier keys, so training and
prefill under attn_kernel flash execute the mean of min(window, s) over positions of what the count charges;
the materialized and per-head kernels compute every score and mask it (docs/layers.md)."""

from __future__ import annotations

import pytest
from test_layers import model, wl

from wsemoe.cost.node import compute
from wsemoe.specs import WorkloadSpec


# Causal: the query at position s reads min(c, s) keys; their mean over s = 1 … S = 1000 (window c).
@pytest.mark.parametrize("kind, per_query", [
    ("full", 256 * 1001 / 2),                                  # (S + 1) / 2
    ("sliding", 256 * (128 * 129 / 2 + 872 * 128) / 1000),     # c = 128: 1 … 128, then 128 for the other 872
    ("chunked", 256 * (256 * 257 / 2 + 744 * 256) / 1000),
    ("sparse", 256 * (64 * 65 / 2 + 936 * 64) / 1000 + 2 * 2 * 8 * 1001 / 2),   # the indexer scans every earlier key
    ("linear", 6 * 4 * 8 * 8),                                 # no keys: the same state work per token
])
def test_causal_core_flops_per_kind_by_hand(kind, per_query):
    m = model([kind])
    assert compute.attn_core_flops(m, wl("prefill", S=1000, B=2), causal=True) == pytest.approx(per_query * 2000)
    assert compute.attn_core_flops(m, wl("decode", B=3), causal=True) == compute.attn_core_flops(m, wl("decode", B=3))


def test_only_a_tiled_kernel_skips_the_masked_keys():
    """FlashAttention's causal mode skips the tiles above the diagonal; the materialized and per-head kernels
    compute every score and mask it. The count (model FLOPs, MFU) is the full one either way."""
    m = model(["full"])
    for kernel, share in (("flash", 1001 / 2000), ("per_head", 1.0), ("materialized", 1.0)):
        w = WorkloadSpec(mode="train", seq_len=1000, B=2, attn_kernel=kernel)
        assert float(compute.executed_core_share(m, w)) == pytest.approx(share)
    assert compute.executed_core_share(m, WorkloadSpec(mode="decode", seq_len=1000, B=2, attn_kernel="flash")) == 1.0


def _prefill(hardware, kernel="per_head", **hw_changes):
    """One Llama-3.1-8B prefill point (S 4096, B 1) on `hardware` under the workload's `kernel`."""
    import wsemoe
    from wsemoe.config import presets

    hw = {**presets.load_hardware(hardware).model_dump(), **hw_changes}
    cfg = {"name": "k", "hardware": hw, "model": "llama-3.1-8b",
           "workload": {"mode": "prefill", "seq_len": 4096, "B": 1, "G": 1, "attn_kernel": kernel}}
    return wsemoe.evaluate(cfg).iloc[0]


def test_a_gpu_runs_its_own_tiled_kernel_whatever_the_workload_reading():
    """GPU stacks run tiled attention (hardware.attention_kernel flash on the GPU presets): a prefill on NVL72
    executes (S+1)/(2S) of the counted core under the workload's per_head reading and holds no scores; with the
    hardware naming no kernel it follows the workload, as a Cerebras wafer does."""
    own = _prefill("nvl72")
    assert own["attn_core_executed_share"] == pytest.approx(4097 / 8192)
    assert own["attn_core_executed_share"] == pytest.approx(_prefill("nvl72", "flash")["attn_core_executed_share"])
    assert own["step_time_s"] == pytest.approx(_prefill("nvl72", "materialized")["step_time_s"])
    unnamed = _prefill("nvl72", attention_kernel=None)
    assert unnamed["attn_core_executed_share"] == 1.0 and unnamed["step_time_s"] > own["step_time_s"]
    assert _prefill("cs2")["attn_core_executed_share"] == 1.0   # a wafer takes the workload's reading
    assert _prefill("cs2", "flash")["attn_core_executed_share"] == pytest.approx(4097 / 8192)
