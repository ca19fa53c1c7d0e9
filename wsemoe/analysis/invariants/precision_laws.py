"""Invariants of number formats: a narrower weight or KV-cache format is never slower where the hardware's peak for
it is at least the wider format's (docs/cost-model.md, Formats and peaks)."""

from __future__ import annotations

import numpy as np

from wsemoe.analysis.invariants.cases import Case
from wsemoe.analysis.invariants.checking import Checker
from wsemoe.analysis.invariants.registry import TIMES, invariant, node_rows

FIELDS = ("attn_weight_format", "expert_weight_format", "kv_format")


def _peak(case: Case, fmt: str) -> np.ndarray:
    """The peak a matmul in `fmt` runs at, per grid row: its own, or the 16-bit one where the hardware has none."""
    bf16 = case.inputs("hardware.node_peak_flops").astype(float)
    if fmt == "bf16":
        return bf16
    own = case.inputs(f"hardware.node_peak_flops_{fmt}")
    return np.array([b if v is None or np.isnan(float(v)) else float(v) for v, b in zip(own, bf16)])


def _all(case: Case, fmt: str, **one) -> dict:
    """Every format field at `fmt`, except those given in `one`."""
    return {f"workload.{f}": np.full(len(case), one.get(f, fmt), dtype=object) for f in FIELDS}


def _given_bf16(case: Case) -> bool:
    """True when every row already has every format at bf16 (the grid as given is the all-bf16 frame)."""
    return all((case.inputs(f"workload.{f}") == "bf16").all() for f in FIELDS)


SINGLE = FIELDS[:2]   # the weight formats alone; the KV format only moves bytes, checked with all three at once


def _format_frames(case: Case) -> dict:
    """All formats bf16 (unless the grid is that already); each weight format alone at fp8; all fp8; all fp4."""
    out = {} if _given_bf16(case) else {"formats=bf16": _all(case, "bf16")}
    out.update({"formats=fp8": _all(case, "fp8"), "formats=fp4": _all(case, "fp4")})
    out.update({f"{f}=fp8": _all(case, "bf16", **{f: "fp8"}) for f in SINGLE})
    return out


@invariant("a narrower format is never slower: fp8 instead of bf16 for the attention weights or the expert weights "
           "alone and for all three formats (KV cache included), and fp4 instead of fp8 for all three, where the "
           "hardware's peak for the narrower format is at least the wider one's",
           "fewer bytes per value shorten every weight read, stream, KV read and expert migration they enter and "
           "leave less in memory; a peak at least as high shortens the matmuls; nothing else depends on the format",
           _format_frames)
def narrower_formats_are_never_slower(chk: Checker, case: Case):
    if not node_rows(case).any():   # SRAM serving places its regions by bytes per PE: a format moves its layout
        return chk.skip("SRAM serving only (its laws are the serving_* invariants)")
    frames = case.variants(_format_frames(case))
    bf16 = frames["formats=bf16"] if "formats=bf16" in frames else case.outputs()
    pk = {f: _peak(case, f) for f in ("bf16", "fp8", "fp4")}
    pairs = [(f"workload.{f}", bf16, frames[f"{f}=fp8"], ("bf16", "fp8")) for f in SINGLE]
    pairs += [("workload.<all formats>", bf16, frames["formats=fp8"], ("bf16", "fp8")),
              ("workload.<all formats>", frames["formats=fp8"], frames["formats=fp4"], ("fp8", "fp4"))]
    for path, wide, narrow, (w, n) in pairs:
        rows = (pk[n] >= pk[w]) & node_rows(case)   # SRAM serving chooses its layout by bytes: its own laws
        changed = {path: (np.full(len(case), w, dtype=object), np.full(len(case), n, dtype=object))}
        for col in TIMES:
            chk.compare(col, narrow[col], wide[col], "<=", (f"{path.partition('.')[2]} {n}", w), rows, changed)
