"""Any numeric field of a hardware or model preset can be an axis on every cost model: swept over its preset value
and twice it, the sweep evaluates (no internal error: a model's layer count, ranks and routing, a server's size,
once reached code that needs one number as arrays), and its first point equals the unswept point, column by column.
Structural fields (sweep/space.structural) run one call per value; the others broadcast."""

from __future__ import annotations

import numpy as np
import pytest

from wsemoe.config import presets
from wsemoe.config.loader import load_config
from wsemoe.errors import ConfigError
from wsemoe.store.block import Labels
from wsemoe.sweep import engine, space

CASES = [  # (hardware preset, extra hardware fields, model, mode): one per cost model
    ("cs3", {"weight_source": "sram", "pipeline_wafers": 8}, "qwen3-30b-a3b", "decode"),   # SRAM serving, PE level
    ("cs3", {"weight_source": "sram", "pipeline_wafers": 24}, "deepseek-v3", "prefill"),  # MLA, dense prefix
    ("cs2", {}, "qwen3-30b-a3b", "train"),                                                 # weight streaming
    ("wsc-b200-8x8", {}, "deepseek-v3", "train"),                                          # die mesh
    ("dgx-b200-x32", {}, "qwen3-30b-a3b", "train"),                                        # switch, scale-out
    ("nvl72", {}, "gpt-oss-120b", "decode"),                                               # layer patterns
]


def _fields(kind: str, name: str) -> list[tuple[str, float]]:
    section = "model" if kind == "models" else "hardware"
    raw = presets.raw(kind, name)
    return [(f"{section}.{k}", v) for k, v in raw.items() if space.is_number(v) and v]


def _columns(cfg: dict) -> dict:
    return engine.evaluate_block(load_config(cfg)).columns


@pytest.mark.parametrize("hardware,extra,model,mode", CASES, ids=[f"{c[0]}-{c[3]}-{c[2]}" for c in CASES])
def test_every_numeric_preset_field_sweeps_and_its_first_point_is_the_unswept_point(hardware, extra, model, mode):
    base = {"name": "field", "model": model, "hardware": {"preset": hardware, **extra},
            "workload": {"mode": mode, "seq_len": 4096, "B": 4}}
    alone = _columns(base)
    tried = 0
    for path, value in _fields("hardware", hardware) + _fields("models", model):
        try:
            cfg = load_config({**base, "axes": {path: [value, 2 * value]}})
        except ConfigError:   # a value the spec refuses (a share above 1, a layer pattern's count): one clear line
            continue
        swept = engine.evaluate_block(cfg).columns
        tried += 1
        for col, ref in alone.items():
            if isinstance(ref, Labels):
                assert swept[col].values()[0] == ref.values()[0], (path, col)
            elif np.asarray(ref).dtype.kind == "f":
                np.testing.assert_allclose(np.asarray(swept[col])[0], np.asarray(ref)[0], rtol=1e-9,
                                           err_msg=f"{col} with {path} swept")
    assert tried >= 15


def test_structural_paths_are_their_own_calls_and_the_rest_broadcast():
    assert space.structural("model.num_experts") and space.structural("hardware.scale_up_size")
    assert not space.structural("hardware.node_memory_bw_bytes_per_s") and not space.structural("workload.B")
    grid = space.Grid(load_config({"name": "g", "model": "qwen3-30b-a3b", "hardware": "cs2",
                                   "workload": {"mode": "train", "seq_len": 1024, "B": 2},
                                   "axes": {"model.num_experts": [32, 64], "workload.G": [1, 2]}}))
    assert [f.broadcast for f in grid.factors] == [False, True] and all(f.numeric for f in grid.factors)
