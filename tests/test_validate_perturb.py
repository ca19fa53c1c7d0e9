"""`wsemoe validate` can fail: every physical constant a swept family (bta, waferllm, cerebras, gpu, silicon
here; mapping, balance and scale in tests/test_validate_perturb_moentwine.py) reads from its presets, scaled by 2
and by ½ one at a time, makes that family fail, except the changes the record lists with the reason no row can see them; the
record (validate/perturb_record.RECORD) is what a fresh sweep finds, and validate's summary counts the errors it would
catch."""

from __future__ import annotations

import pytest

from wsemoe.validate import perturb
from wsemoe.validate.deviations import KNOWN, PINNED


@pytest.mark.parametrize("family", ["waferllm", "cerebras", "bta", "gpu", "silicon"])
def test_every_scaled_constant_fails_the_family_or_is_recorded_with_why(family):
    assert perturb.against_record(family) == []


def test_every_swept_family_has_a_record_and_every_record_names_a_swept_change():
    assert set(perturb.RECORD) == set(perturb.CONSTANTS)
    for family, record in perturb.RECORD.items():
        tried = {(perturb.key(p, c), f) for p, cs in perturb.CONSTANTS[family].items() for c in cs
                 for f in perturb.FACTORS}
        assert set(record["missed"]) <= tried, family


def test_scaling_a_constant_changes_the_preset_and_only_inside():
    from wsemoe.config import presets

    before = presets.load_hardware("cs3")
    with perturb.perturbed("cs3", "pe.clock_hz", 2.0):
        cs3 = presets.load_hardware("cs3")
        assert cs3.pe.clock_hz == 2 * before.pe.clock_hz
        assert cs3.link_bw_bytes_per_s == pytest.approx(2 * before.link_bw_bytes_per_s)  # derived figures follow
        assert cs3.node_peak_flops == pytest.approx(before.node_peak_flops)   # bound by the SRAM: clock-free
        assert presets.raw("hardware", "cs3")["pe"]["clock_hz"] == 2 * before.pe.clock_hz  # sweeps read it too
        assert presets.load_hardware("cs2").pe.clock_hz == 1.1e9
    assert presets.load_hardware("cs3").pe.clock_hz == before.pe.clock_hz
    raw = presets.raw("hardware", "cs3")
    assert perturb.scaled(raw, "pe.fmac_width", 0.5)["pe"]["fmac_width"] == 4
    assert perturb.scaled(raw, "pe.hop_cycles", 0.5)["pe"]["hop_cycles"] == 0.5   # a float field, YAML '1'
    assert raw["pe"]["fmac_width"] == 8   # the original is untouched


def test_a_part_that_never_reads_a_preset_is_not_rerun():
    seen: set = set()
    with perturb.watching(seen):
        from wsemoe.config import presets

        presets.load_hardware("nvl72")
        presets.load_model("deepseek-v3")
    assert seen == {"nvl72"}


def test_the_summary_counts_the_errors_caught():
    line = perturb.line(["bta", "mapping", "balance", "scale", "waferllm", "cerebras", "gpu", "silicon", "params"])
    # scale 21 → 20 of 36 (December 2026): with every die of a slicing TP group holding the whole shared expert, the
    # wafer's kernel_launch_s ×½ moves DeepSeek-V3's headline mean by 24% of its pinned gap, under DRIFT
    # December 2026, the busiest node a step's expected maximum: mapping 4 of 5 → 4 of 6 (half the port moves ER's
    # top-k row, inside its band), balance 3 → 4 of 8 (slower hops take stop-the-world under its band), gpu 18 → 17
    # of 34 (twice the FP8 peak leaves the FP8 worker at 1.49×, inside 1.5×); silicon 25 → 26 of 56 with B200's
    # memory as nvidia-smi reports it (half its FP8 peak takes Llama-3.1-70B's TTFT MAPE past 40%); 26 → 27 with the
    # NVFP4 DeepSeek runs' BF16 attention projections (half B200's NVLink port takes DeepSeek-R1's TTFT MAPE past 40%)
    # After the merged model's refit (December 2026): mapping 4 of 6 → 4 of 5 (the busiest links, a step's
    # expected maximum, bind before half the port again), silicon 27 → 21 of 56 (the h200 Llama-3.1-8B group came
    # inside its band, and with it went the pin that caught five H200 changes; B200's FP8 peak at half no longer
    # takes Llama-3.1-70B past 40%)
    # silicon 21 → 23 of 56 when duplicate configurations were keyed by the layout they spell: the h200 DeepSeek-R1
    # TTFT pin came nearer its band (42.8% → 42.1%), and H200's 16-bit peak ×2 and NVLink port ×2 move it past DRIFT
    # bta 8 → 6 of 15 when bta.edges came to ask whether any design tied with the best lies inside both axes: twice
    # the SRAM (PEs or SRAM a PE) leaves a tied design inside (0.96), where the tie-break's pick sat at an end
    # cerebras 25 → 20 of 27 when the post-launch rows charged the 1B draft's time: 405B came inside its band (1.18×)
    # and its pin, which caught SIMD width ×2 and ×½, relays ×½ and the system hop ×2 and ×½, went with it
    # gpu 15 of 34 → 19 of 40 with the single-kernel rows (issue 26): the 2 GiB NVLink all-reduce on 8 H100s
    # (gpu.allreduce) catches H100's port both ways, the KV-cache read against FlashMLA's 3,000 GB/s (gpu.hbm) its
    # HBM bandwidth both ways; H100's hop and all-reduce call now move those rows (by under 0.1%): 79 → 73 move none
    # gpu 19 → 27 of 40, together 97 → 105 of 166, with the per-call and format rows (issue 26): the latency-bound
    # all-reduce on 2 H100s against the nccl-tests time its call was taken from (gpu.allreduce.fixed) catches H100's
    # hop latency and all-reduce call both ways, cuBLAS' FP4-over-FP8 speed-up on Blackwell (gpu.gemm) NVL72's FP8
    # and FP4 peaks both ways
    # silicon 23 of 56 → 23 of 57, 73 → 72 move none, together 105 of 166 → 167, when the published GB200 worker's
    # cache became 16-bit (the KV-cache format rule): twice GB200's HBM bandwidth moves it (0.95× → 0.97×)
    for part in ("of those that move a row", "bta 6 of 15", "mapping 4 of 5", "balance 4 of 8", "scale 20 of 36",
                 "waferllm 12 of 12", "cerebras 20 of 27", "gpu 27 of 40", "silicon 23 of 57",
                 "72 more change no row's value", "Together they fail on 105 of the 167 distinct changes",
                 "(context)"):
        assert part in line, line
    assert "params" not in line   # reads no hardware constant: not swept


