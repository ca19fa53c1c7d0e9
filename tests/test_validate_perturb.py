"""`wsemoe validate` can fail: every physical constant the serving families (waferllm, cerebras) read from their
presets, scaled by 2 and by ½ one at a time, makes that family fail, except the changes the record lists with the
reason no row can see them; the record (validate/perturb.RECORD) is what a fresh sweep finds, and validate's
summary counts the errors it would catch."""

from __future__ import annotations

import pytest

from wsemoe.validate import perturb
from wsemoe.validate.deviations import KNOWN, PINNED


@pytest.mark.parametrize("family", sorted(perturb.CONSTANTS))
def test_every_scaled_constant_fails_the_family_or_is_recorded_with_why(family):
    found = perturb.sweep(family)
    record = perturb.RECORD[family]
    assert set(found["missed"]) == set(record["missed"]), found["failing"]
    assert set(found["cannot_fail"]) == set(record["cannot_fail"])
    assert all(why for why in record["missed"].values())


def test_scaling_a_constant_changes_the_preset_and_only_inside():
    from wsemoe.config import presets

    before = presets.load_hardware("cs3").pe.clock_hz
    with perturb.perturbed("cs3", "pe.clock_hz", 2.0):
        assert presets.load_hardware("cs3").pe.clock_hz == 2 * before
        assert presets.load_hardware("cs2").pe.clock_hz == presets.load_hardware("cs2").pe.clock_hz
    assert presets.load_hardware("cs3").pe.clock_hz == before
    assert perturb.scaled(presets.load_hardware("cs3"), "pe.fmac_width", 0.5).pe.fmac_width == 4


def test_the_summary_counts_the_errors_caught():
    line = perturb.line(["waferllm", "cerebras", "params"])
    assert "waferllm 10 of 12" in line and "cerebras 18 of 26" in line and "(context)" in line


def test_every_known_deviation_is_pinned():
    assert set(PINNED) == set(KNOWN)


def test_a_pinned_deviation_fails_when_it_drifts_or_crosses():
    # Band 0.7 … 1.3 (a ratio): 1.68 is 0.38 above; 1.75 (0.45) is within a quarter more (0.475), 1.90 (0.60) is not;
    # 0.50 has crossed to the other side; 1.00 reproduces (a stale record, as before).
    from wsemoe.validate.common import row
    from wsemoe.validate.deviations import classify, drifted, gap
    from wsemoe.validate.tolerances import Band

    b = Band(0.70, 1.30)
    assert gap(b, 1.68) == pytest.approx(0.38) and gap(b, 0.5) == pytest.approx(-0.2) and gap(b, 1.0) == 0.0
    assert gap(Band(2.0, 4.0, log=True), 8.0) == pytest.approx(0.6931, abs=1e-4)
    assert drifted(0.38, 0.45) is None and drifted(0.38, 0.30) is None and drifted(0.38, 0.48) is not None
    assert "grew" in drifted(0.38, 0.60) and "crossed" in drifted(0.38, -0.2)

    def status(value):
        r = row("x", "claim", "1", value, band=b)
        return classify([r], known={"x": "why"}, pinned={"x": 0.38})[0]["status"]

    assert [status(v) for v in (1.68, 1.75, 1.90, 0.50, 1.00)] == ["no", "no", "FAILS", "FAILS", "FAILS"]
