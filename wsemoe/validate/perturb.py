"""Whether `wsemoe validate` can fail: each physical constant a family's rows read from their hardware presets,
multiplied by 2 and by ½ one at a time, must make that family fail (some row `FAILS`: a check leaves its band, a
pinned known deviation drifts or crosses its band, a fit stops closing). `sweep` runs the family's rows in process
under each change; `RECORD` keeps what the last sweep found, so `validate` can say per family how many of these 2×
errors it would catch and which rows no such error moves (rows that cannot fail, counted apart), and a test checks
the record against a fresh sweep (tests/test_validate_perturb.py). A change that moves no row's value at all (a
constant the rows do not read, or read where it changes nothing) is counted apart from those that move rows: its
recorded reason says so (`INERT`), and the fresh sweep checks that it does.

A change is made where every reader sees it: the preset's fields as read from its file (`presets.raw`), so the
node figures a wafer derives from its PE facts follow, and sweeps that name the preset run on it. To stay cheap a
sweep builds the rows for their statuses alone (`common.only_claims`: no ranges over readings, no context rows)
and re-runs only the parts of a family that read the changed preset (found by watching which presets each part
reads); a part that never reads it cannot move.

Not listed: a constant of value 0 (CS-3's turn cycles, the wafers' `expert_half_tokens`), which scaling leaves 0;
a share bounded by 1 (`memory_usable_fraction`, and `matmul_efficiency` where ×2 passes 1), which ×2 makes no
preset; energy and cost fields (the energy family's own test perturbs those); constants a family does not read
(the WaferLLM rows fix their own grids, so the fabric's size is not theirs). The params family reads model presets
only (shapes and published counts, no physical constant) and is not swept.
"""

from __future__ import annotations

import copy
import math
import typing
from contextlib import contextmanager

from wsemoe.config import presets

FACTORS = (2.0, 0.5)

_NODE = ("node_peak_flops", "node_peak_flops_fp8", "node_peak_flops_fp4", "node_memory_bytes",
         "node_memory_bw_bytes_per_s", "link_bw_bytes_per_s", "hop_latency_s", "port_bw_bytes_per_s",
         "kernel_launch_s", "collective_latency_s", "alltoall_latency_s")   # a die-level preset's physical figures
_WSC = (*_NODE, "matmul_efficiency")   # wsc-b200-8x8: expert_half_tokens 0 (scaling leaves it 0)

# {family: {hardware preset: the constants its rows read (a top-level field or `pe.<field>`)}}
CONSTANTS = {
    "bta": {"cs2": ("pe.pe_count", "pe.fabric_rows", "pe.fabric_cols", "pe.sram_per_pe_bytes", "pe.clock_hz",
                    "pe.fmac_width", "pe.link_bytes_per_cycle", "pe.sram_bw_total_bytes_per_s",
                    "io_in_bw_bytes_per_s", "io_out_bw_bytes_per_s", "matmul_efficiency", "expert_half_tokens")},
    "mapping": {"wsc-b200-8x8": _WSC},
    "balance": {"wsc-b200-8x8": _WSC},
    "scale": {"wsc-b200-4x8x8": (*_WSC, "inter_wafer_link_bw_bytes_per_s", "inter_wafer_hop_latency_s"),
              "nvl72": _NODE},
    "waferllm": {"cs2": ("pe.clock_hz", "pe.fmac_width", "pe.link_bytes_per_cycle", "pe.hop_cycles",
                         "pe.relay_cycles", "pe.op_overhead_cycles")},
    "cerebras": {"cs3": ("pe.clock_hz", "pe.fmac_width", "pe.link_bytes_per_cycle", "pe.sram_bw_total_bytes_per_s",
                         "pe.hop_cycles", "pe.relay_cycles", "pe.op_overhead_cycles", "pe.sram_per_pe_bytes",
                         "pe.program_bytes_per_pe", "pe.fabric_rows", "pe.fabric_cols",
                         "inter_wafer_link_bw_bytes_per_s", "inter_wafer_hop_latency_s", "sync_io_stall_s")},
    "gpu": {"nvl72": (*_NODE, "matmul_efficiency"),
            "h100-sxm": (*(c for c in _NODE if c != "node_peak_flops_fp4"), "scale_out_bw_bytes_per_s",
                         "scale_out_latency_s", "matmul_efficiency")},  # H100 has no FP4 peak
}

