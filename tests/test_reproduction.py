"""Published figures reproduced within bands written before the model ran (the rows `wsemoe validate` prints).

Every check can fail: a value outside its band makes it `FAILS` unless the row is a known deviation
(validate/deviations.py), and the known deviations are exactly the `no` rows, so a row that starts or stops
reproducing fails these tests (and `wsemoe validate` exits 1) until the record is updated.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest

from wsemoe import validate
from wsemoe.validate import common, deviations, tolerances
from wsemoe.validate.common import unexplained


@pytest.fixture(scope="module")
def rows():
    return validate.run_all()


def test_no_unexpected_failure(rows):
    assert not unexplained(rows), [(r["id"], r["reason"]) for r in unexplained(rows)]
    assert not deviations.stale(rows)


def test_known_deviations_are_exactly_the_no_rows(rows):
    assert {r["id"] for r in rows if r["status"] == "no"} == set(deviations.KNOWN)
    assert all(r["reason"] and r["distance"] for r in rows if r["status"] == "no")


def test_ids_are_unique_and_every_band_is_used(rows):
    ids = [r["id"] for r in rows]
    assert len(ids) == len(set(ids))
    used = {i.split(":")[0] for i in ids}
    assert set(tolerances.BANDS) <= used, set(tolerances.BANDS) - used


@pytest.mark.parametrize("kind", ["check", "headline", "property", "fitted"])
def test_every_row_can_fail(rows, kind):
    """A row that cannot fail is a defect: each band has a finite end, and the same row with its value moved just
    outside fails (`FAILS`, or `no` where a known deviation allows it)."""
    picked = [r for r in rows if r["kind"] == kind]
    assert picked
    for r in picked:
        b = r["band"]
        assert b.lo is not None or b.hi is not None, r["id"]
        for v in b.outside_value():
            moved = common.row(r["id"], r["claim"], r["published"], v, band=b, kind="check" if kind == "headline"
                               else kind)
            assert not moved["ok"], (r["id"], v)
            (out,) = deviations.classify([moved], known={})
            assert out["status"] == "FAILS", r["id"]


def test_statuses_follow_kind_band_and_record():
    b = tolerances.Band(1.0, 2.0)
    yes, no = common.row("x", "c", "p", 1.5, band=b), common.row("x", "c", "p", 3.0, band=b)
    assert deviations.classify([dict(yes)], known={})[0]["status"] == "yes"
    assert deviations.classify([dict(no)], known={"x": "why"})[0]["status"] == "no"
    assert deviations.classify([dict(no)], known={})[0]["status"] == "FAILS"          # a new deviation
    assert deviations.classify([dict(yes)], known={"x": "why"})[0]["status"] == "FAILS"  # a stale record
    prop = common.row("x", "c", "p", 3.0, band=b, kind="property")
    assert deviations.classify([prop], known={"x": "why"})[0]["status"] == "FAILS"   # properties are never excused
    assert deviations.classify([common.row("x", "c", "p", np.nan, band=b)], known={})[0]["status"] == "FAILS"


def test_headlines_show_default_range_and_whether_the_published_value_lies_inside(rows):
    heads = {r["id"]: r for r in rows if r["kind"] == "headline"}
    assert {"bta.speedup", "scale.nvl72.avg:deepseek-v3", "scale.nvl72.avg:qwen3-235b-a22b"} <= set(heads)
    for r in heads.values():
        assert r["default"] and "combinations of" in r["range"] and r["low"] <= r["high"]
    bta = heads["bta.speedup"]
    assert bta["inside"] == (bta["low"] <= 5.0 <= bta["high"])
    assert "attn_kernel" in bta["range"] and "hold" in bta["range"]
    ids = {r["id"] for r in rows}
    for model in ("deepseek-v3", "qwen3-235b-a22b"):
        r = heads[f"scale.nvl72.avg:{model}"]
        assert "fixed_latency" in r["range"] and "d2d_bandwidth" in r["range"]
        assert "mean at 1–32" in r["model"] and "256:" in r["model"]  # the mean, and the ratio at every load
        assert "fixed_latency=as_gpu" in r["reading"]          # one fixed latency on both systems
        assert f"scale.nvl72.launch_only:{model}" in ids       # MoEntwine's own reading: context only


def test_moentwine_rows_state_their_reading(rows):
    """MoEntwine's trends (one system against itself) are read without per-call software latency (its
    simulator), which differs from the registry default, and every such row says so; the comparison with NVL72
    is made at the default readings (one fixed latency on both systems), MoEntwine's reading only as context."""
    versus = ("scale.nvl72", "scale.dgx", "scale.assume")
    for r in rows:
        if r["id"].split(".")[0] not in ("mapping", "balance", "scale"):
            continue
        if r["id"].startswith(versus) and not r["id"].startswith("scale.nvl72.launch_only"):
            assert "fixed_latency=as_gpu" in r["reading"], r["id"]
        else:
            assert "fixed_latency=launch_only (default as_gpu)" in r["reading"], r["id"]
        if r["id"].startswith("bta."):
            assert "attn_kernel=per_head" in r["reading"] and "default" not in r["reading"], r["id"]


