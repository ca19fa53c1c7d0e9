"""`wsemoe check --estimate` does the run's own work on a sample: the baseline pass whole, point ranges spread over
the grid so the sample meets the structures the run builds, chunks evaluated and reduced as the run does them,
parts encoded and hashed as written. No timing is asserted (a shared machine); what is counted is."""

from __future__ import annotations

import pytest

from wsemoe.cost import structure
from wsemoe.sweep import chunked, plan
from wsemoe.sweep.run import run_sweep

MESH = {"name": "est", "hardware": "wsc-b200-8x8", "model": "deepseek-v3",
        "workload": {"mode": "decode", "seq_len": 4096, "G": 1},
        "axes": {"mapping.strategy": ["block", "er"], "mapping.tp": [4, 8], "workload.B": {"range": [1, 6000]}},
        "objectives": {"per_device_moe_tokens_per_s": "max", "moe_comm_s": "min"},
        "compare": {"name": "block", "baseline": {"mapping.strategy": "block"}, "metric": "per_device_moe_tokens_per_s"}}


@pytest.mark.parametrize("n, m", [(100, 8192), (10_400, 8192), (50_000, 1000), (7, 3)])
def test_sample_ranges_spread_over_the_grid(n, m):
    ranges = plan.sample_ranges(n, m)
    sizes = [e - s for s, e in ranges]
    assert all(0 <= s < e <= n for s, e in ranges) and sum(sizes) <= max(m, 1) or ranges == [(0, n)]
    assert ranges == [(0, n)] if m >= n else (ranges[0][0] == 0 and ranges[-1][1] == n and len(set(sizes)) == 1)
    assert all(a[1] <= b[0] for a, b in zip(ranges, ranges[1:]))  # disjoint, in order


def test_estimate_meets_every_structure_the_run_builds_and_runs_the_baseline_pass(tmp_path, monkeypatch):
    calls = []
    real = chunked.baseline_best
    monkeypatch.setattr(chunked, "baseline_best", lambda cfg, *a: calls.append(cfg.name) or real(cfg, *a))
    structure.clear_cache()
    info = plan.check(MESH, estimate=True)
    built_by_estimate = structure.cache_info().misses
    assert info["points"] == 24_000 > info["sampled_points"] and calls == ["est"]
    structure.clear_cache()
    run_sweep(MESH, out_root=tmp_path)
    assert structure.cache_info().misses == built_by_estimate  # the sample built what the run builds
    parts = info["estimated_parts"]
    assert set(parts) == {"baseline", "structures", "points", "writing"} and all(v >= 0 for v in parts.values())
    assert info["estimated_seconds"] == pytest.approx(sum(parts.values()))
