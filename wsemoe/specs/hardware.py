"""Hardware spec: the wafer as an R×C grid of nodes, its fabric, weight source and calibration."""

from __future__ import annotations

import contextlib
import math
from types import SimpleNamespace
from typing import Annotated, Literal, Optional

import numpy as np

from pydantic import Field, PositiveInt, ValidationError, model_validator

from wsemoe.specs.base import (MAX_FIGURE, MAX_GRID_SIDE, MAX_MESH_SIDE, MAX_PIPELINE_WAFERS, MAX_WAFERS_SIDE,
                               MIN_SHARE, Figure, Spec)
from wsemoe.specs.energy import EnergyFields
from wsemoe.specs.rules import PE_RULES, check


class PEFacts(Spec):
    """Processing-element facts a node's figures can be derived from (Cerebras-style wafers)."""

    pe_count: PositiveInt = Field(le=2**40, description="PEs on the whole wafer")
    fabric_rows: PositiveInt = Field(le=2**40, description="PE rows of the programmable fabric")
    fabric_cols: PositiveInt = Field(le=2**40, description="PE columns of the programmable fabric")
    sram_per_pe_bytes: Figure = Field(le=MAX_FIGURE, allow_inf_nan=False, description="SRAM per PE, bytes")
    clock_hz: Figure = Field(le=MAX_FIGURE, allow_inf_nan=False, description="PE clock, Hz")
    fmac_width: PositiveInt = Field(le=2**40, description="FP16 FMACs per PE per cycle (SIMD width)")
    link_bytes_per_cycle: Figure = Field(le=MAX_FIGURE, allow_inf_nan=False, description="bytes per cycle per PE link per direction")
    sram_bw_total_bytes_per_s: Optional[Figure] = Field(None, le=MAX_FIGURE, allow_inf_nan=False, description="SRAM bandwidth of the wafer, bytes/s")
    # The PE fabric as the PE-level operators see it (wsemoe.cost.wafer); node figures do not use these.
    hop_cycles: Optional[float] = Field(None, ge=0, le=1e6, allow_inf_nan=False, description="cycles a wavelet takes per router hop along a configured route (PE-level operators)")
    turn_cycles: Optional[float] = Field(None, ge=0, le=1e6, allow_inf_nan=False, description="extra cycles when a route changes dimension (X to Y) (PE-level operators)")
    relay_cycles: Optional[float] = Field(None, ge=0, le=1e6, allow_inf_nan=False, description="cycles a PE adds when it receives a wavelet, processes it and sends one on (one store-and-forward stage: ramp in, compute, ramp out)")
    routable_colors: Optional[PositiveInt] = Field(None, le=1024, description="colours (virtual channels) a router can route")
    reserved_colors: Optional[int] = Field(None, ge=0, le=1024, description="routable colours the runtime keeps for itself (host I/O)")
    kernel_margin_cols: Optional[int] = Field(None, ge=0, le=2**20, description="fabric columns the host-I/O framework takes beside a program (the program rectangle is fabric_cols minus this)")
    kernel_margin_rows: Optional[int] = Field(None, ge=0, le=2**20, description="fabric rows the host-I/O framework takes around a program (the program rectangle is fabric_rows minus this)")
    op_overhead_cycles: Optional[float] = Field(None, ge=0, le=1e9, allow_inf_nan=False, description="fixed cycles one operator invocation costs a PE beyond its work (task start, descriptor set-up); calibration")
    program_bytes_per_pe: Optional[float] = Field(None, ge=0, le=MAX_FIGURE, allow_inf_nan=False, description="SRAM a PE's program, runtime and routing state take; the rest holds weights, KV cache and buffers (SRAM serving); calibration")
    io_channels_per_edge: Optional[PositiveInt] = Field(None, le=2**20, description="host I/O channels meeting the fabric at routers of PEs on each of the west and east edges (each takes one wavelet per cycle into the fabric); weight streaming at PE level (pe_fabric) enters through them")
    mac_memory_operands: Optional[float] = Field(None, ge=0, le=16, allow_inf_nan=False, description="SRAM operands one vector MAC reads or writes (weight, accumulator in and out: 3), with which the PE's share of sram_bw_total_bytes_per_s bounds its MAC rate below fmac_width; unset or 0: the SIMD width alone (the pe_mac_rate reading)")

    @model_validator(mode="after")
    def _program_fits(self):
        """A program needs PEs and SRAM left: margins inside the fabric, the program smaller than a PE's SRAM
        (else the free space every SRAM constraint divides by is zero or negative)."""
        check(self, PE_RULES)
        return self


