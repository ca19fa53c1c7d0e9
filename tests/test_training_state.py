"""Training state in node memory (gradients and optimizer state beside resident weights): every expected value
derived by hand from the models' published shapes (tests/data/hf) and the ZeRO count of mixed-precision Adam
(2 bytes of bf16 gradient and 12 of fp32 master weight, momentum and variance per parameter)."""

from __future__ import annotations

import pytest

import wsemoe

REL = 1e-9
GRAD, ADAM = 2.0, 12.0

# Qwen3-30B-A3B (tests/data/hf/qwen3-30b-a3b.json): H 2048, 32 heads and 4 KV heads of 128, 48 layers, 128 experts
# of width 768, vocabulary 151,936, untied head.
_QWEN_LAYER = (2048 * 32 * 128 + 2 * 2048 * 4 * 128 + 32 * 128 * 2048   # q, k, v, o projections
               + 2 * 128 + 2 * 2048                                      # q and k norms, two layer norms
               + 2048 * 128)                                             # router
QWEN_SHARED = 48 * _QWEN_LAYER + 2 * 151936 * 2048 + 2048                # + embedding, head, final norm
QWEN_EXPERT = 3 * 2048 * 768                                             # gate, up, down of one expert, one layer


def _row(hardware="h100-sxm", model="qwen3-30b-a3b", **sets):
    return wsemoe.evaluate(wsemoe.point_config(hardware, model, [f"{k}={v}" for k, v in sets.items()])).iloc[0]


def test_the_published_parameter_count_is_what_the_state_counts():
    # 30,532,122,624 parameters: Qwen3-30B-A3B's model card ("30.5B"), rebuilt above from its config
    assert QWEN_SHARED + 48 * 128 * QWEN_EXPERT == 30_532_122_624


def test_a_dense_70b_on_one_tp8_server_holds_16_bytes_a_parameter_and_does_not_fit():
    # one TP group of all 8 GPUs: every parameter has one copy, so sharding splits nothing; each GPU holds an
    # eighth of every parameter but the norms, which every TP rank holds whole (80 · 2 · 8,192 + 8,192 = 1,318,912).
    # Llama-3.1-70B's config: 80 layers of H 8,192 (64 query and 8 KV heads of 128, FFN 28,672), vocabulary
    # 128,256, untied head
    layer = 2 * 8192 * 8192 + 2 * 8192 * 8 * 128 + 3 * 8192 * 28672 + 2 * 8192
    assert 80 * layer + 2 * 128256 * 8192 + 8192 == 70_553_706_496   # its model card's "70B"
    norms = 80 * 2 * 8192 + 8192
    per_gpu = (70_553_706_496 - norms) / 8 + norms
    assert per_gpu == 8_820_367_360
    row = _row(model="llama-3.1-70b", **{"mapping.tp": 8})
    assert row["mem_train_state_node_bytes"] == pytest.approx(per_gpu * (GRAD + ADAM), rel=1e-6)
    assert row["mem_weights_node_bytes"] == pytest.approx(per_gpu * 2, rel=1e-6)
    # 16 bytes a parameter: 70,553,706,496 · 16 / 8 = 141.1 GB a GPU against 0.9 · 85.52e9 = 76.97 GB usable (an
    # H100's 81,559 MiB): 1.833× before any activation
    assert not row["feasible"]
    assert row["g_mem_attn"] > 70_553_706_496 * 16 / 8 / (0.9 * 81_559 * 2**20) - 1 > 0.83
    served = _row(model="llama-3.1-70b", **{"mapping.tp": 8, "workload.mode": "decode"})
    assert served["mem_train_state_node_bytes"] == 0 and served["g_mem_attn"] < 0


def test_data_parallel_sharding_splits_the_replicated_weights_state_over_their_copies():
    # TP 1 on 8 GPUs: 8 copies of every attention-side weight; 16 experts a GPU, one copy each
    experts = 48 * 16 * QWEN_EXPERT
    sharded = _row(**{"mapping.tp": 1})
    assert sharded["mem_train_state_node_bytes"] == pytest.approx(
        GRAD * (QWEN_SHARED + experts) + ADAM * (QWEN_SHARED / 8 + experts), rel=REL)
    whole = _row(**{"mapping.tp": 1, "workload.optimizer_sharding": "none"})
    assert whole["mem_train_state_node_bytes"] - sharded["mem_train_state_node_bytes"] == pytest.approx(
        ADAM * QWEN_SHARED * 7 / 8, rel=REL)
    # the state adds to both stages' peaks, term for term
    for stage in ("attn", "moe"):
        assert whole[f"mem_{stage}_peak_node_bytes"] - sharded[f"mem_{stage}_peak_node_bytes"] == pytest.approx(
            ADAM * QWEN_SHARED * 7 / 8, rel=1e-9)


