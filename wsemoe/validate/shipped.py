"""Cerebras' shipped micro-batch sizes against the memory model (the SRAM calibration's evidence).

Each shipped training config (Cerebras Model Zoo 2.10) ran on a wafer, so its micro-batch must fit the
usable SRAM. Compared per model: the SRAM share the shipped micro-batch needs under the preset's
accounting against the preset's `memory_usable_fraction`. A last row shows why the preset streams the
kept activations out: held in SRAM, the layer-input checkpoints alone of three configs exceed the wafer.
"""

from __future__ import annotations

from wsemoe.analysis.shipped import calibration_models, max_batch, shipped_needs
from wsemoe.config import presets
from wsemoe.specs import WorkloadSpec
from wsemoe.validate.common import row


def shipped_rows(hardware: str = "cs2") -> list[dict]:
    """Every shipped micro-batch fits the preset's usable SRAM; checkpoints held in SRAM would not."""
    hw = presets.load_hardware(hardware)
    wl_fields, models = calibration_models()
    needs = shipped_needs(hw)
    f = hw.memory_usable_fraction
    rows = []
    for (name, seq, mb, need, _), (_, _, _, m) in zip(needs, models):
        b = max_batch(hw, m, WorkloadSpec(seq_len=seq, **wl_fields))
        rows.append(row(f"shipped micro-batch of {name} (S={seq}) fits {hardware}'s usable SRAM", f"{mb} runs",
                        f"needs {need:.2f} of SRAM; largest B {b}", f"{need / f:.2f}× of usable",
                        f"need ≤ {f:.2f} (memory_usable_fraction)", need <= f))
    kept = [(k, n) for n, _, _, _, k in needs]
    over = [n for k, n in kept if k > 1]
    worst = max(kept)
    rows.append(row("layer-input checkpoints of every shipped micro-batch fit the wafer's SRAM (if held there)",
                    "all 7 run", f"{len(over)} of 7 exceed it; {worst[1]} needs {worst[0]:.2f}× of SRAM", "",
                    "≤ 1× of SRAM each", not over,
                    reason="the reason cs2 and cs3 stream kept activations over the wafer I/O "
                           "(kept_activations: streamed; docs/sources.md)"))
    return rows
