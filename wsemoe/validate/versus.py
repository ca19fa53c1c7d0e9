"""MoEntwine's headline: per-device decode throughput of its 4-wafer system against an NVL72 supernode.

Compared on the whole decode step per device (attention, MoE, dense layers, head), each system tuned on its
own, per model and per load (1–256 tokens per device). The reproduction (`scale.nvl72.avg:<model>`) is the
mean of the per-load ratios over stated operating points, at the default readings: `fixed_latency=as_gpu`
gives the wafer's B200-class dies the per-call costs NVL72's GPUs pay, one fixed latency on both systems.

The operating points (`OPERATING`: 1, 2, 4, 8, 16, 32 tokens per device, each weighted alike) are the
memory-bound decode regime of the paper's system. Its abstract says MoE models "rely on expert parallelism (EP)
to alleviate memory bottleneck" and credits the wafer's gain to its "scalability to larger EP": the average is
taken where a device's expert-weight reads bind. At EP 256 (one DeepSeek-V3 expert per die, top-8) τ tokens
per device give each die's expert 8τ tokens on average; a B200-class die's ridge is 2.25 PFLOP/s over 8 TB/s =
281 FLOP per byte, and an expert's matmuls at n tokens do n FLOP per byte of 16-bit weight (an 8-bit weight:
2n, against a twice higher peak, the same bound), so the expert reads longer than it computes while 8τ < 281:
τ ≤ 32 of the power-of-two loads (`memory_bound_loads`, tested against `OPERATING`).

MoEntwine's own reading (`figures.MOENTWINE`: `launch_only`, no per-call cost on the wafer while NVL72 keeps
its measured one) is a context row; so are the MoE-block and MoE-layer ratios, a DGX-style cluster and the
assumptions no reading covers. The headline's range is the same mean over every combination of the readings
that apply (die-to-die bandwidth, fixed latencies, overlap, the MLA cache's layout, in-switch reduction).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from wsemoe.analysis.uncertainty import readings as study
from wsemoe.analysis.uncertainty.sampled import Sampled
from wsemoe.config import presets
from wsemoe.config import readings as registry
from wsemoe.sweep import chunked, crossing
from wsemoe.validate import figures
from wsemoe.validate.common import bare_headline, claims_only, context, headline, pct, row, sweep_config

WSC, NVL72, DGX = "wsc-b200-4x8x8", "nvl72", "dgx-b200-x32"
TAU = "workload.tokens_per_device"
METRIC = "per_device_tokens_per_s"
ALSO = {"per_device_moe_block_tokens_per_s": "MoE block", "per_device_moe_tokens_per_s": "MoE layer"}
PUBLISHED = 1.39  # "an average 39% higher per-device MoE performance" (abstract)
HEADLINE_MODEL = "deepseek-v3"
OPERATING = (1, 2, 4, 8, 16, 32)  # tokens per device the average is taken over (module docstring)
DEFAULTS = "the default readings (fixed_latency=as_gpu: one fixed latency on both systems)"


def memory_bound_loads(loads=(1, 2, 4, 8, 16, 32, 64, 128, 256)) -> list[int]:
    """The loads (tokens per device) at which a die of the paper's system, holding one routed expert (EP 256),
    reads that expert's weights for longer than it computes: k·τ tokens per expert below the die's ridge
    (16-bit FLOP per byte of HBM; an 8-bit weight halves the bytes and doubles the peak alike)."""
    hw, m = presets.load_hardware(WSC), presets.load_model(HEADLINE_MODEL)
    ridge = hw.node_peak_flops / hw.node_memory_bw_bytes_per_s
    return [t for t in loads if m.num_experts_per_tok * t < ridge]


def range_config(cfg=None):
    """The comparison with overlap as a reading rather than an axis (so each run fixes it on both systems) and
    without the DGX cluster (not a side of the comparison)."""
    cfg = sweep_config("moentwine_vs_nvl72") if cfg is None else cfg
    axes = {k: v for k, v in cfg.axes.items() if k != "workload.comm_overlap"}
    keep = [i for i, h in enumerate(cfg.zip[0]["hardware"]) if h != DGX]
    zips = [{k: [v[i] for i in keep] for k, v in cfg.zip[0].items()}, *cfg.zip[1:]]
    over = [a for a in cfg.compare.over if a != "workload.comm_overlap"]
    return cfg.model_copy(update={"axes": axes, "zip": zips, "compare": cfg.compare.model_copy(update={"over": over})})


def ratios(result, cfg) -> pd.DataFrame:
    """One row per run, model and load: the readings of the run and the ratio of each compared metric."""
    sampled = Sampled(cfg, [])
    groups = sampled.groups.assign(group=sampled.group_labels())
    v = result.values.merge(result.runs, on="run").merge(groups, on="group")
    v = v[v["quantity"].str.startswith("speedup_vs_nvl72")]
    v = v.assign(metric=v["quantity"].str.removeprefix("speedup_vs_nvl72").str.lstrip("_").replace("", METRIC))
    return v.rename(columns={"model": "model_name"})


def per_load(r: pd.Series) -> str:
    """'1: +12% · 2: +8% · … · 256: −40%; ahead at 1–48, behind from 48 (between 32 and 64) tokens/device' (a load
    either side cannot run: '—'; every crossing, as sweep/crossing.py defines it)."""
    return " · ".join(f"{int(t)}: {pct(v - 1) if np.isfinite(v) else '—'}" for t, v in r.items()) + \
        f"; {crossing.sides(r)}"


def mean_at_operating(r: pd.Series) -> float:
    """The mean of the per-load ratios at the operating points, less 1 (NaN if a point cannot run)."""
    return float(r.reindex(OPERATING).mean(skipna=False)) - 1


def _series(v: pd.DataFrame, choice: dict, model: str, metric: str = METRIC) -> pd.Series:
    role = "combination" if (v["role"] == "combination").any() else "configured"  # nothing varied: one run
    sel = (v["role"] == role) & (v["model_name"] == model) & (v["metric"] == metric)
    for name, option in choice.items():
        sel &= v[name] == option
    out = v[sel].set_index(TAU)["value"].sort_index()
    if not out.index.is_unique:
        raise ValueError(f"{choice} leaves a varied reading open")
    return out


def _check(model: str, r: pd.Series) -> dict:
    value = mean_at_operating(r)
    points = f"{OPERATING[0]}–{OPERATING[-1]}"
    return row(f"scale.nvl72.avg:{model}", f"per-device decode throughput (whole step), WSC 4×8×8 vs NVL72, each "
               f"tuned, {model}: the mean of the per-load ratios at {points} tokens/device (memory-bound decode)",
               "+39% on average (abstract)", value, pct, model=f"{pct(value)} mean at {points}; {per_load(r)}",
               source="abstract", reading=DEFAULTS)


def headline_rows(result, cfg) -> list[dict]:
    """Per model: the mean ratio at the operating points at the default readings (the check), its range over
    every combination of the readings, and as context MoEntwine's own reading and the MoE block and layer."""
    v = ratios(result, cfg)
    dflt = {n: o for n, o in figures.defaults(cfg).items() if n in result.varied}
    fig = {**dflt, **figures.MOENTWINE.readings}  # the readings its text leaves open at their defaults
    reading = figures.label(figures.MOENTWINE)
    rows = []
    for model in dict.fromkeys(v["model_name"]):
        r = _series(v, dflt, model)
        check = _check(model, r)
        if claims_only():
            rows.append(bare_headline(check))
            continue
        at = v[(v["role"] == "combination") & (v["model_name"] == model) & (v["metric"] == METRIC)
               & v[TAU].isin(OPERATING)]
        means = at.groupby("run")["value"].mean() - 1
        rows.append(headline(check, PUBLISHED - 1, check["model"], float(means.min()), float(means.max()),
                             f"{result.meta['combinations']} combinations of {', '.join(result.varied)}", pct))
        own = _series(v, fig, model)
        rows.append(context(f"scale.nvl72.launch_only:{model}", f"the same at MoEntwine's reading, {model} (the "
                            "wafer without per-call costs, NVL72 with its measured ones)", "+39% on average",
                            f"{pct(mean_at_operating(own))} mean at {OPERATING[0]}–{OPERATING[-1]}; {per_load(own)}",
                            "context, never the reproduction: the two systems pay different fixed latencies",
                            reading=reading))
        for metric, name in ALSO.items():
            rows.append(context(f"scale.nvl72.{metric}:{model}", f"the same for the {name} alone, {model}",
                                "+39% on average (the abstract's 'MoE performance' read as the MoE alone)",
                                per_load(_series(v, dflt, model, metric)), "each system tuned for it",
                                reading=DEFAULTS))
    return rows


