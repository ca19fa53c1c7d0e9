"""Energy and cost per token (cost/energy): hand-derived cases, the split adding up, the columns of every mode,
and the invariants' ability to fail."""

from __future__ import annotations

from types import SimpleNamespace as NS

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from wsemoe.analysis.invariants import energy_laws
from wsemoe.analysis.invariants.suite import check_invariants
from wsemoe.config import presets
from wsemoe.cost import serving
from wsemoe.cost.energy import columns as energy
from wsemoe.cost.energy.traffic import Work
from wsemoe.specs import BalanceSpec, MappingSpec, WorkloadSpec
from wsemoe.sweep.columns import documented

SPLIT = [f"energy_{t}_per_token_j" for t in energy.TIERS]


def point(hw="nvl72", model="qwen3-30b-a3b", hw_changes=None, **wl):
    h = {**presets.load_hardware(hw).model_dump(), **(hw_changes or {})}
    m = presets.load_model(model).model_dump()
    fields = {"mode": "decode", "B": 4, "seq_len": 4096, **wl}
    tp = 1 if h["topology"] == "switch" else None
    return serving.evaluate(NS(**h), NS(**m), NS(**WorkloadSpec(**fields).model_dump()),
                            NS(**MappingSpec(tp=tp).model_dump()), NS(**BalanceSpec().model_dump()))


def test_every_energy_column_is_documented():
    assert all(documented(c) for c in energy.NAMES)


def test_one_gpu_compute_energy_is_the_model_flops_times_energy_per_flop():
    """One GPU (no expert imbalance), every format 16-bit: compute energy per step = model FLOPs × J/FLOP."""
    out = point(hw_changes={"cols": 1}, B=1)
    h = presets.load_hardware("nvl72")
    expected = float(out["model_flops_per_step"]) * h.energy_flop_j / float(out["tokens_per_microbatch"])
    assert float(out["energy_compute_per_token_j"]) == pytest.approx(expected, rel=1e-9)


def test_fp8_at_twice_the_peak_halves_the_energy_of_the_flops_it_runs():
    bf, f8 = (point(hw_changes={"cols": 1}, B=1, attn_weight_format=f, expert_weight_format=f)
              for f in ("bf16", "fp8"))
    assert float(f8["energy_compute_per_token_j"]) < float(bf["energy_compute_per_token_j"])
    assert float(f8["energy_compute_per_token_j"]) > 0.5 * float(bf["energy_compute_per_token_j"])


def test_streamed_training_pays_the_wafer_io_both_ways():
    # Weight streaming on a CS-2 (no fabric traffic between wafers): the network tier is the wafer I/O's bytes × J/B.
    # In: every pass's weights and the kept activations (`<stage>_traffic_bytes`); out, in training: a gradient per
    # parameter and the kept activations again (`<stage>_io_out_bytes`), which the tier once left out (a third of
    # it here). Inference sends nothing out.
    h = presets.load_hardware("cs2")
    m = presets.load_model("qwen3-30b-a3b")
    counts = {"attention": m.num_hidden_layers, "moe": m.num_hidden_layers, "dense_ffn": 0, "head": 1}
    for mode, sends in (("train", True), ("prefill", False)):
        out = point("cs2", mode=mode, B=1, seq_len=2048)
        bytes_in = sum(c * float(out[f"{s}_traffic_bytes"]) for s, c in counts.items())
        bytes_out = sum(c * float(out[f"{s}_io_out_bytes"]) for s, c in counts.items())
        assert (bytes_out > 0.2 * bytes_in) if sends else bytes_out == 0.0
        # a MoE layer's gradients: 128 experts × 3 × 2,048 × 768 + the router's 2,048 × 128 = 604,241,920, 2 B each
        assert float(out["moe_io_out_bytes"]) == (604_241_920 * 2.0 if sends else 0.0)
        per_token = (bytes_in + bytes_out) * h.energy_offchip_j_per_byte / float(out["tokens_per_microbatch"])
        assert float(out["energy_network_per_token_j"]) == pytest.approx(per_token, rel=1e-9)


