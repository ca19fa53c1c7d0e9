"""CS-3's SRAM per PE against its published total, and the program bytes per PE fitted at it."""

from __future__ import annotations

from wsemoe.config import presets
from wsemoe.validate import cerebras


def test_cs3_sram_per_pe_gives_the_quoted_44_gb():
    # "48 KB" a core and 44 GB on 900,000 cores (Argonne ALCF user guide; Cerebras): 900,000 × 49,152 B = 44.24 GB
    # rounds to 44 GB; 900,000 × 48,000 B = 43.2 GB (the preset before December 2026) is less than the quoted total.
    pe = presets.load_hardware("cs3").pe
    total = pe.pe_count * pe.sram_per_pe_bytes
    assert pe.pe_count == 900_000 and round(total / 1e9) == 44 and total >= 44e9


def test_the_program_bytes_are_the_fit_and_leave_the_same_room():
    # The documented refit (validate/cerebras.fit_program_bytes: the largest whole 16-byte lines at which the 20B
    # dense model fits one CS-3) at 49,152 B gives 2,304 B: 46,848 B of room, as 48,000 − 1,152 did, so what fits
    # and every SRAM-serving time are unchanged.
    pe = presets.load_hardware("cs3").pe
    assert cerebras.fit_program_bytes() == pe.program_bytes_per_pe == 2304.0
    assert pe.sram_per_pe_bytes - pe.program_bytes_per_pe == 46_848.0
