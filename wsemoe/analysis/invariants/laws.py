"""The registry of cost-model invariants: what must hold on any hardware, model, workload and mapping.

Each invariant is one function decorated with `@invariant(statement, reason)`: it receives a
`Case` (a config's bounded grid, see cases.py), evaluates whole frames with inputs changed, and
records elementwise comparisons on a `Checker`, which keeps the worst violation. `wsemoe
invariants` runs this registry on users' configs and the project's own tests run the same
registry, so the two cannot drift. Adding an invariant is adding one function here.

Hardware figures are found by name on HardwareSpec (every `*_bw_bytes_per_s`, `*_peak_flops[_<format>]`,
`*_memory_bytes`, `*_latency_s` and `*_launch_s` field), so a new figure is covered as soon as it exists.
"""

from __future__ import annotations

from typing import Callable, get_args

import numpy as np

from wsemoe.analysis.explain.addsup import LAYERS, launch_column, stage_columns
from wsemoe.analysis.invariants.cases import Case
from wsemoe.analysis.invariants.checking import Checker, Outcome
from wsemoe.analysis.invariants.registry import SERVING_ONLY, REGISTRY, Invariant, invariant, node_rows, timed
from wsemoe.config.checks import MAX_TOKEN_PAIRS
from wsemoe.cost import structure
from wsemoe.cost.fabric.mesh import hops_matrix
from wsemoe.specs import HardwareSpec
from wsemoe.specs.base import MAX_TILES, MAX_TOKENS
from wsemoe.sweep.columns import DIFFERENCES, describe


def hardware_fields(suffix) -> list[str]:
    """Numeric HardwareSpec fields whose name ends with `suffix` (a string or a tuple of them; new figures are
    found automatically)."""
    def numeric(annotation) -> bool:
        return annotation in (float, int) or bool(get_args(annotation)) and set(get_args(annotation)) <= {float, int, type(None)}
    return [name for name, f in HardwareSpec.model_fields.items() if name.endswith(suffix) and numeric(f.annotation)]


BANDWIDTH, CAPACITY = "_bw_bytes_per_s", "_memory_bytes"
COMPUTE = ("_peak_flops", "_peak_flops_fp8", "_peak_flops_fp4")   # the 16-bit peak and one per narrower format
LATENCY = ("_latency_s", "_launch_s")                               # per hop, per collective call, per kernel
FACTOR = 2.0   # "more" is twice as much: big enough to move every term, small enough to stay physical


def scalings(case: Case, suffix: str) -> list[tuple[str, np.ndarray, np.ndarray, np.ndarray]]:
    """(path, value as given, value ×FACTOR, rows where it changes) for every hardware field with
    `suffix`; rows where the field is unset, 0 or infinite (×2 changes nothing) are left out, and so are rows
    where no matmul runs in a narrower format whose peak it is (`node_peak_flops_fp8` with every format bf16)."""
    out = []
    for field in hardware_fields(suffix):
        path = f"hardware.{field}"
        given = case.inputs(path)
        before = np.array([np.nan if v is None else v for v in given], dtype=float)
        rows = np.isfinite(before) & (before > 0) & _format_in_use(case, field)
        if rows.any():
            after = np.where(rows, before * FACTOR, before)
            if given.dtype == object:  # an optional figure: keep it unset where it is unset
                after = np.where(rows, after.astype(object), given)
            out.append((path, before, after, rows))
    return out


def _format_in_use(case: Case, field: str) -> np.ndarray | bool:
    """Rows where a format-specific peak (`node_peak_flops_<format>`) can matter: a weight format is that one."""
    fmt = field.rpartition("node_peak_flops_")[2] if field.startswith("node_peak_flops_") else None
    if not fmt:
        return True
    return np.logical_or.reduce([case.inputs(f"workload.{f}") == fmt for f in ("attn_weight_format",
                                                                              "expert_weight_format")])


def scaled_frames(suffix: str) -> Callable[[Case], dict]:
    """The frames of `scalings`: the grid with one hardware field ×FACTOR, per field."""
    return lambda case: {f"{path}×{FACTOR:g}": {path: after} for path, _, after, _ in scalings(case, suffix)}