def test_an_expert_s_state_is_sharded_over_its_own_copies_not_the_mean_copies_per_expert():
    """128 experts on NVL72's 72 GPUs: the default placement puts expert e on GPU e mod 72, one copy each, and
    the fullest GPU holds 2. Its optimizer state is their whole state; it read 2·72/128 = 1.125 copies an expert
    (8.9% too little; DeepSeek-V3 at TP 8 fitted at 0.99× its memory where it needs 1.07×). Replicated weights:
    72/8 attention groups at TP 8 (attention, norms and router; the rest split over TP, as P_rep counts them). The
    router is whole on every rank (Megatron-Core replicates it over TP: stagecost.router_tokens), its state
    sharded over the 9 groups as the rest of P_rep is."""
    row = _row(hardware="nvl72", **{"mapping.tp": 8, "workload.seq_len": 4096})
    # a rank's replicated weights: 4 query heads and ⌈4/8⌉ = 1 KV head of the projections, the norms whole (q/k
    # and layer norms, the final one), its 1/8 of the embedding and head (P_rep, docs/cost-model.md), the whole
    # router; its experts: 2 of them in each of 48 layers
    rank_attn = 2048 * 4 * 128 + 2 * 2048 * 1 * 128 + 4 * 128 * 2048
    p_rep = 48 * (rank_attn + 2048 * 128 + 2 * 128 + 2 * 2048) + 2048 + 2 * 151936 * 2048 / 8
    p_ex = 48 * 2 * QWEN_EXPERT
    assert row["expert_slots_max"] == 2 and row["expert_optimizer_shares_max"] == 2
    assert row["mem_train_state_node_bytes"] == pytest.approx(GRAD * (p_rep + p_ex) + ADAM * (p_rep * 8 / 72 + p_ex),
                                                              rel=REL)
    # fewer experts than GPUs, not dividing them: Qwen1.5-MoE's 60 experts on 72 GPUs, GPU n holds expert n mod 60,
    # so experts 12-59 have one copy and the GPUs holding them keep their whole state (it read 72/60 copies)
    few = _row(hardware="nvl72", model="qwen1.5-moe-a2.7b", **{"mapping.tp": 8, "workload.seq_len": 4096})
    assert few["expert_optimizer_shares_max"] == 1


def test_the_optimizer_bytes_and_gradient_bytes_are_the_inputs_they_say():
    base = _row(**{"mapping.tp": 8})
    grads_only = _row(**{"mapping.tp": 8, "workload.optimizer_bytes_per_param": 0})
    fp32_grads = _row(**{"mapping.tp": 8, "workload.bytes_per_grad": 4})
    # TP 8 over 4 KV heads: every rank keeps one whole KV head, so the K and V projections are split 4 ways,
    # not 8 (docs/cost-model.md, What TP cannot split); nor the router, whole on every rank (Megatron-Core), nor the
    # norms (q/k and layer norms, the final one)
    kv_proj = 2 * 2048 * 4 * 128
    norms = 48 * (2 * 128 + 2 * 2048) + 2048
    per_node = ((QWEN_SHARED + 48 * 128 * QWEN_EXPERT) / 8 + 48 * kv_proj * (1 / 4 - 1 / 8) + 48 * 2048 * 128 * 7 / 8
                + norms * 7 / 8)
    assert grads_only["mem_train_state_node_bytes"] == pytest.approx(GRAD * per_node, rel=REL)
    assert fp32_grads["mem_train_state_node_bytes"] - base["mem_train_state_node_bytes"] == pytest.approx(
        2 * per_node, rel=REL)


def test_a_weight_streaming_wafer_keeps_no_training_state():
    # its gradients leave over the wafer I/O and the optimizer runs in the off-wafer weight store
    row = _row(hardware="cs2", model="qwen3-30b-a3b")
    assert row["mem_train_state_node_bytes"] == 0


