"""rich tables of the shipped presets for `wsemoe presets`: hardware with its node layout, the PE fabric of the
presets that carry one, and the models with their parameter counts."""

from __future__ import annotations

from rich import box
from rich.table import Table

from wsemoe.report.terminal.tables import fmt


def presets() -> list[Table]:
    """The hardware and model presets with their key figures."""
    from wsemoe.config import presets as ps
    from wsemoe.cost.node import mix, params

    hw = Table(title="hardware presets", box=box.SIMPLE_HEAD, pad_edge=False)
    for c in ("name", "topology", "nodes", "TFLOP/s per node", "memory per node", "link GB/s", "weights"):
        # names are typed and short words read badly broken: never folded; the node layout may wrap
        hw.add_column(c, no_wrap=c in ("name", "topology", "weights"), justify="right" if "/" in c else "left")
    for name in ps.names("hardware"):
        h = ps.load_hardware(name)
        hw.add_row(name, h.topology, _layout(h), f"{h.node_peak_flops / 1e12:,.4g}", fmt(h.node_memory_bytes, "bytes"),
                   f"{h.link_bw_bytes_per_s / 1e9:,.4g}", h.weight_source)
    models = Table(title="model presets", box=box.SIMPLE_HEAD, pad_edge=False)
    pes = [(name, h.pe) for name in ps.names("hardware") if (h := ps.load_hardware(name)).pe is not None]
    for c in ("name", "layers", "hidden", "experts", "top-k", "total params", "active params"):
        models.add_column(c, no_wrap=c == "name")
    for name in ps.names("models"):
        m = ps.load_model(name)
        models.add_row(name, mix.describe(m), str(m.hidden_size), str(m.num_experts),
                       str(m.num_experts_per_tok), f"{params.total_params(m) / 1e9:.2f} B",
                       f"{params.active_params(m) / 1e9:.2f} B")
    return [hw, pe_fabric(pes), models]


def _cycles(x) -> str:
    return "?" if x is None else f"{x:g}"


def pe_fabric(pes: list) -> Table:
    """The PE fabric of the presets that carry one: what the PE-level operators (cost/wafer) read."""
    t = Table(title="PE fabric: PEs cols×rows (program rectangle); link bytes / FP16 MACs per cycle (B/MAC); "
                    "cycles per hop / turn / relay stage and per operator (h/t/r/ovh); routable colours (free); host I/O "
                    "channels per west and east edge (I/O)",
              box=box.SIMPLE_HEAD, pad_edge=False)
    for c in ("name", "fabric (program)", "SRAM/PE", "GHz", "B/MAC", "h/t/r/ovh", "colours", "I/O"):
        t.add_column(c, no_wrap=True)
    for name, pe in pes:
        program = "" if pe.kernel_margin_cols is None else \
            f" ({pe.fabric_cols - pe.kernel_margin_cols}×{pe.fabric_rows - pe.kernel_margin_rows})"
        colours = "?" if pe.routable_colors is None else f"{pe.routable_colors} ({pe.routable_colors - (pe.reserved_colors or 0)})"
        t.add_row(name, f"{pe.fabric_cols}×{pe.fabric_rows}{program}", fmt(pe.sram_per_pe_bytes, "bytes"),
                  f"{pe.clock_hz / 1e9:g}", f"{pe.link_bytes_per_cycle:g}/{pe.fmac_width}",
                  "/".join(_cycles(x) for x in (pe.hop_cycles, pe.turn_cycles, pe.relay_cycles, pe.op_overhead_cycles)),
                  colours, _cycles(getattr(pe, "io_channels_per_edge", None)))
    return t


def _layout(h) -> str:
    """Nodes of a hardware preset as people describe them: '2×2 wafers of 8×8 = 256', '32 × 8 = 256', '8×8'."""
    if tuple(h.wafers) != (1, 1):
        return f"{h.wafers[0]}×{h.wafers[1]} wafers of {h.rows}×{h.cols} = {h.nodes}"
    if h.scale_up_size and h.scale_up_size < h.nodes:
        return f"{h.nodes // h.scale_up_size} domains × {h.scale_up_size} = {h.nodes}"
    return f"{h.rows}×{h.cols}"