# What the last sweep found (regenerate with `sweep`, compare in tests/test_validate_perturb.py):
# {family: {"missed": {("preset:constant", factor) no row of the family caught: why}, "cannot_fail": [claims no
# change moved]}}. A pinned known deviation fails when its gap moves by more than a quarter either way
# (validate/deviations.py), so a change that moves one by less, towards its band or away, is missed.
PORT = "no row's value changes: a die injects over its four mesh links, and its port (their sum, 3.6 TB/s) binds " \
       "before the busiest link in none of these rows' phases, at twice or at half"
FIXED = "not read: these rows run at the paper's reading fixed_latency=launch_only (its simulator's launches, no " \
        "per-call collective cost), which sets the wafer's per-call costs (1 µs, 0, 0)"
NARROW = "not read: no row's sweep runs an 8-bit or 4-bit format; matmuls run at the 16-bit peak"
FITS = "no row's value changes: capacity only decides which points fit, and every point still fits"
UNASKED = "no row's value changes: the rows compare the paper's settings whether or not they fit the memory"
SWITCH = "not read: a switch system's traffic runs at its port bandwidth (port_bw_bytes_per_s)"
INERT = ("not read", "no row's value changes")   # how a recorded reason says its change moves no row at all


def _both(preset: str, paths, why: str) -> dict:
    return {(f"{preset}:{p}", f): why for p in paths for f in FACTORS}


_UNREAD_WSC = {**_both("{w}", ("node_peak_flops_fp8", "node_peak_flops_fp4"), NARROW),
               **_both("{w}", ("port_bw_bytes_per_s",), PORT)}
_FIXED_WSC = _both("{w}", ("kernel_launch_s", "collective_latency_s", "alltoall_latency_s"), FIXED)


def _on(wafer: str, missed: dict) -> dict:
    return {(k.format(w=wafer), f): why for (k, f), why in missed.items()}