def test_the_edges_property_fails_on_the_old_axis():
    """The property that no best design sits at an axis end can fail: with B capped at 16 (the old sweeps)
    uniform batching's best B is 16 under one head's scores at a time."""
    from wsemoe.validate import bta

    cfg = common.sweep_config("bta_topk")
    capped = cfg.model_copy(update={"axes": {**cfg.axes, "workload.B": list(range(1, 17))}})
    points = bta.bta_points("bta_topk", capped)
    table = bta.bta_comparison("bta_topk", points=points)
    assert int(table["baseline_B"].max()) == 16
    assert not bta.edges({"bta_topk": points}, "")["ok"]
    assert bta.edges({"bta_topk": bta.bta_points("bta_topk")}, "")["ok"]


@pytest.mark.parametrize("name", ["bta_experts", "bta_topk"])
def test_shipped_sparsity_sweeps_in_tokens_per_s(name):
    """At BTA's reading: the baseline falls monotonically, BTA stays within 1.2× (max/min)."""
    t = validate.bta_comparison(name)
    uniform, bta = t["baseline_tokens_per_s"].to_numpy(), t["best_tokens_per_s"].to_numpy()
    assert np.all(np.diff(uniform) < 0)
    assert bta.max() / bta.min() <= 1.2


def test_sources_page_agrees_with_validate(rows):
    """docs/sources.md carries validate's rows between its markers, docs/reproductions.md its summary, headlines and known
    deviations, as `make docs` (tools/update_docs.py) writes them."""
    from pathlib import Path

    from wsemoe.validate import record

    root = Path(__file__).resolve().parents[1]
    for name in ("docs/sources.md", "docs/reproductions.md"):
        page = (root / name).read_text()
        assert record.replace(page, rows) == page, f"regenerate it: make docs ({name})"


def test_record_rewrites_only_the_blocks(rows):
    from wsemoe.validate import record

    page = f"# kept\n{record.START}\nSTALE-BLOCK\n{record.END}\ntail\n"
    text = record.replace(page, rows)
    assert text.startswith("# kept\n") and text.endswith("tail\n") and "STALE-BLOCK" not in text
    assert record.markdown(rows) in text


def _cli(runner, monkeypatch, rows):
    from wsemoe.cli import app

    monkeypatch.setattr(validate, "run_all", lambda *a, **k: rows)
    return runner.invoke(app, ["validate"])


def test_validate_command(runner, monkeypatch, rows):
    r = _cli(runner, monkeypatch, rows)
    assert r.exit_code == 0, r.output
    assert "known deviations (" in r.output and "claims:" in r.output.splitlines()[0]


