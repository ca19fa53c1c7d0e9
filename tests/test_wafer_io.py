"""Synchronous wafer I/O (`mapping.wafer_io: sync`, Cerebras' launch software): each system stalls σ for every
transfer through its I/O, once a step per system and once per sequence in each system's stream; hand-derived
against cost/wafer/serving.py, on the CLI's checks and eval, and against the launch rows it was fitted for."""

from __future__ import annotations

from types import SimpleNamespace as NS

import numpy as np
import pytest
from hypothesis import given, strategies as st

from wsemoe.config import presets
from wsemoe.cost.wafer import serving
from wsemoe.errors import ConfigError


def test_the_stall_is_paid_once_per_system_in_a_step_and_once_per_sequence_in_the_stream():
    # t1 = 1 ms, β = 10 µs, σ = 200 µs, W = 4, q = 1: step = 1 ms + 4·200 µs; the stream of B sequences takes
    # B·(β + σ): at B = 1000, 210 ms, which binds.
    wl = NS(mode="decode", B=np.array([1.0, 1000.0]), draft_tokens=0, accepted_tokens_per_step=1.0)
    out = serving.rate_columns(wl, 1.0e-3, 1.0e-5, 4.0, 2.0e-4)
    assert np.allclose(out["step_latency_s"], 1.0e-3 + 4 * 2.0e-4)
    assert np.allclose(out["io_stall_s"], 2.0e-4)
    assert float(out["pipeline_period_s"][1]) == pytest.approx(1000 * (1.0e-5 + 2.0e-4))
    assert float(out["tokens_per_s_per_user"][0]) == pytest.approx(1 / 1.8e-3)
    free = serving.rate_columns(wl, 1.0e-3, 1.0e-5)   # asynchronous: σ = 0, as before
    assert np.allclose(free["step_latency_s"], 1.0e-3) and np.allclose(free["io_stall_s"], 0.0)
    # prefill of B prompts of P tokens: t1 + W·σ + (B·P − 1)·β + (B − 1)·σ (a prompt crosses as one transfer)
    pre = serving.rate_columns(NS(mode="prefill", B=2.0, seq_len=100), 1.0e-3, 1.0e-5, 4.0, 2.0e-4)
    assert float(pre["ttft_s"] if "ttft_s" in pre else pre["pipeline_period_s"]) == \
        pytest.approx(1.0e-3 + 4 * 2.0e-4 + 199 * 1.0e-5 + 2.0e-4)


_pos = st.floats(1e-7, 1e-2, allow_nan=False, allow_infinity=False)


@given(t1=_pos, beta=_pos, sigma=st.floats(0.0, 1e-3), wafers=st.integers(1, 64), drafts=st.integers(0, 7),
       batches=st.lists(st.integers(1, 512), min_size=2, max_size=6))
def test_stalls_add_w_sigma_to_a_step_and_never_let_per_user_speed_rise_with_b(t1, beta, sigma, wafers, drafts,
                                                                              batches):
    B = np.sort(np.asarray(batches, dtype=float))
    wl = NS(mode="decode", B=B, draft_tokens=drafts, accepted_tokens_per_step=1.0 + 0.5 * drafts)
    sync, free = serving.rate_columns(wl, t1, beta, wafers, sigma), serving.rate_columns(wl, t1, beta)
    assert np.allclose(sync["step_latency_s"] - free["step_latency_s"], wafers * sigma, rtol=1e-9, atol=1e-15)
    assert np.all(sync["pipeline_period_s"] >= sync["step_latency_s"])
    assert np.all(sync["pipeline_period_s"] >= free["pipeline_period_s"])   # a stall never speeds anything up
    per_user = sync["tokens_per_s_per_user"]
    assert np.all(np.diff(per_user) <= 1e-12 * per_user[:-1])


def test_io_stall_is_read_only_under_the_sync_reading():
    hw = NS(sync_io_stall_s=2.24e-4)
    assert serving.io_stall(hw, NS(wafer_io="async")) == 0.0
    assert float(serving.io_stall(hw, NS(wafer_io="sync"))) == 2.24e-4
    assert serving.io_stall(hw, NS()) == 0.0   # a mapping without the field: asynchronous


def _evaluate(wafer_io: str, B=1, wafers=4, stall=None):
    from wsemoe.validate import cerebras as c

    model = c.models()["llama-3.1-70b"]
    hw, m, wl, mp, bal = c.namespaces(model, "launch", pipeline_wafers=wafers,
                                      **({} if stall is None else {"sync_io_stall_s": stall}))
    wl.B = B
    mp.wafer_io = wafer_io
    return serving.evaluate(hw, m, wl, mp, bal)


