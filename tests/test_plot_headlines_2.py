"""Figure titles that state a finding, continued (tests/test_plot_headlines.py holds the first): the Pareto
front's best and the least of the other objective within 1% of it, compare's ratio range, the energy frontier's
fastest and most frugal systems, the energy split's largest tier, the mapping that communicates least, and the
balance figures' busiest die and gain over no balancing, the serving heat map's longest dispatch path under each
placement, and the wafer-against-GPU bars' wins and span."""

from __future__ import annotations

import pandas as pd

NB = "\u00a0"   # the no-break space that keeps 'E = 32' on one line when a title wraps


def _flat(text: str) -> str:
    return " ".join(text.replace(NB, " ").split())

from wsemoe.report.figures import compareplot, fig_pareto


def test_the_pareto_title_states_the_best_and_the_least_memory_within_one_percent_of_it():
    """Front E = 32: 74.7k tokens/s at 0.40 GB, 74.65k at 0.034 GB (within 1%: 74.65 / 74.7 = 0.9993), 35k at
    0.011; front E = 128: 74.6k at 0.40, 74.0k at 0.101 (0.9906, within), 70k at 0.09 (0.937, not): the top is
    E = 32's 74.7k; within 1% of it the least memory is 0.034 GB (E = 32), E = 128's 0.101 GB. With E = 128 topping
    out at 60k (none of it within 1%), the title names that top instead."""
    front = pd.DataFrame({"model.num_experts": [32, 32, 32, 128, 128, 128],
                          "tokens_per_s": [74.7e3, 74.65e3, 35e3, 74.6e3, 74.0e3, 70e3],
                          "mem_peak_node_bytes": [0.40e9, 0.034e9, 0.011e9, 0.40e9, 0.101e9, 0.09e9]})
    senses = {"tokens_per_s": "max", "mem_peak_node_bytes": "min"}
    assert f"E{NB}={NB}128's" in fig_pareto._headline(front, ["model.num_experts"], "tokens_per_s",
                                                        "mem_peak_node_bytes", senses)
    assert _flat(fig_pareto._headline(front, ["model.num_experts"], "tokens_per_s", "mem_peak_node_bytes", senses)) == (
        "throughput tops out at 74.7 k tokens/s (E = 32); within 1% of it, peak memory per node at best 0.034 GB, "
        "E = 128's 0.101 GB")
    far = front.assign(tokens_per_s=[74.7e3, 74.65e3, 35e3, 60e3, 50e3, 40e3])   # E = 128 tops out at 60k
    assert _flat(fig_pareto._headline(far, ["model.num_experts"], "tokens_per_s", "mem_peak_node_bytes", senses)) == (
        "throughput tops out at 74.7 k tokens/s (E = 32); within 1% of it, peak memory per node at best 0.034 GB; "
        "the next front's top: 60 k tokens/s (E = 128)")
    one = front[front["model.num_experts"] == 128].drop(columns="model.num_experts")
    assert fig_pareto._headline(one, [], "tokens_per_s", "mem_peak_node_bytes", senses) == (
        "throughput tops out at 74.6 k tokens/s; within 1% of it, peak memory per node at best 0.101 GB")
    assert fig_pareto._headline(front.iloc[:0], [], "tokens_per_s", "mem_peak_node_bytes", senses) == (
        "no feasible point: no front")


def test_the_compare_title_states_the_span_of_the_ratios_and_where_the_later_run_is_better():
    """b's best 1.2 and 0.9 against a's 1.0 and 1.0: 0.90–1.20× a's, better in 1 of 2 groups; c's 1.1 and 1.15
    against 1.0 (c: 1.10–1.15×, better in both); minimized (a time), c is better in none."""
    table = pd.DataFrame({"k": [8, 1], "a:tokens_per_s": [1.0, 1.0], "b:tokens_per_s": [1.2, 0.9],
                          "c:tokens_per_s": [1.1, 1.15]})
    assert compareplot._headline(table, ["a", "b"], "tokens_per_s", "max") == (
        "b's best throughput is 0.90–1.20× a's, better in 1 of 2 groups")
    assert compareplot._headline(table, ["a", "b", "c"], "tokens_per_s", "max").endswith(
        "; c's best throughput is 1.10–1.15× a's, better in all 2 groups")
    assert compareplot._headline(table, ["a", "c"], "tokens_per_s", "min") == (
        "c's best throughput is 1.10–1.15× a's, better in none of the 2 groups")
    one = table.iloc[:1]   # one group: no count
    assert compareplot._headline(one, ["a", "b"], "tokens_per_s", "max") == "b's best throughput is 1.20× a's"