def test_static_energy_is_static_power_times_nodes_times_time_per_token():
    out = point()
    h = presets.load_hardware("nvl72")
    expected = h.static_power_w * h.nodes * float(out["step_time_s"]) / float(out["tokens_per_microbatch"])
    assert float(out["energy_static_per_token_j"]) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("hw, wl", [("nvl72", {}), ("dgx-b200-x32", {}), ("wsc-b200-4x8x8", {}),
                                    ("cs3", {"mode": "train", "B": 1, "seq_len": 2048}),
                                    ("cs3", {"mode": "prefill", "B": 1}), ("nvl72", {"mode": "prefill", "B": 1})])
def test_split_adds_up_and_power_is_energy_times_rate_in_every_mode(hw, wl):
    out = point(hw, **wl)
    total = float(out["energy_per_token_j"])
    assert total > 0
    assert sum(float(out[c]) for c in SPLIT) == pytest.approx(total, rel=1e-12)
    assert float(out["avg_power_w"]) == pytest.approx(total * float(out["tokens_per_s"]), rel=1e-12)


def test_sram_serving_points_carry_energy():
    h = {"weight_source": "sram"}
    out = point("cs3", hw_changes=h, B=1, seq_len=2048)
    assert float(out["energy_per_token_j"]) > 0
    dies = presets.load_hardware("cs3").nodes * float(out["wafers"])
    static = presets.load_hardware("cs3").static_power_w * dies / float(out["tokens_per_s"])
    assert float(out["energy_static_per_token_j"]) == pytest.approx(static, rel=1e-12)


@pytest.mark.parametrize("drafts,accepted", [(3, 2.0), (3, 1.0), (1, 1.5)])
def test_speculative_decoding_pays_every_verified_token_per_token_kept(drafts, accepted):
    """A step verifies q = drafts + 1 tokens a sequence and keeps a: each kept token carries q/a tokens' FLOPs, SRAM
    reads, PE hops and wafer crossings (they were charged once: 2-4x too little compute at a = 2 and 1). Static
    energy stays power x time per kept token, at the rate the step gives."""
    h = {"weight_source": "sram"}
    one = point("cs3", hw_changes=h, B=16, seq_len=8192)
    spec = point("cs3", hw_changes=h, B=16, seq_len=8192, draft_tokens=drafts, accepted_tokens_per_step=accepted)
    for tier in ("compute", "sram", "fabric", "network"):
        col = f"energy_{tier}_per_token_j"
        assert float(spec[col]) == pytest.approx(float(one[col]) * (drafts + 1) / accepted, rel=1e-12), tier
    dies = presets.load_hardware("cs3").nodes * float(spec["wafers"])
    static = presets.load_hardware("cs3").static_power_w * dies / float(spec["tokens_per_s"])
    assert float(spec["energy_static_per_token_j"]) == pytest.approx(static, rel=1e-12)


def test_a_ring_s_bytes_travel_its_edges_hops():
    """MoEntwine's entwined rings (er) on an 8 x 8 mesh: each ring edge is 4 hops, so the TP all-reduce's bytes
    cost 4 byte-hops each where a block's neighbours cost 1. Hand-derived from the step's own counts (DeepSeek-V3,
    k 2, TP 4): dispatch + combine T·k·(2 + 2)·H·Lm·(1 − 4/64) over the mean dispatch path (a copy for an expert
    on a member of the token's own group stays on that die: the nearest holder, and under ER the member in the
    expert's FTD tile, is the host itself; the energy model's closed form had charged 1 − 1/64 remote), and
    2(tp − 1)·T·2H over L + (L − Lm) + Lm reductions over the rings' mean hops; it counted them as one hop (ER
    read 24% below block, by the tier's own definition 2x above)."""
    import wsemoe

    df = wsemoe.evaluate("sweeps/moentwine_mapping.yaml")
    from wsemoe.cost.node import params

    m, hw = presets.load_model("deepseek-v3"), presets.load_hardware("wsc-b200-8x8")
    e_hop, nodes = hw.energy_hop_j_per_byte, hw.rows * hw.cols
    H, L, Lm, k = m.hidden_size, m.num_hidden_layers, params.moe_layers(m), 2   # 61 layers, 58 of them MoE
    got = {}
    for strategy in ("block", "er"):
        row = df[(df["model"] == "deepseek-v3") & (df["model.num_experts_per_tok"] == k) & (df["mapping.tp"] == 4)
                 & (df["mapping.strategy"] == strategy) & (df["workload.B"] == 256)].iloc[0]
        T = float(row["tokens_per_microbatch"])
        routed = T * k * 4 * H * Lm * (1 - 4 / nodes) * float(row["dispatch_mean_hops"])
        ring = 2 * 3 * T * 2 * H * (L + (L - Lm) + Lm) * float(row["allreduce_mean_hops"])
        assert float(row["energy_fabric_per_token_j"]) == pytest.approx((routed + ring) * e_hop / T, rel=1e-9)
        got[strategy] = (float(row["allreduce_mean_hops"]), float(row["energy_fabric_per_token_j"]))
    assert got["block"][0] == 1 and got["er"][0] == 4 and got["er"][1] > got["block"][1]