RECORD: dict[str, dict] = {
    "bta": {
        "missed": {
            ("cs2:pe.pe_count", 2.0): "twice the SRAM and MACs: each shipped micro-batch needs half the SRAM (a fit "
                                      "bounds it only from above) and BTA's loss and speedup rise from 1.06× to 1.15×, "
                                      "towards their bands by under a quarter of their pinned gaps",
            **_both("cs2", ("pe.fabric_rows", "pe.fabric_cols"), "no row's value changes: the fabric's shape sizes "
                    "only the die links, which carry nothing these rows time"),
            ("cs2:pe.sram_per_pe_bytes", 2.0): "each shipped micro-batch needs half the SRAM (the fit bounds it only "
                                               "from above); BTA's loss and speedup fall to 1.00×, their pinned gaps "
                                               "(1.06× against 7× and 5×) growing by 4%, under a quarter",
            **{(f"cs2:{p}", f): "BTA's loss and speedup fall from 1.06× to 1.00×: the pinned gaps (1.06× against 7× "
               "and 5×) grow by 4%, under a quarter; the trend rows are ratios within one sweep"
               for p, f in (("pe.clock_hz", 0.5), ("pe.fmac_width", 0.5), ("matmul_efficiency", 0.5),
                            ("io_in_bw_bytes_per_s", 2.0))},
            **_both("cs2", ("pe.link_bytes_per_cycle", "pe.sram_bw_total_bytes_per_s"), "no row's value changes: "
                    "weight streaming at die level times the wafer I/O and the MACs, not the PE links or the SRAM's "
                    "bandwidth"),
            ("cs2:io_out_bw_bytes_per_s", 2.0): "no row's value changes: the outbound I/O does not bind these points",
            ("cs2:io_out_bw_bytes_per_s", 0.5): "BTA's loss and speedup rise to 1.16×, towards their bands by "
                                                "under a quarter of their pinned gaps",
            **_both("cs2", ("expert_half_tokens",), "moves no row by more than 0.6%"),
        },
        "cannot_fail": ["shipped:llama-3.2-1b", "shipped:llama-3.2-3b", "shipped:llama-3.1-8b", "shipped:llama-3.1-70b",
                        "shipped:gpt3-xl", "bta.falls.experts", "bta.flat.experts", "bta.falls.topk",
                        "bta.docs.experts", "bta.speedup", "bta.edges"],
    },
    "mapping": {
        "missed": {
            **_on("wsc-b200-8x8", {**_UNREAD_WSC, **_FIXED_WSC}),
            **_both("wsc-b200-8x8", ("node_peak_flops", "node_memory_bw_bytes_per_s", "matmul_efficiency"),
                    "no row's value changes: the rows compare the "
                    "communication phases of ER and the block mapping on one wafer; compute and HBM reads do not "
                    "enter them"),
            ("wsc-b200-8x8:node_memory_bytes", 2.0): "the rows compare the settings where both mappings fit: at "
                                                      "twice the memory Qwen3-235B at B 1,024 fits too and the large-"
                                                      "batch communication cut moves from 8% to 6%, inside its band",
            ("wsc-b200-8x8:node_memory_bytes", 0.5): "no row's value changes: the settings that stop fitting at ½ "
                                                      "(36 of 48 points fit as shipped, 32 at ½) set no row's extreme",
        },
        "cannot_fail": ["mapping.a2a", "mapping.allreduce", "mapping.comm.large", "mapping.topk", "mapping.ftd"],
    },
    "balance": {
        "missed": {
            **_on("wsc-b200-8x8", {**_UNREAD_WSC, **_FIXED_WSC}),
            **_both("wsc-b200-8x8", ("node_peak_flops", "node_memory_bw_bytes_per_s", "matmul_efficiency"),
                    "no row's value changes: "
                    "replication's cuts are ratios of one die under two balancers, and the churn is refitted to "
                    "stop-the-world's 2 in 10, so the migration whose hidden share is checked scales along"),
            **_both("wsc-b200-8x8", ("node_memory_bytes",), UNASKED + ": all 32 fit as shipped, none at ½"),
            **_both("wsc-b200-8x8", ("hop_latency_s", "link_bw_bytes_per_s"), "moves replication's communication "
                    "cut by half a point (−13.6% to −13.1% or −13.8%), inside its band"),
        },
        "cannot_fail": ["balance.skew", "balance.replicate.compute", "balance.replicate.comm", "balance.stw",
                        "balance.hidden"],
    },
    "scale": {
        "missed": {
            **_on("wsc-b200-4x8x8", _UNREAD_WSC),
            ("wsc-b200-4x8x8:inter_wafer_link_bw_bytes_per_s", 2.0): "HER's best cut falls from −16.6% to −14.0%: "
                                                                     "its pinned gap grows by under a quarter; the "
                                                                     "other rows move by under a point",
            ("wsc-b200-4x8x8:kernel_launch_s", 0.5): "the means move towards the band by under a quarter of their "
                                                     "gaps (+11.9%, −8.6%)",
            ("wsc-b200-4x8x8:collective_latency_s", 0.5): "the means move towards the band by under a quarter of "
                                                          "their gaps (+8.7%, −10.2%)",
            ("wsc-b200-4x8x8:node_peak_flops", 2.0): "the means move towards the band by under a quarter of their "
                                                     "gaps (DeepSeek-V3 +6.8% to +8.7%, Qwen3 −12.1% to −10.4%)",
            ("wsc-b200-4x8x8:matmul_efficiency", 2.0): "the means move towards the band by under a quarter of "
                                                          "their gaps (+8.7%, −10.4%), as at twice the peak",
            ("wsc-b200-4x8x8:node_memory_bytes", 2.0): "only HER's best cut moves, towards its band by under a "
                                                       "quarter of its gap (−16.6% to −18.6%)",
            ("wsc-b200-4x8x8:node_memory_bytes", 0.5): "HER's best cut falls from −16.6% to −9.2% as fewer layouts "
                                                       "fit: its pinned gap grows by under a quarter",
            ("nvl72:node_peak_flops", 2.0): "only Qwen3's mean moves, from −12.1% to −12.9% (a gap under a quarter "
                                            "larger): NVL72's decode at 1–32 tokens/device is bound by HBM reads and "
                                            "per-call costs",
            **_both("nvl72", ("node_peak_flops_fp8", "node_peak_flops_fp4"), NARROW),
            **_both("nvl72", ("node_memory_bytes",), FITS),
            **_both("nvl72", ("link_bw_bytes_per_s",), SWITCH),
            ("nvl72:hop_latency_s", 2.0): "the means move towards the band by under a quarter of their gaps "
                                          "(+8.3%, −10.2%)",
            ("nvl72:hop_latency_s", 0.5): "the means fall to +6.1% and −13.1%: the pinned gaps grow by "
                                          "under a quarter",
            ("nvl72:port_bw_bytes_per_s", 2.0): "the means fall to +5.6% and −13.3%: the pinned gaps grow "
                                                "by under a quarter",
            ("nvl72:port_bw_bytes_per_s", 0.5): "the means move towards the band by under a quarter of their "
                                                "gaps (+9.1%, −9.8%)",
            ("nvl72:collective_latency_s", 2.0): "the means move towards the band by under a quarter of their "
                                                 "gaps (+10.2%, −7.9%)",
            ("nvl72:collective_latency_s", 0.5): "the means fall to +5.1% and −14.3%: the pinned gaps grow "
                                                 "by under a quarter",
        },
        "cannot_fail": ["scale.her.wafer", "scale.ni.compute.hot", "scale.ni.comm.hot", "scale.ni.compute.fill"],
    },
    "waferllm": {
        "missed": {},
        "cannot_fail": ["waferllm.rising", "waferllm.growth", "waferllm.binds"],
    },
    "cerebras": {
        "missed": {("cs3:pe.program_bytes_per_pe", 0.5): "no row's value changes: a smaller program leaves more room, and "
                                                         "every published wafer "
                                                         "count still holds (only its upper side is pinned, by the "
                                                         "fit)",
                   ("cs3:inter_wafer_link_bw_bytes_per_s", 2.0): "16 KB per token over 150 GB/s is 0.1 µs a hop, "
                                                                 "under 0.1% of a token's time",
                   ("cs3:inter_wafer_link_bw_bytes_per_s", 0.5): "as at ×2: 0.2 µs a hop"},
        "cannot_fail": ["cerebras.wafers:llama-3.1-8b", "cerebras.ttft:llama-3.1-405b"],
    },
    "gpu": {
        "missed": {
            ("nvl72:node_peak_flops", 2.0): "GB200 at 768 tokens/GPU is bound by its FP8 projections and experts: "
                                            "the row moves from 1.09× to 1.37×, the NVFP4 worker's to 1.18×, inside "
                                            "×[0.67, 1.5] (the width of the fitted stack's checks of the same points)",
            **_both("nvl72", ("node_peak_flops_fp8",), "the FP8 worker moves from 1.09× to 1.39× or 0.77×, the "
                    "NVFP4 worker (FP8 projections) to 0.99× or 0.74×, inside ×[0.67, 1.5]"),
            **_both("nvl72", ("node_peak_flops_fp4",), "only the NVFP4 worker's experts run at the FP4 peak: its row "
                    "moves from 0.89× to 0.97× or 0.77×"),
            ("nvl72:node_memory_bytes", 2.0): FITS,
            **_both("nvl72", ("node_memory_bw_bytes_per_s",), "no row's value changes: at 768 and 1,408 tokens/GPU "
                    "every stage is compute-bound, the KV and weight reads shorter than the matmuls at either "
                    "bandwidth"),
            **_both("nvl72", ("link_bw_bytes_per_s",), SWITCH),
            **_both("nvl72", ("hop_latency_s",), "moves the decode rows by under 1% (a few dozen calls per layer "
                    "against a 70-120 ms step) and the one-token dispatch call by 2%, inside its fitted ±5%"),
            **_both("nvl72", ("kernel_launch_s",), "moves the decode rows by under 1%: a few dozen calls per layer "
                    "against a 70-120 ms step; dispatch and combine calls pay no kernel launch of their own"),
            **_both("nvl72", ("collective_latency_s",), "no row's value changes: TP 1 runs no all-reduce"),
            ("h100-sxm:node_peak_flops", 0.5): "the decode row moves from 1.49× to 1.24× (the 16-bit attention core "
                                               "and head now outlast the combine they overlap) and the prefill row "
                                               "from 1.16× to 0.94×, both inside the band",
            ("h100-sxm:node_memory_bytes", 2.0): FITS,
            **_both("h100-sxm", ("link_bw_bytes_per_s", "hop_latency_s", "port_bw_bytes_per_s",
                                 "collective_latency_s"),
                    "no row's value changes: the step is bound by the all-to-all's InfiniBand share, not by NVLink "
                    "inside a server, and TP 1 runs no all-reduce"),
            ("h100-sxm:node_memory_bw_bytes_per_s", 2.0): "moves only the prefill row, by under 0.1% (its head's "
                                                          "weight read): both steps are bound elsewhere",
            ("h100-sxm:node_memory_bw_bytes_per_s", 0.5): "the decode row moves from 1.49× to 1.44× (its KV and "
                                                          "weight reads join the compute the combine overlaps), the "
                                                          "prefill row by under 0.1%: inside the band",
            **{("h100-sxm:" + c, f): "moves the decode row by under 2% (1.47–1.50×): the per-call costs are small "
               "beside the InfiniBand transfer" for c in ("kernel_launch_s", "scale_out_latency_s")
               for f in FACTORS},
            ("h100-sxm:alltoall_latency_s", 2.0): "the decode row moves from 1.49× to 1.35× (52 µs a call against "
                                                  "an InfiniBand combine of about 300 µs) and the gpu.ib rows by "
                                                  "up to 13%, inside their bands",
        },
        "cannot_fail": [],
    },
}