def _scaled(chk: Checker, case: Case, suffix: str, compare) -> None:
    """Compare the grid with each field of `suffix` ×FACTOR against the grid as given."""
    base, frames = case.outputs(), case.variants(scaled_frames(suffix)(case))
    for (path, before, after, rows), more in zip(scalings(case, suffix), frames.values()):
        compare(base, more, rows, {path: (before, after)})


def _time_never_rises(chk: Checker, case: Case, suffix: str, what: str) -> None:
    def compare(base, more, rows, changes):
        for col, kind in timed(case, base):
            chk.compare(col, more[col], base[col], "<=", (f"with more {what}", "as given"), rows & kind, changes)
    _scaled(chk, case, suffix, compare)


@invariant("more compute (peak FLOP/s) is never slower",
           "compute time is FLOPs over peak × efficiency; every other term is independent of the peak, "
           "and a layer combines its terms with max and +, both monotone", scaled_frames(COMPUTE))
def more_compute_is_never_slower(chk: Checker, case: Case):
    _time_never_rises(chk, case, COMPUTE, "compute")


@invariant("more bandwidth (node memory, I/O in and out, mesh links, injection ports) is never slower",
           "each bandwidth divides the bytes of the terms it carries and the bytes do not depend on it; a "
           "phase it shortens leaves less idle link time to hide migration in, but never less than it saved",
           scaled_frames(BANDWIDTH))
def more_bandwidth_is_never_slower(chk: Checker, case: Case):
    _time_never_rises(chk, case, BANDWIDTH, "bandwidth")


@invariant("more latency (per hop, per collective call, per kernel launch) is never faster",
           "latency only lengthens communication phases or the serial part of a stage; the idle link time it adds "
           "can hide at most as much migration as it costs, so no step, layer or stage gets shorter",
           scaled_frames(LATENCY))
def more_latency_is_never_faster(chk: Checker, case: Case):
    def compare(base, more, rows, changes):
        for col, kind in timed(case, base):
            chk.compare(col, more[col], base[col], ">=", ("with more latency", "as given"), rows & kind, changes)
    _scaled(chk, case, LATENCY, compare)
    return chk.skip("no latency in this config (every hop, collective and launch latency is 0)")


@invariant("more memory never makes a feasible point infeasible",
           "node memory only adds capacity: no time, traffic or memory need depends on it, so every "
           "constraint g ≤ 0 that holds keeps holding", scaled_frames(CAPACITY))
def more_memory_never_makes_a_point_infeasible(chk: Checker, case: Case):
    def compare(base, more, rows, changes):
        g = [c for c in base.columns if c.startswith("g_")]   # NaN: a constraint of the other kind of row
        worst_before = 1 + np.fmax.reduce(base[g].to_numpy(float), axis=1)
        worst_after = 1 + np.fmax.reduce(more[g].to_numpy(float), axis=1)
        chk.compare("worst constraint (1 + max g)", worst_after, 1.0, "<=", ("with more memory", "its limit"),
                    rows & (worst_before <= 1), changes)
    _scaled(chk, case, CAPACITY, compare)


def _nodes(case: Case) -> np.ndarray:
    """Nodes of the whole system at every grid row (every wafer counted)."""
    wafers = np.array([np.prod(w) if w is not None else 1 for w in case.inputs("hardware.wafers")], dtype=float)
    return case.inputs("hardware.rows") * case.inputs("hardware.cols") * wafers


def _batch(case: Case) -> np.ndarray:
    """The attention batch B the model used: as given, or derived from tokens per device (decode)."""
    out = case.outputs()
    return np.asarray(out["attention_batch"], float) if "attention_batch" in out else case.inputs("workload.B")


def _tokens(case: Case) -> dict:
    """Attention groups, sequences and tokens of one tile per group (uniform batching at B), from the inputs."""
    nodes = _nodes(case)
    tp = np.array([n if t is None else t for t, n in zip(case.inputs("mapping.tp"), nodes)], dtype=float)
    q = np.where(case.inputs("workload.mode") == "decode", 1.0, case.inputs("workload.seq_len"))
    groups = nodes // tp
    seqs = groups * _batch(case)
    return {"nodes": nodes, "groups": groups, "seqs": seqs, "T": seqs * q}


