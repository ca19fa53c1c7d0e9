"""Serving from SRAM across wafers: a model's layers pipelined over `W` wafers, a byte-balanced contiguous stage
each (regions.split), weights and KV cache in the PEs' SRAM; time per token, tokens per second per user and in aggregate, time
to first token, wafers needed, what binds and what does not fit. Scalars or arrays that broadcast; numpy only.

The busiest routed expert region's tokens are a step's expected maximum over its routing (balance/routing.py):
a decode step's B·q tokens, a prompt's B·P, pass each layer's regions before the sequences' next step, so its
expert stage is paced by the region that drew the most of them, not by the hottest expert's expected k·p_max
(DeepSeek-V3, uniform, 64 tokens a step: 6.85 copies against 2; they agree at many tokens).

The wafers are a dataflow pipeline: every layer's regions are their own PEs, so tokens stream through them, one
region working on a token while the next works on the one before (docs/cost-model.md, "Serving from SRAM"):

    t1      = embedding + Σ_layers layer + head + (W − 1)·wafer hop + crossings + far experts + token return
    β       = the busiest region or link's time per token (attention region, routed expert region × its tokens'
              share, shared experts, dispatch, combine, layer hop, dense region, head, system link)
    step    = t1 + W·σ + (q − 1)·β + d·τ   a sequence's step of q = d + 1 tokens (d drafts of τ s each first)
    period  = max(step, B·(q·β + σ))       B sequences share the stream: each waits for its step and its turn
    tpot    = period / a,   tokens/s per user = a / period,   tokens/s = B·a / period

with `a` accepted tokens per step (speculative decoding; the draft model, on its own hardware, makes its d tokens one
after another before the target verifies them, so its d·τ is in the step but not in the target's stream). A wafer
hop moves a token's activations over the system link (bytes / bandwidth + hop latency) and across the wafer to and
from its I/O edge; the token return carries the sampled token back to the first wafer; a hop inside a MoE layer (its
experts continue on the next wafer, the stages being a byte-balanced split: regions.split) also carries the experts'
input, and a token whose experts lie on both wafers passes through expert regions on each: the far wafer's dispatch,
GEMVs and combine, weighted by the chance that one of its top-k experts lies there (regions.split's `visits`).
σ is the stall of one synchronous transfer through a system's wafer I/O (`mapping.wafer_io: sync`, Cerebras'
launch software: every system stops its compute for each sequence's step it hands on, `hardware.sync_io_stall_s`;
0 when the I/O runs asynchronously from compute, the default). TTFT: the B prompts of P tokens stream through once
at context P, `t1 + W·σ + (B·P − 1)·β + (B − 1)·σ` (the head only on each prompt's last token; a prompt crosses each
system's I/O as one transfer).
"""

from __future__ import annotations

import numpy as np

from wsemoe.cost.node import params
from wsemoe.cost.node.stages import Coded
from wsemoe.cost.wafer import geometry, ladder, lattice, layer, operands, regions, unique
from wsemoe.cost.wafer.decode import add
from wsemoe.cost.wafer.fabric import pe_facts, seconds, wavelets
from wsemoe.cost.wafer.steprate import (STAGES, bound_terms, io_stall, paced, rate_columns, step_tokens,
                                        with_routed)

# What binds a served token, by index of its terms (a synchronous wafer I/O stall is its own: no system link
# carries it, so 'inter-wafer' read wrong on one wafer with no hop; so is the draft model's time, which no term of the
# target's pipeline holds); SRAM last: what does not fit.
BOUNDS = ("local MACs", "link bandwidth", "hop latency", "op overhead", "inter-wafer", "wafer I/O", "draft model",
          "SRAM")
TERMS = ("compute_cycles", "link_cycles", "latency_cycles", "overhead_cycles")
TERM_COLUMNS = ("pipeline_macs_s", "pipeline_link_s", "pipeline_hops_s", "pipeline_overhead_s", "pipeline_inter_wafer_s")
# β, the busiest stage's time per token, by the same five terms: what `bound` weighs where the stream binds
BUSIEST_COLUMNS = ("busiest_macs_s", "busiest_link_s", "busiest_hops_s", "busiest_overhead_s", "busiest_inter_wafer_s")
G_COLUMNS = ("g_sram_wafers", "g_sram_layer", "g_sram_pe", "g_sram_stages")



