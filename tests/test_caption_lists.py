"""Captions that list a value per slice part the slices so a reader can tell them apart: a label holding a
comma ('qwen3-30b-a3b, B 1') or a value holding one ('1,883 tokens/s', '+68% over 2, −16% at 48') is parted
from the next by '; ', never by the same comma that sits inside it; a finding reads as a sentence."""

from __future__ import annotations

import pandas as pd

from wsemoe.report.figures import fig_energy
from wsemoe.report.figures.claims import finding_of, listing, where
from wsemoe.report.figures.view import ResultsView


def test_slices_whose_labels_hold_commas_are_parted_by_semicolons():
    text = where(["m, B 1", "m, B 4"], [True, True], "more wafers help", "no", ["best at 16, +68% over 2", "best at 3"])
    assert text == "more wafers help at every setting (m, B 1: best at 16, +68% over 2; m, B 4: best at 3)"


def test_plain_slices_stay_parted_by_commas():
    assert where(["TP 4", "TP 8"], [True, True], "lower", "no", ["−7%", "−9%"]) == "lower at every TP (TP 4: −7%, TP 8: −9%)"
    assert listing(["a", "b", "c"]) == "a, b and c"


def test_a_listing_of_items_with_commas_is_parted_by_semicolons():
    assert listing(["m, B 1 (x)", "m, B 4 (y)", "n, B 1 (z)"]) == "m, B 1 (x); m, B 4 (y); and n, B 1 (z)"


TIERS = {f"energy_{t}_per_token_j": 0.0 for t in ("compute", "sram", "fabric", "hbm", "network", "static")}


def test_energy_frontier_caption_parts_models_and_opens_a_sentence():
    """Two models: each model's values (which hold commas and were parted from the next model by a comma) end
    at '; ', and the caption starts with a capital, as every other caption does."""
    pts = [("cs3", 1, 500.0, 2.0), ("cs3", 4, 1000.0, 20.0), ("nvl72", 1, 100.0, 0.1), ("nvl72", 4, 200.0, 0.5)]
    rows = [{"model": m, "hardware": hw, "workload.B": b, "tokens_per_s_per_user": s, "energy_per_token_j": e,
             "feasible": True, **TIERS, "energy_static_per_token_j": e} for m in ("a", "b") for hw, b, s, e in pts]
    points = pd.DataFrame(rows)
    axes = ["model", "hardware", "workload.B"]
    view = ResultsView("v", {"axes": axes, "objectives": {}}, points, points.iloc[:0], None, {})
    fig = fig_energy.frontier(view, fig_energy._rows(view)[0], "")
    text = finding_of(fig)
    assert text.startswith("Wafers reach speeds GPUs do not")
    assert ("at every model (model a: wafers up to 1,000 tokens/s per user at 20 J/token, GPUs up to 200 from "
            "0.1 J/token; model b: wafers") in text
