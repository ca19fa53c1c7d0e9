"""A commented starting sweep (`wsemoe new`): the sections a sweep file holds, each explained, with the axes
people sweep first in each mode, chosen so the file runs as written on the hardware it names.

The text is loaded by the sweep loader before it is handed back, so a starter that would not run is an error
here, not in the user's first `wsemoe sweep`.
"""

from __future__ import annotations

import os
from pathlib import Path

import yaml

from wsemoe.config import presets, yamlio
from wsemoe.config.loader import load_config
from wsemoe.config.schema import NAME_RE, NAME_RULE
from wsemoe.config.single import section_source
from wsemoe.arguments import choice
from wsemoe.errors import ConfigError
from wsemoe.version import __version__

MODES = ("train", "prefill", "decode")
TP_CHOICES = (1, 2, 4, 8, 16)

WORKLOAD = {
    "train": """\
# What runs: one micro-batch of G·B sequences per attention group. Attention runs in G tiles of B sequences
# (batch tiling on attention, BTA: its memory grows with B·S², so B stays small), the router and experts
# once on all G·B sequences (their efficiency grows with tokens per expert). train = forward + backward.
workload:
  mode: train
  seq_len: 8192               # sequence length S, tokens
  recompute: full             # activations kept for backward: none | selective | full (layer inputs only)
  attn_kernel: per_head       # the readings' default (wsemoe readings): one head's S×S scores at a time; or
                              # every head's at once (materialized), or tiled (flash)
  # Number formats (bf16 | fp8 | fp4; each format's matmuls run at its peak, docs/cost-model.md#formats-and-peaks):
  # attn_weight_format: fp8   # attention projections, shared experts, dense FFNs
  # expert_weight_format: fp4 # routed experts
""",
    "prefill": """\
# What runs: the prefill of G·B prompts of seq_len tokens per attention group, in G attention tiles of B
# prompts; router and experts run once on all of them. Its step time is the time to first token (ttft_s).
workload:
  mode: prefill
  seq_len: 4096               # prompt length S, tokens (swept below)
  attn_kernel: per_head       # the readings' default (wsemoe readings): one head's S×S scores at a time; or
                              # every head's at once (materialized), or tiled (flash)
  # Number formats (bf16 | fp8 | fp4; each format's matmuls run at its peak, docs/cost-model.md#formats-and-peaks):
  # attn_weight_format: fp8   # attention projections, shared experts, dense FFNs
  # expert_weight_format: fp4 # routed experts
""",
    "decode": """\
# What runs: one decode step of G·B sequences per attention group, each with a context of seq_len tokens in
# its KV cache; every step gives each sequence its next token, so the step time is the time per output token
# (tpot_s) and tokens_per_s_per_user = 1 / tpot_s. With prompt_len, each point also carries the time to first
# token (ttft_s): the prefill of its batch's prompts at that length (docs/cost-model.md, serving metrics).
workload:
  mode: decode
  seq_len: 4096               # context length, tokens (it holds the prompt)
  prompt_len: 1024            # prompt length behind ttft_s, tokens
  # Number formats (bf16 | fp8 | fp4; each format's matmuls run at its peak, docs/cost-model.md#formats-and-peaks):
  # attn_weight_format: fp8   # attention projections, shared experts, dense FFNs
  # expert_weight_format: fp4 # routed experts
""",
}

AXES = {
    "train": """\
  workload.B: {range: [1, 128]}     # attention batch: sequences per attention tile (wide enough that the
                                    # G = 1 baseline finds its memory limit inside the axis)
  workload.G: {pow2: [1, 64]}       # batch-tiling factor; G = 1 is uniform batching (the baseline below)
""",
    "prefill": """\
  workload.seq_len: [1024, 2048, 4096, 8192]   # prompt length
  workload.B: {pow2: [1, 64]}                  # prompts per attention tile
""",
    "decode": """\
  workload.B: {pow2: [1, 256]}      # sequences per attention tile: latency (small) against throughput (large)
""",
}

