"""How one point's numbers combine: stage rooflines → layer times → step time → throughput and MFU, and memory terms
→ stage peaks → constraint, each written out with its numbers and checked against the column; for SRAM serving,
operators → layers → stages and hops → one token's latency → step, period and rates (`serving`); at PE level
(hardware.pe_fabric), the edge's stream, the expert regions, dispatch and combine on the PE mesh and SRAM per PE
(`pe_fabric`: cost/wafer/{edge,streaming,pememory}.py). The formulas mirror cost/node/stages.py (rooflines,
`workload.overlap`, `workload.comm_overlap`) and cost/node/memory.py; a line whose value does not match says so.
"""

from __future__ import annotations

import math

import numpy as np

from wsemoe.cost.batch import layer_flops, micro_batch
from wsemoe.cost.serving import turns
from wsemoe.cost.stagecost import STAGE_COMM, compute_time, passes_in, stage_work
from wsemoe.cost.wafer import edge, pememory, regions
from wsemoe.cost.wafer.fabric import pe_facts, wavelets
from wsemoe.cost.wafer.streaming import passes
from wsemoe.wording import count, noun, number

LAYERS = {"moe_layer": ("attention", "moe"), "dense_layer": ("attention", "dense_ffn"), "head": ("head",)}
MEMORY = {"attn": ("weights", "train_state", "kept_act", "kv", "attn_transient", "bta_buffer"),
          "moe": ("weights", "train_state", "kept_act", "kv", "moe_transient")}


def _t(x: float) -> str:
    """Seconds with a readable prefix."""
    for f, u in ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs")):
        if abs(x) >= f:
            return f"{x / f:.4g} {u}"
    return "0 s" if x == 0 else f"{x * 1e9:.4g} ns"


def _b(x: float) -> str:
    for f, u in ((1e12, "TB"), (1e9, "GB"), (1e6, "MB"), (1e3, "kB")):
        if abs(x) >= f:
            return f"{x / f:.4g} {u}"
    return f"{x:.4g} B"


def check(value: float, column: float) -> str:
    """'✓' where a value written out again matches the model's column, else what the column holds."""
    return "✓" if math.isclose(value, column, rel_tol=1e-9, abs_tol=1e-300) else f"≠ {column:.6g} in the model's column"


def _get(row, col) -> float:
    return 0.0 if _missing(row, col) else float(row[col])   # an absent or empty column reads 0


SERIAL = "launch"   # a stage's kernel launches: serial, added to its roofline (`<stage>_launch_s`)


def stage_columns(names, stage: str) -> tuple[dict, dict]:
    """({term: column} of a stage's concurrent terms, {phase: column} of its communication), from the
    column names `<stage>_<term>_s` among `names` (what `eval` and the layer invariant both combine); the
    serial kernel-launch column is neither (`launch_column`)."""
    comm_names = {c.removesuffix("_s") for c in STAGE_COMM.get(stage, ())}
    terms, comm = {}, {}
    for col in names:
        term = col.removeprefix(f"{stage}_").removesuffix("_s")
        if col.startswith(f"{stage}_") and col.endswith("_s") and "_" not in term \
                and term not in ("time", "comm", SERIAL):
            (comm if term in comm_names else terms)[term] = col
    return terms, comm


def launch_column(names, stage: str) -> str | None:
    """The column of a stage's kernel launches, if the model wrote one."""
    col = f"{stage}_{SERIAL}_s"
    return col if col in names else None


def _stage_terms(row, stage: str) -> tuple[dict, dict]:
    """(concurrent terms, communication phases) of a stage at one point, as numbers."""
    return tuple({k: _get(row, c) for k, c in part.items()} for part in stage_columns(row.keys(), stage))


def _launch(row, stage: str) -> float:
    col = launch_column(row.keys(), stage)
    return 0.0 if col is None else _get(row, col)


