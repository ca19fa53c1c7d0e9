"""How an SRAM-serving point's numbers combine (weight_source: sram; cost/wafer/serving.py and steprate.py):
operators → layers → stages and hops → one token's latency → step, period, time per output token and rates, TTFT,
and what binds, each written out with its numbers and checked against the column (addsup.check)."""

from __future__ import annotations

import math

import numpy as np

from wsemoe.analysis.explain.addsup import absent, check, secs, value_of
from wsemoe.cost.wafer import regions
from wsemoe.wording import count, noun, number


SERVING_KINDS = {"embedding": "embedding_time_s", "dense": "dense_layer_time_s", "moe": "moe_layer_time_s",
         "head": "head_time_s"}
SERVING_TERMS = {"local MACs": "pipeline_macs_s", "link": "pipeline_link_s", "hops": "pipeline_hops_s",
         "op overhead": "pipeline_overhead_s", "inter-wafer": "pipeline_inter_wafer_s"}


def serving_operators(row) -> list:
    """Each layer kind's time as the sum of its operators (one token)."""
    out = []
    for kind, col in SERVING_KINDS.items():
        ops = {c[len(kind) + 4:-2]: value_of(row, c) for c in row.keys() if c.startswith(f"{kind}_op_")
               and not absent(row, c)}
        if not ops or absent(row, col):
            continue
        total = sum(ops.values())
        text = " + ".join(f"{op} {secs(v)}" for op, v in ops.items())
        out.append((col, row[col], "s", f"{text} = {secs(total)} {check(total, value_of(row, col))}"))
    return out


def serving_stages(row, m, wl) -> list:
    """The one-token latency as its stages (wafers, consecutive alike ones together; a MoE layer on the wafer of
    its attention, its experts possibly continuing on the next), hops, crossings and return."""
    W = int(round(value_of(row, "wafers")))
    layer = {k: value_of(row, c) for k, c in SERVING_KINDS.items()}
    parts, total = [], 0.0
    per_stage = regions.stage_layers(m, W, regions.region_bytes(m, wl, wl.B))
    for w in range(W):
        dense, moe = float(per_stage[0][w]), float(per_stage[1][w])
        t = dense * layer["dense"] + moe * layer["moe"] + (w == 0) * layer["embedding"] + (w == W - 1) * layer["head"]
        what = " + ".join(s for s in (f"{number(dense)} dense" if dense else "", f"{number(moe)} MoE" if moe else "",
                                       "embedding" if w == 0 else "", "head" if w == W - 1 else "") if s)
        if parts and parts[-1][1] == what and math.isclose(parts[-1][2], t, rel_tol=1e-12):
            parts[-1][0].append(w + 1)
        else:
            parts.append(([w + 1], what, t))
        total += t
    hops, ret = value_of(row, "wafer_hops") * value_of(row, "wafer_hop_s"), value_of(row, "token_return_s")
    cross = 0.0 if absent(row, "crossing_s") else value_of(row, "crossing_s")
    far = 0.0 if absent(row, "far_experts_s") else value_of(row, "far_experts_s")
    lines = [f"{noun(len(ws), 'wafer')} {_span(ws)}: {what} {secs(t)}" + (" each" if len(ws) > 1 else "")
             for ws, what, t in parts]
    text = "; ".join(lines) + f"; {number(value_of(row, 'wafer_hops'))} wafer hops × {secs(value_of(row, 'wafer_hop_s'))}; " + \
        (f"{number(value_of(row, 'layer_splits'))} of them inside a MoE layer (experts' input too) {secs(cross)}; "
         if cross else "") + (f"their far wafers' routed experts {secs(far)}; " if far else "") + \
        f"token return {secs(ret)}"
    latency = total + hops + cross + far + ret
    return [("pipeline_latency_s", row["pipeline_latency_s"], "s",
             f"{text} = {secs(latency)} {check(latency, value_of(row, 'pipeline_latency_s'))}")]


def _span(ws: list) -> str:
    return f"{ws[0]}" if len(ws) == 1 else f"{ws[0]}–{ws[-1]}"


def serving_terms(row) -> list:
    """The one-token latency as its five terms, and β (the busiest stage per token) as the same five."""
    out = []
    for column, prefix in (("pipeline_latency_s", "pipeline"), ("busiest_stage_s", "busiest")):
        cols = {k: f"{prefix}_{c.removeprefix('pipeline_')}" for k, c in SERVING_TERMS.items()}
        if any(absent(row, c) for c in cols.values()):
            continue
        parts = {k: value_of(row, c) for k, c in cols.items()}
        total = sum(parts.values())
        text = " + ".join(f"{k} {secs(v)}" for k, v in parts.items())
        out.append((column, row[column], "s", f"by term: {text} = {secs(total)} {check(total, value_of(row, column))}"))
    return out