def collective_options(mp) -> dict:
    """The all-reduce pattern of every PE-level collective (a 2-level tree unless the mapping says otherwise)."""
    return {"pattern": getattr(mp, "pe_reduction", "tree"), "levels": 2}


def counts(m) -> dict:
    """How many times one pass runs each layer kind."""
    return {"embedding": 1.0, "dense": float(params.dense_layers(m)), "moe": float(params.moe_layers(m)), "head": 1.0}


def layers(m, g, pe, tokens, context, b, coll) -> dict:
    """Ops of every layer kind the model has for `tokens` tokens: {kind: {op: terms}}."""
    out = {"embedding": layer.embedding(m, g, pe, tokens, b), "head": layer.head(m, g, pe, tokens, b, coll)}
    if params.dense_layers(m) > 0:
        out["dense"] = layer.dense_layer(m, g, pe, tokens, context, b, coll)
    if params.moe_layers(m) > 0:
        out["moe"] = layer.moe_layer(m, g, pe, tokens, context, b, coll,
                                     wavelets(m.hidden_size, operands.of(b).act, pe))
    return {kind: layer.fused(ops, pe) for kind, ops in out.items()}


def links(hw, pe, m, g, wafers, b, cross=0.0) -> dict:
    """Seconds of one token's wafer hop (its activations over the system link, plus one layer hop's distance on
    the fabric), the busiest link's busy time per token, and the token return to the first wafer (over the link
    when W > 1; on one wafer, a layer hop's distance). At a boundary between whole layers the stage's last layer
    already pays its own `layer_hop` a block's width out of its region towards the I/O edge, so the hop adds only
    the receiving wafer's path from its edge to the first region; inside a split MoE layer the sending wafer's path
    from attention to its edge is the one no op pays (the far wafer's dispatch leaves from where the token lands,
    and the layer's hop is paid there): one distance a hop either way. The token return leaves the head, which
    pays no hop, so it crosses both wafers' paths.
    A hop inside a MoE layer (`cross` of them, regions.split) carries the experts' input beside the residual:
    a second activation vector, on the latency path and on that link."""
    bw = getattr(hw, "inter_wafer_link_bw_bytes_per_s", None)
    bw = hw.link_bw_bytes_per_s if bw is None else bw   # a swept figure is an array: `or` cannot test it
    latency = getattr(hw, "inter_wafer_hop_latency_s", None)
    latency = hw.hop_latency_s if latency is None else latency
    near = np.where(params.moe_layers(m) > 0, g.block_width, g.dense_side)
    edge = seconds(near * pe.hop_cycles, pe)   # one side: a region's path to or from its wafer's I/O edge
    busy = m.hidden_size * operands.of(b).act / bw
    return {"wafer_hop_s": busy + latency + edge, "system_link_s": busy * (1.0 + (np.asarray(cross) > 0)),
            "crossing_s": cross * busy, "over_link": wafers > 1,
            "token_return_s": np.where(wafers > 1, latency + 2.0 * edge, edge)}


def one_token(hw, pe, m, g, wafers, context, b, coll, cross=0.0, visits=0.0) -> dict:
    """One token through every op of the pipeline: ops per kind, layer times, hops, the latency and its terms;
    `visits` further wafers of split MoE layers on which the token meets one of its experts (expected,
    regions.split), each a dispatch, routed expert and combine more (layer.far_experts)."""
    ops = layers(m, g, pe, 1.0, context, b, coll)
    n, kinds = counts(m), {k: layer.total(v) for k, v in ops.items()}
    link = links(hw, pe, m, g, wafers, b, cross)
    hops = np.maximum(wafers - 1.0, 0.0)
    inter = hops * link["wafer_hop_s"] + link["crossing_s"] + np.where(link["over_link"], link["token_return_s"], 0.0)
    terms = [sum(n[k] * seconds(kinds[k][t], pe) for k in kinds) for t in TERMS]
    terms[2] = terms[2] + np.where(link["over_link"], 0.0, link["token_return_s"])
    far = [0.0] * len(TERMS)
    if "moe" in ops:
        extra = layer.far_experts(m, g, pe, ops["moe"], b, coll)
        far = [visits * seconds(extra[t], pe) for t in TERMS]
        terms = [a + f for a, f in zip(terms, far)]
    return {"ops": ops, "kinds": kinds, "links": link, "hops": hops, "terms": terms + [inter],
            "far_experts_s": sum(far), "latency": sum(terms) + inter}


