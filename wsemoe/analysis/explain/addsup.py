"""How one point's numbers combine: stage rooflines → layer times → step time → throughput and MFU, and memory terms
→ stage peaks → constraint, each written out with its numbers and checked against the column; for SRAM serving,
the SRAM-serving breakdown is sramsum.py; at PE level
(hardware.pe_fabric), the edge's stream, the expert regions, dispatch and combine on the PE mesh and SRAM per PE
(`pe_fabric`: cost/wafer/{edge,streaming,pememory}.py). The formulas mirror cost/node/stages.py (rooflines,
`workload.overlap`, `workload.comm_overlap`) and cost/node/memory.py; a line whose value does not match says so.
"""

from __future__ import annotations

import math

from wsemoe.cost.batch import layer_flops, micro_batch
from wsemoe.cost.serving import turns
from wsemoe.cost.stagecost import STAGE_COMM, compute_time, passes_in, stage_work
from wsemoe.cost.wafer import edge, pememory
from wsemoe.cost.wafer.fabric import pe_facts, wavelets
from wsemoe.cost.wafer.streaming import moves, passes
from wsemoe.sweep.feasibility import shown_ratio
from wsemoe.wording import number

LAYERS = {"moe_layer": ("attention", "moe"), "dense_layer": ("attention", "dense_ffn"), "head": ("head",)}
MEMORY = {"attn": ("weights", "train_state", "kept_act", "kv", "attn_transient", "bta_buffer", "prefetch", "attn_grads"),
          "moe": ("weights", "train_state", "kept_act", "kv", "moe_transient", "moe_deltas")}


def secs(x: float) -> str:
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


def value_of(row, col) -> float:
    return 0.0 if absent(row, col) else float(row[col])   # an absent or empty column reads 0


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
    return tuple({k: value_of(row, c) for k, c in part.items()} for part in stage_columns(row.keys(), stage))


def _launch(row, stage: str) -> float:
    col = launch_column(row.keys(), stage)
    return 0.0 if col is None else value_of(row, col)


def _layer(row, layer: str, overlap: str, comm_overlap: str) -> tuple[float, str]:
    """(time, formula) of one layer kind from its stages' terms, as cost/stages.Layer combines them."""
    stages = LAYERS[layer]
    split = [_stage_terms(row, s) for s in stages]
    if overlap == "layer":  # every term summed over the stages, then the slowest binds
        names = list(dict.fromkeys(t for terms, _ in split for t in terms))
        sums = {t: [terms[t] for terms, _ in split if t in terms] for t in names}
        core = max(sum(v) for v in sums.values())
        text = "max(" + ", ".join(f"{t} {' + '.join(secs(x) for x in v)}" for t, v in sums.items()) + ")"
    elif overlap == "stage":  # each stage its own roofline, stages back to back
        core = sum(max(terms.values()) for terms, _ in split)
        text = " + ".join(f"{s} max({', '.join(f'{t} {secs(v)}' for t, v in terms.items())})"
                          for s, (terms, _) in zip(stages, split))
    else:  # nothing overlaps
        core = sum(sum(terms.values()) for terms, _ in split)
        text = " + ".join(f"{s} {' + '.join(f'{t} {secs(v)}' for t, v in terms.items())}" for s, (terms, _) in zip(stages, split))
    launch = sum(_launch(row, s) for s in stages)
    if launch:  # kernel launches are serial in every overlap mode
        core += launch
        text = f"{text} + kernel launches {secs(launch)}"
    comm = {f"{s}:{p}": v for s, (_, phases) in zip(stages, split) for p, v in phases.items()}
    if layer == "dense_layer" and "dense_layer_allreduce_s" in row:  # HER: the home wafer's all-reduce only
        comm["attention:allreduce"] = value_of(row, "dense_layer_allreduce_s")
    shown = " + ".join(f"{k} {secs(v)}" for k, v in comm.items() if v)
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
        out.append((col, row[col], "s", f"{text} = {secs(times[layer])} {check(times[layer], value_of(row, col))}"))
    counts = {"moe_layer": moe_layers, "dense_layer": layers - moe_layers, "head": 1}
    mig = value_of(row, "migration_exposed_s")
    step = sum(counts[k] * times.get(k, 0.0) for k in counts) + mig
    parts = [f"{counts[k]} × {secs(times.get(k, 0.0))} ({k.replace('_', ' ')})" for k in counts]
    if "migration_exposed_s" in row:
        parts.append(f"{secs(mig)} (exposed migration)")
    out.append(("step_time_s", row["step_time_s"], "s",
                f"{' + '.join(parts)} = {secs(step)} {check(step, value_of(row, 'step_time_s'))}"))
    tokens = value_of(row, "tokens_per_microbatch")
    out.append(("tokens_per_s", row["tokens_per_s"], "tokens/s",
                f"{tokens:,.0f} tokens per micro-batch / {secs(step)} = {tokens / step:,.6g} tokens/s "
                f"{check(tokens / step, value_of(row, 'tokens_per_s'))}"))
    flops, peak_flops = value_of(row, "model_flops_per_step"), value_of(row, "format_peak_flops")
    mfu = flops / (step * nodes * peak_flops)
    out.append(("mfu", row["mfu"], "1", f"{flops:.4g} model FLOPs / ({secs(step)} × {nodes} nodes × "
                f"{peak_flops:.4g} FLOP/s) = {mfu:.4g} {check(mfu, value_of(row, 'mfu'))}"))
    return out