def _layer(row, layer: str, overlap: str, comm_overlap: str) -> tuple[float, str]:
    """(time, formula) of one layer kind from its stages' terms, as cost/stages.Layer combines them."""
    stages = LAYERS[layer]
    split = [_stage_terms(row, s) for s in stages]
    if overlap == "layer":  # every term summed over the stages, then the slowest binds
        names = list(dict.fromkeys(t for terms, _ in split for t in terms))
        sums = {t: [terms[t] for terms, _ in split if t in terms] for t in names}
        core = max(sum(v) for v in sums.values())
        text = "max(" + ", ".join(f"{t} {' + '.join(_t(x) for x in v)}" for t, v in sums.items()) + ")"
    elif overlap == "stage":  # each stage its own roofline, stages back to back
        core = sum(max(terms.values()) for terms, _ in split)
        text = " + ".join(f"{s} max({', '.join(f'{t} {_t(v)}' for t, v in terms.items())})"
                          for s, (terms, _) in zip(stages, split))
    else:  # nothing overlaps
        core = sum(sum(terms.values()) for terms, _ in split)
        text = " + ".join(f"{s} {' + '.join(f'{t} {_t(v)}' for t, v in terms.items())}" for s, (terms, _) in zip(stages, split))
    launch = sum(_launch(row, s) for s in stages)
    if launch:  # kernel launches are serial in every overlap mode
        core += launch
        text = f"{text} + kernel launches {_t(launch)}"
    comm = {f"{s}:{p}": v for s, (_, phases) in zip(stages, split) for p, v in phases.items()}
    if layer == "dense_layer" and "dense_layer_allreduce_s" in row:  # HER: the home wafer's all-reduce only
        comm["attention:allreduce"] = _get(row, "dense_layer_allreduce_s")
    shown = " + ".join(f"{k} {_t(v)}" for k, v in comm.items() if v)
    if comm_overlap == "microbatch":  # one micro-batch communicates while the other computes
        total = max(core, sum(comm.values()))
        return total, f"max({text}, communication {shown or '0 s'})"
    total = core + sum(comm.values())
    return total, text + (f" + communication {shown}" if shown else "")


def steps(row, layers: int, moe_layers: int, overlap: str, comm_overlap: str, nodes: int) -> list:
    """[(term, value, unit, how it is made of the terms above)] from stage terms to MFU (at the peak of the
    model's formats, `format_peak_flops`)."""
    out, times = [], {}
    for layer in LAYERS:
        col = f"{layer}_time_s"
        if col not in row:
            continue
        times[layer], text = _layer(row, layer, overlap, comm_overlap)
        out.append((col, row[col], "s", f"{text} = {_t(times[layer])} {check(times[layer], _get(row, col))}"))
    counts = {"moe_layer": moe_layers, "dense_layer": layers - moe_layers, "head": 1}
    mig = _get(row, "migration_exposed_s")
    step = sum(counts[k] * times.get(k, 0.0) for k in counts) + mig
    parts = [f"{counts[k]} × {_t(times.get(k, 0.0))} ({k.replace('_', ' ')})" for k in counts]
    if "migration_exposed_s" in row:
        parts.append(f"{_t(mig)} (exposed migration)")
    out.append(("step_time_s", row["step_time_s"], "s",
                f"{' + '.join(parts)} = {_t(step)} {check(step, _get(row, 'step_time_s'))}"))
    tokens = _get(row, "tokens_per_microbatch")
    out.append(("tokens_per_s", row["tokens_per_s"], "tokens/s",
                f"{tokens:,.0f} tokens per micro-batch / {_t(step)} = {tokens / step:,.6g} tokens/s "
                f"{check(tokens / step, _get(row, 'tokens_per_s'))}"))
    flops, peak_flops = _get(row, "model_flops_per_step"), _get(row, "format_peak_flops")
    mfu = flops / (step * nodes * peak_flops)
    out.append(("mfu", row["mfu"], "1", f"{flops:.4g} model FLOPs / ({_t(step)} × {nodes} nodes × "
                f"{peak_flops:.4g} FLOP/s) = {mfu:.4g} {check(mfu, _get(row, 'mfu'))}"))
    return out