def key(preset: str, path: str) -> str:
    """'cs3:pe.clock_hz': a constant as the record names it."""
    return f"{preset}:{path}"


def integer(path: str) -> bool:
    """Whether the spec types the constant at `path` as an integer (a YAML `1` of a float field is not one)."""
    from wsemoe.specs.hardware import HardwareSpec, PEFacts

    model, name = (PEFacts, path[3:]) if path.startswith("pe.") else (HardwareSpec, path)
    ann = model.model_fields[name].annotation
    return ann is int or int in typing.get_args(ann)


def scaled(fields: dict, path: str, factor: float) -> dict:
    """A copy of a preset's raw fields with the constant at `path` (`field` or `pe.field`) times `factor` (an
    integer field stays an integer)."""
    out = copy.deepcopy(fields)
    where, name = (out["pe"], path[3:]) if path.startswith("pe.") else (out, path)
    value = where[name] * factor
    where[name] = int(round(value)) if integer(path) else float(value)
    return out


@contextmanager
def perturbed(preset: str, path: str, factor: float):
    """Every read of the hardware preset (`presets.raw`, so `load_hardware` and sweeps alike) sees one constant
    scaled while inside."""
    original = presets.raw

    def read(kind: str, name: str, loc=()):
        fields = original(kind, name, loc)
        return scaled(fields, path, factor) if kind == "hardware" and name == preset else fields

    presets.raw = read
    try:
        yield
    finally:
        presets.raw = original