def serving_rates(row, wl) -> list:
    """Step, period, time per output token, tokens per second; TTFT when the point has it."""
    beta, t1, B = value_of(row, "busiest_stage_s"), value_of(row, "pipeline_latency_s"), float(wl.B)
    out = []
    if wl.mode == "decode":
        q, a = getattr(wl, "draft_tokens", 0) + 1.0, float(getattr(wl, "accepted_tokens_per_step", 1.0))
        tau = float(getattr(wl, "draft_token_s", 0.0))
        sigma = 0.0 if absent(row, "io_stall_s") else value_of(row, "io_stall_s")
        W = value_of(row, "wafers")
        step = t1 + W * sigma + (q - 1) * beta + (q - 1) * tau
        period = max(step, B * (q * beta + sigma))
        drafting = f" + {number(q - 1)} draft × τ {secs(tau)} (the draft model)" if tau > 0 else ""
        stalls = f" + {count(W, 'system')} × σ {secs(sigma)} (synchronous wafer I/O)" if sigma > 0 else ""
        out += [("step_latency_s", row["step_latency_s"], "s", f"t1 {secs(t1)}{stalls} + {number(q - 1)} draft × β "
                 f"{secs(beta)} ({row['busiest_stage']}){drafting} = {secs(step)} "
                 f"{check(step, value_of(row, 'step_latency_s'))}"),
                ("pipeline_period_s", row["pipeline_period_s"], "s", f"max(step {secs(step)}, " + (
                    f"B·(q·β + σ) = {number(B)}·({number(q)}·{secs(beta)} + {secs(sigma)})" if sigma > 0 else
                    f"B·q·β = {number(B)}·{number(q)}·{secs(beta)}") + f") = {secs(period)} "
                 f"{check(period, value_of(row, 'pipeline_period_s'))}"),
                ("tpot_s", row["tpot_s"], "s", f"period / {number(a)} accepted = {secs(period / a)} "
                 f"{check(period / a, value_of(row, 'tpot_s'))}"),
                ("tokens_per_s", row["tokens_per_s"], "tokens/s", f"{number(B)} sequences × {number(a)} / period = "
                 f"{B * a / period:,.6g} {check(B * a / period, value_of(row, 'tokens_per_s'))}")]
    if "ttft_s" in row.keys() and not absent(row, "ttft_s"):
        out.append(_ttft(row, wl))
        if wl.mode == "prefill":   # the prompts are the step: their tokens over TTFT
            P, ttft = float(wl.seq_len), value_of(row, "ttft_s")
            out.append(("tokens_per_s", row["tokens_per_s"], "tokens/s", f"{number(B)} prompts × {number(P)} tokens / "
                        f"TTFT = {B * P / ttft:,.6g} {check(B * P / ttft, value_of(row, 'tokens_per_s'))}"))
    return out


def _ttft(row, wl):
    """TTFT as its terms: the B prompts' B·P tokens stream through once, t1 and β at context P (prefill: the
    point's own; decode: the prompt_* columns)."""
    decode = wl.mode == "decode"
    P, B = float(wl.prompt_len if decode else wl.seq_len), float(wl.B)
    t1 = value_of(row, "prompt_latency_s" if decode else "pipeline_latency_s")
    beta = value_of(row, "prompt_busiest_stage_s" if decode else "busiest_stage_s")
    sigma = 0.0 if absent(row, "io_stall_s") else value_of(row, "io_stall_s")
    W = value_of(row, "wafers")
    ttft = t1 + W * sigma + (B * P - 1.0) * beta + (B - 1.0) * sigma
    stalls = f" + {number(W)} × σ {secs(sigma)} + ({number(B)} − 1) × σ" if sigma > 0 else ""
    who = f"the {number(B)} prompts of {number(P)} tokens stream" if B != 1 else f"the prompt of {number(P)} tokens streams"
    return ("ttft_s", row["ttft_s"], "s", f"{who} through once, at context {number(P)}: t1 {secs(t1)}{stalls} + "
            f"({number(B)}·{number(P)} − 1) × β {secs(beta)} = {secs(ttft)} {check(ttft, value_of(row, 'ttft_s'))}")


def sram_serving(row, m, wl) -> list:
    """Every line of the serving breakdown, in order."""
    return serving_operators(row) + serving_stages(row, m, wl) + serving_terms(row) + serving_rates(row, wl) + [
        ("bound", row["bound"], "", _bound_text(row, wl))]


def _bound_text(row, wl) -> str:
    """What `bound` is the largest term of (cost/wafer/steprate.bound_terms), in words."""
    if wl.mode == "prefill":
        return ("the largest term of TTFT: each of t1's five terms plus (B·P − 1) × the busiest stage's, or the "
                "stalls (W + B − 1)·σ (wafer I/O)")
    if _stream_binds(row):
        return "the largest term of the stream B·(q·β + σ): the busiest stage's terms, or σ (wafer I/O)"
    return ("the largest term of the step: each of t1's five terms plus (q − 1) × the busiest stage's, W·σ (wafer "
            "I/O), or (q − 1)·τ (draft model)")


def _stream_binds(row) -> bool:
    return bool(np.greater(value_of(row, "pipeline_period_s"), value_of(row, "step_latency_s")))