def per_token(m, g, pe, context, b, coll, run: dict, prompt: bool = False) -> dict:
    """Seconds each region or link stage spends per token of the stream (the marginal cost of one more token:
    ops at two tokens less at one, `run` the one-token pass), {stage: (seconds, terms)}; routed experts see
    k·p_max of the tokens. `prompt`: a prompt's tokens, which skip the head (only a prompt's last token, in `run`,
    reaches it), so the head's stages never pace a prefill."""
    one, two, link = run["ops"], layers(m, g, pe, 2.0, context, b, coll), run["links"]
    groups: dict = {}
    for kind, ops in one.items():   # each layer kind's regions and links are stages of their own
        if prompt and kind == "head":
            continue
        for op, t1 in ops.items():
            if op != "experts":
                groups.setdefault((kind, layer.stage_of(kind, op)), []).append((t1, two[kind][op]))
    if "moe" in one:
        e1, e2 = (layer.expert_regions(m, g, pe, t, t, b, coll) for t in (1.0, 2.0))
        share = m.num_experts_per_tok * g.busiest_share
        groups[("moe", "routed experts")] = [(scaled(e1["routed"], share), scaled(e2["routed"], share))]
        if "shared" in e1:
            groups[("moe", "shared experts")] = [(e1["shared"], e2["shared"])]
    out = {}
    for key, pairs in groups.items():
        terms = [sum(np.asarray(b_[t]) - np.asarray(a_[t]) for a_, b_ in pairs) for t in TERMS]
        out[key] = (seconds(sum(terms), pe), [seconds(t, pe) for t in terms] + [0.0])
    out[("link", "system link")] = (link["system_link_s"], [0.0, 0.0, 0.0, 0.0, link["system_link_s"]])
    return out


def scaled(terms: dict, factor) -> dict:
    """An operator's terms × factor (a share of the tokens)."""
    return {k: np.asarray(terms[k]) * factor for k in TERMS}


def shape_of(hw, m, wl, pe) -> tuple:
    """The broadcast shape of the numeric inputs the serving model reads (any swept hardware or model field)."""
    fields = [*(v for v in (*vars(m).values(), *vars(hw).values(), *vars(wl).values()) if isinstance(v, np.ndarray)),
              wl.B, wl.seq_len, getattr(wl, "accepted_tokens_per_step", 1.0), getattr(wl, "prompt_len", None),
              getattr(wl, "draft_token_s", 0.0), getattr(hw, "sync_io_stall_s", 0.0),
              hw.pipeline_wafers, hw.hop_latency_s, getattr(hw, "inter_wafer_hop_latency_s", None),
              getattr(hw, "inter_wafer_link_bw_bytes_per_s", None), *vars(pe).values()]
    return np.broadcast_shapes(*(np.shape(f) for f in fields if f is not None and not isinstance(f, str)))