def mac_rate(pe):
    """16-bit MACs one PE completes per cycle: `fmac_width`, bounded by its share of the SRAM bandwidth over the
    bytes a MAC's `mac_memory_operands` 2-byte operands move (unset or 0, or no SRAM figure: the width alone).
    Scalars or arrays. 2 bytes each whatever the weights' format under weight streaming (the weight arrives over
    the fabric; the SRAM operands are the activation and the partial sum); resident weights of another format
    read at their own bytes (cost/node/formats.sram_weight_gain)."""
    operands, total = getattr(pe, "mac_memory_operands", None), getattr(pe, "sram_bw_total_bytes_per_s", None)
    width = np.asarray(pe.fmac_width, dtype=float)
    if operands is None or total is None:
        return width
    operands = np.asarray(operands, dtype=float)
    # 0 operands divides by zero, a vanishing count (1e-320) overflows: either feeds more than the width, which binds
    with np.errstate(divide="ignore", over="ignore"):
        fed = np.asarray(total, dtype=float) / pe.pe_count / pe.clock_hz / (operands * 2.0)
    return np.where(operands > 0, np.minimum(width, fed), width)


def derive_node_figures(pe, rows, cols) -> dict:
    """Node (die) figures from PE facts: the fabric split evenly into rows×cols nodes (scalars or arrays, the PE
    facts too).

    A node-to-node link is the bundle of PE links crossing the shared die edge; we take the
    narrower edge (fewer PE links) so the figure is a lower bound. Hop latency is one PE hop
    per cycle across a node's width. The peak runs at `mac_rate`, so weight streaming and SRAM serving (whose
    `fabric.memory_cycles` applies the same bound) read one MAC rate under the pe_mac_rate reading.
    """
    n = rows * cols
    pes = pe.pe_count / n
    pe_rows_per_node = pe.fabric_rows / rows
    pe_cols_per_node = pe.fabric_cols / cols
    pe_link = pe.link_bytes_per_cycle * pe.clock_hz
    edge = np.minimum(pe_rows_per_node, pe_cols_per_node)
    out = {
        "node_peak_flops": pes * mac_rate(pe) * 2 * pe.clock_hz,
        "node_memory_bytes": pes * pe.sram_per_pe_bytes,
        "link_bw_bytes_per_s": np.floor(edge) * pe_link,
        "hop_latency_s": np.maximum(pe_rows_per_node, pe_cols_per_node) / pe.clock_hz,
        "port_bw_bytes_per_s": 2 * (np.floor(pe_rows_per_node) + np.floor(pe_cols_per_node)) * pe_link,
    }
    if getattr(pe, "sram_bw_total_bytes_per_s", None) is not None:
        out["node_memory_bw_bytes_per_s"] = pe.sram_bw_total_bytes_per_s / n
    if all(np.ndim(v) == 0 for v in out.values()):  # scalars stay Python floats for the spec
        out = {k: float(v) for k, v in out.items()}
    return out


def follow_pe(fields: dict, pe_before, pe_after, rows=None, cols=None) -> dict:
    """`fields` with the node figures derived from `pe_before` on their grid re-derived from `pe_after` on
    rows × cols (default: the same grid; PE facts and grid scalars or arrays). A figure equal to its derivation
    was derived (or agrees with it) and follows; one the user set to another value stays as set."""
    def facts(pe):
        return SimpleNamespace(**pe) if isinstance(pe, dict) else pe

    at_before = derive_node_figures(facts(pe_before), fields["rows"], fields["cols"])
    at_after = derive_node_figures(facts(pe_after), fields["rows"] if rows is None else rows,
                                   fields["cols"] if cols is None else cols)
    out = {**fields, **{k: at_after[k] for k, v in at_before.items()
                        if fields.get(k) is not None and np.all(np.isclose(fields[k], v, rtol=1e-12))}}
    return follow_energy(fields, out)   # the energy rule's value follows the peak it divides by