# Assumptions no reading covers, each moved alone at the default readings (DeepSeek-V3): (label, preset changes).
ASSUMPTIONS = (
    ("inter-wafer links at half the die-to-die bandwidth (450 GB/s)",
     {WSC: {"inter_wafer_link_bw_bytes_per_s": 4.5e11}}),
    ("inter-wafer links at a quarter (225 GB/s)", {WSC: {"inter_wafer_link_bw_bytes_per_s": 2.25e11}}),
    ("hop latency 500 ns instead of 200 ns", {WSC: {"hop_latency_s": 5.0e-7, "inter_wafer_hop_latency_s": 5.0e-7}}),
    ("hop latency 100 ns", {WSC: {"hop_latency_s": 1.0e-7, "inter_wafer_hop_latency_s": 1.0e-7}}),
    ("no fixed latency on either system (no kernel-launch or collective-call cost)",
     {h: {"kernel_launch_s": 0.0, "collective_latency_s": 0.0, "alltoall_latency_s": 0.0} for h in (WSC, NVL72)}),
)


def variant(cfg, presets: dict):
    """The comparison sweep with some preset fields moved (presets by name)."""
    moved = {k: {**v, **presets.get(k, {})} for k, v in cfg.presets.items()}
    return cfg.model_copy(update={"presets": moved, "name": f"{cfg.name}-variant"})


