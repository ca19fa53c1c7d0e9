"""One tie rule for every axis-end note (`compare.nearest_interior`): where designs tie for the best, validate's
bta.edges and its headline note, robustness's notes (`wsemoe show`, `wsemoe readings`) and sensitivity's read the
tied design nearest the interior of the swept axes, not the tie-break's pick. Robustness read the stored best
(the tie-break's pick) and named G's end while an interior design ran the same step."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from wsemoe.analysis.uncertainty import readings as rd
from wsemoe.analysis.uncertainty import robustness
from wsemoe.analysis.uncertainty import sensitivity as sens
from wsemoe.analysis.uncertainty.sampled import Sampled
from wsemoe.config.loader import load_config
from wsemoe.validate import bta

CFG = {"name": "tie", "hardware": "cs2", "model": "qwen3-30b-a3b", "workload": {"mode": "train", "seq_len": 2048},
       "axes": {"workload.B": [1, 2, 4, 8], "workload.G": [1, 2, 4, 8]},
       "compare": {"name": "uniform", "baseline": {"workload.G": 1}, "metric": "tokens_per_s"},
       "objectives": {"tokens_per_s": "max"}}


def _frame(sampled):
    """Hand-set outputs on the sweep's 16 designs: B 1 G 8 (G's end) and B 2 G 4 (inside both axes) tie at
    100 tokens/s, the end design at less energy, so the tie-break (`best_rows`) picks it; every other design
    with G > 1 gives 50; uniform batching (G 1) peaks at B 4 (40 tokens/s), inside B's 1…8."""
    f = sampled.frame[["workload.B", "workload.G"]].copy()
    pairs = list(zip(f["workload.B"], f["workload.G"]))
    f["tokens_per_s"] = [100.0 if p in ((1, 8), (2, 4)) else 40.0 if p == (4, 1) else 30.0 if p[1] == 1 else 50.0
                         for p in pairs]
    f["energy_per_token_j"] = [1.0 if p == (1, 8) else 2.0 for p in pairs]
    f["feasible"] = True
    return f


def test_every_axis_end_note_reads_the_tied_design_nearest_the_interior():
    cfg = load_config(CFG)
    sampled = Sampled(cfg, [])
    frame = _frame(sampled)
    q = sampled._reduce(frame, np.ones((1, len(frame)), dtype=bool), 1)
    assert q["best_G"][0, 0] == 8 and q["best_B"][0, 0] == 1       # the tie-break's pick sits at G's end
    # the tied design nearest the interior is B 2 G 4: reach B 2/8, G 4/8; uniform B 4 of 8 (its G is fixed)
    assert q["best_reach_B"][0, 0] == pytest.approx(2 / 8) and q["best_reach_G"][0, 0] == pytest.approx(4 / 8)
    assert q["baseline_reach_B"][0, 0] == pytest.approx(4 / 8) and "baseline_reach_G" not in q

    # validate's bta.edges: max(2/8, 4/8) = 0.5 on the BTA side, 4/8 uniform; below 1, the row passes
    value, where = bta.edge_reach(cfg, frame)
    assert value == pytest.approx(0.5) and where == "uniform B 4 of 8"
    assert bta.edges({"tie": (cfg, frame)}, "r")["ok"]

    # robustness (show, readings) and validate's headline note, from the stored readings values
    runs = pd.DataFrame({"run": [0, 1], "role": ["configured", "combination"], "label": ["as configured", "x=y"]})
    values = pd.DataFrame([{"run": r, "quantity": k, "group": "all", "value": float(v[0, 0])}
                           for r in (0, 1) for k, v in q.items() if not k.startswith("sweep_")])
    result = rd.Readings(runs, values, {"comparison": rd._comparison(cfg), "combinations": 1})
    assert robustness.edges(result, "all") == []
    assert bta.at_edges(result) == ""

    # sensitivity's notes, from the same per-sample quantities
    assert sens.axis_ends(sampled, np.zeros((1, 0)), q) == []


def test_a_best_only_at_the_end_is_noted_by_every_caller():
    """Nothing ties B 1 G 8 (B 2 G 4 at 99): every caller names G's end."""
    cfg = load_config(CFG)
    sampled = Sampled(cfg, [])
    frame = _frame(sampled)
    frame.loc[(frame["workload.B"] == 2) & (frame["workload.G"] == 4), "tokens_per_s"] = 99.0
    q = sampled._reduce(frame, np.ones((1, len(frame)), dtype=bool), 1)
    assert q["best_reach_G"][0, 0] == 1.0
    value, where = bta.edge_reach(cfg, frame)
    assert value == 1.0 and where == "BTA B 1 of 8, G 8 of 8"
    runs = pd.DataFrame({"run": [0, 1], "role": ["configured", "combination"], "label": ["as configured", "x=y"]})
    values = pd.DataFrame([{"run": r, "quantity": k, "group": "all", "value": float(v[0, 0])}
                           for r in (0, 1) for k, v in q.items() if not k.startswith("sweep_")])
    result = rd.Readings(runs, values, {"comparison": rd._comparison(cfg), "combinations": 1})
    assert robustness.edges(result, "all") == ["candidate workload.G at its largest swept value (8) in 2 of 2 runs "
                                               "(as configured; x=y)"]
    assert bta.at_edges(result) == "; 1 of 1 combinations tune to an axis end (x=y: G 8)"
    assert sens.axis_ends(sampled, np.zeros((1, 0)), q)[0].startswith(
        "note: candidate workload.G at its largest swept value (8) in 1 of 1 samples (1 of 1 groups)")