def memory(row, comm_overlap: str = "none") -> list:
    """[(term, value, unit, how it is made of the memory terms)] from the terms to the constraint columns. With
    two micro-batches interleaved (`comm_overlap` microbatch) the other micro-batch's transients of the other
    stage are alive too (cost/node/memory.py: the KV column already holds both caches)."""
    out = []
    cap = _get(row, "mem_capacity_node_bytes")
    for stage, terms in MEMORY.items():
        col = f"mem_{stage}_peak_node_bytes"
        if col not in row:
            continue
        if comm_overlap == "microbatch":
            other = [t for s, ts in MEMORY.items() if s != stage for t in ts if t not in terms]
            terms = (*terms, *other)
        vals = [(t, _get(row, f"mem_{t}_node_bytes")) for t in terms]
        total = sum(v for _, v in vals)
        text = " + ".join(f"{t.replace('_', ' ')} {_b(v)}" for t, v in vals)
        out.append((col, row[col], "bytes", f"{text} = {_b(total)} {check(total, _get(row, col))}"))
        g = f"g_mem_{stage}"
        if g in row and cap:
            out.append((g, row[g], "1", f"{_b(total)} / {_b(cap)} usable − 1 = {total / cap - 1:.4g} "
                        f"({total / cap:.3g}× capacity) {check(total / cap - 1, _get(row, g))}"))
    return out


def serving(row, first: dict | None, layers: int, moe_layers: int, overlap: str, comm_overlap: str, nodes: int) -> list:
    """[(term, value, unit, how it is made)] of the serving metrics: TPOT is the decode step (two under microbatch),
    tokens/s per user its inverse; TTFT the step of the prefill `first` (its layers written out as above)."""
    out, n = [], turns(comm_overlap)   # two micro-batches take turns on the nodes under microbatch, prefill too
    if "tpot_s" in row:
        step, seqs = _get(row, "step_time_s"), _get(row, "sequences_per_microbatch")
        tpot = step * n
        text = f"one decode step {_t(step)}: every one of the {number(seqs)} sequences gets its next token" if \
            n == 1 else f"{n} × decode step {_t(step)} = {_t(tpot)}: {n} micro-batches of {number(seqs)} alternate"
        out.append(("tpot_s", row["tpot_s"], "s", f"{text} {check(tpot, _get(row, 'tpot_s'))}"))
        out.append(("tokens_per_s_per_user", row["tokens_per_s_per_user"], "tokens/s", f"1 / {_t(tpot)} = "
                    f"{1 / tpot:,.6g} tokens/s {check(1 / tpot, _get(row, 'tokens_per_s_per_user'))}"))
    if first is None or "ttft_s" not in row:   # prefill mode: the step is its prompts' prefill
        step, turn = _get(row, "step_time_s"), "" if n == 1 else f" × {n} micro-batches taking turns"
        text = f"the prefill step {_t(step)}{turn} {check(step * n, _get(row, 'ttft_s'))}"
        return out + [("ttft_s", row["ttft_s"], "s", text)] if "ttft_s" in row else out
    for name, value, unit, text in steps(first, layers, moe_layers, overlap, comm_overlap, nodes):
        if name.endswith("_time_s") and name != "step_time_s":
            out.append((f"prefill {name}", value, unit, text))
        elif name == "step_time_s":
            step, prompts = _get(first, "step_time_s"), _get(first, "sequences_per_microbatch")
            ttft, turn = step * n, "" if n == 1 else f"; {n} micro-batches of prompts alternate: {n} × {_t(step)}"
            out.append(("ttft_s", row["ttft_s"], "s", f"prefill of {prompts:,.0f} prompts at once, no queueing: "
                        f"{text}{turn}; ttft_s {check(ttft, _get(row, 'ttft_s'))}"))
    cap, top = _get(first, "mem_capacity_node_bytes"), _get(first, "mem_peak_node_bytes")
    if "g_mem_prefill" in row and cap:
        out.append(("g_mem_prefill", row["g_mem_prefill"], "1", f"prefill peak {_b(top)} / {_b(cap)} usable − 1 = "
                    f"{top / cap - 1:.4g} {check(top / cap - 1, _get(row, 'g_mem_prefill'))}"))
    return out