def evaluate(hw, m, wl, mp, bal=None, histogram=None, coded: bool = False) -> dict:
    """Every output column of SRAM serving for the points described by the namespaces (module docstring): each
    point's layout is the candidate density (ladder.densities) with the shortest period (prefill: TTFT)."""
    pe, cap, (u, w, cross, visits), g, built, inv = layout(hw, m, wl, mp, bal, histogram)
    k = m.num_experts_per_tok
    stream = wl.B * (wl.seq_len if wl.mode == "prefill" else step_tokens(wl))   # a step's tokens through a layer
    noise = geometry.routing_noise(built, inv, g.busiest_share, stream, k)
    out = candidates(hw, pe, m, wl, mp, g, cap["wafers"] + 0.0 * u, cross, visits, noise)
    out["attention_share"] = w
    shape = np.broadcast_shapes(u.shape, np.shape(out["pipeline_period_s"]))   # any input's axes (unique.once)
    best = np.argmin(np.broadcast_to(out["pipeline_period_s"], shape), axis=0)[None]   # prefill: the period is TTFT
    out, W = {k: pick(v, best, shape) for k, v in out.items()}, pick(cap["wafers"] + 0.0 * u, best, shape)
    prompt = getattr(wl, "prompt_len", None)
    prompts = wl.B * prompt if wl.mode == "decode" and prompt is not None else 0.0   # TTFT's tokens (`first_token`)
    out.update(first_token(hw, pe, m, wl, mp, type(g)(*(pick(f, best, shape) for f in g)), W, pick(cross, best, shape),
                           pick(visits, best, shape),
                           pick(geometry.routing_noise(built, inv, g.busiest_share, prompts, k), best, shape)))
    if params.moe_layers(m) > 0:   # the busiest expert's load over the mean: a step's expected maximum
        out["expert_imbalance"] = pick(noise * g.busiest_share * m.num_experts, best, shape)
    out.update(capacity_columns(m, wl, cap, pick(u, best, shape)))
    if params.moe_layers(m) > 0:   # the fullest PE of a MoE layer's tiles (lattice.side: at most u ≤ the room)
        out["tile_bytes_per_pe_max"] = np.maximum(cap["bytes"]["expert"] / out["expert_region_pes"],
                                                  cap["bytes"]["attention"] / out["attn_region_pes"])
    out["layer_splits"] = pick(cross, best, shape)
    # what binds, from the chosen candidate's terms (an argmax over every candidate's would be discarded)
    terms = bound_terms(wl, [out.pop(f"{LATE}{i}") for i in range(5)], [out[c] for c in BUSIEST_COLUMNS], W,
                        io_stall(hw, mp), out["pipeline_period_s"] > out["step_latency_s"])
    # 'SRAM' where what must be held does not fit; a pipeline of more wafers than layers (g_sram_stages) is not a
    # capacity limit: infeasible_reason says so, and bound names the time's largest term as elsewhere
    fits = np.all(np.broadcast_arrays(*[cap[c] <= 0 for c in G_COLUMNS if c != "g_sram_stages"]), axis=0)
    code = np.where(fits, np.argmax(np.stack(np.broadcast_arrays(*terms)), axis=0), len(BOUNDS) - 1)
    out["bound"] = _labels(code, BOUNDS, coded)
    out["busiest_stage"] = _labels(out.pop("busiest_code"), STAGES, coded)
    return out


LATE = "_late_term"   # one token's latency terms of every candidate, read by `evaluate` at the chosen one


def pick(v, best, shape):
    """Each point's value at its chosen candidate (`best`, along the leading axis of `shape`)."""
    if isinstance(v, unique.Deferred):   # gathered from the distinct structures at the chosen candidates only
        return v.pick(best, shape)
    return np.take_along_axis(np.broadcast_to(v, shape), best, axis=0)[0]


SIZED_FOR = 2.0   # regions may be sized for the caches of 2^j sequences too (a ladder in absolute batches)
SIZED_STEPS = 9   # 1 … 2^8 = 256 sequences, the largest batch the shipped serving sweep serves
SIZED_SHARES = ladder.SHARES   # every share, so a smaller batch is offered all of a larger one's layouts