def _g1(case: Case) -> dict:
    """The grid with G = 1 at every point, attention batch B unchanged (where B derives from tokens per
    device, that derivation is replaced by the B the model used, so the batch stays put)."""
    changes = {"workload.G": np.ones(len(case))}
    if any(v is not None for v in case.inputs("workload.tokens_per_device")):
        changes["workload.tokens_per_device"] = np.full(len(case), None, dtype=object)
        changes["workload.B"] = _batch(case)
    return {"G=1": changes}


@invariant("G = 1 is uniform batching: one tile of B sequences per group feeds the experts, and BTA's "
           "attention at G is G such tiles",
           "with a single tile there is nothing to concatenate, so router and experts work on exactly the tokens "
           "attention just processed (Batch Tiling on Attention reduces to ordinary batching)", _g1)
def g1_is_uniform_batching(chk: Checker, case: Case):
    node = node_rows(case)
    if not node.any():
        return chk.skip(SERVING_ONLY)
    one = case.variants(_g1(case))["G=1"]
    t = _tokens(case)
    E, k, H = (case.inputs(f"model.{f}") for f in ("num_experts", "num_experts_per_tok", "hidden_size"))
    chk.compare("tokens_per_microbatch", one["tokens_per_microbatch"], t["T"], "==", ("at G=1", "groups·B·q"), node)
    chk.compare("sequences_per_microbatch", one["sequences_per_microbatch"], t["seqs"], "==", ("at G=1", "groups·B"),
                node)
    chk.compare("tokens_per_expert", one["tokens_per_expert"] * E, t["T"] * k, "==", ("E × at G=1", "groups·B·q·k"),
                node)
    chk.compare("router_flops", one["router_flops"], 2 * t["T"] * H * E, "==", ("at G=1", "2·T·H·E"), node)
    buffer = t["T"] * H * case.inputs("workload.bytes_per_act") / t["nodes"]
    chk.compare("mem_bta_buffer_node_bytes", one["mem_bta_buffer_node_bytes"], buffer, "==", ("at G=1", "T·H·b_a/N"),
                node)
    base, G = case.outputs(), case.inputs("workload.G")
    for col in ("attn_proj_flops", "attn_core_flops"):
        chk.compare(col, base[col], G * one[col], "==", ("at G", "G × at G=1"), node)
    chk.compare("mem_attn_transient_node_bytes", base["mem_attn_transient_node_bytes"],
                one["mem_attn_transient_node_bytes"], "==", ("at G", "at G=1"), node)


CONSERVED = ("tokens_per_microbatch", "sequences_per_microbatch", "tokens_per_expert", "expert_efficiency",
             "attn_proj_flops", "attn_core_flops", "router_flops", "expert_flops", "model_flops_per_step",
             "moe_compute_s", "moe_weights_s", "moe_dispatch_s", "moe_combine_s", "mem_weights_node_bytes",
             "mem_kept_act_node_bytes", "mem_kv_node_bytes", "mem_bta_buffer_node_bytes", "mem_moe_transient_node_bytes",
             "mem_moe_deltas_node_bytes", "mem_train_state_node_bytes", "mem_prefetch_node_bytes", "mem_attn_grads_node_bytes")


def _tilings(case: Case) -> dict:
    """The grid at (2B, G) and at (B, 2G): the same sequences, attention tiled twice as finely."""
    B, G = case.inputs("workload.B"), case.inputs("workload.G")
    return {"B×2": {"workload.B": 2 * B}, "G×2": {"workload.G": 2 * G}}


@invariant("tiling conserves work: at constant B·G the tokens, FLOPs, MoE stage and MoE memory are the same, "
           "and attention memory falls as G grows",
           "(2B, G) and (B, 2G) hold the same sequences; tiling only changes how many of them attention "
           "holds at once, so the experts see the same batch and attention's transient shrinks", _tilings)
