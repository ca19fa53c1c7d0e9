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
