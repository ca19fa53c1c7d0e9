"""Invariants of SRAM serving across wafers (weight_source: sram): more PEs or SRAM never hurt, slower PEs never
help, no PE of a fitting layout's tiles holds more than its room, every expert has exactly one region, region traffic conserves bytes × hops, and a token's time adds up
(docs/cost-model.md, "Serving from SRAM"). Node-level laws skip these rows; these skip every other row.
"""

from __future__ import annotations

import numpy as np

from wsemoe.analysis.invariants.cases import Case
from wsemoe.analysis.invariants.checking import Checker
from wsemoe.analysis.invariants.registry import SERVING_TIMES, invariant, node_rows
from wsemoe.cost.wafer import placement, traffic

NODE_ONLY = "no SRAM-serving point (weight_source: sram) in this config"
G_SRAM = ("g_sram_wafers", "g_sram_layer", "g_sram_pe", "g_sram_stages")
SLOWER = ("hop_cycles", "turn_cycles", "relay_cycles", "op_overhead_cycles")   # PE facts that only add cycles


def _serving(case: Case) -> np.ndarray:
    return ~node_rows(case)


def _fact(case: Case, name: str) -> np.ndarray:
    """A PE fact per grid row (NaN where the hardware has no PE fabric)."""
    return np.array([np.nan if v is None else v for v in case.inputs(f"hardware.pe.{name}")], dtype=float)


def _pinned(case: Case) -> dict:
    """Every SRAM-serving row's pipeline pinned at the wafers it uses (a count given, or the fewest that fit)."""
    given = case.inputs("hardware.pipeline_wafers")
    used = np.asarray(case.outputs()["wafers"], dtype=float) if _serving(case).any() else np.full(len(case), np.nan)
    return {"hardware.pipeline_wafers": np.where(_serving(case), used, given).astype(object)}


def _capacity_frames(case: Case) -> dict:
    """The grid at its pipelines' wafers; with twice the program rectangle's PEs; with twice the SRAM per PE."""
    if not _serving(case).any():
        return {}
    pin, sram = _pinned(case), _serving(case)
    rows, margin = _fact(case, "fabric_rows"), _fact(case, "kernel_margin_rows")
    more_pes = np.where(sram, 2 * rows - margin, rows)   # program rows (fabric − margin) doubled
    return {"wafers pinned": pin,
            "PEs×2": {**pin, "hardware.pe.fabric_rows": _objects(more_pes, case.inputs("hardware.pe.fabric_rows"))},
            "SRAM×2": {**pin, "hardware.pe.sram_per_pe_bytes":
                       _objects(np.where(sram, 2 * _fact(case, "sram_per_pe_bytes"), np.nan),
                                case.inputs("hardware.pe.sram_per_pe_bytes"))}}


def _objects(values: np.ndarray, given: np.ndarray) -> np.ndarray:
    """Changed values where a row has them, the given value (unset included) elsewhere."""
    return np.where(np.isnan(values), given, values).astype(object)


def _worst(frame) -> np.ndarray:
    """The worst SRAM constraint per row (NaN on rows without them: other hardware)."""
    return np.fmax.reduce(frame[list(G_SRAM)].to_numpy(float), axis=1)


@invariant("SRAM serving: more PEs or more SRAM per PE never makes a point slower or infeasible, nor needs more "
           "wafers (at the wafers the point's pipeline uses)",
           "a layout that fitted still fits (the same regions on a subset of the PEs, or fuller PEs left as they "
           "were), and every candidate layout is the same function of its bytes per PE whatever the fabric: more "
           "PEs or SRAM only add candidates (ladder.densities), so the best is at least as good",
           _capacity_frames)
def serving_more_pes_or_sram_never_hurt(chk: Checker, case: Case):
    frames = case.variants(_capacity_frames(case))
    if not frames:
        return chk.skip(NODE_ONLY)
    base, sram = frames["wafers pinned"], _serving(case)
    fits = sram & (_worst(base) <= 0)
    for tag in ("PEs×2", "SRAM×2"):
        more = frames[tag]
        for col in SERVING_TIMES:
            chk.compare(col, more[col], base[col], "<=", (f"with {tag}", "as given"), fits)
        chk.compare("worst SRAM constraint (max g)", _worst(more), 0.0, "<=", (f"with {tag}", "its limit"), fits)
        need, more_need = (np.asarray(f["wafers_needed"], dtype=float) for f in (case.outputs(), more))
        known = sram & np.isfinite(need)
        chk.compare("wafers_needed", more_need, need, "<=", (f"with {tag}", "as given"), known)


