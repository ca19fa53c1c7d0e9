"""Issue 26's serving physics, each against a hand derivation: the MAC rate bounded by the SRAM, one overhead per
fused operator chain, the top-k as one merged collective, the logits reduced (not all-reduced) before the argmax,
and per-user speed never rising with the batch at a fixed wafer count (the invariant, on every shipped serving
model)."""

from __future__ import annotations

import math
from types import SimpleNamespace as NS

import numpy as np
import pytest

from wsemoe.config import presets
from wsemoe.cost.wafer import collectives, decode, layer, serving
from wsemoe.cost.wafer.fabric import mac_cycles, sram_bytes_per_cycle

OVERHEAD = 133.0


def cs3_pe(**changes):
    return NS(**{**presets.load_hardware("cs3").pe.model_dump(), **changes})


def test_cs3_mac_rate_is_bounded_by_its_sram_bandwidth():
    # 21 PB/s / 900,000 PEs / 1.1 GHz = 21.21 B per cycle; 16 rows × 8 MACs × 3 operands × 2 B = 768 B → 37 cycles,
    # where the 8-wide SIMD alone takes 16 × ⌈8/8⌉ = 16.
    pe = cs3_pe()
    assert sram_bytes_per_cycle(pe) == pytest.approx(2.1e16 / 9e5 / 1.1e9)
    assert float(mac_cycles(16, 8, pe)) == math.ceil(768 / (2.1e16 / 9e5 / 1.1e9)) == 37
    assert float(mac_cycles(16, 8, cs3_pe(mac_memory_operands=0))) == 16            # the simd reading
    assert float(mac_cycles(16, 8, cs3_pe(mac_memory_operands=6))) == math.ceil(1536 / sram_bytes_per_cycle(pe))
    # half the SRAM bandwidth, twice the memory cycles (a perturbation the bound must see)
    assert float(mac_cycles(16, 8, cs3_pe(sram_bw_total_bytes_per_s=1.05e16))) == math.ceil(768 / (1.05e16 / 9e5 / 1.1e9))


def test_cs2_keeps_its_simd_rate():
    # CS-2's preset states no memory operands (the figures agree there): 4-wide SIMD, 16 × ⌈8/4⌉ = 32 cycles.
    pe = NS(**presets.load_hardware("cs2").pe.model_dump())
    assert float(mac_cycles(16, 8, pe)) == 32


def dense_ops(kernels: str):
    m = NS(hidden_size=64, num_attention_heads=4, num_key_value_heads=2, head_dim=16, intermediate_size=128)
    pe = cs3_pe(op_overhead_cycles=OVERHEAD)
    pe.kernels = kernels
    g = NS(dense_side=4.0)
    ops = layer.dense_layer(m, g, pe, 1.0, 32.0, 2, {"pattern": "tree", "levels": 2})
    return layer.fused(ops, pe)


def test_one_overhead_per_primitive_as_waferllm_counts():
    # Per primitive: norms 2 × (1 kernel + 1 all-reduce), QKV 3 GEMVs + 1 all-reduce, RoPE 2, score 1 + 1, softmax
    # 1 + 2, p·V 1 + 1, o 1 + 1, residual 1, up/gate 2 + 1, SiLU·mul 2, down 1 + 1, residual 1, the hop 2: 30.
    ops = dense_ops("per_primitive")
    assert sum(float(t["overhead_cycles"]) for t in ops.values()) == 30 * OVERHEAD


def test_one_overhead_per_fused_chain():
    # Fused: norm, QKV (+RoPE), score, softmax, p·V, o (+residual), norm, up/gate (+SiLU·mul), down (+residual),
    # the hop: 10 chains; everything else about each op unchanged.
    fused, each = dense_ops("fused"), dense_ops("per_primitive")
    assert sum(float(t["overhead_cycles"]) for t in fused.values()) == 10 * OVERHEAD
    assert {k for k, t in fused.items() if float(t["overhead_cycles"]) == 0} == {"rope", "attn_residual", "silu_mul",
                                                                              "ffn_residual"}
    for k in each:
        for term in ("compute_cycles", "link_cycles", "latency_cycles"):
            assert float(fused[k][term]) == float(each[k][term])