def test_a_dense_model_served_from_sram_moves_no_dispatch_bytes():
    # No experts, no dispatch path (serving reports none): the fabric tier is zero, the split still adds up.
    out = point("cs3", model="llama-3.1-8b", hw_changes={"weight_source": "sram"}, B=1, seq_len=2048)
    assert float(out["energy_fabric_per_token_j"]) == 0.0 and float(out["energy_per_token_j"]) > 0
    assert sum(float(out[c]) for c in SPLIT) == pytest.approx(float(out["energy_per_token_j"]), rel=1e-12)


def test_hardware_without_energy_figures_reports_nan_not_a_guess():
    out = point(hw_changes={"energy_flop_j": None})
    assert all(np.isnan(out[c]) for c in energy.NAMES)


def test_top_down_at_full_load_is_rated_power_and_cost_is_hand_derived():
    h = NS(**{**presets.load_hardware("nvl72").model_dump(), "pue": 1.25, "power_price_usd_per_kwh": 0.1})
    w = Work(flops16=1e15, sram_bytes=0.0, memory_bytes=0.0, hop_bytes=0.0, offchip_bytes=0.0, seconds=2.0,
             tokens=1000.0, nodes=72, busy=3.0)
    cols = energy.priced(h, w, tokens_per_s=500.0)
    assert cols["topdown_power_w"] == pytest.approx(h.rated_power_w * 72)
    assert cols["energy_compute_per_token_j"] == pytest.approx(1e15 * h.energy_flop_j / 1000)
    e = cols["energy_per_token_j"]
    assert cols["cost_energy_per_mtok"] == pytest.approx(1e6 * e * 1.25 / 3.6e6 * 0.1)
    capital = h.capital_usd * 72 / (h.amortization_years * 365.25 * 86400) / 500.0 * 1e6
    assert cols["cost_capital_per_mtok"] == pytest.approx(capital)


@settings(max_examples=40, deadline=None)
@given(st.floats(0, 1e17), st.floats(0, 1e12), st.floats(0, 1e12), st.floats(0, 1e13), st.floats(0, 1e11),
       st.floats(1e-6, 10.0), st.floats(0.0, 5.0))
def test_priced_split_adds_up_and_never_falls_with_more_bytes(f, s, m, hop, off, sec, busy):
    h = presets.load_hardware("cs3")
    w = Work(f, s, m, hop, off, sec, 1.0, 84, busy)
    a = energy.priced(h, w, 1.0 / sec)
    assert sum(a[c] for c in SPLIT) == pytest.approx(a["energy_per_token_j"], rel=1e-12)
    b = energy.priced(h, w._replace(hop_bytes=2 * hop + 1.0, sram_bytes=s + 1.0), 1.0 / sec)
    assert b["energy_per_token_j"] >= a["energy_per_token_j"]


@pytest.fixture(scope="module")
def cfg():
    return {"name": "e", "hardware": "nvl72", "model": "qwen3-30b-a3b",
            "workload": {"mode": "decode", "seq_len": 4096, "B": 1}, "mapping": {"tp": 1},
            "axes": {"workload.B": [1, 16, 256], "mapping.tp": [1, 8]}}


def _status(cfg, name):
    return check_invariants([cfg], points=16, only=[name]).results[0]