def test_a_sync_step_is_the_async_step_plus_one_stall_per_system():
    sigma = presets.load_hardware("cs3").sync_io_stall_s
    sync, free = _evaluate("sync"), _evaluate("async")
    assert float(sync["step_latency_s"]) == pytest.approx(float(free["step_latency_s"]) + 4 * sigma)
    assert float(sync["pipeline_latency_s"]) == pytest.approx(float(free["pipeline_latency_s"]))   # t1 untouched
    assert str(sync["bound"]) == "wafer I/O"   # 896 µs of stalls outweigh every term of the 1.19 ms pass
    assert str(free["bound"]) != "wafer I/O" and float(free["pipeline_inter_wafer_s"]) < 896e-6   # its own term
    # twice the stall, twice its share: the perturbation the fitted row must see
    double = _evaluate("sync", stall=2 * sigma)
    assert float(double["step_latency_s"]) == pytest.approx(float(free["step_latency_s"]) + 8 * sigma)


def test_per_user_speed_never_rises_with_the_batch_under_sync_io():
    speeds = [float(_evaluate("sync", B=b)["tokens_per_s_per_user"]) for b in (1, 2, 4, 8, 16)]
    assert all(b <= a * (1 + 1e-12) for a, b in zip(speeds, speeds[1:])), speeds


def test_the_launch_fit_closes_and_the_70b_row_is_its_prediction():
    from wsemoe.validate import cerebras as c

    ms = c.models()
    fit = c.fit_sync_io(ms)
    assert fit == pytest.approx(presets.load_hardware("cs3").sync_io_stall_s, abs=1e-6)   # whole microseconds
    rows, tps = c.launch_rows(ms, "src")
    kinds = {r["id"]: r["kind"] for r in rows}
    assert kinds == {"cerebras.launch_io:llama-3.1-8b": "fitted", "cerebras.speed:llama-3.1-70b": "check"}
    assert tps["llama-3.1-8b"] == pytest.approx(1800.0, rel=0.002)


def _check(sets: list[str], hardware="cs3"):
    import wsemoe

    return wsemoe.explain(hardware=hardware, model="llama-3.1-8b", sets=sets)


def test_sync_io_needs_sram_serving_and_a_stall():
    with pytest.raises(ConfigError, match="modelled for weight_source: sram"):
        _check(["mapping.wafer_io=sync"])
    with pytest.raises(ConfigError, match="cs2 has none"):
        _check(["hardware.weight_source=sram", "workload.mode=decode", "mapping.wafer_io=sync"], hardware="cs2")


def test_eval_adds_the_stalls_into_the_step():
    sets = ["hardware.weight_source=sram", "workload.mode=decode", "mapping.wafer_io=sync",
            "mapping.pe_kernels=per_primitive", "workload.seq_len=2048"]
    _, rows = _check(sets)
    sums = {n: text for g, n, _, _, text in rows if g.startswith("how")}
    assert "1 system × σ 225 µs (synchronous wafer I/O)" in sums["step_latency_s"], sums["step_latency_s"]
    assert all(text.endswith("✓") for n, text in sums.items() if n in ("step_latency_s", "pipeline_period_s",
                                                                           "tpot_s", "tokens_per_s")), sums


def test_the_fit_turned_round_predicts_8b_and_the_moves_row_names_each_assumption():
    from wsemoe.validate import cerebras as c

    ms = c.models()
    sigma8, seventy = c.launch_fit(ms, "llama-3.1-8b")
    sigma70, eight = c.launch_fit(ms, "llama-3.1-70b")
    # one stall per system and step: 70B's gap spread over 4 transfers, 8B's over 1 (hand-derived from the steps)
    free8 = c.speed(ms["llama-3.1-8b"], 1, "launch", "step_latency_s", sync_io_stall_s=0.0)
    free70 = c.speed(ms["llama-3.1-70b"], 4, "launch", "step_latency_s", sync_io_stall_s=0.0)
    assert sigma8 == pytest.approx(1 / 1800 - free8) and sigma70 == pytest.approx((1 / 450 - free70) / 4)
    assert seventy == pytest.approx(1 / (free70 + 4 * sigma8) / 450)
    assert eight == pytest.approx(1 / (free8 + sigma70) / 1800)
    (r,) = c.launch_move_rows(ms)
    assert r["model"].count(": 70B ") == len(c.LAUNCH_MOVES) and "fitted to 70B instead" in r["model"]


def _row(*sets):
    import wsemoe

    cfg = wsemoe.point_config("cs3", sets[0], ["hardware.weight_source=sram", *sets[1:]])
    return wsemoe.evaluate({**cfg, "objectives": {"tokens_per_s": "max"}}).iloc[0]