def router_ops(k):
    m = NS(hidden_size=64, num_experts=16, num_experts_per_tok=k)
    pe = cs3_pe(op_overhead_cycles=OVERHEAD)
    coll = {"pattern": "tree", "levels": 2}
    return layer.router(m, 4.0, 8.0, pe, 1.0, 2, coll), pe, coll


def test_topk_is_one_merged_collective():
    # The k picks merge in one collective: its critical path once (whatever k), k values streamed, one overhead.
    one, pe, coll = router_ops(1)
    eight, _, _ = router_ops(8)
    assert float(eight["latency_cycles"]) == float(one["latency_cycles"])
    merged = collectives.allreduce(8.0, 8.0, **coll)
    logits = layer.operators.gemv(64, 16, 4.0, 8.0, pe, 1.0, 2, **coll)
    assert float(eight["latency_cycles"]) == float(logits["latency_cycles"] + merged.latency(pe))
    assert float(eight["link_cycles"]) == float(logits["link_cycles"] + merged.volume)
    assert float(eight["overhead_cycles"]) == float(logits["overhead_cycles"]) + 2 * OVERHEAD   # local top-k + merge


def test_logits_are_reduced_not_all_reduced():
    # Only the sampler reads the logits: the GEMV's partial sums reduce to one root per column (no broadcast back),
    # and the argmax is a reduce of one value per token along the roots' line.
    m = NS(hidden_size=64, vocab_size=512)
    pe, coll = cs3_pe(), {"pattern": "tree", "levels": 2}
    g = NS(head_side=16.0)
    ops = layer.head(NS(**vars(m), num_attention_heads=1), g, pe, 1.0, 2, coll)
    nt = math.ceil(512 / 16)
    red = collectives.reduce(16.0, float(nt), "tree", 2)
    assert float(ops["logits"]["latency_cycles"]) == float(red.latency(pe))
    assert float(ops["argmax"]["latency_cycles"]) == float(collectives.reduce(16.0, 1.0, "tree", 2).latency(pe))
    full = collectives.allreduce(16.0, float(nt), "tree", 2)
    assert float(ops["logits"]["latency_cycles"]) < float(full.latency(pe))


SERVING_MODELS = [("qwen3-30b-a3b", "bf16"), ("qwen3-235b-a22b", "bf16"), ("deepseek-v3", "fp8")]


def batch_grid(model, fmt):
    from wsemoe.config.loader import load_config

    return load_config({"name": "batch", "hardware": {"preset": "cs3", "weight_source": "sram"}, "model": model,
                        "workload": {"mode": "decode", "seq_len": 8192, "attn_weight_format": fmt,
                                     "expert_weight_format": fmt},
                        "axes": {"hardware.pipeline_wafers": [None, 24], "workload.B": [1, 4, 16, 64],
                                 "workload.seq_len": [8192, 32768]}})


@pytest.mark.parametrize("model,fmt", SERVING_MODELS)
def test_per_user_speed_never_rises_with_batch(model, fmt):
    # Every model the shipped serving sweep serves (sweeps/cerebras_serving.yaml), at its fewest wafers and at 24.
    from wsemoe.analysis.invariants.cases import Case
    from wsemoe.analysis.invariants.laws import REGISTRY

    out = REGISTRY["serving_per_user_never_rises_with_batch"].run(Case(batch_grid(model, fmt)))
    assert out.status == "pass", out.worst


@pytest.mark.parametrize("name", ["llama-4-maverick-17b-128e-instruct", "gpt-oss-120b", "qwen3-next-80b-a3b-thinking",
                                  "deepseek-v3.2"])