def follow_energy(before: dict, after: dict) -> dict:
    """`after` with `energy_flop_j` re-derived by the energy rule (`energy_per_flop`) at its powers and peak where
    `before` holds the rule's own value (derived, as the wafer presets' is); a figure set to another value stays.
    A swept rated or static power or peak must move the energy per FLOP as the same value set in the spec does
    (`_derive_from_pe` derives it from the fields given)."""
    rule = energy_per_flop(before, before.get("node_peak_flops"))
    if rule is None or before.get("energy_flop_j") is None or \
            not np.all(np.isclose(before["energy_flop_j"], rule, rtol=1e-12)):
        return after
    return {**after, "energy_flop_j": energy_per_flop(after, after["node_peak_flops"])}


def energy_per_flop(fields: dict, peak):
    """The energy rule of docs/energy.md: a node at its dense peak, as the model runs it, draws its rated power,
    so a FLOP costs (rated - static power) / that peak; None without both powers and a peak."""
    rated, static = fields.get("rated_power_w"), fields.get("static_power_w")
    if rated is None or static is None or peak is None:
        return None
    # a peak below the field's 1e-30 floor overflows here before the field's own check refuses it in one line
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        e = (np.asarray(rated, dtype=float) - np.asarray(static, dtype=float)) / np.asarray(peak, dtype=float)
    return float(e) if np.ndim(e) == 0 else e


SRAM_PE_FIELDS = ("hop_cycles", "turn_cycles", "relay_cycles", "kernel_margin_rows", "kernel_margin_cols",
                  "op_overhead_cycles")  # what the PE-level serving model reads beyond the node-deriving facts
STREAM_PE_FIELDS = (*SRAM_PE_FIELDS, "program_bytes_per_pe", "io_channels_per_edge")  # weight streaming at PE level


def _sram_fits(hw) -> None:
    """weight_source: sram needs a PE fabric (every PE fact the serving model reads) on one mesh wafer."""
    if hw.topology != "mesh" or tuple(hw.wafers) != (1, 1):
        raise ValueError("weight_source: sram serves from the PE fabric of single wafers (topology mesh, wafers "
                         "[1, 1]); a pipeline of systems is pipeline_wafers")
    missing = [f for f in SRAM_PE_FIELDS if hw.pe is None or getattr(hw.pe, f) is None]
    if missing:
        raise ValueError(f"weight_source: sram needs the PE fabric: set hardware.pe.{missing[0]} (cs2 and cs3 have it)")


def _pe_fabric_fits(hw) -> None:
    """pe_fabric: the weight-streaming wafer at PE level needs every PE fact that model reads, on one mesh wafer."""
    if hw.weight_source != "streamed":
        raise ValueError(f"pe_fabric models a weight-streaming wafer at PE level (weight_source: streamed); "
                         f"weight_source {hw.weight_source} " + ("is always at PE level" if hw.weight_source == "sram"
                                                                 else "has no PE fabric"))
    if hw.topology != "mesh" or tuple(hw.wafers) != (1, 1):
        raise ValueError("pe_fabric models one wafer's PE fabric (topology mesh, wafers [1, 1])")
    missing = [f for f in STREAM_PE_FIELDS if hw.pe is None or getattr(hw.pe, f) is None]
    if missing:
        raise ValueError(f"pe_fabric needs the PE fabric: set hardware.pe.{missing[0]} (cs2 and cs3 have it)")