def test_the_energy_frontier_title_names_the_fastest_and_the_most_frugal_system_per_model():
    """Model a: w's front reaches 141 tokens/s per user from 0.125 J/token, g's 143 from 0.151: g fastest (143),
    w fewest J (0.125); model b: w 119 from 0.103, g 216 from 0.125: g again (216), w again (0.103). Swap b's
    winners and each model is named apart."""
    from wsemoe.report.figures import fig_energy

    def f(speeds, joules):
        return pd.DataFrame({fig_energy.PER_USER: speeds, fig_energy.ENERGY: joules})

    fronts = {("a", "w"): f([20, 141], [0.125, 2.6]), ("a", "g"): f([25, 143], [0.151, 4.5]),
              ("b", "w"): f([40, 119], [0.103, 2.8]), ("b", "g"): f([45, 216], [0.125, 2.7])}
    assert fig_energy._frontier_headline(fronts, ["a", "b"]) == (
        "fastest per user: g in both models (143, 216 tokens/s); fewest J/token: w in both models (0.125, 0.103 J)")
    fronts[("b", "w")] = f([40, 300], [0.2, 2.8])
    assert fig_energy._frontier_headline(fronts, ["a", "b"]) == (
        "fastest per user: g for a (143 tokens/s), w for b (300 tokens/s); fewest J/token: w for a (0.125 J), "
        "g for b (0.125 J)")
    one = {("a", "w"): fronts[("a", "w")]}
    assert fig_energy._frontier_headline(one, ["a"]) == (
        "w reaches 141 tokens/s per user, 0.125 J/token at its most frugal")


def test_the_energy_split_title_names_the_tier_largest_on_most_bars_and_its_span():
    """Static 44% and 77% of two bars (the largest there), HBM 50% of a third (static 30%): static power is the
    largest on 2 of 3 bars, 44–77%, HBM elsewhere."""
    from wsemoe.report.figures import fig_energy

    shares = {("a", "w"): {"compute": 0.40, "hbm": 0.16, "static": 0.44},
              ("a", "g"): {"compute": 0.15, "hbm": 0.08, "static": 0.77},
              ("b", "w"): {"compute": 0.20, "hbm": 0.50, "static": 0.30}}
    assert fig_energy._split_headline(shares) == (
        "static power is the largest share of a token's energy on 2 of 3 bars (44–77%); elsewhere HBM")
    del shares[("b", "w")]
    assert fig_energy._split_headline(shares) == (
        "static power is the largest share of a token's energy on all 2 bars (44–77%)")


def test_the_comm_title_names_the_mapping_least_at_most_tps_and_its_largest_cut():
    """Block 10, 20, 30 µs at TP 4, 8, 16; er 6.2, 21, 27: er least at TP 4 and 16 (2 of 3), its largest cut
    6.2 / 10 − 1 = −38% at TP 4; with er above block everywhere, block is least at all 3."""
    from wsemoe.report.figures import fig_comm

    df = pd.DataFrame({"mapping.tp": [4, 8, 16] * 2, "mapping.strategy": ["block"] * 3 + ["er"] * 3,
                       "_comm": [10, 20, 30, 6.2, 21, 27]})
    assert fig_comm._comm_headline(df, [4, 8, 16], ["block", "er"]) == (
        "er communicates least per layer at 2 of 3 TPs, at most \u221238% against block (TP 4)")
    worse = df.assign(_comm=[10, 20, 30, 11, 21, 31])
    assert fig_comm._comm_headline(worse, [4, 8, 16], ["block", "er"]) == (
        "block communicates least per layer at all 3 TPs")


def test_the_balance_titles_state_the_busiest_die_before_and_after_and_the_gain_at_the_most_skew():
    """none 256k at s = 0 and 163k at s = 0.6 (163 / 256 = 0.637: falls 36%); replicate 257k and 256k (256 / 163 =
    1.571: +57%), stop-the-world 246k at 0.6: replicate is the fastest there."""
    from wsemoe.report.figures import fig_balance

    df = pd.DataFrame({"balance.balancer": ["none", "none", "replicate", "replicate", "stop-the-world"],
                       "balance.zipf_s": [0.0, 0.6, 0.0, 0.6, 0.6],
                       "tokens_per_s": [256e3, 163e3, 257e3, 256e3, 246e3]})
    assert fig_balance._skew_headline(df, "tokens_per_s") == (
        "at s = 0.6 replicate is +57% over no balancing; none falls 36% from s = 0")
    assert fig_balance._skew_headline(df[df["balance.balancer"] == "none"], "tokens_per_s") == (
        "at s = 0.6 no balancer beats none; none falls 36% from s = 0")
    assert fig_balance._load_headline("replicate", 2.12, 1.01) == (
        "replicate takes the busiest die from 2.12× to 1.01× the mean load")
    assert fig_balance._load_headline("replicate", 1.05, 1.05) == (
        "replicate leaves the busiest die at 1.05× the mean load (unbalanced 1.05×)")


