"""Hardware spec: the wafer as an R×C grid of nodes, its fabric, weight source and calibration."""

from __future__ import annotations

import math

import numpy as np
from typing import Literal, Optional

from pydantic import Field, PositiveFloat, PositiveInt, ValidationError, model_validator

from wsemoe.specs.base import MAX_FIGURE, MAX_MESH_SIDE, Spec


class PEFacts(Spec):
    """Processing-element facts a node's figures can be derived from (Cerebras-style wafers)."""

    pe_count: PositiveInt = Field(le=2**40, description="PEs on the whole wafer")
    fabric_rows: PositiveInt = Field(le=2**40, description="PE rows of the programmable fabric")
    fabric_cols: PositiveInt = Field(le=2**40, description="PE columns of the programmable fabric")
    sram_per_pe_bytes: PositiveFloat = Field(le=MAX_FIGURE, allow_inf_nan=False, description="SRAM per PE, bytes")
    clock_hz: PositiveFloat = Field(le=MAX_FIGURE, allow_inf_nan=False, description="PE clock, Hz")
    fmac_width: PositiveInt = Field(le=2**40, description="FP16 FMACs per PE per cycle (SIMD width)")
    link_bytes_per_cycle: PositiveFloat = Field(le=MAX_FIGURE, allow_inf_nan=False, description="bytes per cycle per PE link per direction")
    sram_bw_total_bytes_per_s: Optional[PositiveFloat] = Field(None, le=MAX_FIGURE, allow_inf_nan=False, description="SRAM bandwidth of the wafer, bytes/s")


def derive_node_figures(pe: PEFacts, rows, cols) -> dict:
    """Node (die) figures from PE facts: the fabric split evenly into rows×cols nodes (scalars or arrays).

    A node-to-node link is the bundle of PE links crossing the shared die edge; we take the
    narrower edge (fewer PE links) so the figure is a lower bound. Hop latency is one PE hop
    per cycle across a node's width.
    """
    n = rows * cols
    pes = pe.pe_count / n
    pe_rows_per_node = pe.fabric_rows / rows
    pe_cols_per_node = pe.fabric_cols / cols
    pe_link = pe.link_bytes_per_cycle * pe.clock_hz
    edge = np.minimum(pe_rows_per_node, pe_cols_per_node)
    out = {
        "node_peak_flops": pes * pe.fmac_width * 2 * pe.clock_hz,
        "node_memory_bytes": pes * pe.sram_per_pe_bytes,
        "link_bw_bytes_per_s": np.floor(edge) * pe_link,
        "hop_latency_s": np.maximum(pe_rows_per_node, pe_cols_per_node) / pe.clock_hz,
        "port_bw_bytes_per_s": 2 * (np.floor(pe_rows_per_node) + np.floor(pe_cols_per_node)) * pe_link,
    }
    if np.ndim(n) == 0:  # scalars stay Python floats for the spec
        out = {k: float(v) for k, v in out.items()}
    if pe.sram_bw_total_bytes_per_s:
        out["node_memory_bw_bytes_per_s"] = pe.sram_bw_total_bytes_per_s / n
    return out


class HardwareSpec(Spec):
    """A wafer (or supernode) of rows×cols nodes; every figure per node unless named otherwise."""

    name: str = Field("custom", description="label of this hardware")
    topology: Literal["mesh", "switch"] = Field("mesh", description="2D mesh with XY routing, or a non-blocking switch")
    rows: PositiveInt = Field(le=MAX_MESH_SIDE, description="node rows of the grid")
    cols: PositiveInt = Field(le=MAX_MESH_SIDE, description="node columns of the grid")
    node_peak_flops: PositiveFloat = Field(le=MAX_FIGURE, allow_inf_nan=False, description="peak dense 16-bit FLOP/s per node")
    node_memory_bytes: PositiveFloat = Field(le=MAX_FIGURE, allow_inf_nan=False, description="local memory (SRAM or HBM) per node, bytes")
    node_memory_bw_bytes_per_s: PositiveFloat = Field(le=MAX_FIGURE, allow_inf_nan=False, description="local memory bandwidth per node, bytes/s")
    link_bw_bytes_per_s: PositiveFloat = Field(le=MAX_FIGURE, allow_inf_nan=False, description="bandwidth per mesh link per direction, bytes/s")
    hop_latency_s: float = Field(0.0, ge=0, le=1.0, allow_inf_nan=False, description="latency per mesh hop (or switch traversal), s")
    port_bw_bytes_per_s: PositiveFloat = Field(math.inf, le=math.inf, description="injection/ejection bandwidth per node, bytes/s")
    weight_source: Literal["streamed", "resident"] = Field(
        "resident", description="weights streamed in each pass through the I/O, or resident in node memory")
    io_in_bw_bytes_per_s: PositiveFloat = Field(math.inf, le=math.inf, description="off-wafer ingress bandwidth (weights in), bytes/s")
    io_out_bw_bytes_per_s: PositiveFloat = Field(math.inf, le=math.inf, description="off-wafer egress bandwidth (gradients out), bytes/s")
    matmul_efficiency: float = Field(0.5, gt=0, le=1, description="achieved fraction of peak for large matmuls (calibration)")
    expert_half_tokens: float = Field(0.0, ge=0, le=MAX_FIGURE, allow_inf_nan=False, description="tokens per expert at which expert matmuls reach half of matmul_efficiency (calibration)")
    memory_usable_fraction: float = Field(1.0, gt=0, le=1, description="fraction of node memory available to the model (calibration)")
    kept_activations: Literal["node", "streamed"] = Field(
        "node", description="where training keeps activations for the backward pass: in node memory, or streamed out "
                            "over the wafer I/O after the forward pass and back in for the backward pass")
    pe: Optional[PEFacts] = Field(None, description="PE-level facts the node figures were derived from")
    sources: dict[str, str] = Field(default_factory=dict, description="provenance of each figure")

    @model_validator(mode="before")
    @classmethod
    def _derive_from_pe(cls, data):
        """Fill node figures the user left out from the PE facts (explicit figures win)."""
        if isinstance(data, dict) and data.get("pe") and data.get("rows") and data.get("cols"):
            try:
                pe = data["pe"] if isinstance(data["pe"], PEFacts) else PEFacts.model_validate(data["pe"])
                derived = derive_node_figures(pe, int(data["rows"]), int(data["cols"]))
            except (ValidationError, TypeError, ValueError):
                return data  # field validation then reports the error at its own key (hardware -> pe -> ...)
            data = {**derived, **{k: v for k, v in data.items() if v is not None}}
        return data

    @model_validator(mode="after")
    def _kept_needs_io(self):
        if self.kept_activations == "streamed" and self.weight_source != "streamed":
            raise ValueError("kept_activations: streamed needs weight_source: streamed (the wafer I/O carries them)")
        return self

    @property
    def nodes(self) -> int:
        """Number of nodes (dies or devices)."""
        return self.rows * self.cols
