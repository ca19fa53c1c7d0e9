"""Fit the GPU serving stacks to the shipped measured runs and write wsemoe/presets/gpu/stacks.yaml.

Usage: python tools/fit_silicon.py [--samples N]   (N bootstrap refits for the spread; default 20)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from wsemoe.validate.silicon import fit, runs, stacks  # noqa: E402

DATA = ROOT / "tests" / "data" / "silicon" / "silicon_given.csv"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=20)
    args = parser.parse_args()
    r = runs.load(DATA)
    best = fit.fit(r)
    spread = fit.bootstrap(r, best, samples=args.samples)
    meta = {"fitted_on": "tests/data/silicon/silicon_given.csv (NOTICE there: AIConfigurator silicon_sample.csv, "
                         "1,900 given rows)", "configurations": int(len(r.configs)),
            "bootstrap_samples": args.samples, "objective": "soft-L1 least squares of predicted/measured - 1, "
            "TTFT and TPOT, over configuration medians"}
    stacks.STACKS.parent.mkdir(exist_ok=True)
    stacks.STACKS.write_text(stacks.dump(best, spread, meta))
    print(f"wrote {stacks.STACKS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
