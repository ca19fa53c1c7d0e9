"""A comparison's GPU baseline restated on a fitted serving stack (validate/silicon/onstack.py): the ratio is the
stack's decode throughput over the node-level model's at the same point, moves with the stack, reads every
metric alike, and is said by show, compare and report for a baseline zipped beside the wafer as for one on an
axis."""

from __future__ import annotations

import math
import shutil

import pandas as pd
import pytest
from typer.testing import CliRunner

from wsemoe.cli import app
from wsemoe.config import presets
from wsemoe.config.loader import load_config
from wsemoe.sweep.run import run_sweep
from wsemoe.validate.silicon import onstack, stacks

CFG = load_config("sweeps/cerebras_serving.yaml")
NVL72 = presets.load_hardware("nvl72")
STEP = 0.02  # s: the node-level model's decode step at the made-up point


def _row(metric="tokens_per_s_per_user", B=4.0, tp=8.0) -> dict:
    base = {"tokens_per_s_per_user": 1 / STEP, "per_device_tokens_per_s": B / (tp * STEP),
            "tokens_per_s": B * (72 / tp) / STEP}[metric]
    return {"model": "qwen3-235b-a22b", "workload.seq_len": 8192, "workload.attn_weight_format": "bf16",
            "workload.expert_weight_format": "bf16", "baseline_B": B, "baseline_tp": tp, f"baseline_{metric}": base}


def _cfg(metric="tokens_per_s_per_user"):
    return CFG.model_copy(update={"compare": CFG.compare.model_copy(update={"metric": metric})})


def test_every_decode_metric_gives_one_ratio():
    """Per user, per device and in all: one step time under each, so one ratio (the node-level rates made from
    the same step as the stack's are)."""
    stack = stacks.load()[0]["sglang"]
    got = [onstack.point_ratio(_row(m), _cfg(m), NVL72, stack, "sglang") for m in onstack.METRICS]
    assert all(math.isfinite(g) and g > 0 for g in got)
    assert got[1] == pytest.approx(got[0], rel=1e-12) and got[2] == pytest.approx(got[0], rel=1e-12)


def test_the_ratio_moves_with_the_stack():
    """More host time per layer, a slower kernel or a slower baseline step each move the ratio the right way."""
    stack = stacks.load()[0]["trtllm"]
    r0 = onstack.point_ratio(_row(), _cfg(), NVL72, stack, "trtllm")
    slower = onstack.point_ratio(_row(), _cfg(), NVL72, {**stack, "t_layer": 2 * stack["t_layer"]}, "trtllm")
    weaker = onstack.point_ratio(_row(), _cfg(), NVL72, {**stack, "eta_bw": stack["eta_bw"] / 2}, "trtllm")
    assert slower < r0 and weaker < r0
    half = {**_row(), "baseline_tokens_per_s_per_user": 0.5 / STEP}  # the node-level model twice as slow
    assert onstack.point_ratio(half, _cfg(), NVL72, stack, "trtllm") == pytest.approx(2 * r0, rel=1e-12)


def test_no_ratio_where_the_point_is_not_a_gpu_decode_step():
    stack = stacks.load()[0]["sglang"]
    assert onstack.point_ratio(_row(), _cfg("energy_per_token_j"), NVL72, stack, "sglang") is None
    assert onstack.point_ratio({**_row(), "workload.mode": "prefill"}, _cfg(), NVL72, stack, "sglang") is None
    assert onstack.point_ratio({**_row(), "baseline_tokens_per_s_per_user": float("nan")}, _cfg(), NVL72, stack,
                               "sglang") is None
    wafer = CFG.model_copy(update={"compare": CFG.compare.model_copy(update={"baseline": {"hardware": "cs3"}})})
    assert onstack.ratios(pd.DataFrame([_row()]), wafer, "sglang") == []  # a wafer baseline: nothing to restate


def test_show_compare_and_report_say_it_for_a_zipped_baseline(tmp_path):
    """A GPU baseline named in a zip column beside the wafer (as cerebras_serving names NVL72) gets its
    calibration line and the on-stack line in show, compare and the report, as one on an axis does."""
    raw = {"name": "zipped", "hardware": "cs3", "model": "qwen3-30b-a3b",
           "workload": {"mode": "decode", "seq_len": 4096, "overlap": "stage"},
           "zip": [{"hardware": ["cs3", "nvl72", "nvl72"], "mapping.tp": [None, 8, 72]}],
           "axes": {"workload.B": [1, 4]},
           "compare": {"name": "nvl72", "baseline": {"hardware": "nvl72"}, "candidate": {"hardware": "cs3"},
                       "metric": "tokens_per_s_per_user", "over": ["mapping.tp"]},
           "objectives": {"tokens_per_s_per_user": "max"}}
    out = run_sweep(raw, out_root=tmp_path).path
    again = shutil.copytree(out, tmp_path / "again")   # compare refuses one folder named twice
    runner = CliRunner()
    for args in (["show", str(out)], ["compare", str(out), str(again)]):
        r = runner.invoke(app, args, env={"COLUMNS": "300"})
        flat = " ".join(r.output.split())
        assert r.exit_code == 0 and "GPU baseline nvl72:" in flat, r.output
        assert "zipped: on measured serving software, the fitted sglang stack" in flat, r.output
    page = tmp_path / "z.html"
    assert runner.invoke(app, ["report", str(out), "-o", str(page)]).exit_code == 0
    assert "on measured serving software" in page.read_text()