# SRAM serving (weight_source: sram): each layer kind from its operators, the one-token latency from its stages
# (wafers) and hops and from its five terms, then the step, the period, time per output token and tokens per second.

SERVING_KINDS = {"embedding": "embedding_time_s", "dense": "dense_layer_time_s", "moe": "moe_layer_time_s",
         "head": "head_time_s"}
SERVING_TERMS = {"local MACs": "pipeline_macs_s", "link": "pipeline_link_s", "hops": "pipeline_hops_s",
         "op overhead": "pipeline_overhead_s", "inter-wafer": "pipeline_inter_wafer_s"}


def serving_operators(row) -> list:
    """Each layer kind's time as the sum of its operators (one token)."""
    out = []
    for kind, col in SERVING_KINDS.items():
        ops = {c[len(kind) + 4:-2]: _get(row, c) for c in row.keys() if c.startswith(f"{kind}_op_")
               and not _missing(row, c)}
        if not ops or _missing(row, col):
            continue
        total = sum(ops.values())
        text = " + ".join(f"{op} {_t(v)}" for op, v in ops.items())
        out.append((col, row[col], "s", f"{text} = {_t(total)} {check(total, _get(row, col))}"))
    return out


def _missing(row, col) -> bool:
    v = row.get(col)
    return v is None or (isinstance(v, float) and math.isnan(v))


def serving_stages(row, m, wl) -> list:
    """The one-token latency as its stages (wafers, consecutive alike ones together; a MoE layer on the wafer of
    its attention, its experts possibly continuing on the next), hops, crossings and return."""
    W = int(round(_get(row, "wafers")))
    layer = {k: _get(row, c) for k, c in SERVING_KINDS.items()}
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
    hops, ret = _get(row, "wafer_hops") * _get(row, "wafer_hop_s"), _get(row, "token_return_s")
    cross = 0.0 if _missing(row, "crossing_s") else _get(row, "crossing_s")
    lines = [f"{noun(len(ws), 'wafer')} {_span(ws)}: {what} {_t(t)}" + (" each" if len(ws) > 1 else "")
             for ws, what, t in parts]
    text = "; ".join(lines) + f"; {number(_get(row, 'wafer_hops'))} wafer hops × {_t(_get(row, 'wafer_hop_s'))}; " + \
        (f"{number(_get(row, 'layer_splits'))} of them inside a MoE layer (experts' input too) {_t(cross)}; "
         if cross else "") + f"token return {_t(ret)}"
    latency = total + hops + cross + ret
    return [("pipeline_latency_s", row["pipeline_latency_s"], "s",
             f"{text} = {_t(latency)} {check(latency, _get(row, 'pipeline_latency_s'))}")]


def _span(ws: list) -> str:
    return f"{ws[0]}" if len(ws) == 1 else f"{ws[0]}–{ws[-1]}"


def serving_terms(row) -> list:
    """The one-token latency as its five terms, and β (the busiest stage per token) as the same five."""
    out = []
    for column, prefix in (("pipeline_latency_s", "pipeline"), ("busiest_stage_s", "busiest")):
        cols = {k: f"{prefix}_{c.removeprefix('pipeline_')}" for k, c in SERVING_TERMS.items()}
        if any(_missing(row, c) for c in cols.values()):
            continue
        parts = {k: _get(row, c) for k, c in cols.items()}
        total = sum(parts.values())
        text = " + ".join(f"{k} {_t(v)}" for k, v in parts.items())
        out.append((column, row[column], "s", f"by term: {text} = {_t(total)} {check(total, _get(row, column))}"))
    return out


