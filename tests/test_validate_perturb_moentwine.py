"""`wsemoe validate` can fail, MoEntwine's families (mapping, balance, scale): each physical constant of the
wafer presets and of NVL72, scaled by 2 and by ½, fails the family or is recorded with why no row sees it (a file
of its own so that parallel test runs share the sweeps out)."""

from __future__ import annotations

import pytest

from wsemoe.validate import perturb


@pytest.mark.parametrize("family", ["mapping", "balance", "scale"])
def test_every_scaled_constant_fails_the_family_or_is_recorded_with_why(family):
    assert perturb.against_record(family) == []