def test_the_bound_of_a_prefill_is_the_largest_term_of_its_ttft_not_of_one_token():
    # TTFT = t1 + W·σ + (B·P − 1)·β + (B − 1)·σ: 8,191 of the 8,192 tokens pace at β (on 3 CS-3: 3.55 µs, the
    # attention region at 16× its share), so TTFT (29.8 ms) is 97% the busiest stage's stream, whose link term
    # (8,191 × 2.22 µs = 18.2 ms) tops its MACs (10.9 ms). bound read 'local MACs', the largest term of t1 alone
    # (340 of its 746 µs). (On its fewest 2 CS-3, as this point ran before its regions were whole tiles, the one
    # layout that fits, attention at 1×, is MAC-bound in β too.)
    row = _row("qwen3-30b-a3b", "workload.mode=prefill", "workload.B=1", "workload.seq_len=8192",
               "hardware.pipeline_wafers=3")
    assert float(row["ttft_s"]) == pytest.approx(float(row["pipeline_latency_s"]) + 8191 * float(row["busiest_stage_s"]))
    assert float(row["pipeline_macs_s"]) > float(row["pipeline_link_s"])   # t1 alone: local MACs
    assert str(row["bound"]) == "link bandwidth"
    # σ·W (2 × 225 µs) outweighed t1's terms, never the 1.65 ms TTFT of a 512-token prompt: it read 'wafer I/O'
    sync = _row("qwen3-30b-a3b", "workload.mode=prefill", "workload.B=1", "workload.seq_len=512", "mapping.wafer_io=sync")
    assert 2 * float(sync["io_stall_s"]) < float(sync["ttft_s"]) / 3
    assert str(sync["bound"]) == "local MACs"
    # a 128-token prompt (1.2 ms, its tokens paced at the busiest stage's 1.2 µs) is the I/O's: 450 µs of it
    short = _row("qwen3-30b-a3b", "workload.mode=prefill", "workload.B=1", "workload.seq_len=128", "mapping.wafer_io=sync")
    assert str(short["bound"]) == "wafer I/O"


def test_the_draft_models_time_is_a_bound_of_its_own():
    # the step: t1 267 µs + 4 × β 3.76 µs + 4 × τ 2 ms = 8.28 ms, 97% the draft model's; bound read 'local MACs'
    # (95 µs of t1)
    row = _row("llama-3.1-8b", "workload.mode=decode", "workload.B=1", "workload.seq_len=4096",
               "workload.draft_tokens=4", "workload.draft_token_s=0.002", "workload.accepted_tokens_per_step=3")
    assert float(row["draft_time_s"]) > 0.9 * float(row["step_latency_s"])
    assert str(row["bound"]) == "draft model"
    wl = NS(mode="decode", B=1.0, draft_tokens=4, draft_token_s=0.0)   # no draft time: the verified drafts' β count
    late, paced = [1.0, 0.0, 0.5, 0.0, 0.0], [0.0, 0.2, 0.0, 0.0, 0.0]   # t1 MAC-bound, β link-bound
    terms = serving.bound_terms(wl, late, paced, 1.0, 0.0, False)
    assert [float(t) for t in terms] == pytest.approx([1.0, 0.8, 0.5, 0.0, 0.0, 0.0, 0.0])
    assert serving.BOUNDS[-1] == "SRAM" and serving.BOUNDS[int(np.argmax(terms))] == "local MACs"
    terms = serving.bound_terms(wl, late, [0.0, 0.3, 0.0, 0.0, 0.0], 1.0, 0.0, False)   # 4 × 0.3 s of link
    assert serving.BOUNDS[int(np.argmax(terms))] == "link bandwidth"


def test_eval_shows_the_busiest_stage_by_term_so_a_prefill_bound_can_be_checked():
    """A prefill's bound weighs t1's terms plus (B·P − 1) × β's, but eval printed β whole: the label could not be
    checked from the output. β's five terms are columns now, add up to it, and rebuild the bound by hand."""
    import wsemoe

    sets = ["hardware.weight_source=sram", "workload.mode=prefill", "workload.seq_len=8192", "hardware.pipeline_wafers=3"]
    row, terms = wsemoe.explain(hardware="cs3", model="qwen3-30b-a3b", sets=sets)
    line = next(t for t in terms if t[1] == "busiest_stage_s")   # (section, term, value, unit, how it adds up)
    assert line[4].startswith("by term: local MACs") and line[4].endswith("✓")
    names = [c.removeprefix("pipeline_") for c in serving.TERM_COLUMNS]
    beta = [row[f"busiest_{n}"] for n in names]
    assert sum(beta) == pytest.approx(row["busiest_stage_s"], rel=1e-12)
    ttft = [row[f"pipeline_{n}"] + (8192 - 1) * b for n, b in zip(names, beta)]
    assert str(row["bound"]) == serving.BOUNDS[int(np.argmax(ttft))] == "link bandwidth"