def test_every_known_deviation_is_pinned():
    assert set(PINNED) == set(KNOWN)


def test_a_pinned_deviation_fails_when_it_drifts_either_way_or_crosses():
    # Band 0.7 … 1.3 (a ratio): 1.68 is 0.38 above; 1.75 (0.45) is within a quarter more (0.475), 1.90 (0.60) is not;
    # 1.60 (0.30) is within a quarter less (0.285), 1.55 (0.25) is not: the model moved towards the figure, re-pin;
    # 0.50 has crossed to the other side; 1.00 reproduces (a stale record, as before).
    from wsemoe.validate.common import row
    from wsemoe.validate.deviations import classify, drifted, gap
    from wsemoe.validate.tolerances import Band

    b = Band(0.70, 1.30)
    assert gap(b, 1.68) == pytest.approx(0.38) and gap(b, 0.5) == pytest.approx(-0.2) and gap(b, 1.0) == 0.0
    assert gap(Band(2.0, 4.0, log=True), 8.0) == pytest.approx(0.6931, abs=1e-4)
    assert drifted(0.38, 0.45) is None and drifted(0.38, 0.30) is None and drifted(0.38, 0.48) is not None
    assert "grew" in drifted(0.38, 0.60) and "crossed" in drifted(0.38, -0.2) and "shrank" in drifted(0.38, 0.25)

    def status(value):
        r = row("x", "claim", "1", value, band=b)
        return classify([r], known={"x": "why"}, pinned={"x": 0.38})[0]["status"]

    assert [status(v) for v in (1.68, 1.75, 1.90, 1.60, 1.55, 0.50, 1.00)] == \
        ["no", "no", "FAILS", "no", "FAILS", "FAILS", "FAILS"]


def test_a_change_several_families_read_counts_once_and_is_caught_if_any_family_catches_it(monkeypatch):
    # Two families read preset "p" (constants a and b) and one reads "q" (c): 2 × 2 + 2 = 6 keys tried, 8 per family.
    # Family x misses (p:a, 2) and treats (p:b, ½) as inert; y catches (p:a, 2) but misses (p:b, ½) with a moving
    # reason, and misses (q:c, 2) inert. Together: 6 distinct changes, (q:c, 2) moves nothing anywhere -> 5 move a
    # row; (p:b, ½) is missed by both -> 4 caught.
    monkeypatch.setattr(perturb, "CONSTANTS", {"x": {"p": ("a", "b")}, "y": {"p": ("a", "b"), "q": ("c",)}})
    monkeypatch.setattr(perturb, "RECORD", {
        "x": {"missed": {("p:a", 2.0): "moves a row inside its band", ("p:b", 0.5): "not read: x"}, "cannot_fail": []},
        "y": {"missed": {("p:b", 0.5): "moves a row inside its band", ("q:c", 2.0): "no row's value changes"},
              "cannot_fail": []}})
    assert perturb.overall(["x", "y"]) == (4, 5)
    assert perturb.overall(["x"]) == perturb.caught("x")[:2] == (2, 3)
    assert "Together they fail on 4 of the 5 distinct changes" in perturb.line(["x", "y"])
    assert "Together" not in perturb.line(["x"])
