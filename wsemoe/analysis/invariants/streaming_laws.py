"""Invariants of the weight-streaming wafer at PE level (hardware.pe_fabric): more PEs or SRAM per PE never make a
point slower or infeasible, every expert has exactly one region, and the token all-to-all on the PE mesh conserves
bytes × hops (docs/cost-model.md, "Weight streaming at PE level"). Every other row is skipped.
"""

from __future__ import annotations

import numpy as np

from wsemoe.analysis.invariants.cases import Case
from wsemoe.analysis.invariants.checking import Checker
from wsemoe.analysis.invariants.registry import TIMES, invariant
from wsemoe.cost.fabric.mesh import hops_matrix
from wsemoe.cost.wafer import expertgrid

NOT_PE = "no weight-streaming point at PE level (hardware.pe_fabric) in this config"
G_PE = ("g_pe_sram_attn", "g_pe_sram_moe")


def _pe_rows(case: Case) -> np.ndarray:
    return np.array([bool(v) for v in case.inputs("hardware.pe_fabric")])


def _fact(case: Case, name: str) -> np.ndarray:
    return np.array([np.nan if v is None else v for v in case.inputs(f"hardware.pe.{name}")], dtype=float)


def _changed(case: Case, name: str, values: np.ndarray) -> dict:
    """`hardware.pe.<name>` at `values` on PE-level rows, as given elsewhere."""
    given = case.inputs(f"hardware.pe.{name}")
    return {f"hardware.pe.{name}": np.where(_pe_rows(case), values, given).astype(object)}


def _more_frames(case: Case) -> dict:
    """The grid with twice the program rectangle's rows of PEs, and with twice the SRAM per PE."""
    if not _pe_rows(case).any():
        return {}
    rows, margin = _fact(case, "fabric_rows"), _fact(case, "kernel_margin_rows")
    return {"PEs×2": _changed(case, "fabric_rows", 2 * rows - margin),
            "SRAM×2": _changed(case, "sram_per_pe_bytes", 2 * _fact(case, "sram_per_pe_bytes"))}


def _worst(frame) -> np.ndarray:
    return np.fmax.reduce(frame[list(G_PE)].to_numpy(float), axis=1)


@invariant("weight streaming at PE level: more PEs or more SRAM per PE never makes a point slower or infeasible",
           "tile sides come from a √2 ladder of the program rectangle, so twice the rows keeps every candidate "
           "layout (same pipeline, same link loads) and adds some; more SRAM or PEs lowers the area an expert needs "
           "and what every PE holds; the layout is the fastest that fits, judged by the MoE layer's own time",
           _more_frames)
def streaming_more_pes_or_sram_never_hurt(chk: Checker, case: Case):
    frames = case.variants(_more_frames(case))
    if not frames:
        return chk.skip(NOT_PE)
    base, on = case.outputs(), _pe_rows(case)
    fits = on & (_worst(base) <= 0)
    for tag, more in frames.items():
        for col in TIMES:
            if col in base.columns:
                chk.compare(col, more[col], base[col], "<=", (f"with {tag}", "as given"), on)
        chk.compare("worst PE SRAM constraint (max g)", _worst(more), 0.0, "<=", (f"with {tag}", "its limit"), fits)


def multicast_total(g: expertgrid.Grid) -> float:
    """Σ link loads of the multicast trees counted source by source: a tile at (r0, c0) sends its 1/E along its row
    over the reach − 1 links between the expert columns, then in every expert column c over max(r0, last[c]) links
    (to row 0 and down to the column's last expert)."""
    reach = min(g.experts, g.cols)
    last = (g.experts - 1 - np.arange(reach)) // g.cols
    r0 = np.arange(g.experts) // g.cols
    links = (reach - 1) + np.maximum(r0[:, None], last[None, :]).sum(axis=1)
    return float(links.sum() / g.experts)


@invariant("weight streaming at PE level: every expert has exactly one region tile, and the token all-to-all conserves "
           "bytes × hops (Σ link loads = Σ transfers × tile hops; multicast: Σ tree links; the combine carries what "
           "the dispatch did)",
           "a grid holds the first E tiles row-major, one expert each; XY routes are minimal, so a token copy sent h "
           "tiles away crosses exactly h tile links, and a multicast tree crosses each of its links once")
def streaming_grids_are_whole_and_conserve_traffic(chk: Checker, case: Case):
    for key, g in case.streaming_grids():
        mask = expertgrid.used(g.experts, g.rows, g.cols)
        chk.compare("experts placed exactly once", float(mask.sum()), float(g.experts), "==",
                    ("tiles holding an expert", "E"), inputs=key)
        chk.compare("every grid row holds an expert", float(mask.any(axis=1).all()), 1.0, "==",
                    ("no empty row", "true"), inputs=key)
        if g.mode == "unicast":
            moved = float((g.pattern.dense() * hops_matrix(g.rows, g.cols)).sum())
            chk.compare("unicast dispatch link load", g.dispatch.total(), moved, "==", ("Σ link loads", "Σ bytes × hops"),
                        inputs=key)
        else:
            chk.compare("multicast dispatch link load", g.dispatch.total(), multicast_total(g), "==",
                        ("Σ link loads", "Σ tree links"), inputs=key)
        chk.compare("combine link load", g.combine.total(), g.dispatch.total(), "==", ("Σ combine", "Σ dispatch"),
                    inputs=key)
    return chk.skip(NOT_PE)
