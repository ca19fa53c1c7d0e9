"""One design point broken into its terms: inputs (with overrides), how the step and memory add up,
FLOPs, stage times, memory and constraints.

A point is its index in the sweep, the same number `wsemoe show` prints and pareto.csv keeps. `sets`
override that point's values (`workload.G=8`): every other value stays the point's own.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from wsemoe.analysis.explain import addsup, energysum, sramsum
from wsemoe.arguments import whole
from wsemoe.config import axes, checks
from wsemoe.config.loader import load_config
from wsemoe.config.single import parse_sets, point_mapping
from wsemoe.cost import serving
from wsemoe.cost.batch import micro_batch
from wsemoe.cost.stagecost import busiest_rank
from wsemoe.cost.fabric import topology
from wsemoe.cost.node import mix, params, weights
from wsemoe.cost.node.formats import BYTES
from wsemoe.errors import ConfigError, WsemoeError
from wsemoe.sweep import engine, space
from wsemoe.store import store
from wsemoe.sweep.columns import describe
from wsemoe.sweep.outputs import config_namespaces
from wsemoe.wording import count, number

SERVING = "serving: time per output token, and time to first token as a prefill of the batch's prompts"
PRECISION = "precision (formats: bytes per value; peak per node each runs at)"
FORMATS = ("attn_weight_format", "expert_weight_format", "kv_format")
ROOFLINE = ("_hw_flops", "_traffic_bytes", "_roof_flops")   # each stage on the roofline (fig_roofline)

GROUPS = [
    ("throughput", lambda c: c in ("tokens_per_s", "sequences_per_s", "bound", "feasible", "infeasible_reason")
     or c.startswith("speedup_vs_")),
    (PRECISION, lambda c: c.endswith("_peak_flops")),
    ("roofline per stage (executed FLOPs, weight-path bytes, compute roof; one layer, one micro-batch)",
     lambda c: c.endswith(ROOFLINE)),
    ("flops (forward, one layer, one micro-batch)", lambda c: c.endswith("_flops") or c == "model_flops_per_step"),
    ("times of one micro-batch step: each stage per layer, the head once (unit per row)",
     lambda c: describe(c)[0] == "s"),
    ("memory per node", lambda c: c.startswith("mem_")),
    ("constraints (g ≤ 0 satisfied)", lambda c: c.startswith("g_")),
    ("energy and cost per token (the tiers, the two views, electricity and capital)",
     lambda c: c.startswith(("energy_", "cost_", "topdown_")) or c == "avg_power_w"),
]


def sweep_config(source):
    """A SweepConfig from a sweep file, a dict, or a results folder (its resolved config.yaml)."""
    if store.names_results(source):
        store.load_manifest(source)  # a results folder: complete and ours, or a one-line error
        return load_config(Path(source) / "config.yaml")
    return load_config(source)


def point_config(cfg, point: int, sets: dict | None = None):
    """(one-point config, the point's values, the overrides as typed): every axis fixed at the point's value,
    then `sets` on top, validated like axis values and cross-checked like a sweep."""
    n = cfg.size()
    point = whole(point, "--point", None, what="a point index")   # "3" or 1.5 is no index, in range or not
    if not 0 <= point < n:
        raise ConfigError(f"point {point} out of range: the sweep has {n:,} points (0..{n - 1})", loc=("--point",))
    frame = space.build_frame(cfg, point, point + 1)
    values = {c: _plain(frame[c].iloc[0]) for c in frame.columns}
    base = {k: getattr(cfg, k).model_dump(exclude_none=True) for k in ("hardware", "model", "workload", "mapping",
                                                                       "balance")}
    store_ = dict(cfg.presets)
    for section in base:   # an override is checked against the point's own specs: its preset, its axis values
        if isinstance(values.get(section), str) and values[section] in store_:
            base[section] = dict(store_[values[section]])
    for path, v in values.items():
        section, _, field = path.partition(".")
        if section in base and field and v is not None:
            base[section][field] = v
    if "balance.histogram" in (sets or {}):   # the sweep's one histogram is read with its file (config/loader.py)
        raise ConfigError("balance.histogram is read with the sweep file: set it there (one histogram per sweep)",
                          loc=("--set", "balance.histogram"))
    typed = {p: axes.typed_value(p, v, base, ("--set", p), store_) for p, v in (sets or {}).items()}
    if typed.get("balance.distribution") == "histogram" and cfg.expert_histogram is None:
        raise ConfigError("distribution 'histogram' needs balance.histogram (a CSV path) in the sweep file",
                          loc=("--set", "balance.distribution"))
    fixed = {**values, **typed}
    one = cfg.model_copy(update={"axes": {p: [v] for p, v in fixed.items()}, "zip": [], "compare": None,
                                 "presets": store_})
    try:
        checks.check_points(one)
    except ConfigError as exc:   # a rule an override breaks is the --set's, not an axis of the sweep file
        if exc.loc[:1] == ("axes",) and len(exc.loc) > 1 and exc.loc[1] in typed:
            raise ConfigError(exc.message, loc=("--set", *exc.loc[1:])) from None
        if typed:   # every point of the loaded sweep passed these rules: the overrides broke another field's
            raise ConfigError(exc.message, loc=("--set", ", ".join(typed))) from None
        raise
    return one, values, typed


def _plain(v):
    """A Python value; NaN (an unset optional in a numeric column, e.g. a zip's null) as None."""
    v = v.item() if hasattr(v, "item") else v
    return None if isinstance(v, float) and v != v else v


def resolve(config=None, point: int = 0, sets: list[str] | None = None, hardware=None, model=None):
    """(sweep config, one-point config, the inputs to show {path: value}, the overrides as typed, notes per input):
    point `point` of a sweep file or results folder with `sets` on top; or, without `config`, the point of
    `hardware`, `model` and `sets` alone (the mapping a sweep file would hold, validated as one)."""
    if config is None:
        if hardware is None or model is None:
            missing = "--model" if hardware is not None else "--hardware" if model is not None else None
            raise ConfigError(f"a point without a sweep file needs {missing} too" if missing else
                              "give a sweep file or results folder, or --hardware and --model",
                              loc=(missing or "source",))   # eval and export traffic alike, never '[eval]'
        if point != 0:
            raise ConfigError(f"--point {point}: a point made of --hardware and --model is the only one (point 0); "
                              "--point picks a point of a sweep file or results folder", loc=("--point",))
        parsed = parse_sets(sets or [])
        try:
            cfg = load_config(point_mapping(hardware, model, parsed))
        except WsemoeError as exc:   # a setting's fault is the --set's (as with a sweep file), else the flag's
            raise _at_option(exc, parsed, hardware, model) from None
        one, _, _ = point_config(cfg, 0)
        shown = {p: _base_value(cfg, p) for p in ("hardware", "model", *parsed)}
        return cfg, one, shown, {p: shown[p] for p in parsed}, {}   # the sets are in the config, as typed
    if hardware is not None or model is not None:
        raise ConfigError("--hardware and --model make a point without a sweep file; with one, use --set "
                          "hardware=<preset> or --set model=<preset>",
                          loc=("--hardware" if hardware is not None else "--model",))
    cfg = sweep_config(config)
    one, values, typed = point_config(cfg, point, parse_sets(sets or []))
    return cfg, one, values, typed, {c: f"[--set; the point has {values.get(c, _base_value(cfg, c))}]" for c in typed}


def _at_option(exc: WsemoeError, parsed: dict, hardware=None, model=None) -> WsemoeError:
    """`exc` at the option that gave the value it names: the --set of the field ([--set -> workload.B], not
    [workload -> B]); a rule across a section's fields ([hardware]) at the --set of that section's fields when
    the section loads without them (rows set past what the preset's other fields allow is the --set's, not
    --hardware's), else at --hardware or --model for their sections; any other as is."""
    for path in parsed:
        parts = tuple(path.split(".", 1))
        if exc.loc[:len(parts)] == parts:
            return type(exc)(exc.message, loc=("--set", path, *exc.loc[len(parts):]))
    section = exc.loc[0] if exc.loc else None
    mine = [p for p in parsed if p.partition(".")[0] == section and p.partition(".")[2]]
    if mine and _loads(hardware, model, {p: v for p, v in parsed.items() if p not in mine}):
        return type(exc)(exc.message, loc=("--set", ", ".join(mine)))
    if section in ("hardware", "model"):
        return type(exc)(exc.message, loc=(f"--{section}", *exc.loc[1:]))
    return exc


def _loads(hardware, model, sets: dict) -> bool:
    """Whether the point of `hardware`, `model` and `sets` validates (what an error is blamed on)."""
    try:
        load_config(point_mapping(hardware, model, sets))
    except WsemoeError:
        return False
    return True


def breakdown(config=None, point: int = 0, sets: list[str] | None = None, hardware=None,
              model=None) -> tuple[pd.Series, list]:
    """(the point's row, [(group, column, value, unit, meaning), ...]) for one design point (see `resolve`)."""
    cfg, one, values, typed, docs = resolve(config, point, sets, hardware, model)
    row = engine.evaluate_points(one, 0, 1).iloc[0]
    rows, used = [], set()
    for c in dict.fromkeys([*values, *typed]):
        unit, doc = describe(c)
        rows.append(("inputs", c, row[c] if c in row else values[c], unit, f"{doc}  {docs[c]}" if c in docs else doc))
        used.add(c)
    ns = config_namespaces(one, {c: row[c] for c in one.axis_names()})
    m, hw, wl = ns["model"], ns["hardware"], ns["workload"]
    rows.append(("model layers", "layers", mix.describe(m), "", "the model's layers: FFN and attention kinds with "
                 "their counts (docs/layers.md)"))
    for group, lines in _sums(row, one, ns):
        for name, value, unit, text in lines:
            rows.append((group, name, value, unit, text))
            used.add(name)
    for title, pick in GROUPS:
        if title == PRECISION:
            rows += _formats(wl, used)
        rows += [(title, c, row[c], *describe(c)) for c in row.index if c not in used and pick(c)]
        used |= {c for c in row.index if pick(c)}
    rows += [("other", c, row[c], *describe(c)) for c in row.index if c not in used]
    return row, rows


def _sums(row, one, ns) -> list:
    """[(group title, lines)] of how the point adds up: SRAM serving per operator, stage and hop; otherwise the
    step from its stage rooflines, memory per node and the serving metrics."""
    m, hw, wl = ns["model"], ns["hardware"], ns["workload"]
    spent = [(energysum.TITLE, energysum.energy(row, hw))] if energysum.energy(row, hw) else []
    if hw.weight_source == "sram":
        return [("how a token's time adds up (SRAM serving: per operator, per stage and wafer hop, per term)",
                 sramsum.sram_serving(row, m, wl)), *spent]
    wafers = getattr(hw, "wafers", None) or (1, 1)
    shape = (m.num_hidden_layers, params.moe_layers(m), wl.overlap, getattr(wl, "comm_overlap", "none"),
             hw.rows * hw.cols * wafers[0] * wafers[1])
    title = (f"how the step adds up (overlap: {wl.overlap}, comm_overlap: {getattr(wl, 'comm_overlap', 'none')}"
             + ("; training: compute terms hold forward + backward + recompute)" if wl.mode == "train" else ")"))
    first = None
    if wl.mode == "decode" and getattr(wl, "prompt_len", None) is not None:  # the prefill behind ttft_s
        first = serving.prefill_step(hw, m, wl, ns["mapping"], ns["balance"], one.expert_histogram, coded=False)
        first = {k: _plain(v) for k, v in first.items()}
    out = [(title, addsup.steps(row, *shape) + _busiest_rank(row, hw, m, wl, ns["mapping"])),
           ("how memory adds up (per node)", _training_state(row, hw, m, wl, ns["mapping"]) + addsup.memory(row, shape[3])),
           (SERVING, addsup.serving(row, first, *shape))]
    if getattr(hw, "pe_fabric", False):
        out.insert(2, ("how the PE fabric's terms add up (hardware.pe_fabric)", addsup.pe_fabric(row, hw, m, wl, ns["mapping"])))
    return out + spent


def _training_state(row, hw, m, wl, mp) -> list:
    """How the training state a node keeps follows from the parameters its resident weights hold: a gradient each,
    and the optimizer's state sharded over each parameter's copies (ZeRO-1: the attention groups' copies of the
    replicated weights; each routed expert's own copies, `expert_optimizer_shares_max` whole experts' worth)."""
    if wl.mode != "train" or hw.weight_source != "resident" or "expert_optimizer_shares_max" not in row:
        return []
    tp, nodes = micro_batch(hw, wl, mp).tp, topology.system_nodes(hw)
    slots, shares = float(row["expert_slots_max"]), float(row["expert_optimizer_shares_max"])
    shared, experts = (float(part.params) for part in weights.resident_node(hw, m, wl, tp, slots))
    grads, k = (shared + experts) * wl.bytes_per_grad, wl.optimizer_bytes_per_param
    if wl.optimizer_sharding == "data_parallel":
        kept = shared * tp / nodes + experts / slots * shares
        how = (f"({number(shared)} replicated × {tp}/{nodes} (their copies) + {number(experts / slots)} of one routed "
               f"expert's layers × {shares:.4g} experts' worth, each over its own copies)")
    else:
        kept, how = shared + experts, f"{number(shared + experts)} (no sharding)"
    total = grads + k * kept
    text = (f"gradients {number(shared + experts)} parameters × {wl.bytes_per_grad:g} B + optimizer {k:g} B × {how} "
            f"= {total:,.0f} B {addsup.check(total, float(row['mem_train_state_node_bytes']))}")
    return [("mem_train_state_node_bytes", total, "bytes", text)]


def _busiest_rank(row, hw, m, wl, mp) -> list:
    """How the attention FLOPs a stage executes follow from the model's count at the busiest TP rank (one forward
    pass: inference on resident weights), where that rank runs more than its even share."""
    if wl.mode == "train" or hw.weight_source != "resident":
        return []
    tp = micro_batch(hw, wl, mp).tp
    on_proj, on_core = (float(x) for x in busiest_rank(hw, m, tp))
    if on_proj == on_core == 1.0:
        return []
    proj, core, share = (float(row[c]) for c in ("attn_proj_flops", "attn_core_flops", "attn_core_executed_share"))
    total = proj * on_proj + core * share * on_core
    heads = m.num_attention_heads
    text = (f"the busiest of TP {tp}'s ranks holds ⌈{heads}/{tp}⌉ of {heads} query heads and runs the projections "
            f"TP cannot split (K/V past the KV heads, MLA's down-projections): projections {number(proj)} × "
            f"{on_proj:.4g} + core {number(core)} × {share:.4g} executed × {on_core:.4g} = {number(total)} "
            f"{addsup.check(total, float(row['attention_hw_flops']))}")
    return [("attention_hw_flops", total, "FLOP", text)]


def _formats(wl, used: set) -> list:
    """The workload's number formats with their bytes (those not already shown as inputs)."""
    out = []
    for f in FORMATS:
        path = f"workload.{f}"
        if path not in used:
            fmt = getattr(wl, f, "bf16")
            unit, doc = describe(path)
            b = BYTES[fmt]
            out.append((PRECISION, path, fmt, unit, f"{doc}  [{count(b, 'byte')} per value]"))
    return out


def _base_value(cfg, path: str):
    section, _, field = path.partition(".")
    spec = getattr(cfg, section)
    return spec.name if not field else getattr(spec, field)


def frame(rows: list):
    """The breakdown's rows as a DataFrame (group, term, value, unit, meaning), values as plain Python numbers."""
    import pandas as pd

    df = pd.DataFrame(rows, columns=["group", "term", "value", "unit", "meaning"])
    df["value"] = df["value"].map(lambda v: v.item() if hasattr(v, "item") else v)
    return df
