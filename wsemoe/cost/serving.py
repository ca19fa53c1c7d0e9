"""Every output column of some points: the step (with the fabric's communication) and, for inference, the
serving metrics: time to first token (TTFT), time per output token (TPOT), tokens per second per user.

TPOT is the decode step: each step produces one token for every sequence of the micro-batch; under
`comm_overlap: microbatch` two such micro-batches take turns on the same nodes, so a sequence's next token
comes two steps later (the throughput, a micro-batch's tokens per step, is unchanged). TTFT is the
prefill of the decode batch's prompts, evaluated by the same cost model in prefill mode at S = prompt_len:
all G·B prompts of every attention group prefilled together, at the decode point's batch, mapping and
settings, with no queueing before it (docs/cost-model.md#serving-metrics); under `microbatch` both
micro-batches' prompts take turns the same way, so a prompt's first token also comes two prefill steps in.
The prefill is one more call of `step.evaluate` on the same broadcast arrays, so its structures come from
the same cache and its cost grows with the points, not with a loop over them. Its memory peak is a
constraint (`g_mem_prefill`): a TTFT is only reported for a prefill that fits.
"""

from __future__ import annotations

from types import SimpleNamespace

from wsemoe.cost import step
from wsemoe.cost.energy import columns as energy
from wsemoe.cost.wafer import serving as sram
from wsemoe.cost.wafer.streaming import fabric_model


def evaluate(hw, m, wl, mp, bal=None, histogram=None, coded: bool = False) -> dict:
    """All output columns of the points described by the namespaces (scalars or broadcast arrays); SRAM serving
    (weight_source: sram) is the PE-level pipeline of cost.wafer.serving, with its own serving metrics."""
    if hw.weight_source == "sram":
        out = sram.evaluate(hw, m, wl, mp, bal, histogram, coded)
    else:
        out = step.evaluate(hw, m, wl, mp, comm=fabric_model(hw, m, wl, mp, bal, histogram), coded=coded)
        out.update(serving_columns(hw, m, wl, mp, bal, histogram, out))
    out.update(energy.columns(hw, m, wl, mp, out))   # a consumer of the terms above (cost/energy)
    return out


def serving_columns(hw, m, wl, mp, bal, histogram, out: dict) -> dict:
    """TTFT in prefill (the step itself); TPOT, tokens/s per user and, with a prompt length, TTFT in decode."""
    n = turns(getattr(wl, "comm_overlap", "none"))
    if wl.mode == "prefill":   # under microbatch a prompt's forward pass alternates with the other micro-batch's
        return {"ttft_s": out["step_time_s"] * n}
    if wl.mode != "decode":
        return {}
    tpot = out["step_time_s"] * n
    cols = {"tpot_s": tpot, "tokens_per_s_per_user": 1.0 / tpot}
    if getattr(wl, "prompt_len", None) is None:
        return cols
    first = prefill_step(hw, m, wl, mp, bal, histogram)
    cols["ttft_s"] = first["step_time_s"] * n   # both micro-batches' prompts are prefilled, taking turns as in decode
    cols["mem_prefill_peak_node_bytes"] = first["mem_peak_node_bytes"]
    cols["g_mem_prefill"] = first["mem_peak_node_bytes"] / first["mem_capacity_node_bytes"] - 1.0
    return cols


def turns(comm_overlap: str) -> int:
    """Micro-batches taking turns on the nodes: 2 under `comm_overlap: microbatch` (one computes while the other
    communicates: step_time_s is the steady-state time per micro-batch, each micro-batch's own layer waits for the
    other's core, so a sequence gets a token every second step, and a prompt its first token two prefill steps
    in), 1 otherwise."""
    return 2 if comm_overlap == "microbatch" else 1


def prefill_step(hw, m, wl, mp, bal=None, histogram=None, coded: bool = True) -> dict:
    """Every column of the prefill behind a decode point's TTFT (its step time is `ttft_s`)."""
    pre = prefill_workload(hw, wl, mp)
    return step.evaluate(hw, m, pre, mp, comm=fabric_model(hw, m, pre, mp, bal, histogram), coded=coded)


def prefill_workload(hw, wl, mp) -> SimpleNamespace:
    """The workload whose step is the decode point's TTFT: prefill of its G·B sequences per group (B as the
    decode step uses it, tokens_per_device resolved) at S = prompt_len, every other setting kept."""
    dec = step.with_batch(hw, wl, mp)
    fields = dec.model_dump() if hasattr(dec, "model_dump") else dict(vars(dec))
    fields.update(mode="prefill", seq_len=wl.prompt_len, tokens_per_device=None, prompt_len=None)
    return SimpleNamespace(**fields)