def serving_rates(row, wl) -> list:
    """Step, period, time per output token, tokens per second; TTFT when the point has it."""
    beta, t1, B = _get(row, "busiest_stage_s"), _get(row, "pipeline_latency_s"), float(wl.B)
    out = []
    if wl.mode == "decode":
        q, a = getattr(wl, "draft_tokens", 0) + 1.0, float(getattr(wl, "accepted_tokens_per_step", 1.0))
        tau = float(getattr(wl, "draft_token_s", 0.0))
        sigma = 0.0 if _missing(row, "io_stall_s") else _get(row, "io_stall_s")
        W = _get(row, "wafers")
        step = t1 + W * sigma + (q - 1) * beta + (q - 1) * tau
        period = max(step, B * (q * beta + sigma))
        drafting = f" + {number(q - 1)} draft × τ {_t(tau)} (the draft model)" if tau > 0 else ""
        stalls = f" + {count(W, 'system')} × σ {_t(sigma)} (synchronous wafer I/O)" if sigma > 0 else ""
        out += [("step_latency_s", row["step_latency_s"], "s", f"t1 {_t(t1)}{stalls} + {number(q - 1)} draft × β "
                 f"{_t(beta)} ({row['busiest_stage']}){drafting} = {_t(step)} "
                 f"{check(step, _get(row, 'step_latency_s'))}"),
                ("pipeline_period_s", row["pipeline_period_s"], "s", f"max(step {_t(step)}, " + (
                    f"B·(q·β + σ) = {number(B)}·({number(q)}·{_t(beta)} + {_t(sigma)})" if sigma > 0 else
                    f"B·q·β = {number(B)}·{number(q)}·{_t(beta)}") + f") = {_t(period)} "
                 f"{check(period, _get(row, 'pipeline_period_s'))}"),
                ("tpot_s", row["tpot_s"], "s", f"period / {number(a)} accepted = {_t(period / a)} "
                 f"{check(period / a, _get(row, 'tpot_s'))}"),
                ("tokens_per_s", row["tokens_per_s"], "tokens/s", f"{number(B)} sequences × {number(a)} / period = "
                 f"{B * a / period:,.6g} {check(B * a / period, _get(row, 'tokens_per_s'))}")]
    if "ttft_s" in row.keys() and not _missing(row, "ttft_s"):
        out.append(_ttft(row, wl))
        if wl.mode == "prefill":   # the prompts are the step: their tokens over TTFT
            P, ttft = float(wl.seq_len), _get(row, "ttft_s")
            out.append(("tokens_per_s", row["tokens_per_s"], "tokens/s", f"{number(B)} prompts × {number(P)} tokens / "
                        f"TTFT = {B * P / ttft:,.6g} {check(B * P / ttft, _get(row, 'tokens_per_s'))}"))
    return out


def _ttft(row, wl):
    """TTFT as its terms: the B prompts' B·P tokens stream through once, t1 and β at context P (prefill: the
    point's own; decode: the prompt_* columns)."""
    decode = wl.mode == "decode"
    P, B = float(wl.prompt_len if decode else wl.seq_len), float(wl.B)
    t1 = _get(row, "prompt_latency_s" if decode else "pipeline_latency_s")
    beta = _get(row, "prompt_busiest_stage_s" if decode else "busiest_stage_s")
    sigma = 0.0 if _missing(row, "io_stall_s") else _get(row, "io_stall_s")
    W = _get(row, "wafers")
    ttft = t1 + W * sigma + (B * P - 1.0) * beta + (B - 1.0) * sigma
    stalls = f" + {number(W)} × σ {_t(sigma)} + ({number(B)} − 1) × σ" if sigma > 0 else ""
    who = f"the {number(B)} prompts of {number(P)} tokens stream" if B != 1 else f"the prompt of {number(P)} tokens streams"
    return ("ttft_s", row["ttft_s"], "s", f"{who} through once, at context {number(P)}: t1 {_t(t1)}{stalls} + "
            f"({number(B)}·{number(P)} − 1) × β {_t(beta)} = {_t(ttft)} {check(ttft, _get(row, 'ttft_s'))}")


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
    return bool(np.greater(_get(row, "pipeline_period_s"), _get(row, "step_latency_s")))


def pe_fabric(row, hw, m, wl, mp) -> list:
    """Every line of the PE-fabric breakdown, in order."""
    pe, shape = pe_facts(hw), micro_batch(hw, wl, mp)
    work = stage_work(hw, m, wl, mp, shape, layer_flops(m, wl, shape), {"expert_imbalance": _get(row, "expert_imbalance")})
    return _edge(row, pe, wl, work) + _regions(row, pe, wl, hw, shape, work) + _phases(row, pe, m, wl) + _sram(row, pe)