def memory(row, comm_overlap: str = "none") -> list:
    """[(term, value, unit, how it is made of the memory terms)] from the terms to the constraint columns. With
    two micro-batches interleaved (`comm_overlap` microbatch) the other micro-batch's transients of the other
    stage are alive too (cost/node/memory.py: the KV column already holds both caches)."""
    out = []
    cap = value_of(row, "mem_capacity_node_bytes")
    for stage, terms in MEMORY.items():
        col = f"mem_{stage}_peak_node_bytes"
        if col not in row:
            continue
        if comm_overlap == "microbatch":
            other = [t for s, ts in MEMORY.items() if s != stage for t in ts if t not in terms]
            terms = (*terms, *other)
        vals = [(t, value_of(row, f"mem_{t}_node_bytes")) for t in terms]
        total = sum(v for _, v in vals)
        text = " + ".join(f"{t.replace('_', ' ')} {_b(v)}" for t, v in vals)
        out.append((col, row[col], "bytes", f"{text} = {_b(total)} {check(total, value_of(row, col))}"))
        g = f"g_mem_{stage}"
        if g in row and cap:
            out.append((g, row[g], "1", f"{_b(total)} / {_b(cap)} usable − 1 = {total / cap - 1:.4g} "
                        f"({shown_ratio(total / cap)}× capacity) {check(total / cap - 1, value_of(row, g))}"))
    return out


def serving(row, first: dict | None, layers: int, moe_layers: int, overlap: str, comm_overlap: str, nodes: int) -> list:
    """[(term, value, unit, how it is made)] of the serving metrics: TPOT is the decode step (two under microbatch),
    tokens/s per user its inverse; TTFT the step of the prefill `first` (its layers written out as above)."""
    out, n = [], turns(comm_overlap)   # two micro-batches take turns on the nodes under microbatch, prefill too
    if "tpot_s" in row:
        step, seqs = value_of(row, "step_time_s"), value_of(row, "sequences_per_microbatch")
        tpot = step * n
        text = f"one decode step {secs(step)}: every one of the {number(seqs)} sequences gets its next token" if \
            n == 1 else f"{n} × decode step {secs(step)} = {secs(tpot)}: {n} micro-batches of {number(seqs)} alternate"
        out.append(("tpot_s", row["tpot_s"], "s", f"{text} {check(tpot, value_of(row, 'tpot_s'))}"))
        out.append(("tokens_per_s_per_user", row["tokens_per_s_per_user"], "tokens/s", f"1 / {secs(tpot)} = "
                    f"{1 / tpot:,.6g} tokens/s {check(1 / tpot, value_of(row, 'tokens_per_s_per_user'))}"))
    if first is None or "ttft_s" not in row:   # prefill mode: the step is its prompts' prefill
        step, turn = value_of(row, "step_time_s"), "" if n == 1 else f" × {n} micro-batches taking turns"
        text = f"the prefill step {secs(step)}{turn} {check(step * n, value_of(row, 'ttft_s'))}"
        return out + [("ttft_s", row["ttft_s"], "s", text)] if "ttft_s" in row else out
    for name, value, unit, text in steps(first, layers, moe_layers, overlap, comm_overlap, nodes):
        if name.endswith("_time_s") and name != "step_time_s":
            out.append((f"prefill {name}", value, unit, text))
        elif name == "step_time_s":
            step, prompts = value_of(first, "step_time_s"), value_of(first, "sequences_per_microbatch")
            ttft, turn = step * n, "" if n == 1 else f"; {n} micro-batches of prompts alternate: {n} × {secs(step)}"
            out.append(("ttft_s", row["ttft_s"], "s", f"prefill of {prompts:,.0f} prompts at once, no queueing: "
                        f"{text}{turn}; ttft_s {check(ttft, value_of(row, 'ttft_s'))}"))
    cap, top = value_of(first, "mem_capacity_node_bytes"), value_of(first, "mem_peak_node_bytes")
    if "g_mem_prefill" in row and cap:
        out.append(("g_mem_prefill", row["g_mem_prefill"], "1", f"prefill peak {_b(top)} / {_b(cap)} usable − 1 = "
                    f"{top / cap - 1:.4g} {check(top / cap - 1, value_of(row, 'g_mem_prefill'))}"))
    return out