def test_per_user_speed_never_rises_with_batch_on_patterned_models(name):
    # The models whose layers differ (dense beside MoE, windows, linear and sparse attention), from their
    # config.json: their stages split by bytes and their attention priced by kind.
    from wsemoe.analysis.invariants.cases import Case
    from wsemoe.analysis.invariants.laws import REGISTRY

    cfg = batch_grid({"hf_config": f"tests/data/hf/{name}.json"}, "bf16")
    out = REGISTRY["serving_per_user_never_rises_with_batch"].run(Case(cfg))
    assert out.status == "pass", out.worst


@pytest.mark.parametrize("model,fmt,wafers,context", [
    ("qwen3-235b-a22b", "bf16", 13, 8192), ("qwen3-235b-a22b", "bf16", 24, 32768), ("deepseek-v3", "fp8", 24, 32768),
    ("qwen3-30b-a3b", "bf16", 2, 8192)])
def test_per_user_speed_never_rises_from_one_batch_to_the_next(model, fmt, wafers, context):
    # Every batch from 1 to 40 at a fixed wafer count, not only powers of two: each feasible batch up to the largest
    # rung of the ladder whose caches fit is at least as fast per user as every larger one. Off the ladder a batch
    # once had its own layout, sized for its own caches, which a smaller batch was not offered: Qwen3-235B on 12
    # CS-3 ran 305 tokens/s per user at B = 4 and 347 at B = 5. Above that rung (at most twice it) a batch keeps
    # its own layout, and may run faster per user than the rung: Qwen3-30B on 2 CS-3 at 8K, B 24 2.0% faster than
    # B 16 and B 1 (docs/cost-model.md: the known exception, left).
    from wsemoe.config.loader import load_config
    from wsemoe.sweep import engine

    hardware = {"preset": "cs3", "weight_source": "sram", "pipeline_wafers": wafers}
    cfg = load_config({"name": "ladder", "hardware": hardware,
                       "model": model, "workload": {"mode": "decode", "seq_len": context, "attn_weight_format": fmt,
                                                    "expert_weight_format": fmt},
                       "axes": {"workload.B": list(range(1, 41))}})
    cols = engine.evaluate_block(cfg).columns
    feasible = np.asarray(cols["feasible"], dtype=bool)
    assert np.all(np.diff(feasible.astype(int)) <= 0)   # what fits never grows with the batch
    speed = np.asarray(cols["tokens_per_s_per_user"])[feasible]
    rung = 2 ** int(np.log2(len(speed)))   # the largest power of two that fits (the batches are 1 … 40 in order)
    assert rung >= 8 and np.all(np.diff(speed[:rung]) <= 1e-12 * speed[:rung - 1]), np.round(speed, 2)


def test_the_batch_invariant_can_fail(monkeypatch):
    # Without regions sized for larger batches' caches (the layouts of the point's own bytes only), DeepSeek-V3's
    # attention region at B = 1 is too small to be fast and B = 64 runs faster per user (the finding).
    from wsemoe.analysis.invariants.cases import Case
    from wsemoe.analysis.invariants.laws import REGISTRY

    monkeypatch.setattr(serving, "SIZED_STEPS", 0)
    assert REGISTRY["serving_per_user_never_rises_with_batch"].run(Case(batch_grid("deepseek-v3", "fp8"))).status \
        == "fail"


def test_regions_sized_for_larger_batches_are_candidates():
    # At B = 1 the candidates include the layouts sized for 4, 16 … sequences where they fit: more candidates than
    # the point's own ladder, and more attention region sizes than its own.
    hw = NS(**{**presets.load_hardware("cs3").model_dump(), "weight_source": "sram", "pipeline_wafers": 24.0})
    m = NS(**presets.load_model("deepseek-v3").model_dump())
    from wsemoe.specs import BalanceSpec, MappingSpec, WorkloadSpec

    wl = NS(**WorkloadSpec(mode="decode", B=1, seq_len=8192, attn_weight_format="fp8",
                           expert_weight_format="fp8").model_dump())
    pe, cap, (u, _, _, _), g, _, _ = serving.layout(hw, m, wl, NS(**MappingSpec().model_dump()),
                                           NS(**BalanceSpec().model_dump()))
    own, _, _, _ = serving.ladder.layouts(m, cap["wafers"], cap["bytes"], cap["u_pack"], serving.regions.wafer_pes(pe),
                                           pe=pe)
    assert len(u) > len(own)
    pes = np.asarray(g.attn_rows) * np.asarray(g.attn_cols)
    assert len(np.unique(pes)) > len(np.unique(pes[: len(own)]))