def tiling_conserves_work(chk: Checker, case: Case):
    if not node_rows(case).any():
        return chk.skip(SERVING_ONLY)
    B, G, S = case.inputs("workload.B"), case.inputs("workload.G"), case.inputs("workload.seq_len")
    rows = (2 * B <= MAX_TOKENS) & (2 * G <= MAX_TILES) & (2 * B * G * S <= MAX_TOKEN_PAIRS) & node_rows(case)
    wide, tiled = case.variants(_tilings(case)).values()
    changes = {"workload.B": (2 * B, B), "workload.G": (G, 2 * G)}
    for col in CONSERVED:
        if col in wide.columns:
            chk.compare(col, tiled[col], wide[col], "==", ("at (B, 2G)", "at (2B, G)"), rows, changes)
    chk.compare("mem_attn_transient_node_bytes", tiled["mem_attn_transient_node_bytes"],
                wide["mem_attn_transient_node_bytes"], "<", ("at (B, 2G)", "at (2B, G)"), rows, changes)


@invariant("tokens are conserved across experts: Σ tokens per expert = T·k, and every dispatched token copy "
           "lands on exactly one host and returns in the combine",
           "routing sends each of the T tokens to k experts; placement, replication and balancing move "
           "copies between nodes but never create or drop one")
def tokens_are_conserved_across_experts(chk: Checker, case: Case):
    out, node = case.outputs(), node_rows(case)
    E, k = case.inputs("model.num_experts"), case.inputs("model.num_experts_per_tok")
    if node.any():
        chk.compare("Σ tokens per expert", out["tokens_per_expert"] * E, out["tokens_per_microbatch"] * k, "==",
                    ("E × tokens_per_expert", "T·k"), node)
    for key, s in case.structures():
        groups = s.placement.num_groups  # dispatch carries one unit of token copies from every group
        dispatch, combine = structure.phase_traffic(s, "dispatch"), structure.phase_traffic(s, "combine")
        chk.compare("dispatched token copies", dispatch.sum(), groups, "==", ("Σ dispatch", "groups"), inputs=key)
        chk.compare("expert load over nodes", s.node_load.sum(), groups, "==", ("Σ node load", "groups"), inputs=key)
        chk.compare("combined token copies", combine.sum(), dispatch.sum(), "==", ("Σ combine", "Σ dispatch"), inputs=key)
        chk.compare("combine is the transpose of dispatch", np.abs(combine - dispatch.T).max(), 0.0, "==",
                    ("max |combine − dispatchᵀ|", "zero"), inputs=key)


@invariant("link loads conserve bytes × hops: summed over every directed link, each phase's load equals "
           "Σ traffic × hop count",
           "XY routes are minimal, so a byte sent h hops away crosses exactly h links and is counted once per hop")
def link_loads_conserve_bytes_times_hops(chk: Checker, case: Case):
    for key, s in case.structures():
        hops = hops_matrix(s.placement.rows, s.placement.cols)
        for name, phase in s.phases.items():
            if phase.loads is not None:  # a switch has no links to load
                chk.compare(f"{name} link load", phase.loads.total(), (structure.phase_traffic(s, name) * hops).sum(), "==",
                            ("Σ link loads", "Σ bytes × hops"), inputs={**key, "phase": name})
    return chk.skip("no node-to-node traffic on links (weight-streaming wafer, SRAM serving or switch)")


POINTWISE_SAMPLE = 16   # grid rows evaluated alone, spread over the grid (each costs a whole evaluation)


@invariant("vectorized evaluation equals point-by-point evaluation",
           "the cost model is elementwise: a point's outputs cannot depend on which other points share its "
           "frame, nor on whether its inputs are arrays or Python numbers")
def vectorized_equals_pointwise(chk: Checker, case: Case):
    out = case.outputs()
    for row in np.unique(np.linspace(0, len(case) - 1, min(len(case), POINTWISE_SAMPLE)).astype(int)):
        inputs, framed = case.row_inputs(int(row)), out.iloc[int(row)]
        alone = {col: np.asarray(v) for col, v in case.point_outputs(int(row)).items()}
        labels = [c for c, v in alone.items() if v.dtype.kind in "OUS"]
        numbers = [c for c in alone if c not in labels]
        chk.compare(np.array(numbers, dtype=object), [float(alone[c]) for c in numbers],
                    framed[numbers].to_numpy(dtype=float), "==", ("point alone", "in the frame"), inputs=inputs)
        for col in labels:
            chk.same_labels(col, str(alone[col].item()), str(framed[col]), ("point alone", "in the frame"), inputs)


