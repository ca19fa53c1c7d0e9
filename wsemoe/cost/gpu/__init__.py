"""Serving on GPU systems as measured serving runs serve: continuous batching, prefill interleaved with decode,
TP / EP / attention-DP / PP layouts, and a per-backend software stack (efficiencies and fixed latencies).

`shape` turns a model spec, its number formats and a parallel layout into per-GPU work (bytes, FLOPs) per
layer; `serving` turns that work, a GPU's figures and a stack into decode step time, prefill time, TPOT and
TTFT at a concurrency. numpy only: the stacks are fitted in wsemoe/validate/silicon.
"""
