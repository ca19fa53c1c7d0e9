"""An axis-end note fires for zip columns too: a comparison's tuned axis given as a zip column (NVL72's TP beside
a wafer's null) has the extent of the values given, so a baseline tuned to its largest TP is said to be capped."""

from __future__ import annotations

import pandas as pd

from wsemoe.analysis.uncertainty import readings as rd
from wsemoe.analysis.uncertainty import robustness
from wsemoe.config.loader import load_config

CFG = {"name": "z", "hardware": "nvl72", "model": "qwen3-30b-a3b", "workload": {"mode": "decode", "seq_len": 4096},
       "zip": [{"hardware": ["nvl72", "nvl72", "nvl72", "nvl72", "wsc-b200-8x8"], "mapping.tp": [1, 2, 4, 8, None]}],
       "axes": {"workload.B": [1, 4]},
       "compare": {"name": "nvl72", "baseline": {"hardware": "nvl72"}, "candidate": {"hardware": "wsc-b200-8x8"},
                   "metric": "tokens_per_s", "over": ["mapping.tp", "workload.B"]}}


def test_a_zip_column_with_nulls_has_the_extent_of_its_values():
    ext = rd._comparison(load_config(CFG))["extents"]
    assert ext["tp"] == {"axis": "mapping.tp", "max": 8, "count": 4}


def test_the_note_fires_when_the_baseline_sits_at_the_zip_column_end():
    meta = {"comparison": rd._comparison(load_config(CFG))}
    runs = pd.DataFrame({"run": [0, 1], "role": ["configured", "combination"], "label": ["as configured", "x=y"]})
    # the stored reach of the tied design nearest the interior: TP 8 of 8 as configured, 4 of 8 in the other run
    values = pd.DataFrame({"run": [0, 1], "quantity": ["baseline_reach_tp", "baseline_reach_tp"], "group": ["g", "g"],
                           "value": [1.0, 0.5]})
    result = rd.Readings(runs, values, meta)
    assert robustness.edges(result, "g") == ["baseline mapping.tp at its largest swept value (8) in 1 of 2 runs "
                                             "(as configured)"]


def test_the_note_names_every_run_at_the_end_not_one_for_all():
    """bta_topk's note read "in 2 of 24 runs (attn_kernel=flash, kept_activations=streamed, hold=width)": one
    combination named for two. Each is named (configured and alone runs first), up to three, then a count."""
    meta = {"comparison": rd._comparison(load_config(CFG))}
    labels = ["as configured", "a=1, b=1", "a=1, b=2", "a=2, b=1", "a=2, b=2"]
    runs = pd.DataFrame({"run": range(5), "role": ["configured", *["combination"] * 4], "label": labels})
    values = pd.DataFrame({"run": range(5), "quantity": "baseline_reach_tp", "group": "g",
                           "value": [0.5, 1, 1, 0.5, 1]})
    assert robustness.edges(rd.Readings(runs, values, meta), "g") == [
        "baseline mapping.tp at its largest swept value (8) in 3 of 5 runs (a=1, b=1; a=1, b=2; a=2, b=2)"]
    values["value"] = 1.0
    assert robustness.edges(rd.Readings(runs, values, meta), "g")[0].endswith(
        "in 5 of 5 runs (as configured; a=1, b=1; a=1, b=2 and 2 more)")


# The comparison itself (show, sweep, report) says so too, without a readings study: cerebras_serving's
# readings are too many for the sweep's automatic pass, and its NVL72 TP stopped at 8 without a word.

def _zip_cfg(tps: list[int]) -> dict:
    n = len(tps)
    return {**CFG, "zip": [{"hardware": ["nvl72"] * n + ["wsc-b200-8x8"],
                            "hardware.weight_source": ["resident"] * (n + 1), "mapping.tp": [*tps, None]}],
            "axes": {"workload.B": [1, 4]}, "compare": {**CFG["compare"], "metric": "tokens_per_s_per_user"}}


def test_a_column_zipped_with_the_compared_key_is_that_side_s_setting_not_a_group():
    from wsemoe.sweep.compare import group_keys

    group, over = group_keys(load_config(_zip_cfg([1, 2, 4, 8])))
    assert group == [] and over == ["mapping.tp", "workload.B"]