def test_energy_invariants_hold(cfg):
    for name in ("energy_split_adds_up", "energy_free_movement_leaves_compute", "more_bytes_never_cost_less_energy"):
        r = _status(cfg, name)
        assert r.status == "pass" and r.outcome.checked > 0, r.message()


def test_energy_invariants_can_fail(cfg, monkeypatch):
    """Break what each law guards (a tier left out of the total; static energy kept with zero static power;
    bytes made free of energy by a negative price): each law then fails."""
    real = energy.priced

    def no_static(hw, w, rate):
        cols = real(hw, w, rate)
        cols["energy_per_token_j"] = cols["energy_per_token_j"] - cols["energy_static_per_token_j"]
        return cols
    monkeypatch.setattr(energy, "priced", no_static)
    assert _status(cfg, "energy_split_adds_up").status == "fail"

    def poisoned(hw, w, rate):   # a statistic that does not apply (NaN) let through to every tier
        return real(hw, w._replace(hop_bytes=w.hop_bytes * np.nan), rate)
    monkeypatch.setattr(energy, "priced", poisoned)
    assert _status(cfg, "energy_split_adds_up").status == "fail"
    monkeypatch.setattr(energy, "priced", real)

    def static_anyway(hw, w, rate):
        return real(NS(**{**vars(hw), "static_power_w": 400.0}), w, rate)
    monkeypatch.setattr(energy, "priced", static_anyway)
    assert _status(cfg, "energy_free_movement_leaves_compute").status == "fail"
    monkeypatch.setattr(energy, "priced", real)

    def cheaper_when_dearer(hw, w, rate):
        return real(hw, w._replace(memory_bytes=-w.memory_bytes * (hw.energy_memory_j_per_byte or 0.0) * 1e11), rate)
    monkeypatch.setattr(energy, "priced", cheaper_when_dearer)
    assert _status(cfg, "more_bytes_never_cost_less_energy").status == "fail"
    assert energy_laws.TOTAL == "energy_per_token_j"


def test_a_dense_model_served_from_sram_has_energy_and_no_dispatch():
    """A dense model has no MoE layer, so serving emits no dispatch path: its fabric tier is 0 (it raised before),
    and its one off-wafer transfer per token is the sampled token's activation, 4,096 × 2 B at 80 pJ per byte."""
    from wsemoe.cost import serving
    from wsemoe.validate import cerebras

    out = serving.evaluate(*cerebras.namespaces(cerebras.models()["llama-3.1-8b"], "launch", None, pipeline_wafers=1))
    assert float(out["energy_fabric_per_token_j"]) == 0.0
    assert float(out["energy_network_per_token_j"]) == pytest.approx(4096 * 2 * 8e-11)
    assert float(out["energy_per_token_j"]) > 0


@pytest.mark.parametrize("option,pj", [("sram_bound", 2.3016), ("simd", 1.0160)])
def test_the_energy_rule_divides_by_the_peak_the_model_runs(option, pj):
    """One rule (docs/energy.md): a node at its dense peak, as the model runs it, draws its rated power, so a FLOP
    costs (rated - static) / that peak. CS-3: 70% of 23 kW / 84 dies over 7.0 PFLOP/s (SRAM-bound, the default
    pe_mac_rate) = 2.30 pJ, over 15.84 PFLOP/s (simd) = 1.02 pJ. Before, the preset fixed 1.02 pJ while the model
    ran at 7.0 PFLOP/s: on a compute-busy CS-3 the bottom-up energy read 0.70 of the top-down view (CS-2: 1.00)."""
    import wsemoe
    from wsemoe.config import readings

    base = {"name": "e", "hardware": "cs3", "model": "qwen3-30b-a3b",
            "workload": {"mode": "train", "seq_len": 8192, "B": 64, "G": 4}}
    alone = readings.apply(wsemoe.load_config(base), {"pe_mac_rate": option})
    assert alone.hardware.energy_flop_j == pytest.approx(pj * 1e-12, rel=1e-4)
    both = wsemoe.load_config({**base, "axes": {"hardware": ["cs2", "cs3"]}})
    out = wsemoe.evaluate(readings.apply(both, {"pe_mac_rate": option}))
    for hw in ("cs2", "cs3"):   # compute-busy: the two views agree on both wafers
        assert float(out[out["hardware"].astype(str) == hw].iloc[0]["energy_view_ratio"]) == pytest.approx(1.0, abs=0.02)