@contextmanager
def watching(seen: set):
    """Adds to `seen` the name of every hardware preset read while inside."""
    original = presets.raw

    def read(kind: str, name: str, loc=()):
        if kind == "hardware":
            seen.add(name)
        return original(kind, name, loc)

    presets.raw = read
    try:
        yield
    finally:
        presets.raw = original


def _part_rows(family: str, module: str, fn: str) -> list[dict]:
    import importlib

    return [{**r, "family": family} for r in getattr(importlib.import_module(module), fn)()]


def sweep(family: str) -> dict:
    """Each (constant, factor)'s failing rows, the changes no row caught, the claims no change moved, and the rows
    failing with nothing changed (none, or the sweep proves nothing)."""
    from wsemoe.validate import PARTS
    from wsemoe.validate.common import only_claims
    from wsemoe.validate.deviations import classify

    parts = [p for p in PARTS if p[0] == family]
    base, reads = {}, {}
    with only_claims():
        for part in parts:
            reads[part] = set()
            with watching(reads[part]):
                base[part] = _part_rows(*part)
        rows = classify([dict(r) for p in parts for r in base[p]])
        claims = [r["id"] for r in rows if r["kind"] != "info"]
        unperturbed = [r["id"] for r in rows if r["status"] == "FAILS"]
        failing: dict[tuple, list[str]] = {}
        values: dict[tuple, dict] = {}
        for preset, paths in CONSTANTS[family].items():
            for path in paths:
                for factor in FACTORS:
                    with perturbed(preset, path, factor):
                        now = [r for p in parts for r in (_part_rows(*p) if preset in reads[p]
                                                          else [dict(r) for r in base[p]])]
                    failing[(key(preset, path), factor)] = [r["id"] for r in classify(now) if r["status"] == "FAILS"]
                    values[(key(preset, path), factor)] = {r["id"]: r["value"] for r in now if r["kind"] != "info"}
    moved = {rid for ids in failing.values() for rid in ids}
    base_values = {r["id"]: r["value"] for r in rows if r["kind"] != "info"}
    return {"failing": failing, "missed": [k for k, ids in failing.items() if not ids],
            "inert": [k for k, v in values.items() if all(_same(x, base_values[rid]) for rid, x in v.items())],
            "cannot_fail": [rid for rid in claims if rid not in moved], "unperturbed": unperturbed,
            "values": values, "base": base_values}


