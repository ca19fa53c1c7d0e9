"""The measured-serving model on the given measured runs, as rows of `wsemoe validate` (family `silicon`).

Issue 28's accuracy targets become rows that can fail: over the given runs (tests/data/silicon, AIConfigurator's
silicon_sample.csv, Apache-2.0) with the shipped stacks (wsemoe/presets/gpu/stacks.yaml), the MAPE of TTFT and of
TPOT overall and per system × model, each system's median predicted/measured TTFT and TPOT (its bias: errors
either side of it do not average it away), and the two published DeepSeek-V3 decode workers (checks.py). The
stacks are shared by every system of a backend, so what a system's rows read beyond them is its hardware preset:
a preset figure wrong by 2× (HBM bandwidth, a peak, the memory) moves its system's bias or MAPE out of its band.

The stacks were fitted to these runs, so the rows are in-sample (the held-out accuracy, `validate --silicon FILE
--holdout`, refits per group and is too slow for a row); a group no configuration of which fits its GPUs' memory
reads NaN and fails its rows.
"""

from __future__ import annotations

import math
from pathlib import Path

from wsemoe.validate.common import context, factor, row
from wsemoe.validate.tolerances import band

GIVEN = Path(__file__).resolve().parents[3] / "tests" / "data" / "silicon" / "silicon_given.csv"
SOURCE = "AIConfigurator silicon_sample.csv (Apache-2.0): the 1,900 given runs (tests/data/silicon)"


def percent(x: float) -> str:
    """A MAPE as printed (unsigned, one decimal; NaN: no configuration of the group fits its GPUs)."""
    return f"{100 * x:.1f}%" if math.isfinite(x) else "nothing fits"


def ratio(x: float) -> str:
    """A predicted/measured ratio as every factor row prints it (NaN: nothing fits)."""
    return factor(x) if math.isfinite(x) else "nothing fits"


def silicon_rows() -> list[dict]:
    """Overall and per-group accuracy on the given runs, per-system bias, and the published decode checks."""
    from wsemoe.validate.silicon import accuracy, checks
    from wsemoe.validate.silicon.stacks import load

    if not GIVEN.is_file():
        return [context("silicon.given", "the measured-serving model on the given measured runs", SOURCE,
                        "not run", f"{GIVEN} is not here (an installed copy without the repository's tests/)")]
    result = accuracy.evaluate(GIVEN)
    modelled = [r for r in result["rows"] if r["reason"] in (None, accuracy.NO_FIT)]
    out = [row(f"silicon.{what}", f"{what.upper()} over every given configuration: MAPE of the measured-serving "
               "model with the shipped stacks (fitted to these runs)", f"≤ {100 * band(f'silicon.{what}').hi:.0f}% (issue 28)",
               result["overall"][f"{what}_mape"], percent, source=SOURCE,
               model=f"{percent(result['overall'][f'{what}_mape'])} over {result['overall']['configs']:,} "
                     "configurations") for what in ("ttft", "tpot")]
    found = {(g["system"], g["model_path"]): g for g in result["system_model"]}
    for key in sorted({(r["system"], r["model_path"]) for r in modelled}):
        g = found.get(key, {})
        for what in ("ttft", "tpot"):
            value = g.get(f"{what}_mape", math.nan)
            out.append(row(f"silicon.group.{what}:{key[0]}/{key[1]}", f"{what.upper()} MAPE of {key[1]} on "
                           f"{key[0]} ({g.get('configs', 0)} configurations)", "≤ 40% (issue 28)", value, percent,
                           source=SOURCE))
    systems = {g["system"]: g for g in result["system"]}
    for system in sorted({r["system"] for r in modelled}):
        g = systems.get(system, {})
        for what in ("ttft", "tpot"):
            out.append(row(f"silicon.bias.{what}:{system}", f"median predicted/measured {what.upper()} of the "
                           f"given runs on {system}: the bias its hardware preset leaves under the shared stacks",
                           "×1 (no bias)", g.get(f"{what}_median_ratio", math.nan), ratio, source=SOURCE))
    for p in checks.published(load()[0]):
        out.append(row(f"silicon.published:{p['system']}", f"DeepSeek-V3 decode worker on {p['gpus']} {p['system']} "
                       f"GPUs (EP {p['gpus']}, attention DP), {p['tokens_per_gpu']} tokens per GPU: output tokens/s "
                       f"per GPU, measured-serving model ({checks.BACKEND} stack) over published",
                       f"{p['published']:,.0f} tokens/s/GPU", p["ratio"], ratio,
                       model=f"{p['model']:,.0f} tokens/s/GPU ({p['ratio']:.2f}×)",
                       source="LMSYS blog (Part II, Sept. 2025: GB200; Part I, May 2025: H100)"))
    return out

