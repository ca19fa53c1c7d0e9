"""Copy the figures docs/ shows (docs/img/*.png) from the results folders that `make demo` writes: each image
is one `wsemoe plot` (or `wsemoe sensitivity`) output under another name, and nothing said which, so they were
redrawn by hand and drifted (December 2026: three BTA images differed from a fresh plot). A developer's tool,
not a wsemoe command. Usage: `.venv/bin/python tools/update_img.py [RESULTS_ROOT]` (default results/) after
`make demo`; an image whose source is missing is named with the command that makes it, and left as it is."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
IMG = ROOT / "docs" / "img"

# docs/img name -> (results folder, file under it, the command that writes it there)
SOURCES = {
    "bta_experts_throughput_vs_sparsity.png": ("bta_experts", "plots/throughput_vs_sparsity.png", "make demo"),
    "bta_topk_throughput_vs_sparsity.png": ("bta_topk", "plots/throughput_vs_sparsity.png", "make demo"),
    "bta_topk_readings_robustness.png": ("bta_topk", "plots/readings_robustness.png", "make demo"),
    # the four unknowns and 256 samples docs/findings.md states (the default adds seq_len, 448 samples: another figure)
    "bta_topk_sensitivity_tornado.png": ("bta_topk", "plots/sensitivity_tornado.png",
                                         "wsemoe sensitivity sweeps/bta_topk.yaml -n 256 --only matmul_efficiency "
                                         "--only expert_half_tokens --only memory_usable_fraction --only io_bandwidth, "
                                         "then wsemoe plot results/bta_topk"),
    "moentwine_crossover.png": ("moentwine_vs_nvl72", "plots/crossover.png", "make demo"),
    "pe_binding.png": ("bta_topk_pe", "plots/pe_binding.png", "make demo"),
    "serving_wafers.png": ("cerebras_serving", "plots/serving_wafers.png", "make demo"),
    "serving_heatmap_qwen3-235b-a22b.png": ("cerebras_serving", "plots/serving_heatmap_qwen3-235b-a22b.png",
                                            "make demo"),
}
# written into docs/img by wsemoe itself (its ledger there records it), not copied
WRITTEN = {"silicon_predicted_vs_measured.png": "wsemoe validate --silicon tests/data/silicon/silicon_given.csv "
                                                "--plot docs/img/silicon_predicted_vs_measured.png --force"}


def main(argv: list[str]) -> int:
    results = Path(argv[0]) if argv else ROOT / "results"
    missing = 0
    for name, (folder, file, how) in SOURCES.items():
        source = results / folder / file
        if source.is_file():
            shutil.copyfile(source, IMG / name)
            sys.stdout.write(f"docs/img/{name} <- {source}\n")
        else:
            missing += 1
            sys.stdout.write(f"docs/img/{name} left as it is: no {source} ({how})\n")
    for name, how in WRITTEN.items():
        sys.stdout.write(f"docs/img/{name}: {how}\n")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