AXES_HEAD = ("# The design space: every combination of these values is one point. Keys are dotted spec paths; values\n"
             "# are lists, {range: [a, b]} (inclusive) or {pow2: [a, b]}; hardware and model take preset names.\naxes:\n")
COMMENT_AT = 36  # column of the comments after axis values

GOALS = {
    "train": """\
# Objectives: the Pareto front keeps the points no other point beats on all of them.
objectives: {mfu: max, mem_peak_node_bytes: min}
# Best point per group of the other axes against the best with G = 1: the speedup_vs_uniform column.
compare: {name: uniform, baseline: {workload.G: 1}}
# Sparsity at constant active parameters (E or top-k varied, expert width scaled to keep k·F):
# sparsity: {vary: num_experts_per_tok, values: [8, 4, 2, 1], hold: active}
""",
    "prefill": """\
# Objectives: prompt tokens per second against the time to first token.
objectives: {tokens_per_s: max, ttft_s: min}
# A latency objective (SLO) as a constraint: points above it are infeasible, their reason says by how much.
# constraints: [{column: ttft_s, max: 2.0}]
""",
    "decode": """\
# Objectives: aggregate output tokens per second against the time per output token.
objectives: {tokens_per_s: max, tpot_s: min}
# Latency objectives (SLOs) as constraints: an infeasible point reads "TPOT 1.3× the SLO (50 ms)".
# constraints: [{column: tpot_s, max: 0.05}, {column: ttft_s, max: 2.0}]
""",
}


def starter_text(name: str, hardware, model, mode: str | None = None, base_dir: Path | None = None,
                 file: str | None = None) -> str:
    """The commented sweep YAML of `name` on `hardware` and `model` (preset names or files) for `mode`,
    checked by the loader (relative file paths resolve against `base_dir`, the folder it is written to;
    `file` is how its comments name it, default NAME.yaml)."""
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise ConfigError(f"a sweep name is {NAME_RULE}", loc=("NAME",))
    if mode is not None:
        choice(mode, MODES, "--mode")
    base_dir = Path(base_dir or Path.cwd())
    hw_src, model_src = section_source("hardware", hardware, "--hardware"), section_source("model", model, "--model")
    # The hardware is read in the mode asked for (a serving wafer refuses only training, and says so at --mode).
    hw = load_config({"name": name, "hardware": hw_src, "model": model_src,
                      "workload": {"mode": "decode" if mode in (None, "train") else mode}}).hardware
    if mode is None:   # the config's own default: train, or decode where the hardware serves from SRAM
        mode = "decode" if hw.weight_source == "sram" else "train"
    if mode == "train" and hw.weight_source == "sram":
        raise ConfigError("this hardware serves from SRAM (weight_source: sram): inference only; use --mode decode "
                          "or --mode prefill", loc=("--mode",))
    text = "\n".join([_head(name, mode, file or f"{name}.yaml"), _section("hardware", hw_src, base_dir), _section("model", model_src, base_dir),
                      WORKLOAD[mode], _mapping(hw, mode), _balance(), AXES_HEAD + AXES[mode] + _mapping_axes(hw),
                      GOALS[mode]])
    load_config({**yamlio.loads(text, source="starter"), "name": name}, base_dir=base_dir)
    return text


def _head(name: str, mode: str, file: str) -> str:
    return (f"# {name}: a starting {mode} sweep (generated by wsemoe {__version__}: `wsemoe new`).\n"
            f"# Check it: `wsemoe check {file}` (add --estimate for its run time); run it: `wsemoe sweep {file}`;\n"
            f"# then `wsemoe show results/{name}`, `wsemoe plot results/{name}`, `wsemoe eval {file} --point N`.\n"
            "# Every key, its unit and default: docs/config.md (or `wsemoe schema`).\n"
            f"name: {name}\ndescription: \"{mode} sweep: edit the axes below to ask your own question\"\n")