def layout(hw, m, wl, mp, bal=None, histogram=None):
    """(PE facts, capacity, candidate (bytes per PE, attention share, wafer hops inside a MoE layer, expected extra
    expert wafers a token visits) along a leading axis, their Geometry, the layer structures built).

    The candidates are the layouts of the point's own batch and those sized for the caches of larger batches on a
    fixed ladder (1, 2, 4 … sequences, `sized_for`) wherever those fit the pipeline: the attention and dense
    regions are sized for speed as well as bytes, and a smaller batch is offered every layout a larger one on the
    ladder fits, so per-user speed never rises with the batch at a fixed wafer count up to the largest rung that
    fits (above it, at most twice it, a batch keeps its own layout and may run up to ~2% faster per user:
    docs/cost-model.md, Regions sized for speed)."""
    pe = pe_facts(hw)
    pe.kernels = getattr(mp, "pe_kernels", "fused")   # what an invocation overhead is paid for (layer.fused)
    cap, (u, w, cross, visits, pes) = unique.once(sizing, pe, m, wl, hw.pipeline_wafers,
                                                  np.zeros(shape_of(hw, m, wl, pe)))
    g, built, inv = geometry.geometry(m, mp, bal, histogram, pes, u.shape)
    shape = np.shape(g.busiest_share)   # the points' shape with the balance axes (a swept zipf_s, seed …)
    return pe, cap, tuple(np.broadcast_to(x, shape) for x in (u, w, cross, visits)), g, built, inv


def sizing(pe, m, wl, wafers, points):
    """What fits (regions.capacity) and the candidate layouts (`sized_for`) of points that broadcast like
    `points`, once per distinct combination of what they read (unique.once)."""
    cap = regions.capacity(pe, m, wl, wafers, np.shape(points))
    return cap, sized_for(pe, m, wl, cap)


def sized_for(pe, m, wl, cap):
    """(bytes per PE, attention share, wafer hops inside a MoE layer, expected extra expert wafers a token visits,
    region PEs) of every candidate along a leading
    axis: the layouts (ladder.layouts) sized for the caches of the largest rung 2^j of an absolute batch ladder
    that fits the pipeline (the point's own batch where it is larger, or where no rung fits), then those sized for
    each rung at or above B that fits (elsewhere the first candidate again). A batch up to that rung is offered
    every layout a larger one is, so per-user speed never rises with the batch there; above it (at most twice the
    rung) a batch keeps its own layout. The ladder is absolute, so more SRAM or PEs only add rungs."""
    pes_total, W = regions.wafer_pes(pe), cap["wafers"]
    u_pack = cap["u_pack"]   # one room for every batch (regions.room)

    def fit(batch):   # the greedy pass at capacity's layout (regions.densest): the fewest stages of any split
        return regions.stages_at(pe, m, regions.region_bytes(m, wl, batch), cap["u_dense"]) <= W

    rungs = [SIZED_FOR ** j for j in range(SIZED_STEPS)]
    fits = [fit(batch) for batch in rungs]
    top = 0.0 * W   # the largest rung whose caches fit (0: none)
    for batch, ok in zip(rungs, fits):
        top = np.where(ok, batch, top)
    own = regions.region_bytes(m, wl, np.where(top >= wl.B, top, wl.B))
    offered = [(batch, (batch >= wl.B) & (batch < top) & ok) for batch, ok in zip(rungs, fits)]  # top: own's
    offered = [(regions.region_bytes(m, wl, batch), ok) for batch, ok in offered if np.any(ok)]
    ladder.prefetch(m, W, [own] + [nbytes for nbytes, _ in offered])
    u0, w0, c0, v0 = ladder.layouts(m, W, own, u_pack, pes_total, pe=pe)
    first = region_pes(own, u0[:1], w0[:1])
    us, ws, cs, vs, pes = [u0], [w0], [c0], [v0], [region_pes(own, u0, w0)]
    for nbytes, ok in offered:
        u, w, c, v = ladder.layouts(m, W, nbytes, u_pack, pes_total, SIZED_SHARES, pe)
        mine = region_pes(nbytes, u, w)
        ok = ok[None]   # the candidates' leading axis, where a layout's arrays vary with no point
        us.append(np.where(ok, u, u0[:1]))
        ws.append(np.where(ok, w, w0[:1]))
        cs.append(np.where(ok, c, c0[:1]))
        vs.append(np.where(ok, v, v0[:1]))
        pes.append({k: np.where(ok, mine[k], first[k]) for k in first})
    return (stack(us), stack(ws), stack(cs), stack(vs),
            {k: stack([p[k] + 0.0 * u for p, u in zip(pes, us)]) for k in first})


