"""An axis-end note fires for zip columns too: a comparison's tuned axis given as a zip column (NVL72's TP beside
a wafer's null) has the extent of the values given, so a baseline tuned to its largest TP is said to be capped."""

from __future__ import annotations

import pandas as pd

from wsemoe.analysis.uncertainty import readings as rd
from wsemoe.analysis.uncertainty import robustness
from wsemoe.config.loader import load_config

CFG = {"name": "z", "hardware": "nvl72", "model": "qwen3-30b-a3b", "workload": {"mode": "decode", "seq_len": 4096},
       "zip": [{"hardware": ["nvl72", "nvl72", "nvl72", "nvl72", "wsc-b200-8x8"], "mapping.tp": [1, 2, 4, 8, None]}],
       "axes": {"workload.B": [1, 4]},
       "compare": {"name": "nvl72", "baseline": {"hardware": "nvl72"}, "candidate": {"hardware": "wsc-b200-8x8"},
                   "metric": "tokens_per_s", "over": ["mapping.tp", "workload.B"]}}


def test_a_zip_column_with_nulls_has_the_extent_of_its_values():
    ext = rd._comparison(load_config(CFG))["extents"]
    assert ext["tp"] == {"axis": "mapping.tp", "max": 8, "count": 4}


def test_the_note_fires_when_the_baseline_sits_at_the_zip_column_end():
    meta = {"comparison": rd._comparison(load_config(CFG))}
    runs = pd.DataFrame({"run": [0, 1], "role": ["configured", "combination"], "label": ["as configured", "x=y"]})
    values = pd.DataFrame({"run": [0, 1], "quantity": ["baseline_tp", "baseline_tp"], "group": ["g", "g"],
                           "value": [8.0, 4.0]})
    result = rd.Readings(runs, values, meta)
    assert robustness.edges(result, "g") == ["baseline mapping.tp at its largest swept value (8) in 1 of 2 runs "
                                             "(as configured)"]
