"""Serving metrics: TPOT is the decode step, tokens/s per user its inverse, TTFT the prefill of the decode batch's
prompts (the same cost model in prefill mode at S = prompt_len), vectorized like every other column; an SLO is
a constraint whose reason reads "TPOT 1.3× the SLO", and `show --where` filters on it."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st

import wsemoe
from wsemoe.analysis.explain.point import breakdown
from wsemoe.cli import app
from wsemoe.sweep.columns import describe, documented
from wsemoe.sweep.run import run_sweep

MESH = {"name": "serve", "hardware": "wsc-b200-8x8", "model": "deepseek-v3",
        "workload": {"mode": "decode", "seq_len": 4096, "prompt_len": 2048},
        "axes": {"workload.B": [1, 8, 64], "mapping.tp": [4, 16], "mapping.strategy": ["block", "er"]}}
SERVING = ("ttft_s", "tpot_s", "tokens_per_s_per_user", "tokens_per_s")


@pytest.fixture(scope="module")
def mesh():
    return wsemoe.evaluate(MESH)


def _with(cfg: dict, **workload) -> dict:
    return {**cfg, "workload": {**cfg["workload"], **workload}}


def test_tpot_is_the_decode_step_and_tokens_per_user_its_inverse(mesh):
    assert np.array_equal(mesh["tpot_s"], mesh["step_time_s"])
    assert np.allclose(mesh["tokens_per_s_per_user"], 1.0 / mesh["step_time_s"], rtol=1e-15)
    # decode: one token per sequence per step, so the aggregate rate is sequences × the per-user rate
    assert np.allclose(mesh["tokens_per_s"], mesh["sequences_per_microbatch"] * mesh["tokens_per_s_per_user"],
                       rtol=1e-12)


def test_two_micro_batches_taking_turns_never_shorten_the_time_between_a_sequences_tokens():
    """comm_overlap microbatch: two micro-batches of the point's size share the nodes, one communicating while the
    other computes; per layer the nodes spend max(core, comm) per micro-batch, so a micro-batch's own layer takes
    2·max(core, comm) ≥ core + comm, the serial layer. TPOT is two steps: never below the serial TPOT (DeepSeek-V3 on
    NVL72, 64 tokens per GPU: 22.8 ms against 15.5 ms; it read 11.4 ms), while tokens/s, a micro-batch's tokens per
    step, is never lower."""
    cfg = {"name": "mb", "hardware": "nvl72", "model": "deepseek-v3",
           "workload": {"mode": "decode", "seq_len": 4096}, "mapping": {"tp": 1},
           "axes": {"workload.tokens_per_device": [1, 64], "workload.comm_overlap": ["none", "microbatch"]}}
    df = wsemoe.evaluate(cfg)
    serial, mb = (df[df["workload.comm_overlap"] == o].reset_index(drop=True) for o in ("none", "microbatch"))
    assert np.allclose(mb["tpot_s"], 2 * mb["step_time_s"], rtol=1e-15)
    assert np.allclose(mb["tokens_per_s_per_user"], 1 / mb["tpot_s"], rtol=1e-15)
    assert np.allclose(mb["tokens_per_s"], 2 * mb["sequences_per_microbatch"] / mb["tpot_s"], rtol=1e-12)
    assert (mb["tpot_s"] >= serial["tpot_s"]).all() and (mb["tokens_per_s"] >= serial["tokens_per_s"]).all()


def test_under_micro_batches_a_prompt_waits_two_prefill_steps_as_a_token_waits_two_decode_steps():
    """comm_overlap microbatch: the decode's two micro-batches' prompts are prefilled the way they decode, taking
    turns, so a micro-batch's own prefill layer takes 2·max(core, comm) ≥ core + comm and its first token comes two
    prefill steps in (it read one step: half the schedule's time, below the serial TTFT). Independent reference: the
    same points run as a prefill sweep at S = prompt_len under microbatch."""
    cfg = {"name": "mbp", "hardware": "nvl72", "model": "qwen3-30b-a3b", "mapping": {"tp": 4},
           "workload": {"mode": "decode", "seq_len": 4096, "prompt_len": 1024},
           "axes": {"workload.B": [1, 8], "workload.comm_overlap": ["none", "microbatch"]}}
    df = wsemoe.evaluate(cfg)
    ref = wsemoe.evaluate(_with({**cfg, "name": "mbp-prefill"}, mode="prefill", seq_len=1024, prompt_len=None))
    assert np.array_equal(ref["workload.comm_overlap"], df["workload.comm_overlap"])
    two = np.where(df["workload.comm_overlap"] == "microbatch", 2.0, 1.0)
    assert np.allclose(df["ttft_s"], two * ref["step_time_s"], rtol=1e-13)
    assert np.allclose(ref["ttft_s"], two * ref["step_time_s"], rtol=1e-15)   # prefill mode: the same rule
    serial, mb = (df[df["workload.comm_overlap"] == o].reset_index(drop=True) for o in ("none", "microbatch"))
    assert (mb["ttft_s"] >= serial["ttft_s"]).all()


def test_ttft_is_the_prefill_of_the_batch_at_the_prompt_length(mesh):
    """An independent reference: the same space run as a prefill sweep at seq_len = prompt_len, every reading at
    its default (one attention-kernel default for prefill sweeps and a decode point's TTFT prefill alike)."""
    ref = wsemoe.evaluate(_with({**MESH, "name": "prefill"}, mode="prefill", seq_len=2048, prompt_len=None))
    assert np.array_equal(ref["workload.B"], mesh["workload.B"])
    assert np.allclose(mesh["ttft_s"], ref["step_time_s"], rtol=1e-13)
    assert np.allclose(mesh["mem_prefill_peak_node_bytes"], ref["mem_peak_node_bytes"], rtol=1e-13)
    assert np.allclose(mesh["g_mem_prefill"], ref["mem_peak_node_bytes"] / ref["mem_capacity_node_bytes"] - 1)


def test_ttft_carries_the_fixed_latencies():
    """TTFT is the same step model, so kernel launches and each collective call's software latency are in it:
    zeroing them lowers it by exactly what the prefill's own columns charge, Lm × (attention and MoE launches +
    all-reduce, dispatch, combine and reduce latencies) + (L − Lm) × (attention and dense-FFN launches + the attention's
    and the FFN's all-reduce latencies) + the head's launches (communication follows the core here, so they add)."""
    cfg = {**MESH, "axes": {"workload.B": [1, 8], "mapping.tp": [4, 16]}}
    zero = {**cfg, "hardware": {"preset": "wsc-b200-8x8", "kernel_launch_s": 0.0, "collective_latency_s": 0.0,
                                "alltoall_latency_s": 0.0}}
    dec, bare = wsemoe.evaluate(cfg), wsemoe.evaluate(zero)
    pre = wsemoe.evaluate(_with({**cfg, "name": "prefill"}, mode="prefill", seq_len=2048, prompt_len=None))
    m = wsemoe.load_model("deepseek-v3")
    L, Lm = m.num_hidden_layers, m.num_hidden_layers - m.first_k_dense_replace
    moe = pre["attention_launch_s"] + pre["moe_launch_s"] + sum(pre[f"{p}_fixed_s"] for p in
                                                                ("allreduce", "dispatch", "combine", "reduce"))
    dense = pre["attention_launch_s"] + pre["dense_ffn_launch_s"] + pre["allreduce_fixed_s"] \
        + pre["ffn_allreduce_fixed_s"]
    expect = Lm * moe + (L - Lm) * dense + pre["head_launch_s"]
    assert (expect > 0).all() and np.allclose(dec["ttft_s"] - bare["ttft_s"], expect, rtol=1e-9)


def test_ttft_takes_the_decode_batch_from_tokens_per_device():
    """With tokens_per_device the decode B is tokens_per_device·tp/G; the prefill runs those very prompts."""
    cfg = {**MESH, "workload": {"mode": "decode", "seq_len": 4096, "prompt_len": 512},
           "axes": {"workload.tokens_per_device": [1, 4], "mapping.tp": [4, 8]}}
    dec = wsemoe.evaluate(cfg)
    B = dec["workload.tokens_per_device"] * dec["mapping.tp"]  # G = 1
    assert np.array_equal(dec["attention_batch"], B)
    for (_, row), b in zip(dec.iterrows(), B):
        ref = wsemoe.evaluate({**MESH, "workload": {"mode": "prefill", "seq_len": 512, "B": int(b)},
                               "axes": {"mapping.tp": [int(row["mapping.tp"])]}})
        assert row["ttft_s"] == pytest.approx(ref["step_time_s"].iloc[0], rel=1e-13)


def test_vectorized_equals_point_by_point(mesh):
    for i in (0, 5, 11):
        row = mesh.iloc[i]
        one = {**MESH, "axes": {a: [row[a].item() if hasattr(row[a], "item") else row[a]] for a in MESH["axes"]}}
        single = wsemoe.evaluate(one).iloc[0]
        for c in (*SERVING, "g_mem_prefill"):
            assert single[c] == pytest.approx(row[c], rel=1e-13), c


def test_ttft_does_not_depend_on_the_decode_context():
    """The prefill runs at S = prompt_len: a longer decode context changes TPOT (more KV to read), not TTFT."""
    short, long_ = (wsemoe.evaluate(_with(MESH, seq_len=s)) for s in (2048, 8192))
    assert np.allclose(short["ttft_s"], long_["ttft_s"], rtol=1e-13)
    assert (long_["tpot_s"] > short["tpot_s"]).all()


@settings(max_examples=25)
@given(b=st.sampled_from([1, 2, 8, 32]), tp=st.sampled_from([1, 4, 16]), strategy=st.sampled_from(["block", "er"]),
       p1=st.integers(1, 4096), p2=st.integers(1, 4096))
def test_a_longer_prompt_never_gives_an_earlier_first_token(b, tp, strategy, p1, p2):
    lo, hi = sorted((p1, p2))
    cfg = {**MESH, "workload": {"mode": "decode", "seq_len": 4096, "B": b},
           "mapping": {"tp": tp, "strategy": strategy}, "axes": {"workload.prompt_len": sorted({lo, hi})}}
    ttft = wsemoe.evaluate(cfg)["ttft_s"].to_numpy()
    assert ttft[0] <= ttft[-1] * (1 + 1e-12)


def test_prefill_mode_gives_ttft_and_training_no_serving_columns():
    pre = wsemoe.evaluate({**MESH, "workload": {"mode": "prefill", "seq_len": 1024}, "axes": {"workload.B": [1, 4]}})
    assert np.array_equal(pre["ttft_s"], pre["step_time_s"])
    assert "tpot_s" not in pre and "tokens_per_s_per_user" not in pre
    train = wsemoe.evaluate({"name": "t", "hardware": "cs2", "model": "qwen3-30b-a3b",
                             "axes": {"workload.B": [1, 2]}})
    assert not {"ttft_s", "tpot_s", "tokens_per_s_per_user", "g_mem_prefill"} & set(train.columns)


def test_every_serving_column_has_a_unit_and_meaning():
    for c in (*SERVING, "g_mem_prefill", "mem_prefill_peak_node_bytes"):
        assert documented(c), c
    assert describe("ttft_s")[0] == describe("tpot_s")[0] == "s"
    assert describe("tokens_per_s_per_user")[0] == "tokens/s"


def _shown(ratio: float) -> str:
    """A ratio to three significant digits, rounded away from the limit (up), as the reasons print it."""
    e = math.floor(math.log10(ratio)) - 2
    return f"{math.ceil(ratio / 10 ** e * (1 - 1e-12)) * 10 ** e:.3g}"


def test_slo_constraints_read_as_slos(mesh):
    tpot_slo, ttft_slo = float(mesh["tpot_s"].median()), 1.0
    cfg = {**MESH, "constraints": [{"column": "tpot_s", "max": tpot_slo}, {"column": "ttft_s", "max": ttft_slo}]}
    df = wsemoe.evaluate(cfg)
    ok = (df["tpot_s"] <= tpot_slo) & (df["ttft_s"] <= ttft_slo) & (df["g_mem_prefill"] <= 0) \
        & (df["g_mem_attn"] <= 0) & (df["g_mem_moe"] <= 0)
    assert df["feasible"].equals(ok.rename("feasible")) and ok.any() and (~ok).any()
    for _, row in df[~df["feasible"]].iterrows():
        g = {"tpot": row["tpot_s"] / tpot_slo - 1, "ttft": row["ttft_s"] / ttft_slo - 1,
             "mem": max(row["g_mem_attn"], row["g_mem_moe"], row["g_mem_prefill"])}
        worst = max(g, key=g.get)
        if worst == "tpot":
            ratio = _shown(row["tpot_s"] / tpot_slo)
            assert row["infeasible_reason"] == f"TPOT {ratio}× the SLO ({tpot_slo * 1e3:g} ms)"
        elif worst == "ttft":
            assert row["infeasible_reason"] == f"TTFT {_shown(row['ttft_s'] / ttft_slo)}× the SLO (1 s)"


def test_a_prefill_that_does_not_fit_makes_the_point_infeasible():
    """Decode at B = 128 (TP 1: 64 attention groups) fits, but prefilling all its prompts of 8192 tokens at once
    does not, under the one default attention kernel (per_head: one head's S×S scores at a time in the prefill,
    every head's n_h·S in decode)."""
    cfg = {**MESH, "workload": {"mode": "decode", "seq_len": 8192, "prompt_len": 8192},
           "axes": {"workload.B": [128]}, "mapping": {"tp": 1}}
    row = wsemoe.evaluate(cfg).iloc[0]
    assert row["g_mem_attn"] <= 0 and row["g_mem_moe"] <= 0 and row["g_mem_prefill"] > 0 and not row["feasible"]
    r = row["mem_prefill_peak_node_bytes"] / row["mem_capacity_node_bytes"]
    assert row["infeasible_reason"] == (f"prefill of the batch's prompts (behind ttft_s) needs {_shown(r)}× "
                                        "the usable node memory")


@pytest.mark.parametrize("mode", ["train", "prefill", "decode"])
def test_one_attention_kernel_default_in_every_mode_and_in_the_ttft_prefill(mode):
    """The workload's attn_kernel defaults to the readings registry's default in every mode, so a decode point's
    TTFT prefill runs the kernel a prefill sweep would (no second default for decode)."""
    from wsemoe.config import readings as registry
    from wsemoe.specs.workload import WorkloadSpec

    default = registry.load()["attn_kernel"].default
    assert WorkloadSpec(mode=mode).attn_kernel == default
    if mode == "decode":
        row = wsemoe.evaluate({**MESH, "axes": {"workload.B": [8]}, "mapping": {"tp": 4}}).iloc[0]
        pinned = wsemoe.evaluate(_with({**MESH, "axes": {"workload.B": [8]}, "mapping": {"tp": 4}},
                                       attn_kernel=default)).iloc[0]
        assert row["ttft_s"] == pinned["ttft_s"] and row["g_mem_prefill"] == pinned["g_mem_prefill"]


@pytest.mark.parametrize("workload,constraint,message", [
    ({"mode": "train", "prompt_len": 512}, None, "[workload -> prompt_len] prompt_len sets the prompt"),
    ({"mode": "decode", "seq_len": 1024, "prompt_len": 2048}, None, "exceeds the decode context seq_len = 1024"),
    ({"mode": "decode"}, "ttft_s", "no point of this sweep has it (it needs workload.mode: prefill, or decode with "
                                   "workload.prompt_len)"),
    ({"mode": "train"}, "tpot_s", "it needs workload.mode: decode"),
])
def test_serving_inputs_are_checked_in_one_line(runner, tmp_path, workload, constraint, message):
    cfg = {"name": "bad", "hardware": "wsc-b200-8x8", "model": "deepseek-v3", "workload": workload,
           "axes": {"workload.B": [1, 2]}}
    if constraint:
        cfg["constraints"] = [{"column": constraint, "max": 1.0}]
    path = tmp_path / "bad.yaml"
    path.write_text(json.dumps(cfg))
    r = runner.invoke(app, ["check", str(path)])
    assert r.exit_code != 0 and message in r.output and len(r.output.strip().splitlines()) == 1, r.output


def test_show_filters_on_an_slo_and_eval_breaks_ttft_down(runner, tmp_path):
    res = run_sweep(MESH, out_root=tmp_path)
    points = pd.read_parquet(res.path / "points.parquet")
    slo = float(points["tpot_s"].median())
    r = runner.invoke(app, ["show", str(res.path), "--all", "--where", f"tpot_s < {slo!r}", "--columns",
                            "tpot_s,ttft_s,tokens_per_s_per_user", "--format", "csv"])
    assert r.exit_code == 0, r.output
    shown = pd.read_csv(__import__("io").StringIO(r.output), index_col="point")
    assert sorted(shown.index) == sorted(points.index[points["tpot_s"] < slo])
    _, rows = breakdown(res.path, 5)
    serving = {n: text for g, n, _, _, text in rows if g.startswith("serving")}
    assert {"tpot_s", "tokens_per_s_per_user", "ttft_s", "g_mem_prefill", "prefill moe_layer_time_s"} <= set(serving)
    assert all(text.endswith("✓") for text in serving.values()), serving
    assert "kernel launches" in serving["prefill moe_layer_time_s"]   # the prefill charges the fixed latencies too