def test_eval_adds_the_state_into_each_stage_peak():
    from wsemoe.analysis.explain.point import breakdown

    cfg = {"name": "t", "hardware": "h100-sxm", "model": "llama-3.1-70b", "mapping": {"tp": 8}}
    row, rows = breakdown(cfg, 0)
    text = {n: t for g, n, _, _, t in rows}
    for stage in ("attn", "moe"):
        line = text[f"mem_{stage}_peak_node_bytes"]
        assert "train state 123.5 GB" in line and line.endswith("✓"), line
    assert text["mem_train_state_node_bytes"].endswith("✓")


@pytest.mark.parametrize("sharding", ["data_parallel", "none"])
def test_eval_writes_the_state_out_from_the_parameters_and_their_copies(sharding):
    """The state itself is explained, not only summed into the peaks: gradients of every parameter held, and the
    optimizer's share of each over its copies, checked against the column."""
    from wsemoe.analysis.explain.point import breakdown

    cfg = {"name": "t", "hardware": "nvl72", "model": "qwen3-30b-a3b", "mapping": {"tp": 8},
           "workload": {"mode": "train", "seq_len": 4096, "optimizer_sharding": sharding}}
    _, rows = breakdown(cfg, 0)
    line = {n: t for g, n, _, _, t in rows if g.startswith("how memory")}["mem_train_state_node_bytes"]
    assert line.startswith("gradients 669,399,040 parameters × 2 B + optimizer 12 B") and line.endswith("✓"), line
    assert ("2 experts' worth" in line) == (sharding == "data_parallel"), line


def test_the_data_parallel_gradient_reduction_carries_every_replicated_weight():
    """TP 1 on 8 GPUs: 8 groups each hold every attention-side weight (attention, router, embedding and head;
    Qwen3 has no shared expert or dense layer), so each layer's reduction carries a 48th of their gradients, 2 B
    each; the routed experts (one copy each) reduce nothing. It carried the attention's alone before."""
    from wsemoe import load_hardware, load_model
    from wsemoe.cost.comm import comm_model
    from wsemoe.specs.mapping import MappingSpec
    from wsemoe.specs.workload import WorkloadSpec

    hw, m = load_hardware("h100-sxm"), load_model("qwen3-30b-a3b")
    wl = WorkloadSpec(mode="train", seq_len=4096, B=1, G=1)
    c = comm_model(hw, m, wl, MappingSpec(tp=1), None, None)
    assert c.scales(4096 * 8, 8, 1)["gradient"] == pytest.approx(QWEN_SHARED / 48 * GRAD, rel=REL)


def test_a_streaming_wafer_holds_its_attention_gradients_through_the_attention_stage():
    """CS-2 keeps a layer's attention weights across its G tiles (2 bytes each); each tile adds to every weight's
    gradient and one gradient per parameter leaves over the I/O, so the sum is held until the last tile's backward:
    Qwen3-30B-A3B's 2048·4096 + 2·2048·512 + 4096·2048 projections + 2·128 q/k norms + 2·2048 layer norms =
    18,878,720 parameters × 2 B / 84 dies = 449,493.3 B a die beside the weights, in the attention stage's peak only
    (the MoE stage's held attention weights are the next layer's, their gradient not begun). None in inference."""
    attn = 2048 * 4096 + 2 * 2048 * 512 + 4096 * 2048 + 2 * 128 + 2 * 2048
    assert attn == 18_878_720
    wl = {"workload.seq_len": 8192, "workload.attn_kernel": "per_head", "workload.B": 1, "workload.G": 50}
    train = _row("cs2", **wl, **{"workload.mode": "train"})
    grads = attn * GRAD / 84
    assert train["mem_attn_grads_node_bytes"] == pytest.approx(grads, rel=REL)
    assert train["mem_weights_node_bytes"] == pytest.approx(attn * 2.0 / 84, rel=REL)
    parts = ("weights", "train_state", "kept_act", "kv", "attn_transient", "bta_buffer", "prefetch", "attn_grads")
    assert train["mem_attn_peak_node_bytes"] == pytest.approx(sum(train[f"mem_{p}_node_bytes"] for p in parts), rel=REL)
    assert train["mem_moe_peak_node_bytes"] == pytest.approx(
        train["mem_weights_node_bytes"] + train["mem_moe_transient_node_bytes"] + train["mem_moe_deltas_node_bytes"],
        rel=REL)
    assert _row("cs2", **wl, **{"workload.mode": "prefill"})["mem_attn_grads_node_bytes"] == 0.0