# SRAM serving (weight_source: sram): each layer kind from its operators, the one-token latency from its stages
# (wafers) and hops and from its five terms, then the step, the period, time per output token and tokens per second.

def absent(row, col) -> bool:
    v = row.get(col)
    return v is None or (isinstance(v, float) and math.isnan(v))


def pe_fabric(row, hw, m, wl, mp) -> list:
    """Every line of the PE-fabric breakdown, in order."""
    pe, shape = pe_facts(hw), micro_batch(hw, wl, mp)
    work = stage_work(hw, m, wl, mp, shape, layer_flops(m, wl, shape), {"expert_imbalance": value_of(row, "expert_imbalance")})
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
                    f"{number(pe.clock_hz / 1e9)} GHz) = {secs(t)} {check(t, value_of(row, f'{stage}_edge_s'))}"))
    return out


def _regions(row, pe, wl, hw, shape, work) -> list:
    P, clock = passes(wl), pe.clock_hz
    A, n, fill = value_of(row, "expert_pacing_cycles"), value_of(row, "expert_tokens"), value_of(row, "expert_fill_s")
    pipe = P * A * n / clock + fill
    router, _, shared = work["moe"].parts
    rest = compute_time(hw, wl, shape.nodes, router) + compute_time(hw, wl, shape.nodes, shared)
    return [("expert_pipeline_s", row["expert_pipeline_s"], "s",
             f"{number(P)} passes × {A:.4g} cycles × {n:,.0f} tokens / {number(clock / 1e9)} GHz + fill and drain {secs(fill)} = "
             f"{secs(pipe)} {check(pipe, value_of(row, 'expert_pipeline_s'))}"),
            ("moe_regions_s", row["moe_regions_s"], "s",
             f"router and shared experts {secs(rest)} + expert_pipeline_s {secs(pipe)} = {secs(rest + pipe)} "
             f"{check(rest + pipe, value_of(row, 'moe_regions_s'))}")]


def _phases(row, pe, m, wl) -> list:
    out, M = [], moves(wl)
    per_value = float(wavelets(1.0, wl.bytes_per_act, pe))
    for phase in ("dispatch", "combine"):
        link, path = value_of(row, f"{phase}_max_link_bytes"), value_of(row, f"{phase}_path_s")
        t = M * link / wl.bytes_per_act * per_value / pe.clock_hz + path
        out.append((f"moe_{phase}_s", row[f"moe_{phase}_s"], "s",
                    f"{number(M)} moves × busiest PE link {_b(link)} ({number(per_value)} link cycle a value) + "
                    f"longest path and overhead {secs(path)} = {secs(t)} {check(t, value_of(row, f'moe_{phase}_s'))}"))
    return out


def _sram(row, pe) -> list:
    room = float(pememory.room(pe))
    out = []
    for stage, parts in (("attn", ("pe_mem_attn_held", "pe_mem_attn_linear", "pe_mem_scores")),
                         ("moe", ("pe_mem_moe_held", "pe_mem_expert_weights", "pe_mem_expert_grads",
                                 "pe_mem_expert_tokens", "pe_mem_expert_deltas"))):
        vals = [(p, value_of(row, f"{p}_bytes")) for p in parts]
        total = sum(v for _, v in vals)
        text = " + ".join(f"{p.removeprefix('pe_mem_').replace('_', ' ')} {_b(v)}" for p, v in vals)
        out.append((f"pe_mem_{stage}_peak_bytes", row[f"pe_mem_{stage}_peak_bytes"], "bytes",
                    f"{text} = {_b(total)} {check(total, value_of(row, f'pe_mem_{stage}_peak_bytes'))}"))
        out.append((f"g_pe_sram_{stage}", row[f"g_pe_sram_{stage}"], "1",
                    f"{_b(total)} / {_b(room)} beside the program − 1 = {total / room - 1:.4g} "
                    f"{check(total / room - 1, value_of(row, f'g_pe_sram_{stage}'))}"))
    return out