def test_energy_counts_the_work_done_not_the_busiest_node_times_the_nodes():
    """Skewed routing makes one node busiest and the step longer, but no node executes more than its tokens: the
    compute and HBM tiers (FLOPs and reads of all nodes) are those of uniform routing; only static energy (the
    idle nodes waiting for the busiest) grows. Before, the busiest node's MoE work times the nodes was charged
    (compute +27% at this skew)."""
    import wsemoe

    base = {"name": "e", "hardware": "wsc-b200-4x8x8", "model": "deepseek-v3",
            "workload": {"mode": "decode", "seq_len": 4096, "tokens_per_device": 16}, "mapping": {"tp": 4, "strategy": "er"}}
    flat = wsemoe.evaluate(base).iloc[0]
    skew = wsemoe.evaluate({**base, "balance": {"distribution": "zipf", "skew_target": 2, "skew_devices": 256}}).iloc[0]
    assert skew["expert_imbalance"] > 1.5 and skew["step_time_s"] > flat["step_time_s"]
    for tier in ("compute", "hbm", "sram"):
        assert skew[f"energy_{tier}_per_token_j"] == pytest.approx(flat[f"energy_{tier}_per_token_j"], rel=1e-12), tier
    assert skew["energy_static_per_token_j"] > flat["energy_static_per_token_j"]


def test_an_in_switch_all_reduce_moves_each_message_once():
    """NVL72, TP 8 (9 groups), B 4 a group: the attention all-reduce's message is 4 × 7168 × 2 bytes. In the switch
    (NVLS) each of the 72 GPUs sends it up once and reads the sum once: 72 GPU-switch-GPU paths of M; a ring moves
    2·7/8·M from each GPU, 2(tp − 1) = 14 paths of M a group. Energy prices what the timing model moves."""
    import wsemoe

    cfg = {"name": "e", "hardware": "nvl72", "model": "deepseek-v3", "workload": {"mode": "decode", "seq_len": 1024, "B": 4},
           "mapping": {"tp": 8}, "axes": {"hardware.in_switch_reduction": [True, False]}}
    nvls, ring = wsemoe.evaluate(cfg).itertuples()
    msg = 4 * 7168 * 2
    assert nvls.allreduce_hop_bytes == pytest.approx(72 * msg, rel=1e-12)
    assert ring.allreduce_hop_bytes == pytest.approx(72 * 2 * 7 / 8 * msg, rel=1e-12)


def test_an_all_reduce_crossing_wafers_is_priced_off_chip():
    """Four 8 × 8 wafers, ER, TP 4: each entwined ring holds one die of every wafer, so its all-reduce crosses the
    wafer edges (its crossing bytes > 0); the network tier is every phase's crossing bytes over the layers,
    at energy_offchip_j_per_byte. Before, only dispatch crossings were priced (and as a share of bytes, not of
    byte-hops), so ER's all-reduce read 0 off-chip."""
    import wsemoe
    from wsemoe.cost.node import params

    hw, m = presets.load_hardware("wsc-b200-4x8x8"), presets.load_model("deepseek-v3")
    row = wsemoe.evaluate({"name": "e", "hardware": "wsc-b200-4x8x8", "model": "deepseek-v3",
                           "workload": {"mode": "decode", "seq_len": 4096, "tokens_per_device": 16},
                           "mapping": {"tp": 4, "strategy": "er"}}).iloc[0]
    assert row["allreduce_cross_bytes"] > 0
    L, Lm = m.num_hidden_layers, params.moe_layers(m)
    moe = sum(row[f"{p}_cross_bytes"] for p in ("allreduce", "dispatch", "combine", "reduce"))
    dense = row["allreduce_cross_bytes"] + row["ffn_allreduce_cross_bytes"]
    off = (Lm * moe + (L - Lm) * dense) * hw.energy_offchip_j_per_byte / row["tokens_per_microbatch"]
    assert row["energy_network_per_token_j"] == pytest.approx(off, rel=1e-12)
