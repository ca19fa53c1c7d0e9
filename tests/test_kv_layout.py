"""The attention core's two layouts of the KV cache (cost/wafer/decode.core): the width split (WaferLLM's: every
score all-reduced along the columns a KV head spans) and the context split (whole heads per column, the context
over the rows and the span), hand-derived on a tiny region; `core` is the faster of the two at every point."""

from __future__ import annotations

from types import SimpleNamespace as NS

import numpy as np
import pytest

from wsemoe.config import presets
from wsemoe.cost.wafer import collectives, decode

COLL = {"pattern": "tree", "levels": 2}


def pe():
    p = NS(**{**presets.load_hardware("cs3").pe.model_dump(), "mac_memory_operands": 0})
    return p


def total(ops):
    return sum(np.asarray(t["cycles"]) for t in ops.values())


def test_what_each_layout_moves_by_hand():
    # 4 query heads on one KV head of width 8 over a 2 × 4 region (the head spans all 4 columns), context 64.
    # Width split: 32 tokens per row, each column 2 of the 8 dims: every one of the 32 × 4 scores all-reduced
    # along the 4 columns. Context split: 64 / (2·4) = 8 tokens per PE at full width; the 4 heads' full queries
    # (32 values) gathered along the span first, no score reduced.
    args = (4, 1, 8, 8, 2.0, 4.0, 64.0, pe(), 1.0, 2, COLL)
    width, ctx = decode.width_split(*args), decode.context_split(*args)
    assert float(width["score"]["link_cycles"]) == float(collectives.allreduce(4, 128.0, **COLL).volume)
    assert float(ctx["score"]["link_cycles"]) == float(collectives.broadcast(4, 32.0).volume) == 32.0
    # the same MACs: 8 dims × 32 tokens (an 8-wide vector per dim, 32 cycles) against 32 values × 8 tokens (32);
    # the scaling of the scores: 32 × 4 on every column of the span (16 cycles) against its own 8 × 4 (4)
    assert float(width["score"]["compute_cycles"]) == 32.0 + 16.0
    assert float(ctx["score"]["compute_cycles"]) == 32.0 + 4.0


def test_one_column_per_kv_head_leaves_one_layout():
    # 8 KV heads on 4 columns: a head spans one column, nothing moves along a span: the layouts do the same work
    # (the width split still invokes its empty all-reduce of the scores, one overhead; the per-primitive count)
    args = (16, 8, 8, 8, 2.0, 4.0, 64.0, pe(), 1.0, 2, COLL)
    width, ctx = decode.width_split(*args), decode.context_split(*args)
    for k in width:
        for term in ("compute_cycles", "link_cycles", "latency_cycles"):
            assert float(width[k][term]) == float(ctx[k][term]), (k, term)


@pytest.mark.parametrize("context", [256.0, 2048.0, 8192.0, 32768.0, 131072.0])
def test_core_is_the_faster_layout(context):
    # Llama-3.1-70B's attention (64 query heads, 8 KV heads of 128) on a 64 × 64 region: each KV head spans 8 columns.
    args = (64, 8, 128, 128, 64.0, 64.0, context, pe(), 1.0, 2, COLL)
    best = min(float(total(decode.width_split(*args))), float(total(decode.context_split(*args))))
    assert float(total(decode.core(*args))) == pytest.approx(best, rel=1e-12)


def test_short_context_keeps_the_width_split_and_long_context_splits_the_context():
    args = lambda S: (64, 8, 128, 128, 64.0, 64.0, S, pe(), 1.0, 2, COLL)  # noqa: E731
    short, long = args(2048.0), args(131072.0)
    assert float(total(decode.width_split(*short))) < float(total(decode.context_split(*short)))
    assert float(total(decode.context_split(*long))) < float(total(decode.width_split(*long)))