def test_results_stored_before_the_reach_still_read_by_the_tie_break_s_pick_and_say_so():
    """A readings analysis written before `<side>_reach_<axis>` (its meta has no 'ends') is read as it was:
    the tuned value at the axis's largest, with a word that the tie-break picked it."""
    cfg = load_config(CFG)
    meta = {"comparison": {k: v for k, v in rd._comparison(cfg).items() if k != "ends"}, "combinations": 1}
    runs = pd.DataFrame({"run": [0], "role": ["configured"], "label": ["as configured"]})
    values = pd.DataFrame({"run": [0, 0], "quantity": ["best_G", "best_B"], "group": "all", "value": [8.0, 1.0]})
    (note,) = robustness.edges(rd.Readings(runs, values, meta), "all")
    assert note.startswith("candidate workload.G at its largest swept value (8) in 1 of 1 runs (as configured; read "
                           "from the tie-break's pick")


def test_the_comparison_and_its_show_note_read_the_same_tied_design():
    """comparison.csv stores each side's reach beside the tie-break's pick, and `show`'s note under the table
    (`compare.axis_ends`) reads it; a comparison.csv without it is read by the pick, and says so."""
    from wsemoe.sweep.compare import axis_ends, comparison_table

    cfg = load_config(CFG)
    table = comparison_table(_frame(Sampled(cfg, [])), cfg)
    assert table["best_G"].iloc[0] == 8
    assert table[["best_reach_B", "best_reach_G", "baseline_reach_B"]].iloc[0].tolist() == [2 / 8, 4 / 8, 4 / 8]
    assert axis_ends(table, cfg) == []
    (note,) = axis_ends(table.drop(columns=["best_reach_B", "best_reach_G", "baseline_reach_B"]), cfg)
    assert note.startswith("note: candidate workload.G at its largest swept value (8) in 1 of 1 groups (the "
                           "tie-break's pick")


def test_bta_topk_s_show_note_no_longer_names_g_s_end_at_top_k_2(tmp_path):
    """The shipped bta_topk at top-k 2: B·G 64 runs the same step at B 1 G 64, 2·32, 4·16, 8·8, 16·4, 32·2 (74,478
    tokens/s each); the tie-break picks B 1 G 64 and show said 'candidate workload.G at its largest swept value (64)
    in 1 of 4 groups'. The design nearest the interior is B 8 G 8: reach max(8/128, 8/64) = 0.125."""
    from pathlib import Path

    from wsemoe.sweep.compare import axis_ends
    from wsemoe.sweep.run import run_sweep

    res = run_sweep(Path(__file__).resolve().parents[1] / "sweeps" / "bta_topk.yaml", out_root=tmp_path)
    table = pd.read_csv(res.path / "comparison.csv")
    row = table[table["model.num_experts_per_tok"] == 2].iloc[0]
    assert (row["best_B"], row["best_G"]) == (1, 64)
    assert (row["best_reach_B"], row["best_reach_G"]) == (8 / 128, 8 / 64)
    assert not any("workload.G" in n for n in axis_ends(table, res.config))
    # split into parts, the ties still give the reach of one part
    parts = pd.read_csv(run_sweep(res.config, out_root=tmp_path / "parts", chunk_size=2000).path / "comparison.csv")
    reach = [c for c in table if "_reach_" in c]
    pd.testing.assert_frame_equal(parts[reach], table[reach])


def test_each_part_keeps_its_tied_design_nearest_the_interior():
    """A part keeps, beside its best row (the tie-break's B 1 G 8, also the least-energy Pareto front here), the
    tied B 2 G 4: the comparison over every part's rows can read it only if some part kept it."""
    from wsemoe.store.block import Block
    from wsemoe.sweep import chunked, engine

    cfg = load_config({**CFG, "objectives": {"energy_per_token_j": "min"}})
    f = _frame(Sampled(cfg, []))
    blk = Block(np.arange(len(f)), {c: f[c].to_numpy() for c in f})
    rows = chunked.candidate_rows(blk, cfg, engine.Evaluator(cfg).grid)
    kept = set(zip(f["workload.B"].to_numpy()[rows], f["workload.G"].to_numpy()[rows]))
    assert {(1, 8), (2, 4), (4, 1)} <= kept