def _groups(case: Case):
    """(grid rows, outputs broadcast over them) per group: only the columns that apply there."""
    for rows, out in case.groups():
        yield rows, {k: np.broadcast_to(v, len(rows)) for k, v in out.items()}


def _node_groups(case: Case):
    """The groups the node-level model evaluates (not SRAM serving, whose step has laws of its own)."""
    node = node_rows(case)
    return ((rows, out) for rows, out in _groups(case) if node[rows[0]])


@invariant("step time is the sum of its layers: Lm·MoE layer + (L − Lm)·dense layer + head + exposed migration; "
           "throughput, MFU and MoE communication follow from it",
           "a step runs its layers one after another; the breakdown `wsemoe eval` shows must add up to the "
           "step time it reports")
def step_time_adds_up(chk: Checker, case: Case):
    L = case.inputs("model.num_hidden_layers")
    Lm = case.moe_layers()
    nodes = _nodes(case)
    for rows, out in _node_groups(case):
        peak = out["format_peak_flops"] * nodes[rows]
        step = out["step_time_s"]
        layers = Lm[rows] * out["moe_layer_time_s"] + (L - Lm)[rows] * out["dense_layer_time_s"] + out["head_time_s"]
        chk.compare("step_time_s", step, layers + out.get("migration_exposed_s", 0.0), "==",
                    ("model", "Σ count × layer + migration"), rows=rows)
        chk.compare("tokens_per_s", out["tokens_per_s"] * step, out["tokens_per_microbatch"], "==",
                    ("tokens/s × step", "tokens per micro-batch"), rows=rows)
        chk.compare("mfu", out["mfu"] * step * peak, out["model_flops_per_step"], "==",
                    ("mfu × step × peak", "model FLOPs"), rows=rows)
        comm = sum(out.get(c, 0.0) for c in ("attention_allreduce_s", "moe_dispatch_s", "moe_combine_s", "moe_reduce_s"))
        chk.compare("moe_comm_s", out["moe_comm_s"], comm, "==",
                    ("model", "all-reduce + dispatch + combine + output reduction"), rows=rows)


CORE = {  # how a layer's concurrent terms combine, per workload.overlap (docs/cost-model.md)
    "layer": lambda stages: np.max([sum(s[t] for s in stages if t in s) for t in {t for s in stages for t in s}], axis=0),
    "stage": lambda stages: sum(np.max(list(s.values()), axis=0) for s in stages),
    "none": lambda stages: sum(sum(s.values()) for s in stages),
}
COMM = {  # how communication joins the core, per workload.comm_overlap (docs/cost-model.md)
    "none": lambda core, comm: core + comm,
    "microbatch": np.maximum,  # two interleaved micro-batches: one communicates while the other computes
}


def _stage_columns(out: dict, stage: str) -> tuple[dict, dict, np.ndarray]:
    """(concurrent terms, serial communication, serial kernel launches) of a stage, as arrays from its columns."""
    terms, comm = ({k: np.asarray(out[c], dtype=float) for k, c in part.items()} for part in stage_columns(out, stage))
    col = launch_column(out, stage)
    return terms, comm, (0.0 if col is None else np.asarray(out[col], dtype=float))


@invariant("each layer is the documented combination of its terms: overlap `layer` takes the largest "
           "stage-summed term, `stage` sums each stage's largest term, `none` sums everything; kernel launches "
           "and communication add in every mode, and each stage's own time likewise",
           "the layer times `wsemoe eval` shows must be what docs/cost-model.md says they are, so a user can "
           "trace any step time back to its terms")