def best_ratio(df: pd.DataFrame, over: str, base: str, metric: str = METRIC) -> pd.Series:
    """Best feasible `metric` of hardware `over` over that of `base`, per tokens per device (each tuned alone)."""
    best = df[df["feasible"]].groupby([TAU, "hardware"], observed=True)[metric].max().unstack()
    return (best[over] / best[base]).sort_index()


def context_rows(cfg) -> list[dict]:
    """At the default readings, DeepSeek-V3: the DGX-style cluster, and each assumption no reading covers."""
    one = cfg.model_copy(update={"axes": {**cfg.axes, "model": [HEADLINE_MODEL],
                                          "workload.comm_overlap": ["none"]}})
    df = chunked.evaluate(one)
    dgx = best_ratio(df, WSC, DGX)
    rows = [context("scale.dgx", "per-device decode throughput, WSC vs a DGX-style cluster of 256 GPUs (32 × 8, "
                    "400 GB/s per server), DeepSeek-V3", "not recorded", per_load(dgx),
                    "EP = 256 on both; the servers' NICs bind the all-to-all", reading=DEFAULTS)]
    pplx = best_ratio(chunked.evaluate(registry.apply(one, {"scale_out_call": "pplx"})), WSC, DGX)
    rows.append(context("scale.dgx:pplx", "the same, each dispatch or combine call across InfiniBand at "
                        "pplx-kernels' 90 µs instead of 26 µs (the comparison hinges on it)", "not recorded",
                        per_load(pplx), "DeepEP's measured calls (gpu.ib rows) support 26 µs",
                        reading="scale_out_call=pplx; " + DEFAULTS + " otherwise"))
    for label, moved in ASSUMPTIONS:
        r = best_ratio(chunked.evaluate(variant(one, moved)), WSC, NVL72)
        rows.append(context(f"scale.assume:{label}", f"the headline with {label}", "+39%",
                            f"{pct(mean_at_operating(r))} mean at {OPERATING[0]}–{OPERATING[-1]}; {per_load(r)}",
                            "how far an assumption no reading covers moves it", reading=DEFAULTS))
    return rows


def versus_rows() -> list[dict]:
    """The headline per model with its range over readings, then the context rows (claims only: the headline at
    the default readings alone)."""
    cfg = sweep_config("moentwine_vs_nvl72")
    rc = range_config(cfg)
    if claims_only():
        fixed = {n: o for n, o in figures.defaults(rc).items()
                 if n in {st.reading.name for st in study.plan(rc)[1]}}
        return headline_rows(study.evaluate(rc, fixed=fixed), rc)
    result = study.evaluate(rc)  # every reading that applies: d2d, fixed latencies, overlap, MLA cache, NVLS
    return headline_rows(result, rc) + context_rows(cfg)