def _slower_frames(case: Case) -> dict:
    """The grid with each cycle-adding PE fact doubled, and with the clock halved."""
    if not _serving(case).any():
        return {}
    out = {}
    for name in SLOWER + ("clock_hz",):
        v = _fact(case, name)
        changed = v / 2 if name == "clock_hz" else 2 * v
        out[f"pe.{name}"] = {f"hardware.pe.{name}": _objects(np.where(_serving(case), changed, np.nan),
                                                            case.inputs(f"hardware.pe.{name}"))}
    return out


@invariant("SRAM serving: more cycles per hop, turn, relay stage or operator invocation, or a slower clock, never "
           "makes a point faster",
           "every operator's time is a sum of cycle counts, each multiplied by one of these (or divided by the clock), "
           "and the layout is the best candidate under every one of them", _slower_frames)
def serving_slower_pes_never_help(chk: Checker, case: Case):
    frames = case.variants(_slower_frames(case))
    if not frames:
        return chk.skip(NODE_ONLY)
    base, sram = case.outputs(), _serving(case)
    for tag, slow in frames.items():
        for col in SERVING_TIMES:
            chk.compare(col, slow[col], base[col], ">=", (f"with {tag} slower", "as given"), sram)


@invariant("SRAM serving: no PE of a feasible point's tiles (a routed expert's, a MoE layer's attention) holds more "
           "bytes than its room (sram_bytes_per_pe × region_fill: SRAM less program and buffers)",
           "a MoE model's regions are whole tiles of one lattice whose side holds an expert at no more than the "
           "room, every other region at no more than the layout's bytes per PE (cost/wafer/lattice.py); the "
           "largest square of an expert's PEs held more (Qwen3-235B at 8K on 12 CS-3: 48,149 B on 28² PEs)")
def serving_tiles_hold_no_more_than_the_room(chk: Checker, case: Case):
    sram = _serving(case)
    if not sram.any():
        return chk.skip(NODE_ONLY)
    out = case.outputs()
    if "tile_bytes_per_pe_max" not in out:
        return chk.skip("no MoE layer (a dense model)")
    held = out["tile_bytes_per_pe_max"].to_numpy(float)
    room = out["sram_bytes_per_pe"].to_numpy(float) * out["region_fill"].to_numpy(float)
    fits = sram & np.isfinite(held) & np.asarray(out["feasible"], dtype=bool)
    chk.compare("tile_bytes_per_pe_max", held, room * (1.0 + 1e-9), "<=", ("bytes a tile's PE holds", "its room"),
                fits)


@invariant("SRAM serving: every routed expert has exactly one region, and region traffic conserves bytes × hops "
           "(Σ link loads = Σ transfers × tile hops; the combine carries what the dispatch did)",
           "a placement lays out every expert tile once beside the attention tiles; XY routes are minimal, so a "
           "token copy sent h tiles away crosses exactly h tile links")
def serving_layouts_are_whole_and_conserve_traffic(chk: Checker, case: Case):
    for key, t in case.serving_layouts():
        p = t.placement
        chk.compare("experts placed exactly once", float(placement.covers_once(p, len(t.shares))), 1.0, "==",
                    ("covers_once", "true"), inputs=key)
        u = t.unicast
        (r0, c0), (r1, c1) = p.coordinates(u.src), p.coordinates(u.dst)
        moved = float((u.vol * (np.abs(r1 - r0) + np.abs(c1 - c0))).sum())
        chk.compare("unicast dispatch link load", u.loads(traffic.layout(p)).total(), moved, "==",
                    ("Σ link loads", "Σ bytes × hops"), inputs=key)
        chk.compare("combine link load", t.combine.total(), t.dispatch.total(), "==", ("Σ combine", "Σ dispatch"),
                    inputs=key)
    return chk.skip(NODE_ONLY if not _serving(case).any() else "no MoE layer (a dense model)")