def test_the_link_heatmap_title_names_the_phase_with_the_busiest_link_and_its_ratio():
    """Dispatch's busiest link 4.2 MB against the all-reduce's 1.4: 4.2 / 1.4 = 3.0×, with 38% of links idle in
    the dispatch; an all-reduce that moves nothing is said so, not divided by."""
    from wsemoe.report.figures import fig_mesh

    assert fig_mesh._headline({"allreduce": 1.4, "dispatch": 4.2}, {"allreduce": 0.5, "dispatch": 0.38}, "MB") == (
        "the dispatch's busiest link carries 4.2 MB, 3.0× the all-reduce's; 38% of links idle in it")
    assert fig_mesh._headline({"allreduce": 0.0, "dispatch": 4.2}, {"allreduce": 1.0, "dispatch": 0.38}, "MB") == (
        "the dispatch's busiest link carries 4.2 MB, the all-reduce none; 38% of links idle in it")


def test_the_serving_heatmap_title_states_what_interleaving_does_to_the_path_and_the_busiest_link():
    """The heat map's title named its contents only ('one MoE layer of … on the PE fabric'). Longest path = tile
    hops × tile side: blocked 88 × 10 = 880 PE hops, interleaved 50 × 10 = 500: 500 / 880 − 1 = −43%; busiest
    link 74.0 and 74.2 wavelets/token (+0.3%, within ±0.5%: the same); interleaved attention's stretch ×2.5. With the
    interleaved path 90 × 10 = 900 (+2%) and its link 80 (80 / 74 − 1 = +8%) it does not shorten the path."""
    from types import SimpleNamespace

    import numpy as np

    from wsemoe.report.figures import fig_serving

    def maps(hops, links):
        return [{"traffic": SimpleNamespace(placement=SimpleNamespace(strategy=s, stretch=st), hops=h), "side": 10,
                 "values": np.array([1.0, link])}
                for s, st, h, link in zip(("blocked", "interleaved"), (1, 2.5), hops, links)]

    assert fig_serving._heatmap_headline(fig_serving._summary(maps((88, 50), (74.0, 74.2)))) == (
        "interleaving attention shortens the longest dispatch path 880 \u2192 500 PE hops (\u221243%); busiest PE link "
        "74 wavelets/token in both; attention's row collectives stretched \u00d72.5")
    assert fig_serving._heatmap_headline(fig_serving._summary(maps((88, 90), (74.0, 80.0)))) == (
        "interleaving attention does not shorten the longest dispatch path (880 \u2192 900 PE hops (+2%)); busiest PE "
        "link 74 \u2192 80 wavelets/token (+8%); attention's row collectives stretched \u00d72.5")
    assert fig_serving._heatmap_headline(fig_serving._summary(maps((88, 50), (74.0, 74.2))[:1])) == (
        "only blocked placement fits: longest dispatch path 880 PE hops, busiest PE link 74 wavelets/token")


def test_the_wafer_vs_gpu_title_counts_the_settings_the_wafer_wins_and_the_span_of_its_gain():
    """The bars' title named its contents only ('per-device MoE-layer throughput …, wafer vs gpu'). Each system at
    its best balancer: TP 1 wafer 100 × 1.5 = 150 against gpu 120 × 1.1 = 132 (150 / 132 − 1 = +14%); TP 4 wafer
    150 × 0.5 = 75 against 132 (−43%): ahead at 1 of 2 TPs."""
    from wsemoe.report.figures import fig_comm
    from wsemoe.report.figures.view import ResultsView

    rows = [{"hardware": hw, "mapping.tp": tp, "balance.balancer": bal, "feasible": True,
             "per_device_moe_tokens_per_s": base * f * (0.5 if hw == "wafer" and tp == 4 else 1.0)}
            for hw, base in (("wafer", 100.0), ("gpu", 120.0)) for tp in (1, 4)
            for bal, f in (("none", 1.0), ("non-invasive", 1.5 if hw == "wafer" else 1.1))]
    pts = pd.DataFrame(rows)
    view = ResultsView("v", {"axes": ["hardware", "mapping.tp", "balance.balancer"], "objectives": {}}, pts,
                       pts.iloc[:0], None, {"compare": {"baseline": {"hardware": "gpu"},
                                                        "candidate": {"hardware": "wafer"}}})
    title = _flat(fig_comm.wsc_vs_nvl72(view).axes[0].get_title())
    assert title == ("v: wafer beats gpu in MoE-layer throughput per device at 1 of 2 TPs: "
                     "\u221243% (TP 4) to +14% (TP 1)")
    hws, tp = ["wafer", "gpu"], ["mapping.tp"]
    assert _flat(fig_comm._versus_headline([("TP 1", 0.30), ("TP 8", 0.23)], hws, tp)).endswith(
        "at all 2 TPs: +23% (TP 8) to +30% (TP 1)")
    assert _flat(fig_comm._versus_headline([("TP 1", 0.004), ("TP 8", -0.1)], hws, tp)) == (
        "wafer does not beat gpu in MoE-layer throughput per device at any of 2 TPs: "
        "\u221210% (TP 8) to +0% (TP 1)")
