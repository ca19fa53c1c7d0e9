"""The node-level GPU calibration is bracketed by the fitted serving stack: every B200/H100/H200-class preset (and
the wafers built of B200-class dies) carries one matmul share for dense and expert GEMMs, which must lie between
the shares the stack that checks the GPU baselines reaches on the experts' grouped GEMMs and on dense GEMMs, so a
refit that leaves it outside fails here; and the published decode points validate's gpu family checks move with it
as their binding terms say."""

from __future__ import annotations

import math

import pytest

from wsemoe.config import presets
from wsemoe.validate import gpu
from wsemoe.validate.perturb import perturbed
from wsemoe.validate.silicon import checks, stacks

CALIBRATED = ("nvl72", "dgx-b200-x32", "wsc-b200-8x8", "wsc-b200-4x8x8", "h100-sxm", "h200-sxm", "b200-sxm",
              "b300-sxm", "gb200", "gb300")


@pytest.mark.parametrize("name", CALIBRATED)
def test_presets_carry_a_share_the_fitted_stack_brackets(name):
    stack = stacks.load()[0][checks.BACKEND]
    hw = presets.load_hardware(name)
    assert round(stack["eta_xmm"], 2) <= hw.matmul_efficiency <= round(stack["eta_mm"], 2)
    assert stacks.bracketed(hw.model_dump())
    source = presets.raw("hardware", name)["sources"]["matmul_efficiency"]
    assert "eta_xmm" in source and "eta_mm" in source  # the preset says where its bracket comes from
    for value in (stack["eta_xmm"] - 0.02, stack["eta_mm"] + 0.02):  # just outside either end: not bracketed
        assert not stacks.bracketed({**hw.model_dump(), "matmul_efficiency": value})


def test_the_published_rows_follow_the_calibration():
    """At 768 tokens/GPU GB200's step is matmul-bound, so the node-level model moves with the share almost in
    proportion: 1.18x of the published 9,087 tokens/s/GPU at the fitted 0.40, 1.81x (outside the band) at the
    assumed 0.7 (1.19x and 1.83x before the experts waited for a step's busiest GPU) (1.09x and 1.70x at HGX B200's 2.25 PFLOP/s, before nvl72 took GB200's 2.5). 72 H100s at 256 tokens/GPU, two micro-batches of 128 overlapped as the publication runs them, are
    bound by the expert-parallel combine over InfiniBand and barely move (1.41x, 1.42x; serial, 0.86x; 1.49x, 1.50x and
    0.88x before the GPUs' NICs waited for a step's busiest).
    (Before issue 26's FP8 dispatch and the checkpoint's FP8 projections, serial: 0.91x, 1.40x, 0.70x and 0.87x,
    the H100 worker not fitting its memory.)"""
    eff = presets.load_hardware("nvl72").matmul_efficiency
    now = {h: gpu.node_tokens_per_gpu(h, g, t)[0] / p for h, _, g, t, p, _ in gpu.POINTS}
    assert now["nvl72"] == pytest.approx(1.18, abs=0.01) and now["h100-sxm"] == pytest.approx(1.41, abs=0.01)
    before = {}
    for h, _, g, t, p, _ in gpu.POINTS:
        with perturbed(h, "matmul_efficiency", 0.7 / eff):
            before[h] = gpu.node_tokens_per_gpu(h, g, t)[0] / p
    assert before["nvl72"] == pytest.approx(1.81, abs=0.01) and before["h100-sxm"] == pytest.approx(1.42, abs=0.01)
    serial = gpu.node_tokens_per_gpu("h100-sxm", 72, 256, "none")[0] / 2785.0
    assert serial == pytest.approx(0.86, abs=0.01)   # the comparisons' default accounting
    assert before["nvl72"] / now["nvl72"] > before["h100-sxm"] / now["h100-sxm"] > 1  # matmul-bound moves most


def test_a_published_worker_the_model_cannot_fit_fails_its_row():
    """A published worker ran: with half the HBM it no longer fits, and its row fails rather than report the
    tokens/s of a design that cannot run."""
    from wsemoe.validate.deviations import classify

    with perturbed("h100-sxm", "node_memory_bytes", 0.5):
        got, why = gpu.node_tokens_per_gpu("h100-sxm", 72, 256)
        rows = {r["id"]: r for r in classify(gpu.gpu_rows()[:3])}
    assert math.isnan(got) and why.startswith("does not fit")
    assert rows["gpu.node:h100-sxm"]["status"] == "FAILS" and rows["gpu.node:nvl72"]["status"] == "yes"


def test_the_baseline_line_names_where_its_calibration_comes_from():
    nvl72 = presets.load_hardware("nvl72").model_dump()
    assert f"matmul_efficiency within the {checks.BACKEND} stack's eta_xmm" in stacks.baseline_line(nvl72)
    over = stacks.baseline_line({**nvl72, "matmul_efficiency": 0.95})  # above what dense GEMMs reach: said
    assert f"matmul_efficiency outside the {checks.BACKEND} stack's eta_xmm" in over


def test_servers_over_infiniband_carry_one_call_cost_and_the_reading_moves_both():
    """The GPU clusters whose expert-parallel calls cross InfiniBand share one per-call cost (the one the gpu.ib rows
    check on h100-sxm); the scale_out_call reading's other option sets pplx-kernels' 90 µs on both, and nothing
    else (the default option sets nothing, so it reads the presets as written)."""
    from wsemoe.config import readings as registry
    from wsemoe.config.loader import load_config

    names = ("dgx-b200-x32", "h100-sxm")
    costs = {n: presets.load_hardware(n).alltoall_latency_s for n in names}
    assert len(set(costs.values())) == 1 and costs["h100-sxm"] == presets.load_hardware("nvl72").alltoall_latency_s
    reading = registry.load()["scale_out_call"]
    assert reading.options[reading.default].set == {}
    cfg = load_config({"name": "ib", "hardware": "dgx-b200-x32", "model": "deepseek-v3",
                       "workload": {"mode": "decode", "seq_len": 4096, "B": 8},
                       "axes": {"hardware": list(names)}})
    moved = registry.apply(cfg, {"scale_out_call": "pplx"})
    for n in names:
        assert moved.presets[n]["alltoall_latency_s"] == 9.0e-5
        assert {k: v for k, v in moved.presets[n].items() if k != "alltoall_latency_s"} == \
            {k: v for k, v in cfg.presets[n].items() if k != "alltoall_latency_s"}