@invariant("SRAM serving: a token's time adds up: t1 = embedding + Σ layers + head + hops + return = the five "
           "pipeline terms; a MoE layer is its ops; the period, time per output token and tokens per second follow",
           "the breakdown `wsemoe eval` shows must add up to the columns it explains")
def serving_time_adds_up(chk: Checker, case: Case):
    sram = _serving(case)
    if not sram.any():
        return chk.skip(NODE_ONLY)
    out = case.outputs()
    L = case.inputs("model.num_hidden_layers")
    k = L - case.moe_layers()   # dense layers
    parts = (np.nan_to_num(out["embedding_time_s"]) + k * np.nan_to_num(out.get("dense_layer_time_s", 0.0))
             + (L - k) * np.nan_to_num(out.get("moe_layer_time_s", 0.0)) + out["head_time_s"]
             + out["wafer_hops"] * out["wafer_hop_s"] + np.nan_to_num(out.get("crossing_s", 0.0))
             + np.nan_to_num(out.get("far_experts_s", 0.0))
             + out["token_return_s"])
    chk.compare("pipeline_latency_s", out["pipeline_latency_s"], parts, "==", ("model", "Σ stages + hops + crossings + far experts"),
                sram)
    terms = sum(out[c] for c in ("pipeline_macs_s", "pipeline_link_s", "pipeline_hops_s", "pipeline_overhead_s",
                                 "pipeline_inter_wafer_s"))
    chk.compare("pipeline terms", terms, out["pipeline_latency_s"], "==", ("Σ terms", "pipeline_latency_s"), sram)
    for kind in ("moe", "dense"):
        ops = [c for c in out.columns if c.startswith(f"{kind}_op_")]
        if ops and f"{kind}_layer_time_s" in out:
            has = sram & np.isfinite(out[f"{kind}_layer_time_s"].to_numpy(float))
            ops_sum = np.nansum(out[ops].to_numpy(float), axis=1)   # a model's ops (other models' are NaN here)
            chk.compare(f"{kind}_layer_time_s", ops_sum, out[f"{kind}_layer_time_s"],
                        "==", ("Σ ops", "model"), has)
    decode = sram & (case.inputs("workload.mode") == "decode")
    a = case.inputs("workload.accepted_tokens_per_step")
    if decode.any():
        chk.compare("tpot_s", out["tpot_s"] * a, out["pipeline_period_s"], "==", ("tpot × accepted", "period"), decode)
        chk.compare("tokens_per_s", out["tokens_per_s"], case.inputs("workload.B") * out["tokens_per_s_per_user"], "==",
                    ("model", "B × per user"), decode)


def _single_frames(case: Case) -> dict:
    """The grid's decode SRAM-serving rows at the wafers their pipelines use, each with one sequence (B = 1)."""
    rows = _serving(case) & (case.inputs("workload.mode") == "decode")
    if not rows.any():
        return {}
    given = case.inputs("workload.B")
    return {"B=1": {**_pinned(case), "workload.B": np.where(rows, 1, given).astype(object)}}


@invariant("SRAM serving: per-user tokens/s never rises with the batch at a fixed wafer count (one sequence alone "
           "is at least as fast per user as each of B sequences)",
           "a batch of one fits every layout a batch of B fits (less KV cache), its step is the same ops at one token "
           "each, and the period max(step, B·q·β) only grows with B; the attention region is sized for speed as "
           "well as bytes, so a lone sequence is offered the regions a larger batch would get", _single_frames)
def serving_per_user_never_rises_with_batch(chk: Checker, case: Case):
    frames = case.variants(_single_frames(case))
    if not frames:
        return chk.skip("no decode SRAM-serving point (weight_source: sram, mode decode) in this config")
    base, one = case.outputs(), frames["B=1"]
    rows = _serving(case) & (case.inputs("workload.mode") == "decode") & (_worst(base) <= 0)
    chk.compare("tokens_per_s_per_user", one["tokens_per_s_per_user"], base["tokens_per_s_per_user"], ">=",
                ("at B = 1", "at the row's B"), rows)
