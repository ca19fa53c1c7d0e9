"""The rates of an SRAM-serving step (wsemoe/cost/wafer/serving.py): its busiest stage per token (β, the routed
experts' at a step's expected maximum over its routing), latency, the period between a sequence's steps, time per
output token and tokens per second, with speculative decoding's drafts and a synchronous wafer I/O's stall; and the
terms of the time that binds, each the sum of its share of every part of that time."""

from __future__ import annotations

import numpy as np

STAGES = ("attention region", "routed experts", "shared experts", "dispatch", "combine", "layer hop", "dense region",
          "head region", "embedding region", "system link")
ROUTED = ("moe", "routed experts")


def paced(stages: dict, wafers) -> tuple:
    """(`busiest` over every stage but the routed experts', the routed experts' (seconds, terms) per token at the
    hottest expert's expected share k·p_max, or None): the second is scaled by the step's routing (geometry.routing_noise)
    once the batch is known, so the structure's terms stay batch-free."""
    stages = dict(stages)
    routed = stages.pop(ROUTED, None)
    return busiest(stages, wafers), routed


def with_routed(rest: tuple, routed, noise) -> tuple:
    """`busiest`'s (seconds, stage, terms) with the routed experts' stage at `noise` × its expected share: the busiest
    expert's expected maximum over a step's tokens against k·p_max of them (geometry.routing_noise)."""
    if routed is None:
        return rest
    secs, code, terms = rest
    mine = routed[0] * noise
    use = mine > secs
    return (np.where(use, mine, secs), np.where(use, STAGES.index(ROUTED[1]), code),
            [np.where(use, r * noise, t) for r, t in zip(routed[1], terms)])


def busiest(stages: dict, wafers):
    """(seconds per token, stage index into STAGES, its five terms) of the busiest region or link stage (the
    system link only between wafers)."""
    keys = list(stages)
    secs = np.stack(np.broadcast_arrays(*[stages[k][0] * (wafers > 1 if k[0] == "link" else 1.0) for k in keys]))
    i = np.argmax(secs, axis=0)
    terms = [np.choose(i, np.broadcast_arrays(*[stages[k][1][t] + 0.0 * secs[0] for k in keys])) for t in range(5)]
    return secs.max(axis=0), np.asarray([STAGES.index(k[1]) for k in keys])[i], terms


def bound_terms(wl, late, paced, W, stall, throughput_bound) -> list:
    """The terms (in BOUNDS order, SRAM aside) of the time that binds, each the sum of its share of every part of
    that time (`rate_columns`), so the largest names what limits the point. `late`: one token's five latency terms
    (t1); `paced`: the busiest stage's five terms per token (β). Prefill, TTFT = t1 + W·σ + (B·P − 1)·β + (B − 1)·σ:
    the prompts' tokens after the first each add β's terms. Decode, the step t1 + W·σ + d·β + d·τ (the d drafts
    verified, and the draft model's d tokens, `draft model`), or where the stream binds B·(q·β + σ)."""
    zero = 0.0 * stall
    if wl.mode == "prefill":
        rest = wl.B * wl.seq_len - 1.0
        return [t + rest * p for t, p in zip(late[:5], paced[:5])] + [(W + wl.B - 1.0) * stall, zero]
    d = step_tokens(wl) - 1.0
    step = [t + d * p for t, p in zip(late[:5], paced[:5])] + [W * stall, d * getattr(wl, "draft_token_s", 0.0) + zero]
    stream = [wl.B * step_tokens(wl) * p for p in paced[:5]] + [wl.B * stall, zero]
    return [np.where(throughput_bound, s, t) for s, t in zip(stream, step)]


def step_tokens(wl):
    """Tokens per sequence one decode step processes: the drafts and one more."""
    return getattr(wl, "draft_tokens", 0) + 1.0


def io_stall(hw, mp):
    """σ: seconds one synchronous transfer through a system's wafer I/O stalls it (`mapping.wafer_io: sync`),
    else 0 (the I/O runs asynchronously from compute)."""
    if getattr(mp, "wafer_io", "async") != "sync":
        return 0.0
    return np.asarray(getattr(hw, "sync_io_stall_s", 0.0), dtype=float)


def rate_columns(wl, latency, beta, wafers=1.0, stall=0.0) -> dict:
    """A step's latency, the period between a sequence's steps, time per output token and tokens per second
    (per user and in aggregate); prefill: the prompts' tokens per second. `stall`: σ of a synchronous wafer I/O
    transfer, paid once per system in a step and once per sequence by each system's stream."""
    io = wafers * stall + 0.0 * latency
    if wl.mode == "prefill":
        ttft = latency + io + (wl.B * wl.seq_len - 1.0) * beta + (wl.B - 1.0) * stall
        return {"step_latency_s": ttft, "pipeline_period_s": ttft, "tokens_per_s": wl.B * wl.seq_len / ttft,
                "io_stall_s": stall + 0.0 * ttft}
    q, a = step_tokens(wl), getattr(wl, "accepted_tokens_per_step", 1.0)
    verify = latency + (q - 1.0) * beta
    draft = (q - 1.0) * getattr(wl, "draft_token_s", 0.0) + 0.0 * verify
    step = verify + io + draft
    period = np.maximum(step, wl.B * (q * beta + stall))
    return {"step_latency_s": step, "draft_time_s": draft, "io_stall_s": stall + 0.0 * step,
            "pipeline_period_s": period, "tpot_s": period / a, "tokens_per_s_per_user": a / period,
            "tokens_per_s": wl.B * a / period, "tokens_in_flight": np.minimum(wl.B * q, verify / beta)}