def _edge(row, pe, wl, work) -> list:
    out, rate = [], edge.rate(pe)
    for stage in ("attention", "moe"):
        w = work[stage]
        w_in, w_out = (float(x) for x in edge.stream_io(pe, passes_in(wl), w.weights.params, w.weights.nbytes, w.kept,
                                                         wl.bytes_per_act, wl.bytes_per_grad, wl.mode == "train"))
        t = max(w_in, w_out) / rate
        out.append((f"{stage}_edge_s", row[f"{stage}_edge_s"], "s",
                    f"max(in {w_in:.4g}, out {w_out:.4g} wavelets) / ({number(edge.channels(pe))} I/O channels × "
                    f"{number(pe.clock_hz / 1e9)} GHz) = {_t(t)} {check(t, _get(row, f'{stage}_edge_s'))}"))
    return out


def _regions(row, pe, wl, hw, shape, work) -> list:
    P, clock = passes(wl), pe.clock_hz
    A, n, fill = _get(row, "expert_pacing_cycles"), _get(row, "expert_tokens"), _get(row, "expert_fill_s")
    pipe = P * A * n / clock + fill
    router, _, shared = work["moe"].parts
    rest = compute_time(hw, wl, shape.nodes, router) + compute_time(hw, wl, shape.nodes, shared)
    return [("expert_pipeline_s", row["expert_pipeline_s"], "s",
             f"{number(P)} passes × {A:.4g} cycles × {n:,.0f} tokens / {number(clock / 1e9)} GHz + fill and drain {_t(fill)} = "
             f"{_t(pipe)} {check(pipe, _get(row, 'expert_pipeline_s'))}"),
            ("moe_regions_s", row["moe_regions_s"], "s",
             f"router and shared experts {_t(rest)} + expert_pipeline_s {_t(pipe)} = {_t(rest + pipe)} "
             f"{check(rest + pipe, _get(row, 'moe_regions_s'))}")]


def _phases(row, pe, m, wl) -> list:
    out, P = [], passes(wl)
    per_value = float(wavelets(1.0, wl.bytes_per_act, pe))
    for phase in ("dispatch", "combine"):
        link, path = _get(row, f"{phase}_max_link_bytes"), _get(row, f"{phase}_path_s")
        t = P * link / wl.bytes_per_act * per_value / pe.clock_hz + path
        out.append((f"moe_{phase}_s", row[f"moe_{phase}_s"], "s",
                    f"{number(P)} passes × busiest PE link {_b(link)} ({number(per_value)} link cycle a value) + "
                    f"longest path and overhead {_t(path)} = {_t(t)} {check(t, _get(row, f'moe_{phase}_s'))}"))
    return out


def _sram(row, pe) -> list:
    room = float(pememory.room(pe))
    out = []
    for stage, parts in (("attn", ("pe_mem_attn_held", "pe_mem_attn_linear", "pe_mem_scores")),
                         ("moe", ("pe_mem_moe_held", "pe_mem_expert_weights", "pe_mem_expert_tokens"))):
        vals = [(p, _get(row, f"{p}_bytes")) for p in parts]
        total = sum(v for _, v in vals)
        text = " + ".join(f"{p.removeprefix('pe_mem_').replace('_', ' ')} {_b(v)}" for p, v in vals)
        out.append((f"pe_mem_{stage}_peak_bytes", row[f"pe_mem_{stage}_peak_bytes"], "bytes",
                    f"{text} = {_b(total)} {check(total, _get(row, f'pe_mem_{stage}_peak_bytes'))}"))
        out.append((f"g_pe_sram_{stage}", row[f"g_pe_sram_{stage}"], "1",
                    f"{_b(total)} / {_b(room)} beside the program − 1 = {total / room - 1:.4g} "
                    f"{check(total / room - 1, _get(row, f'g_pe_sram_{stage}'))}"))
    return out
