"""Whether `wsemoe validate` can fail: each physical constant a family's rows read from their hardware presets,
multiplied by 2 and by ½ one at a time, must make that family fail (some row `FAILS`: a check leaves its band, a
pinned known deviation drifts or crosses its band, a fit stops closing). `sweep` runs the family's rows in process
under each change; `RECORD` (validate/perturb_record.py, beside `CONSTANTS`) keeps what the last sweep found, so
`validate` can say per family how many of these 2× errors it would catch and which rows no such error moves (rows
that cannot fail, counted apart), and a test checks
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
from wsemoe.validate.perturb_record import CONSTANTS, FACTORS, INERT, RECORD

__all__ = ["CONSTANTS", "FACTORS", "RECORD", "against_record", "caught", "line", "overall", "perturbed", "sweep"]


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


def overall(families) -> tuple[int, int]:
    """(distinct 2× and ½× changes some listed family catches, distinct changes that move some row): a preset
    several families read (nvl72, h100-sxm) is one change to `validate` however many families see it, and
    `validate` fails on it when any one of them does."""
    seen: dict[tuple, tuple[bool, bool]] = {}
    for fam in families:
        if fam not in RECORD:
            continue
        for preset, paths in CONSTANTS[fam].items():
            for k in ((key(preset, p), f) for p in paths for f in FACTORS):
                why = RECORD[fam]["missed"].get(k)
                was = seen.get(k, (False, False))
                seen[k] = (was[0] or why is None, was[1] or why is None or not inert(why))
    return sum(c for c, _ in seen.values()), sum(m for _, m in seen.values())


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
    whole = overall(families)
    union = (f" Together they fail on {whole[0]} of the {whole[1]} distinct changes that move a row (a preset "
             "several families read counts once)." if len(parts) > 1 else "")
    return (f" 2× errors caught (of those that move a row): {', '.join(parts)}; {quiet} more change no row's value; "
            f"claims no such error moves: {idle} (context).{union}")