class HardwareSpec(EnergyFields, Spec):
    """A wafer (or supernode) of rows×cols nodes; every figure per node unless named otherwise."""

    name: str = Field("custom", description="label of this hardware")
    topology: Literal["mesh", "switch"] = Field("mesh", description="2D mesh with XY routing, or a non-blocking switch")
    rows: PositiveInt = Field(le=MAX_MESH_SIDE, description="node rows of one wafer (of the whole grid when wafers is [1, 1])")
    cols: PositiveInt = Field(le=MAX_MESH_SIDE, description="node columns of one wafer (of the whole grid when wafers is [1, 1])")
    wafers: tuple[Annotated[int, Field(gt=0, le=MAX_WAFERS_SIDE)], Annotated[int, Field(gt=0, le=MAX_WAFERS_SIDE)]] = Field(
        (1, 1), description="a mesh of wafers [Wr, Wc]: the die grid is (Wr·rows)×(Wc·cols), one system; default one wafer")
    node_peak_flops: Figure = Field(le=MAX_FIGURE, allow_inf_nan=False, description="peak dense 16-bit FLOP/s per node")
    node_peak_flops_fp8: Optional[Figure] = Field(
        None, le=MAX_FIGURE, allow_inf_nan=False,
        description="peak dense FP8 FLOP/s per node; unset: no native FP8, fp8 matmuls run at node_peak_flops")
    node_peak_flops_fp4: Optional[Figure] = Field(
        None, le=MAX_FIGURE, allow_inf_nan=False,
        description="peak dense FP4 FLOP/s per node; unset: no native FP4, fp4 matmuls run at node_peak_flops")
    node_memory_bytes: Figure = Field(le=MAX_FIGURE, allow_inf_nan=False, description="local memory (SRAM or HBM) per node, bytes")
    node_memory_bw_bytes_per_s: Figure = Field(le=MAX_FIGURE, allow_inf_nan=False, description="local memory bandwidth per node, bytes/s")
    link_bw_bytes_per_s: Figure = Field(le=MAX_FIGURE, allow_inf_nan=False, description="bandwidth per mesh link per direction, bytes/s")
    hop_latency_s: float = Field(0.0, ge=0, le=1.0, allow_inf_nan=False, description="latency per mesh hop (or switch traversal), s")
    kernel_launch_s: float = Field(
        0.0, ge=0, le=1.0, allow_inf_nan=False,
        description="fixed cost of each kernel on a layer's critical path (launch and dependency gap), s; charged per "
                    "kernel each stage launches (docs/cost-model.md); 0: a dataflow machine with no per-kernel launch")
    collective_latency_s: float = Field(
        0.0, ge=0, le=1.0, allow_inf_nan=False,
        description="fixed software latency of one collective call (all-reduce, output reduction, gradient "
                    "reduction), s, on top of bytes over bandwidth and hop latency; charged once per call that "
                    "moves data")
    alltoall_latency_s: Optional[float] = Field(
        None, ge=0, le=1.0, allow_inf_nan=False,
        description="fixed software latency of one expert-parallel dispatch or combine, s; unset: "
                    "collective_latency_s")
    port_bw_bytes_per_s: Figure = Field(math.inf, le=math.inf, description="injection/ejection bandwidth per node, bytes/s")
    inter_wafer_link_bw_bytes_per_s: Optional[Figure] = Field(
        None, le=MAX_FIGURE, allow_inf_nan=False,
        description="bandwidth per directed link crossing a wafer boundary, bytes/s; unset: link_bw_bytes_per_s "
                    "(the same die-to-die link across the wafer edge). SRAM serving: the path between consecutive "
                    "systems of the pipeline, per direction")
    inter_wafer_hop_latency_s: Optional[float] = Field(
        None, ge=0, le=1.0, allow_inf_nan=False,
        description="latency of a hop that crosses a wafer boundary, s; unset: hop_latency_s. SRAM serving: one "
                    "hop between consecutive systems of the pipeline")
    sync_io_stall_s: float = Field(
        0.0, ge=0, le=1.0, allow_inf_nan=False,
        description="SRAM serving under mapping.wafer_io: sync: seconds a system's compute stalls for one synchronous "
                    "transfer through its wafer I/O (a sequence's step handed to the next system, or from the last "
                    "system the sampled token back to the first), s; 0: none known")
    in_switch_reduction: bool = Field(
        False, description="switch only: all-reduces run in the switch (NVLink SHARP): each device sends and receives "
                           "its message once instead of a ring's 2(p−1)/p; default off (a capability, not every switch has it)")
    scale_up_size: Optional[PositiveInt] = Field(
        None, le=2**20, description="switch only: devices per scale-up (NVLink) domain, e.g. 8 GPUs of a DGX server; "
                                    "unset: one domain of all devices")
    scale_out_bw_bytes_per_s: Optional[Figure] = Field(
        None, le=MAX_FIGURE, allow_inf_nan=False,
        description="switch only: network (NIC) bandwidth per scale-up domain and direction between domains, bytes/s")
    scale_out_latency_s: Optional[float] = Field(
        None, ge=0, le=1.0, allow_inf_nan=False,
        description="switch only: latency of one transfer between scale-up domains, s; unset: hop_latency_s")
    weight_source: Literal["streamed", "resident", "sram"] = Field(
        "resident", description="weights streamed in each pass through the I/O, resident in node memory, or (sram: "
                                "inference on a PE fabric) resident in the PEs' SRAM, layers pipelined over wafers")
    pipeline_wafers: Optional[PositiveInt] = Field(
        None, le=MAX_PIPELINE_WAFERS, description="weight_source sram: systems (wafers) of the serving pipeline, each a "
                                                  "stage of contiguous layers; unset: the fewest that hold the weights "
                                                  "and the KV cache")
    io_in_bw_bytes_per_s: Figure = Field(math.inf, le=math.inf, description="off-wafer ingress bandwidth (weights in), bytes/s")
    io_out_bw_bytes_per_s: Figure = Field(math.inf, le=math.inf, description="off-wafer egress bandwidth (gradients out), bytes/s")
    matmul_efficiency: float = Field(0.5, ge=MIN_SHARE, le=1, description="achieved fraction of peak for large matmuls (calibration)")
    expert_half_tokens: float = Field(0.0, ge=0, le=MAX_FIGURE, allow_inf_nan=False, description="tokens per expert at which expert matmuls reach half of matmul_efficiency (calibration)")
    memory_usable_fraction: float = Field(1.0, ge=MIN_SHARE, le=1, description="fraction of node memory available to the model (calibration)")
    kept_activations: Literal["node", "streamed"] = Field(
        "node", description="where training keeps activations for the backward pass: in node memory, or streamed out "
                            "over the wafer I/O after the forward pass and back in for the backward pass (unset on a "
                            "weight_source: streamed wafer: streamed, the readings' default; presets/readings.yaml, "
                            "kept_activations)")
    attention_kernel: Optional[Literal["materialized", "per_head", "flash"]] = Field(
        None, description="the attention kernel this hardware's software runs in training and prefill, over the "
                          "workload's attn_kernel (GPUs and GPU dies: flash, what their training and serving stacks run); "
                          "unset: the workload's (a reading where no source describes the kernel: presets/readings.yaml, "
                          "attn_kernel)")
    pe_fabric: bool = Field(
        False, description="weight_source streamed: model the wafer at PE level too: weights entering at the fabric's "
                           "edge and crossing it, the experts on PE regions (pipelines with fill and drain), the token "
                           "all-to-all on the PE mesh and SRAM per PE; these add terms and constraints to the node-level "
                           "model (off: the wafer is one group, today's numbers)")
    pe: Optional[PEFacts] = Field(None, description="PE-level facts the node figures were derived from")
    sources: dict[str, str] = Field(default_factory=dict, description="provenance of each figure")

    @model_validator(mode="before")
    @classmethod
    def _derive_from_pe(cls, data):
        """Fill node figures the user left out from the PE facts (explicit figures win)."""
        if isinstance(data, dict) and data.get("pe") and data.get("rows") and data.get("cols"):
            try:
                pe = data["pe"] if isinstance(data["pe"], PEFacts) else PEFacts.model_validate(data["pe"])
                rows, cols = int(data["rows"]), int(data["cols"])
                derived = derive_node_figures(pe, rows, cols)
            except (ValidationError, TypeError, ValueError, ArithmeticError):
                return data  # field validation then reports the error at its own key (hardware -> pe -> ...)
            if rows > pe.fabric_rows or cols > pe.fabric_cols:  # a node narrower than one PE has no links
                raise ValueError(f"rows x cols {rows} x {cols} splits the {pe.fabric_rows} x {pe.fabric_cols} PE "
                                 f"fabric into nodes narrower than one PE; at most {pe.fabric_rows} rows and "
                                 f"{pe.fabric_cols} cols")
            # null leaves a derived figure to the PE facts; any other field keeps it, so its own check reports it
            # (memory_usable_fraction: null ran cs2 at the field's default 1.0, not the preset's 0.85, unsaid)
            data = {**derived, **{k: v for k, v in data.items() if v is not None or k not in derived}}
            if data.get("energy_flop_j") is None:   # the energy rule at the peak the model runs (pe_mac_rate)
                with contextlib.suppress(TypeError, ValueError):
                    e = energy_per_flop(data, data["node_peak_flops"])
                    if e is not None and 0 <= e <= 1.0:   # else a bad power or peak: its own key reports it
                        data["energy_flop_j"] = e
        return data

    @model_validator(mode="before")
    @classmethod
    def _kept_activations_default(cls, data):
        """One default per reading: a weight-streaming wafer that does not say where training keeps its
        activations streams them (the kept_activations reading's default); elsewhere they stay in node memory,
        the only option there."""
        if isinstance(data, dict) and data.get("weight_source") == "streamed" and "kept_activations" not in data:
            data = {**data, "kept_activations": "streamed"}
        return data

    @model_validator(mode="after")
    def _fields_fit_each_other(self):
        """Streamed kept activations need the wafer I/O; wafer fields belong to meshes, scale-up domains
        and in-switch reduction to switches."""
        if self.kept_activations == "streamed" and self.weight_source == "resident":
            raise ValueError("kept_activations: streamed needs weight_source: streamed (the wafer I/O carries them)")
        if self.pe_fabric:
            _pe_fabric_fits(self)
        if self.weight_source == "sram":
            _sram_fits(self)
        elif self.pipeline_wafers is not None:
            raise ValueError("pipeline_wafers applies to weight_source: sram (a serving pipeline of wafers)")
        if self.topology == "switch":
            if tuple(self.wafers) != (1, 1):
                raise ValueError("wafers applies to a mesh; a switch is one domain of rows·cols devices")
            for name in ("inter_wafer_link_bw_bytes_per_s", "inter_wafer_hop_latency_s"):
                if getattr(self, name) is not None:
                    raise ValueError(f"{name} applies to a mesh of wafers, not to a switch")
            if self.scale_up_size is not None and self.nodes % self.scale_up_size:
                raise ValueError(f"scale_up_size {self.scale_up_size} does not divide the {self.nodes} devices")
            if self.scale_up_size is not None and self.scale_up_size < self.nodes and self.scale_out_bw_bytes_per_s is None:
                raise ValueError("scale_up_size splits the devices into domains: scale_out_bw_bytes_per_s is required")
        else:
            side = max(self.rows * self.wafers[0], self.cols * self.wafers[1])
            if side > MAX_GRID_SIDE:
                raise ValueError(f"a mesh of {self.rows * self.wafers[0]}×{self.cols * self.wafers[1]} dies (rows·wafers, "
                                 f"cols·wafers): at most {MAX_GRID_SIDE} a side is modelled (the mesh engine's work "
                                 "grows with the square of the dies)")
            for name in ("scale_up_size", "scale_out_bw_bytes_per_s", "scale_out_latency_s"):
                if getattr(self, name) is not None:
                    raise ValueError(f"{name} applies to a switch topology, not to a mesh")
            if self.in_switch_reduction:
                raise ValueError("in_switch_reduction needs topology: switch")
        return self

    @property
    def nodes(self) -> int:
        """Number of nodes (dies or devices) of the whole system, every wafer included."""
        return self.rows * self.cols * self.wafers[0] * self.wafers[1]
