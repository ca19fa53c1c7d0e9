"""How a weight-streaming point's PE-fabric terms combine (hardware.pe_fabric): the edge's stream per stage, the MoE
stage's regions term from the busiest expert region's pipeline, dispatch and combine from the busiest PE link and
the longest path, and SRAM per PE at each stage's peak; each written out and checked against its column (the
formulas of cost/wafer/{edge,streaming,pememory}.py, docs/cost-model.md "Weight streaming at PE level").
"""

from __future__ import annotations

from wsemoe.analysis.addsup import _b, _check, _get, _t
from wsemoe.cost.batch import layer_flops, micro_batch
from wsemoe.cost.stagecost import compute_time, passes_in, stage_work
from wsemoe.cost.wafer import edge, pememory
from wsemoe.cost.wafer.fabric import pe_facts, wavelets
from wsemoe.cost.wafer.streaming import passes


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
                    f"max(in {w_in:.4g}, out {w_out:.4g} wavelets) / ({edge.channels(pe):g} I/O channels × "
                    f"{pe.clock_hz / 1e9:g} GHz) = {_t(t)} {_check(t, _get(row, f'{stage}_edge_s'))}"))
    return out


def _regions(row, pe, wl, hw, shape, work) -> list:
    P, clock = passes(wl), pe.clock_hz
    A, n, fill = _get(row, "expert_pacing_cycles"), _get(row, "expert_tokens"), _get(row, "expert_fill_s")
    pipe = P * A * n / clock + fill
    router, _, shared = work["moe"].parts
    rest = compute_time(hw, wl, shape.nodes, router) + compute_time(hw, wl, shape.nodes, shared)
    return [("expert_pipeline_s", row["expert_pipeline_s"], "s",
             f"{P:g} passes × {A:.4g} cycles × {n:,.0f} tokens / {clock / 1e9:g} GHz + fill and drain {_t(fill)} = "
             f"{_t(pipe)} {_check(pipe, _get(row, 'expert_pipeline_s'))}"),
            ("moe_regions_s", row["moe_regions_s"], "s",
             f"router and shared experts {_t(rest)} + expert_pipeline_s {_t(pipe)} = {_t(rest + pipe)} "
             f"{_check(rest + pipe, _get(row, 'moe_regions_s'))}")]


def _phases(row, pe, m, wl) -> list:
    out, P = [], passes(wl)
    per_value = float(wavelets(1.0, wl.bytes_per_act, pe))
    for phase in ("dispatch", "combine"):
        link, path = _get(row, f"{phase}_max_link_bytes"), _get(row, f"{phase}_path_s")
        t = P * link / wl.bytes_per_act * per_value / pe.clock_hz + path
        out.append((f"moe_{phase}_s", row[f"moe_{phase}_s"], "s",
                    f"{P:g} passes × busiest PE link {_b(link)} ({per_value:g} wavelet per value, one a cycle) + "
                    f"longest path and overhead {_t(path)} = {_t(t)} {_check(t, _get(row, f'moe_{phase}_s'))}"))
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
                    f"{text} = {_b(total)} {_check(total, _get(row, f'pe_mem_{stage}_peak_bytes'))}"))
        out.append((f"g_pe_sram_{stage}", row[f"g_pe_sram_{stage}"], "1",
                    f"{_b(total)} / {_b(room)} beside the program − 1 = {total / room - 1:.4g} "
                    f"{_check(total / room - 1, _get(row, f'g_pe_sram_{stage}'))}"))
    return out
