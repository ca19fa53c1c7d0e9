"""Whether `wsemoe validate` can fail: each physical constant a family's rows read from their hardware preset,
multiplied by 2 and by ½ one at a time, must make that family fail (some row `FAILS`: a check leaves its band, a
pinned known deviation drifts or crosses its band, a fit stops closing). `sweep` runs the family's rows in process
under each change; `RECORD` keeps what the last sweep found, so `validate` can say per family how many of these 2×
errors it would catch and which rows no such error moves (rows that cannot fail, counted apart), and a test checks
the record against a fresh sweep (tests/test_validate_perturb.py).

A constant of value 0 (CS-3's turn cycles) cannot be scaled and is not listed; nor are constants a family does
not read (the WaferLLM rows fix their own grids, so the fabric's size is not theirs).
"""

from __future__ import annotations

from contextlib import contextmanager

from wsemoe.config import presets

FACTORS = (2.0, 0.5)

# {family: (hardware preset, the constants its rows read: a top-level field or `pe.<field>`)}
CONSTANTS = {
    "waferllm": ("cs2", ("pe.clock_hz", "pe.fmac_width", "pe.link_bytes_per_cycle", "pe.hop_cycles",
                         "pe.relay_cycles", "pe.op_overhead_cycles")),
    "cerebras": ("cs3", ("pe.clock_hz", "pe.fmac_width", "pe.link_bytes_per_cycle", "pe.sram_bw_total_bytes_per_s",
                         "pe.hop_cycles", "pe.relay_cycles", "pe.op_overhead_cycles", "pe.sram_per_pe_bytes",
                         "pe.program_bytes_per_pe", "pe.fabric_rows", "pe.fabric_cols",
                         "inter_wafer_link_bw_bytes_per_s", "inter_wafer_hop_latency_s")),
}

# What the last sweep found (regenerate with `sweep`, compare in tests/test_validate_perturb.py):
# {family: {"missed": {(constant, factor) no row of the family caught: why}, "cannot_fail": [claims no change moved]}}
RECORD: dict[str, dict] = {
    "waferllm": {
        "missed": {("pe.link_bytes_per_cycle", 2.0): "not read at these rows: a 16-bit element takes one 32-bit "
                                                     "wavelet however wide the link (unpacked, the SDK's descriptors)",
                   ("pe.link_bytes_per_cycle", 0.5): "as at ×2: one wavelet per 16-bit element either way"},
        "cannot_fail": ["waferllm.rising", "waferllm.growth", "waferllm.binds"],
    },
    "cerebras": {
        "missed": {("pe.fmac_width", 2.0): "not read under the default pe_mac_rate reading: CS-3's MACs run at its "
                                           "SRAM bandwidth (3.5 per cycle), below 4, 8 or 16 lanes",
                   ("pe.fmac_width", 0.5): "as at ×2: 4 lanes still exceed the SRAM-bound 3.5",
                   ("pe.link_bytes_per_cycle", 2.0): "not read: one wavelet per 16-bit element (as WaferLLM's)",
                   ("pe.link_bytes_per_cycle", 0.5): "as at ×2",
                   ("pe.program_bytes_per_pe", 0.5): "a smaller program leaves more room: every published wafer "
                                                     "count still holds (only its upper side is pinned, by the fit)",
                   ("inter_wafer_link_bw_bytes_per_s", 2.0): "16 KB per token over 150 GB/s is 0.1 µs a hop, under "
                                                             "0.1% of a token's time",
                   ("inter_wafer_link_bw_bytes_per_s", 0.5): "as at ×2: 0.2 µs a hop",
                   ("inter_wafer_hop_latency_s", 2.0): "3 hops of 4 µs on 70B's 1.2 ms token, 1%; 405B's 25 hops "
                                                      "move it by 5%, inside its pinned drift"},
        "cannot_fail": ["cerebras.wafers:llama-3.1-8b", "cerebras.ratio", "cerebras.ttft:llama-3.1-405b"],
    },
}


def scaled(spec, path: str, factor: float):
    """The hardware spec with the constant at `path` (`field` or `pe.field`) times `factor` (an integer field
    stays an integer)."""
    fields = spec.model_dump()
    where, name = (fields["pe"], path[3:]) if path.startswith("pe.") else (fields, path)
    value = where[name] * factor
    where[name] = int(round(value)) if isinstance(where[name], int) else value
    return type(spec)(**fields)


@contextmanager
def perturbed(preset: str, path: str, factor: float):
    """`presets.load_hardware(preset)` returns the preset with one constant scaled while inside."""
    original = presets.load_hardware

    def load(name: str):
        spec = original(name)
        return scaled(spec, path, factor) if name == preset else spec

    presets.load_hardware = load
    try:
        yield
    finally:
        presets.load_hardware = original


def family_rows(family: str) -> list[dict]:
    """The family's rows with their status (validate.run_all)."""
    from wsemoe.validate import run_all

    return run_all(only=[family])


def sweep(family: str) -> dict:
    """Each (constant, factor)'s failing rows, the changes no row caught, and the claims no change moved."""
    preset, paths = CONSTANTS[family]
    claims = [r["id"] for r in family_rows(family) if r["kind"] != "info"]
    failing: dict[tuple, list[str]] = {}
    for path in paths:
        for factor in FACTORS:
            with perturbed(preset, path, factor):
                failing[(path, factor)] = [r["id"] for r in family_rows(family) if r["status"] == "FAILS"]
    moved = {rid for ids in failing.values() for rid in ids}
    return {"failing": failing, "missed": [k for k, ids in failing.items() if not ids],
            "cannot_fail": [rid for rid in claims if rid not in moved]}


def caught(family: str) -> tuple[int, int] | None:
    """(2× and ½× changes the family's rows catch, changes tried) as recorded; None for a family not swept."""
    if family not in RECORD:
        return None
    tried = len(CONSTANTS[family][1]) * len(FACTORS)
    return tried - len(RECORD[family]["missed"]), tried


def line(families) -> str:
    """'2× errors caught: waferllm 12 of 12, cerebras 24 of 26; rows no such error moves: 3 (context)', or ''."""
    parts, idle = [], 0
    for fam in families:
        got = caught(fam)
        if got is not None:
            parts.append(f"{fam} {got[0]} of {got[1]}")
            idle += len(RECORD[fam]["cannot_fail"])
    if not parts:
        return ""
    return f" 2× errors caught: {', '.join(parts)}; claims no such error moves: {idle} (context)."