def _section(kind: str, source, base_dir: Path) -> str:
    """The hardware or model section as written: a preset name, a file's fields, or an imported config.json."""
    what = {"hardware": "# The machine: a preset (`wsemoe presets` lists them), {preset: name, field: value} to change "
                        "a figure,\n# or every field written out (docs/config.md, hardware).",
            "model": "# The model: a preset, {hf_config: path/to/config.json} for a Hugging Face MoE model, or its "
                     "fields\n# (Hugging Face names; docs/config.md, model)."}[kind]
    if isinstance(source, dict) and "hf_config" in source:
        source = {"hf_config": os.path.relpath(source["hf_config"], base_dir)}
    if isinstance(source, dict):
        body = yaml.safe_dump({kind: source}, sort_keys=False, default_flow_style=False)
    else:
        body = f"{kind}: {source}\n"
    return f"{what}\n{body}"


def _streamed(hw) -> bool:
    """One attention group over the wafer, no TP axis: a weight-streaming wafer, and a serving (SRAM) one, whose
    layout is its own (mapping.pe_placement)."""
    return hw.weight_source in ("streamed", "sram")


def _mapping(hw, mode: str) -> str:
    if hw.weight_source == "sram":
        return ("# Mapping: a serving wafer holds its share of the weights and the KV cache in its PEs' SRAM; the "
                "layers split\n# into pipeline stages over hardware.pipeline_wafers systems (unset: the fewest that "
                "hold weights and\n# cache). mapping.pe_placement (swept below) places attention among the expert "
                "regions on the PEs.\nmapping: {}\n")
    if _streamed(hw):
        how = (f"hardware: {{preset: {hw.name}, weight_source: sram}}" if hw.name in presets.names("hardware")
               else "weight_source: sram in the hardware section")
        serve = (f"\n# Serving from SRAM instead (the weights resident across several wafers, as Cerebras' inference "
                 f"serves):\n# {how}." if mode != "train" and hw.pe is not None else "")
        return ("# Mapping: a weight-streaming wafer runs attention and experts over the whole wafer as one group "
                "(mapping.tp\n# stays unset); weights stream in over its I/O every pass, so a small decode batch is "
                f"bound by that I/O.{serve}\nmapping: {{}}\n")
    return ("# Mapping: attention runs in tensor-parallel (TP) groups of mapping.tp nodes (swept below), experts "
            "spread over\n# every node; strategy places the groups: block (contiguous), er (entwined rings: every "
            "tile of the mesh\n# holds one member of each group, so dispatch stays inside it), her (ER inside "
            "each wafer), snake, random.\nmapping: {strategy: block}\n")


def _balance() -> str:
    return ("# Expert load: uniform popularity, no balancer. Skewed routing: {distribution: zipf, zipf_s: 0.8}; "
            "hot experts\n# replicated into spare slots: balancer: replicate (or non-invasive), spare_slots: 1.\n"
            "balance: {distribution: uniform, balancer: none}\n")


def _mapping_axes(hw) -> str:
    """TP sizes that divide the nodes (a wafer's dies with her) and the placements worth comparing."""
    if hw.weight_source == "sram":
        return _axis("mapping.pe_placement: [blocked, interleaved]", "where attention sits among the experts")
    if _streamed(hw):
        return ""
    wafers = (hw.wafers or (1, 1))[0] * (hw.wafers or (1, 1))[1]
    per_wafer = hw.rows * hw.cols
    tps = [t for t in TP_CHOICES if (per_wafer if wafers > 1 else per_wafer * wafers) % t == 0]
    out = _axis(f"mapping.tp: {tps}", "TP group size, nodes (each divides the nodes)")
    if hw.topology == "mesh":
        strategies = ["block", "er", "her"] if wafers > 1 else ["block", "er"]
        out += _axis(f"mapping.strategy: [{', '.join(strategies)}]", "placement of the TP groups")
    return out


def _axis(entry: str, comment: str) -> str:
    """One line of the axes section, its comment at COMMENT_AT (or two spaces after a longer entry)."""
    line = f"  {entry}"
    return (line.ljust(COMMENT_AT) if len(line) < COMMENT_AT else line + "  ") + f"# {comment}\n"
