"""MoEntwine's headline: per-device decode throughput of its 4-wafer system against an NVL72 supernode.

Compared on the whole decode step per device (attention, MoE, dense layers, head), each system tuned on its
own, per model and per load (1–256 tokens per device): the ratio at each load and where the wafer falls behind,
at MoEntwine's reading (`figures.MOENTWINE`), at the default readings, and its range over every combination of
the readings that apply (die-to-die bandwidth, the wafer's fixed latencies, overlap, the MLA cache's layout,
in-switch reduction); the published +39% against that range. MoE-block and MoE-layer ratios, a DGX-style cluster and the assumptions no reading covers
are context.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from wsemoe.analysis.uncertainty import readings as study
from wsemoe.analysis.uncertainty.sampled import Sampled
from wsemoe.sweep import chunked, crossing
from wsemoe.validate import figures
from wsemoe.validate.common import context, headline, pct, pts, row, sweep_config

WSC, NVL72, DGX = "wsc-b200-4x8x8", "nvl72", "dgx-b200-x32"
TAU = "workload.tokens_per_device"
METRIC = "per_device_tokens_per_s"
ALSO = {"per_device_moe_block_tokens_per_s": "MoE block", "per_device_moe_tokens_per_s": "MoE layer"}
PUBLISHED = 1.39  # "an average 39% higher per-device MoE performance" (abstract)
HEADLINE_MODEL = "deepseek-v3"


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


def _series(v: pd.DataFrame, choice: dict, model: str, metric: str = METRIC) -> pd.Series:
    sel = (v["role"] == "combination") & (v["model_name"] == model) & (v["metric"] == metric)
    for name, option in choice.items():
        sel &= v[name] == option
    out = v[sel].set_index(TAU)["value"].sort_index()
    if not out.index.is_unique:
        raise ValueError(f"{choice} leaves a varied reading open")
    return out


def headline_rows(result, cfg) -> list[dict]:
    """Per model: the whole-step ratio at each load at MoEntwine's reading, at the default readings, its range."""
    v = ratios(result, cfg)
    dflt = {n: o for n, o in figures.defaults(cfg).items() if n in result.varied}
    fig = {**dflt, **figures.MOENTWINE.readings}  # the readings its text leaves open at their defaults
    reading = figures.label(figures.MOENTWINE)
    rows = []
    for model in dict.fromkeys(v["model_name"]):
        r = _series(v, fig, model)
        nearest = float(np.clip(PUBLISHED, r.min(), r.max()))
        all_runs = v[(v["role"] == "combination") & (v["model_name"] == model) & (v["metric"] == METRIC)]["value"]
        check = row(f"scale.nvl72:{model}", f"per-device decode throughput (whole step), WSC 4×8×8 vs NVL72, each "
                    f"tuned, {model}, 1–256 tokens/device", "+39% on average (abstract)", PUBLISHED - nearest,
                    pts, model=per_load(r), source="abstract", reading=reading)
        rows.append(headline(check, PUBLISHED, per_load(_series(v, dflt, model)), float(all_runs.min()),
                             float(all_runs.max()), f"{result.meta['combinations']} combinations of "
                             f"{', '.join(result.varied)}", shown=lambda x: pct(x - 1)))
        for metric, name in ALSO.items():
            rows.append(context(f"scale.nvl72.{metric}:{model}", f"the same for the {name} alone, {model}",
                                "+39% on average (the abstract's 'MoE performance' read as the MoE alone)",
                                per_load(_series(v, fig, model, metric)), "each system tuned for it", reading=reading))
    return rows


# Assumptions no reading covers, each moved alone on MoEntwine's reading (DeepSeek-V3): (label, preset changes).
ASSUMPTIONS = (
    ("inter-wafer links at half the die-to-die bandwidth (450 GB/s)",
     {WSC: {"inter_wafer_link_bw_bytes_per_s": 4.5e11}}),
    ("inter-wafer links at a quarter (225 GB/s)", {WSC: {"inter_wafer_link_bw_bytes_per_s": 2.25e11}}),
    ("hop latency 500 ns instead of 200 ns", {WSC: {"hop_latency_s": 5.0e-7, "inter_wafer_hop_latency_s": 5.0e-7}}),
    ("hop latency 100 ns", {WSC: {"hop_latency_s": 1.0e-7, "inter_wafer_hop_latency_s": 1.0e-7}}),
    ("no fixed latency on NVL72 either (no kernel-launch or collective-call cost on any system)",
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
    """At MoEntwine's reading, DeepSeek-V3: the DGX-style cluster, and each assumption no reading covers."""
    one = figures.at(cfg.model_copy(update={"axes": {**cfg.axes, "model": [HEADLINE_MODEL]}}), figures.MOENTWINE)
    df = chunked.evaluate(one)
    reading = figures.label(figures.MOENTWINE)
    dgx = best_ratio(df, WSC, DGX)
    rows = [context("scale.dgx", "per-device decode throughput, WSC vs a DGX-style cluster of 256 GPUs (32 × 8, "
                    "400 GB/s per server), DeepSeek-V3", "not recorded", per_load(dgx),
                    "EP = 256 on both; the servers' NICs bind the all-to-all", reading=reading)]
    for label, moved in ASSUMPTIONS:
        r = best_ratio(chunked.evaluate(variant(one, moved)), WSC, NVL72)
        rows.append(context(f"scale.assume:{label}", f"the headline with {label}", "+39%", per_load(r),
                            "how far an assumption no reading covers moves it", reading=reading))
    return rows


def versus_rows() -> list[dict]:
    """The headline per model with its range over readings, then the context rows."""
    cfg = sweep_config("moentwine_vs_nvl72")
    rc = range_config(cfg)
    result = study.evaluate(rc)  # every reading that applies: d2d, fixed latencies, overlap, MLA cache, NVLS
    return headline_rows(result, rc) + context_rows(cfg)