def test_speculation_is_stated_and_scales_the_step():
    # q = draft + 1 tokens per step, a accepted: per-user tokens/s = a / max(step, B·q·β), step = t1 + (q − 1)·β.
    wl = NS(mode="decode", B=1.0, draft_tokens=3, accepted_tokens_per_step=2.5)
    out = serving.rate_columns(wl, 1.0e-3, 1.0e-5)
    step = 1.0e-3 + 3 * 1.0e-5
    assert float(out["tokens_per_s_per_user"]) == pytest.approx(2.5 / step)
    assert float(out["tpot_s"]) == pytest.approx(step / 2.5)


def test_the_draft_models_time_is_paid_before_the_target_verifies():
    # d = 3 drafts of τ = 200 µs each come one after another before the target's step (each needs the one before):
    # step = t1 + 3·β + 3·τ; the target's stream (B·q·β) is untouched, so a large batch still paces at B·q·β;
    # τ = 0 is the step without the draft model, as before.
    wl = NS(mode="decode", B=np.array([1.0, 1000.0]), draft_tokens=3, accepted_tokens_per_step=2.5,
            draft_token_s=2.0e-4)
    out = serving.rate_columns(wl, 1.0e-3, 1.0e-5)
    step = 1.0e-3 + 3 * 1.0e-5 + 3 * 2.0e-4
    assert np.allclose(out["step_latency_s"], step) and np.allclose(out["draft_time_s"], 6.0e-4)
    assert float(out["tokens_per_s_per_user"][0]) == pytest.approx(2.5 / step)
    assert float(out["pipeline_period_s"][1]) == pytest.approx(1000 * 4 * 1.0e-5)   # the stream binds
    assert np.allclose(out["tokens_in_flight"], [4.0, (1.0e-3 + 3 * 1.0e-5) / 1.0e-5])  # drafts are elsewhere
    free = serving.rate_columns(NS(**{**vars(wl), "draft_token_s": 0.0}), 1.0e-3, 1.0e-5)
    assert np.allclose(free["step_latency_s"], 1.0e-3 + 3 * 1.0e-5) and np.allclose(free["draft_time_s"], 0.0)


def test_decode_norm_is_untouched_by_the_fused_reading():
    # decode.norm (WaferLLM's kernels call it directly) keeps its per-primitive overheads: 1 kernel + 1 all-reduce.
    pe = cs3_pe(op_overhead_cycles=OVERHEAD)
    pe.kernels = "fused"
    assert float(decode.norm(64, 4, 4, pe)["overhead_cycles"]) == 2 * OVERHEAD


def test_eval_adds_the_draft_models_time_into_the_step():
    import wsemoe

    sets = ["hardware.weight_source=sram", "workload.mode=decode", "workload.draft_tokens=3",
            "workload.accepted_tokens_per_step=2.5", "workload.draft_token_s=2e-4"]
    _, rows = wsemoe.explain(hardware="cs3", model="llama-3.1-8b", sets=sets)
    sums = {n: text for g, n, _, _, text in rows if g.startswith("how")}
    assert "3 draft × τ 200 µs (the draft model)" in sums["step_latency_s"]
    assert all(text.endswith("✓") for n, text in sums.items() if n in ("step_latency_s", "pipeline_period_s",
                                                                           "tpot_s", "tokens_per_s")), sums
