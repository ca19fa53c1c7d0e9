"""Cerebras' shipped micro-batch sizes against the memory model: calibration constraints and reading evidence.

Each shipped training config (Cerebras Model Zoo 2.10) ran on a wafer, so its micro-batch fits the usable
SRAM. At the default readings these are the constraints `memory_usable_fraction` was chosen against (its lower
bound): `fitted` rows, not reproductions. Under each other option of the readings a training config depends on
(attention kernel, where checkpoints live) the rows count the configs that would not fit: the evidence the
defaults rest on (context rows).
"""

from __future__ import annotations

from wsemoe.analysis.uncertainty.shipped import READINGS, shipped_needs
from wsemoe.config import presets
from wsemoe.config import readings as registry
from wsemoe.validate.common import context, row
from wsemoe.validate.tolerances import Band
from wsemoe.wording import number

SOURCE = "Cerebras Model Zoo 2.10 configs (analysis/uncertainty/data/shipped_microbatches.yaml)"


def shipped_rows(hardware: str = "cs2") -> list[dict]:
    """Every shipped micro-batch fits the preset's usable SRAM at the default readings (fitted rows); how many
    would not under each other option (context)."""
    hw = presets.load_hardware(hardware)
    f = hw.memory_usable_fraction
    defaults = registry.defaults(READINGS)
    shown = ", ".join(f"{k}={v}" for k, v in defaults.items())
    rows = [row(f"shipped:{n.name}", f"shipped micro-batch of {n.name} (S = {number(n.seq_len)}) fits {hardware}'s usable "
                f"SRAM", f"{n.micro_batch} ran ({SOURCE})", n.need, lambda x: f"{x:.2f} of SRAM", kind="fitted",
                band=Band(hi=f, why="memory_usable_fraction was chosen at or above every shipped need"),
                model=f"needs {n.need:.2f} of SRAM; largest B {n.largest}", reading=shown,
                source="Model Zoo 2.10 configs")
            for n in shipped_needs(hw)]
    readings = registry.load()
    for name in READINGS:
        for option in readings[name].options:
            if option == defaults[name]:
                continue
            needs = shipped_needs(hw, {name: option})
            over = [n for n in needs if n.need > f]
            worst = max(needs, key=lambda n: n.need)
            rows.append(context(f"shipped.reading:{name}={option}", f"shipped micro-batches under {name}={option}",
                                f"all 7 ran ({SOURCE})",
                                f"{len(over)} of 7 exceed the usable SRAM; {worst.name} needs {worst.need:.2f} of it",
                                f"evidence against {name}={option}" if over else f"consistent with {name}={option}",
                                source="Model Zoo 2.10 configs"))
    return rows