def stack(parts: list):
    """Candidate arrays (leading axis) of shapes that broadcast after it, concatenated along it."""
    rest = np.broadcast_shapes(*[np.shape(p)[1:] for p in parts])
    return np.concatenate([np.broadcast_to(p, np.shape(p)[:1] + rest) for p in parts])


def region_pes(nbytes: dict, u, share=1.0) -> dict:
    """PEs of each region kind at `u` bytes per PE, a MoE layer's attention region `share` times its bytes' share,
    and the side of the lattice's tile (`tile`, lattice.side: an expert tile holds no more than `u` a PE), the one
    the stage split counts (regions.tile_parts): a function of `u`, whatever the SRAM."""
    out = {k: nbytes[k] / u for k in regions.KINDS}
    out["attention"] = out["attention"] * share
    out["tile"] = lattice.side(nbytes["expert"], u)
    return out


def layouts(hw, m, wl, mp, bal=None, histogram=None) -> list:
    """The MoE layer structures (placement, region traffic) some candidate layout of these points uses."""
    return layout(hw, m, wl, mp, bal, histogram)[4]


def placed_layer(hw, m, wl, mp, u, share=1.0, bal=None, histogram=None):
    """(the MoE layer's LayerTraffic, expert region side in PEs) of one point's layout at `u` bytes per PE and
    attention share (its `sram_bytes_per_pe`, `attention_share`), for figures; None for a dense model."""
    cap = regions.capacity(pe_facts(hw), m, wl, hw.pipeline_wafers)
    g, built, inv = geometry.geometry(m, mp, bal, histogram, region_pes(cap["bytes"], u, share), ())
    return (built[int(inv[0])], float(g.side)) if built else None


def candidates(hw, pe, m, wl, mp, g, W, cross=0.0, visits=0.0, noise=1.0) -> dict:
    """The time columns of every candidate layout (leading axis), the terms of what binds (`evaluate` reads them at
    the chosen candidate) and the busiest stage's codes; `noise` scales the routed experts' stage (`with_routed`)."""
    b, coll = operands.of_workload(wl), collective_options(mp)
    (run, beta, times), rows = unique.distinct(structure, hw, pe, m, g, W, wl.seq_len, b, coll, cross, visits,
                                               wl.mode == "prefill")
    run, beta = (run, beta) if rows is None else unique.scatter((run, beta), rows.inverse, rows.shape, rows.count)
    beta, stage, beta_terms = with_routed(*beta, noise)
    out = unique.deferred(times, rows)   # read at the chosen candidate only (`pick`)
    stall = io_stall(hw, mp)
    out.update(rate_columns(wl, run["latency"], beta, W, stall))
    if wl.mode == "prefill":   # the prompts are the step (decode: TTFT on the chosen layout only, `evaluate`)
        out["ttft_s"] = out["pipeline_period_s"]
    out.update({f"{LATE}{i}": t for i, t in enumerate(run["terms"][:5])})   # what binds: `evaluate`
    out["busiest_code"], out["busiest_stage_s"] = stage, beta
    out.update(zip(BUSIEST_COLUMNS, beta_terms[:5]))
    out.update({"attn_region_pes": g.attn_rows * g.attn_cols, "expert_region_pes": g.side ** 2,
                "expert_region_side": g.side, "placement_stretch": g.stretch})
    return out


def _labels(code, labels, coded: bool):
    c = Coded(np.asarray(code).astype(np.int16), labels)
    return c if coded else c.decode()