def test_show_notes_a_baseline_at_its_zip_column_end_unless_that_is_the_largest_legal_value(runner, tmp_path):
    from wsemoe.cli import app
    from wsemoe.sweep.run import run_sweep

    capped = run_sweep({**_zip_cfg([1, 2, 4, 8]), "name": "capped"}, out_root=tmp_path).path
    every = run_sweep({**_zip_cfg([1, 2, 3, 4, 6, 8, 9, 12, 18, 24, 36, 72]), "name": "every"}, out_root=tmp_path).path
    tuned = pd.read_csv(every / "comparison.csv")["baseline_tp"]
    assert tuned.notna().all()
    out = " ".join(runner.invoke(app, ["show", str(capped)], env={"COLUMNS": "300"}).output.split())
    cmp = pd.read_csv(capped / "comparison.csv")
    hits = int((cmp["baseline_tp"] == 8).sum())
    assert hits and f"note: baseline mapping.tp at its largest swept value (8) in {hits} of {len(cmp)} groups; the " \
        "tool accepts up to 72: the axis, not the system, may cap it" in out, out
    out = runner.invoke(app, ["show", str(every)], env={"COLUMNS": "300"}).output
    assert "mapping.tp at its largest" not in out, out  # TP 72 spans every GPU: nothing larger to try


def _legal_tp(hardware: str, upto: int) -> list[int]:
    """TP values the tool accepts on a preset, by its own check (config/checks.py), not a copy of its rule."""
    from wsemoe.errors import ConfigError

    ok = []
    for tp in range(1, upto + 1):
        try:
            load_config({**CFG, "hardware": hardware, "zip": [], "mapping": {"tp": tp}, "compare": None})
            ok.append(tp)
        except ConfigError:
            pass
    return ok


def test_the_serving_sweep_tunes_its_baseline_over_every_legal_tp_and_compares_every_group(tmp_path):
    from pathlib import Path

    from wsemoe.sweep.run import run_sweep

    path = Path(__file__).resolve().parents[1] / "sweeps" / "cerebras_serving.yaml"
    cfg = load_config(path)
    z = next(z for z in cfg.zip if "mapping.tp" in z)
    base = cfg.compare.baseline["hardware"]
    for overlap in ("none", "microbatch"):   # every legal TP, each with and without two micro-batches
        given = sorted(t for h, t, o in zip(z["hardware"], z["mapping.tp"], z["workload.comm_overlap"])
                       if h == base and o == overlap)
        assert given == _legal_tp("nvl72", 72), overlap
    table = pd.read_csv(run_sweep(path, out_root=tmp_path).path / "comparison.csv")
    assert len(table) == 9 and table["speedup_vs_nvl72"].notna().all() and table["baseline_tp"].notna().all()


def test_comparison_rows_follow_the_sweep_order_of_their_groups():
    """cerebras_serving's table listed qwen3-235b before qwen3-30b at 131,072 tokens: the order of each group's
    best point in the sweep; the groups now come in the sweep's order whichever best point comes first."""
    from types import SimpleNamespace as NS

    from wsemoe.sweep.compare import comparison_table

    df = pd.DataFrame({"model": ["a", "b", "a", "b", "a", "b"], "hardware": ["w", "w", "w", "w", "g", "g"],
                       "workload.B": [1, 1, 2, 2, 1, 1], "tokens_per_s": [1.0, 5.0, 3.0, 4.0, 1.0, 1.0],
                       "feasible": True, "infeasible_reason": None})
    axes = {"model": ["a", "b"], "hardware": ["w", "g"], "workload.B": [1, 2]}
    cfg = NS(compare=NS(name="g", metric="tokens_per_s", also=[], over=["workload.B"], baseline={"hardware": "g"},
                        candidate={"hardware": "w"}), axis_names=lambda: list(axes),
             factors=lambda: [{k: v} for k, v in axes.items()])
    table = comparison_table(df, cfg)
    assert table["model"].tolist() == ["a", "b"] and table["speedup_vs_g"].tolist() == [3.0, 5.0]