def layer_time_is_its_documented_combination(chk: Checker, case: Case):
    for rows, out in _node_groups(case):
        mode = case.inputs("workload.overlap")[rows[0]]  # categorical: one mode per group
        joins = COMM[case.inputs("workload.comm_overlap")[rows[0]]]
        if mode not in CORE:  # a new mode must be documented here and in docs/cost-model.md
            chk.same_labels("workload.overlap", mode, "a documented mode", ("overlap", "one of " + ", ".join(CORE)),
                            case.row_inputs(int(rows[0])))
            continue
        columns = {stage: _stage_columns(out, stage) for stages in LAYERS.values() for stage in stages}
        for layer, stages in LAYERS.items():
            core = CORE[mode]([columns[s][0] for s in stages]) + sum(columns[s][2] for s in stages)
            comm = sum(sum(columns[s][1].values()) for s in stages)
            if layer == "dense_layer" and "dense_layer_allreduce_s" in out:  # HER: the home wafer's all-reduce
                comm = comm - columns["attention"][1]["allreduce"] + out["dense_layer_allreduce_s"]
            chk.compare(f"{layer}_time_s", out[f"{layer}_time_s"], joins(core, comm), "==",
                        ("model", f"overlap {mode}"), rows=rows)
        for stage, (terms, comm, launch) in columns.items():
            own = joins((sum(terms.values()) if mode == "none" else np.max(list(terms.values()), axis=0)) + launch,
                        sum(comm.values()))
            chk.compare(f"{stage}_time_s", out[f"{stage}_time_s"], own, "==", ("model", f"stage roofline, {mode}"),
                        rows=rows)


@invariant("MFU never exceeds the hardware's matmul efficiency, for the FLOPs the kernels execute",
           "executed FLOPs run at most at peak × matmul_efficiency: experts run at a lower efficiency, recompute "
           "adds FLOPs, and every other term only adds time (mfu counts the attention core in full; a tiled kernel "
           "executes its causal half, which executed_mfu counts, so executed_mfu ≤ mfu)")
def mfu_at_most_matmul_efficiency(chk: Checker, case: Case):
    node = node_rows(case)
    if not node.any():
        return chk.skip(SERVING_ONLY)
    out = case.outputs()
    chk.compare("executed_mfu", out["executed_mfu"], case.inputs("hardware.matmul_efficiency"), "<=",
                ("model", "matmul_efficiency"), node)
    chk.compare("executed_mfu", out["executed_mfu"], out["mfu"], "<=", ("model", "mfu"), node)


@invariant("every time, memory and FLOP term is finite and ≥ 0",
           "times, bytes and FLOPs are amounts: a negative or infinite one is an arithmetic error, not physics")
def terms_are_finite_and_nonnegative(chk: Checker, case: Case):
    for rows, out in _groups(case):
        amounts = [c for c in out if describe(c)[0] in ("s", "bytes", "FLOP") and c not in DIFFERENCES]
        values = np.stack([np.asarray(out[c], dtype=float) for c in amounts], axis=1)   # rows × columns
        chk.compare(np.array(amounts, dtype=object)[None, :], values, 0.0, "finite >= 0", ("model", "zero"),
                    rows=rows[:, None])


def _overlaps(case: Case) -> dict:
    return {f"overlap={m}": {"workload.overlap": np.full(len(case), m, dtype=object)} for m in ("layer", "stage", "none")}


@invariant("more overlap is never slower: overlap `layer` ≤ `stage` ≤ `none` at every point",
           "hiding weight movement across a whole layer can only shorten what hiding it within each stage "
           "achieves, and that can only shorten fully serial execution (max ≤ sum)", _overlaps)
def more_overlap_is_never_slower(chk: Checker, case: Case):
    layer, stage, none = case.variants(_overlaps(case)).values()
    for col, rows in timed(case, layer):
        chk.compare(col, layer[col], stage[col], "<=", ("overlap layer", "overlap stage"), rows)
        chk.compare(col, stage[col], none[col], "<=", ("overlap stage", "overlap none"), rows)


from wsemoe.analysis.invariants import precision_laws  # noqa: E402,F401  (registers the format invariants after these)
from wsemoe.analysis.invariants import serving_laws  # noqa: E402,F401  (and SRAM serving's)
from wsemoe.analysis.invariants import streaming_laws  # noqa: E402,F401  (and weight streaming's at PE level)
from wsemoe.analysis.invariants import energy_laws, overlap_laws, work_laws  # noqa: E402,F401  (energy, micro-batches, work)

__all__ = ["REGISTRY", "Invariant", "hardware_fields", "invariant"]
