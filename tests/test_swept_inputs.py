"""A swept input is the same input set: each row of a sweep over one numeric field equals the point with that value
written into the config, every column, on the hardware kinds whose models keep their own per-point shapes (the PE
fabric's weight streaming, SRAM serving) and on a wafer whose energy per FLOP is derived from its powers."""

from __future__ import annotations

import numpy as np
import pytest

import wsemoe

PE = {"preset": "cs2", "pe_fabric": True}
SRAM = {"preset": "cs3", "weight_source": "sram"}
TRAIN = {"mode": "train", "seq_len": 4096, "B": 4, "G": 2}
DECODE = {"mode": "decode", "seq_len": 4096, "B": 4, "prompt_len": 512}


def _config(hardware, workload, sets: dict | None = None, axis: tuple | None = None) -> dict:
    hw, wl = dict(hardware), dict(workload)
    for path, value in (sets or {}).items():
        section, _, field = path.partition(".")
        (hw if section == "hardware" else wl)[field] = value
    cfg = {"name": "swept", "hardware": hw, "model": "qwen3-30b-a3b", "workload": wl}
    if axis:
        cfg["axes"] = {axis[0]: list(axis[1])}
    return cfg


def _same(a, b) -> bool:
    if isinstance(a, (float, np.floating)) or isinstance(b, (float, np.floating)):
        a, b = float(a), float(b)
        return a == b or (a != a and b != b) or abs(a - b) <= 1e-12 * max(abs(a), abs(b))
    return str(a) == str(b)


@pytest.mark.parametrize("hardware, workload, path, values", [
    # weight streaming at PE level: the attention scores' S (pememory read it as one Python float), and fields the
    # chosen layout's floor and offset read but its points' shape left out (a bandwidth, the gradients' bytes)
    (PE, TRAIN, "workload.seq_len", (4096, 8192)),
    (PE, TRAIN, "hardware.io_in_bw_bytes_per_s", (1.5e11, 3e11)),
    (PE, TRAIN, "workload.bytes_per_grad", (2.0, 4.0)),
    # SRAM serving: a field its sizing's points' shape left out (draft tokens verified per step; training-only bytes
    # such as optimizer_bytes_per_param are refused there: config/applies.py, tests/test_applies.py)
    (SRAM, DECODE, "workload.draft_tokens", (0, 2)),
    # a wafer's energy per FLOP is the rule (rated − static) / peak: a swept power or peak moves it as a set one does
    ("cs2", TRAIN, "hardware.static_power_w", (52.9, 80.0)),
    ("cs3", TRAIN, "hardware.rated_power_w", (273.8, 350.0)),
    ("cs2", TRAIN, "hardware.node_peak_flops", (8.9e13, 1.2e14)),
])
def test_a_swept_value_equals_the_value_set(hardware, workload, path, values):
    hw = hardware if isinstance(hardware, dict) else {"preset": hardware}
    swept = wsemoe.evaluate(_config(hw, workload, axis=(path, values)))
    for i, v in enumerate(values):
        alone = wsemoe.evaluate(_config(hw, workload, {path: v})).iloc[0]
        row = swept.iloc[i]
        differ = [c for c in alone.index if c in row.index and not _same(row[c], alone[c])]
        assert not differ, f"{path}={v}: {[(c, row[c], alone[c]) for c in differ[:4]]}"