def first_token(hw, pe, m, wl, mp, g, W, cross=0.0, visits=0.0, noise=1.0) -> dict:
    """TTFT of a decode point: its B prompts stream through the pipeline once, at context prompt_len; `noise` scales
    the routed experts' stage for their B·P tokens (`with_routed`)."""
    prompt = getattr(wl, "prompt_len", None)
    if wl.mode != "decode" or prompt is None:
        return {}
    b, coll = operands.of_workload(wl), collective_options(mp)
    first, beta = unique.once(passes, hw, pe, m, g, W, prompt, b, coll, cross, visits)
    rate = with_routed(*beta, noise)[0]
    stall = io_stall(hw, mp)
    # t1 and β at context prompt_len are columns of their own, so `eval` can show TTFT's terms adding up
    return {"ttft_s": first["latency"] + W * stall + (wl.B * prompt - 1.0) * rate + (wl.B - 1.0) * stall,
            "prompt_latency_s": first["latency"] + 0.0 * rate, "prompt_busiest_stage_s": rate + 0.0 * first["latency"]}


def passes(hw, pe, m, g, W, context, b, coll, cross=0.0, visits=0.0, prompt: bool = True) -> tuple:
    """A layout's structural terms, whatever the batch: one token's pass (its latency and terms) and the busiest
    stage (`paced`; of a prompt's tokens, `per_token`). Evaluated once per distinct structure of a frame
    (unique.once)."""
    run = one_token(hw, pe, m, g, W, context, b, coll, cross, visits)
    beta = paced(per_token(m, g, pe, context, b, coll, run, prompt), W)
    return {"latency": run["latency"], "terms": run["terms"]}, beta


def structure(hw, pe, m, g, W, context, b, coll, cross=0.0, visits=0.0, prompt: bool = False) -> tuple:
    """`passes` and the layout's time columns (`time_columns`), once per distinct structure (unique.once);
    `prompt`: the stream is prompts' tokens (prefill)."""
    run = one_token(hw, pe, m, g, W, context, b, coll, cross, visits)
    beta = paced(per_token(m, g, pe, context, b, coll, run, prompt), W)
    return {"latency": run["latency"], "terms": run["terms"]}, beta, time_columns(pe, m, run, g)


def capacity_columns(m, wl, cap: dict, u) -> dict:
    """Wafers, layers per wafer, what fits, the layout's bytes per PE, bytes, and the constraints."""
    L, kv_seq = m.num_hidden_layers, regions.kv_bytes_per_sequence(m, wl)
    out = {k: cap[k] for k in ("wafers", "wafers_needed", "wafers_for_weights", "layers_per_wafer",
                               "kv_fit_sequences", *G_COLUMNS)}
    stored = regions.region_bytes(m, wl, 0.0)
    weights = (params.dense_layers(m) * stored["dense"] + params.moe_layers(m) * stored["moe"] + stored["embedding"]
               + stored["head"])
    out.update({"weight_bytes": weights + 0.0 * cap["wafers"],
                "kv_cache_bytes": L * wl.B * kv_seq + 0.0 * cap["wafers"], "sram_bytes_per_pe": u,
                "region_fill": cap["u_pack"] / u})
    return out


def time_columns(pe, m, run: dict, g) -> dict:
    """Seconds per op of each layer kind and per layer (one token), per hop, and the latency's five terms."""
    out = {}
    for kind, ops in run["ops"].items():
        out.update({f"{kind}_op_{op}_s": seconds(t["cycles"], pe) for op, t in ops.items()})
        out[f"{kind}_layer_time_s" if kind in ("moe", "dense") else f"{kind}_time_s"] = \
            seconds(run["kinds"][kind]["cycles"], pe)
    out.update({"wafer_hop_s": run["links"]["wafer_hop_s"], "wafer_hops": run["hops"],
                "crossing_s": run["links"]["crossing_s"], "far_experts_s": run["far_experts_s"] + 0.0 * run["latency"],
                "token_return_s": run["links"]["token_return_s"], "pipeline_latency_s": run["latency"]})
    out.update(dict(zip(TERM_COLUMNS, run["terms"])))
    if "moe" in run["ops"]:
        out.update({"dispatch_path_hops": np.maximum(g.hops_turning, g.hops_straight) * g.side,
                    "expert_imbalance": g.busiest_share * m.num_experts})
    return out