def _same(a: float, b: float) -> bool:
    """Two row values equal to rounding (NaN equal to NaN)."""
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return abs(a - b) <= 1e-9 * max(1.0, abs(b))


def against_record(family: str) -> list[str]:
    """What a fresh sweep of the family finds that its record does not say ([] when they agree): rows failing
    with nothing changed, changes caught or missed unlike the record, claims moved or not unlike it, a missed
    change recorded without its reason."""
    found, record = sweep(family), RECORD[family]
    out = [f"fails unperturbed: {rid}" for rid in found["unperturbed"]]
    out += [f"missed, not recorded: {k}" for k in found["missed"] if k not in record["missed"]]
    out += [f"recorded as missed, caught by {found['failing'][k]}: {k}" for k in record["missed"]
            if k not in found["missed"]]
    out += [f"moves a row, recorded as moving none: {k}" for k in record["missed"]
            if inert(record["missed"][k]) and k not in found["inert"]]
    out += [f"moves no row, recorded as moving some: {k}" for k in found["inert"]
            if k in record["missed"] and not inert(record["missed"][k])]
    out += [f"moves no more: {rid}" for rid in found["cannot_fail"] if rid not in record["cannot_fail"]]
    out += [f"now moved: {rid}" for rid in record["cannot_fail"] if rid not in found["cannot_fail"]]
    return out + [f"no reason: {k}" for k, why in record["missed"].items() if not why]


def inert(why: str) -> bool:
    """Whether a recorded miss is a change that moves no row at all (its reason says so: INERT), as against one
    that moves rows but not out of their bands."""
    return why.startswith(INERT)


def caught(family: str) -> tuple[int, int, int] | None:
    """(2× and ½× changes the family's rows catch, changes that move some row, changes tried) as recorded; None
    for a family not swept."""
    if family not in RECORD:
        return None
    tried = sum(len(paths) for paths in CONSTANTS[family].values()) * len(FACTORS)
    idle = sum(inert(why) for why in RECORD[family]["missed"].values())
    return tried - len(RECORD[family]["missed"]), tried - idle, tried


def line(families) -> str:
    """'2× errors caught (of those that move a row): waferllm 10 of 10, …; 4 more change no row's value; claims
    no such error moves: 3 (context).', or ''."""
    parts, idle, quiet = [], 0, 0
    for fam in families:
        got = caught(fam)
        if got is not None:
            parts.append(f"{fam} {got[0]} of {got[1]}")
            quiet += got[2] - got[1]
            idle += len(RECORD[fam]["cannot_fail"])
    if not parts:
        return ""
    return (f" 2× errors caught (of those that move a row): {', '.join(parts)}; {quiet} more change no row's value; "
            f"claims no such error moves: {idle} (context).")
