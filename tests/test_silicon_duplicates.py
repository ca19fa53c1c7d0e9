"""Duplicate configurations of a silicon file: the runs of one configuration count once, at their median, however
the file spells its layout. The given file writes one 8-GPU TensorRT-LLM layout of DeepSeek-R1 on H200 as TP 8 with
EP 8 and again as TP 64 with MoE 8 x 8 (the same measurements to the last digit, reader.WIDE_LAYOUT), and attention
DP 8 with EP 8 as DP 64 with MoE 8 x 8: one configuration each, not two."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from wsemoe.config import presets
from wsemoe.validate.silicon import accuracy, features, reader, runs

EP8 = {"tp_size": 8, "attention_dp_size": 1, "moe_tp_size": 1, "moe_ep_size": 8}         # TP 8 attention, EP 8
EP8_WIDE = {"tp_size": 64, "attention_dp_size": 1, "moe_tp_size": 8, "moe_ep_size": 8}  # the same, spelt wide
TP8 = {"tp_size": 8, "attention_dp_size": 1, "moe_tp_size": 8, "moe_ep_size": 1}         # experts split by TP
DP8 = {"tp_size": 1, "attention_dp_size": 8, "moe_tp_size": 1, "moe_ep_size": 8, "batch_size": 16}
DP8_WIDE = {"tp_size": 1, "attention_dp_size": 64, "moe_tp_size": 8, "moe_ep_size": 8, "batch_size": 2}


def _row(ident: str, ttft: float, tpot: float, **over) -> dict:
    """One upstream-format row: DeepSeek-R1 FP8 on H200, TensorRT-LLM, aggregated, isl 1,024, osl 1,024, 16 requests."""
    row = {c: "" for c in reader.COLUMNS}
    row.update({"id": ident, "silicon_data_source": "test", "backend": "trtllm", "backend_version": "1.1.0rc2.post2",
                "model_path": "deepseek-ai/DeepSeek-R1", "system": "h200_sxm", "precision": "fp8", "mode": "agg",
                "isl": 1024, "osl": 1024, "gemm_quant_mode": "fp8", "moe_quant_mode": "fp8", "batch_size": 16,
                "pp_size": 1, "silicon_ttft_ms": ttft, "silicon_tpot_ms": tpot})
    row.update(over)
    return row


def _csv(tmp_path: Path, rows: list[dict]) -> Path:
    p = tmp_path / "runs.csv"
    pd.DataFrame(rows, columns=list(reader.COLUMNS)).to_csv(p, index=False)
    return p


def test_two_spellings_of_one_layout_are_one_configuration_at_the_median(tmp_path):
    """Runs a (TP 8, EP 8), b (TP 64, MoE 8 x 8: the same 8 GPUs) and c (a again) are one configuration of 3 runs:
    TTFT median(100, 300, 200) = 200 ms, TPOT median(10, 30, 20) = 20 ms. Run d (experts split by TP 8) is a
    layout of its own. Read by spelling, (a, c) was one configuration at 150 / 15 ms and b another at 300 / 30."""
    rows = [_row("a", 100.0, 10.0, **EP8), _row("b", 300.0, 30.0, **EP8_WIDE), _row("c", 200.0, 20.0, **EP8),
            _row("d", 50.0, 5.0, **TP8)]
    r = runs.load(_csv(tmp_path, rows))
    assert list(r.rows["config"]) == [0, 0, 0, 1]
    assert list(r.configs["n"]) == [3, 1]
    assert list(r.configs["ttft_ms"]) == [200.0, 50.0] and list(r.configs["tpot_ms"]) == [20.0, 5.0]
    # the group's MAPE is the mean over its 2 configurations of |predicted / median − 1|, each once
    result = accuracy.evaluate(_csv(tmp_path, rows))
    (group,) = result["system_model"]
    assert (group["configs"], group["runs"]) == (2, 4)
    pred = {x["id"]: (x["pred_ttft_ms"], x["pred_tpot_ms"]) for x in result["rows"]}
    assert pred["a"] == pred["b"] == pred["c"]   # the model reads one layout for all three
    ttft = np.mean([abs(pred["a"][0] / 200.0 - 1), abs(pred["d"][0] / 50.0 - 1)])
    tpot = np.mean([abs(pred["a"][1] / 20.0 - 1), abs(pred["d"][1] / 5.0 - 1)])
    assert np.isclose(group["ttft_mape"], ttft, rtol=1e-12) and np.isclose(group["tpot_mape"], tpot, rtol=1e-12)


def test_attention_dp_spelt_wide_is_the_same_configuration(tmp_path):
    """DP 8 x 16 requests a rank and DP 64 (MoE 8 x 8) x 2 a rank are both 128 requests over 8 GPUs, EP 8: one
    configuration, TTFT median(3,000, 3,400) = 3,200 ms (the given file's c128 pair measures 3,201 ms twice)."""
    rows = [_row("a", 3000.0, 30.0, **DP8), _row("b", 3400.0, 34.0, **DP8_WIDE)]
    r = runs.load(_csv(tmp_path, rows))
    assert list(r.configs["n"]) == [2]
    assert list(r.configs["ttft_ms"]) == [3200.0] and list(r.configs["tpot_ms"]) == [32.0]


def test_the_key_is_the_layout_the_model_evaluates():
    """config_key reads the layout resolve gives the model: equal keys, equal features; a different layout, a
    different key."""
    res = {name: reader.resolve(_row(name, 1.0, 1.0, **lay), presets.load_model, presets.load_hardware)
           for name, lay in (("ep", EP8), ("wide", EP8_WIDE), ("tp", TP8))}
    key = {name: reader.config_key(_row(name, 1.0, 1.0, **lay), res[name])
           for name, lay in (("ep", EP8), ("wide", EP8_WIDE), ("tp", TP8))}
    assert key["ep"] == key["wide"] != key["tp"]
    assert features.one(res["ep"], "agg") == features.one(res["wide"], "agg")



def test_rows_that_differ_in_anything_else_stay_apart(tmp_path):
    """One layout under another build of the backend, isl, precision or concurrency is another configuration: a
    (1.1.0rc2.post2) and b (the wide spelling, 1.1.0rc2.post3) were one configuration at 200 / 20 ms, the median of
    two builds, which is neither's."""
    rows = [_row("a", 100.0, 10.0, **EP8), _row("b", 300.0, 30.0, **EP8_WIDE, backend_version="1.1.0rc2.post3"),
            _row("c", 200.0, 20.0, **EP8, isl=8192), _row("d", 50.0, 5.0, **EP8, batch_size=32),
            _row("e", 60.0, 6.0, **EP8, moe_quant_mode="fp8_block", gemm_quant_mode="bf16")]
    r = runs.load(_csv(tmp_path, rows))
    assert list(r.configs["n"]) == [1, 1, 1, 1, 1]
    assert list(r.configs["ttft_ms"]) == [100.0, 300.0, 200.0, 50.0, 60.0]