def test_a_new_deviation_makes_validate_exit_nonzero(runner, monkeypatch, rows):
    moved = copy.deepcopy(rows)
    r = next(r for r in moved if r["status"] == "yes")
    r.update(common.row(r["id"], r["claim"], r["published"], r["band"].outside_value()[0], band=r["band"]))
    deviations.classify(moved)
    out = _cli(runner, monkeypatch, moved)
    assert out.exit_code == 1 and r["id"] in out.output and "FAILS" in out.output


def test_a_failed_property_makes_validate_exit_nonzero(runner, monkeypatch, rows):
    moved = copy.deepcopy(rows)
    r = next(r for r in moved if r["status"] == "property")
    r.update(common.row(r["id"], r["claim"], r["published"], r["band"].outside_value()[-1], band=r["band"],
                        kind="property"))
    deviations.classify(moved)
    out = _cli(runner, monkeypatch, moved)
    assert out.exit_code == 1 and "unexpected failures (1)" in out.output


def test_moentwine_operating_points_are_the_memory_bound_decode_loads():
    """By hand: a B200-class die does 2.25e15 FLOP/s from 8e12 B/s of HBM, a ridge of 281.25 FLOP per byte; at EP
    256 one DeepSeek-V3 expert per die gets 8τ tokens (top-8), n FLOP per 16-bit weight byte at n tokens, so the
    expert reads longer than it computes at 8 · 32 = 256 < 281.25 and not at 8 · 64 = 512."""
    from wsemoe.config import presets
    from wsemoe.validate import versus

    hw = presets.load_hardware(versus.WSC)
    assert hw.node_peak_flops / hw.node_memory_bw_bytes_per_s == pytest.approx(281.25)
    assert versus.memory_bound_loads() == [1, 2, 4, 8, 16, 32] == list(versus.OPERATING)
    r = __import__("pandas").Series([2.0, 1.5, 1.0, 1.0, 0.5, 0.5, 9.0], index=[1, 2, 4, 8, 16, 32, 64])
    assert versus.mean_at_operating(r) == pytest.approx(6.5 / 6 - 1)      # 64 is outside the points
    assert np.isnan(versus.mean_at_operating(r.drop(32)))                 # a point that cannot run: no mean


def test_rows_built_for_their_statuses_alone_have_the_full_run_statuses(rows):
    """validate/perturb.py sweeps the families with `only_claims` (no ranges over readings, no context rows): every
    claim keeps its value and status, so what the sweep catches is what `validate` would."""
    with common.only_claims():
        fast = [r for r in validate.run_all(only=["bta", "mapping", "balance", "scale"]) if r["kind"] != "info"]
    full = {r["id"]: r for r in rows if r["kind"] != "info"}
    assert {r["id"] for r in fast} == {i for i, r in full.items() if r["family"] in ("bta", "mapping", "balance",
                                                                                      "scale")}
    for r in fast:
        assert (r["status"], r["value"]) == (full[r["id"]]["status"], pytest.approx(full[r["id"]]["value"])), r["id"]


def test_csv_carries_the_numbers_each_status_is_judged_on(runner, monkeypatch, rows):
    """`validate --format csv` gives scripts the checked value, the band's ends and the signed gap beside the shown
    text: a yes row lies inside its band (gap 0), a known deviation outside it at the gap its pin holds."""
    import io

    import pandas as pd

    from wsemoe.cli import app

    monkeypatch.setattr(validate, "run_all", lambda *a, **k: rows)
    got = pd.read_csv(io.StringIO(runner.invoke(app, ["validate", "--format", "csv"]).stdout)).set_index("id")
    yes = got[(got["status"] == "yes") & got["value"].notna()]
    assert len(yes) > 100 and (yes["gap"] == 0).all()
    assert ((yes["band_lo"].isna() | (yes["band_lo"] <= yes["value"]))
            & (yes["band_hi"].isna() | (yes["value"] <= yes["band_hi"]))).all()
    for rid, pinned in deviations.PINNED.items():
        assert got.loc[rid, "status"] == "no" and abs(got.loc[rid, "gap"] / pinned - 1) <= deviations.DRIFT, rid
