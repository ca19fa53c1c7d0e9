"""MoEntwine (Tang et al., HPCA 2026) trends reproduced on one 8 × 8 wafer: ER vs block mapping.

Compared, at MoEntwine's reading (`figures.MOENTWINE`: no per-call software latency on the wafer, as its
simulator), per (model, top-k, B, TP): ER against the block mapping (all-to-all, all-reduce and total MoE
communication, inter-FTD dispatch load). The 4-wafer system and NVL72 are validate/scale.py's.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from wsemoe.sweep import chunked
from wsemoe.validate import figures
from wsemoe.validate.common import context, pct, points, pts, row, sweep_config

KEYS = ["model", "model.num_experts_per_tok", "workload.B", "mapping.tp"]
SOURCE = "abstract (ER-Mapping 'balance[s] communication pressure')"
DIGEST = "secondary digests (the gain grows with top-k)"


def mapping_table() -> pd.DataFrame:
    """Per (model, top-k, B, TP) where both mappings fit the wafer's memory: ER-vs-block ratios of all-to-all,
    all-reduce and total MoE communication (a setting that does not fit is no design to compare; Qwen3-235B at
    B 1,024 needs 1.3× the memory)."""
    df = chunked.evaluate(figures.at(sweep_config("moentwine_mapping"), figures.MOENTWINE))
    fits = df.groupby(KEYS)["feasible"].transform("all")
    df = df[fits.to_numpy(dtype=bool)].copy()
    df["a2a_s"] = df["moe_dispatch_s"] + df["moe_combine_s"]
    df["named_s"] = df["moe_comm_s"] - df["moe_reduce_s"]   # the phases the paper names: all-reduce, dispatch, combine
    p = df.pivot_table(index=KEYS, columns="mapping.strategy",
                       values=["a2a_s", "attention_allreduce_s", "moe_comm_s", "named_s", "dispatch_inter_ftd_share"])
    return pd.DataFrame({
        "a2a_cut": 1 - p["a2a_s"]["er"] / p["a2a_s"]["block"],
        "allreduce_ratio": p["attention_allreduce_s"]["er"] / p["attention_allreduce_s"]["block"],
        "comm_cut": 1 - p["named_s"]["er"] / p["named_s"]["block"],
        "full_cut": 1 - p["moe_comm_s"]["er"] / p["moe_comm_s"]["block"],
        "inter_ftd_share": p["dispatch_inter_ftd_share"]["er"],
    }).reset_index()


def _span(x) -> str:
    """'−31% … +10%': the range of a series of fractions as signed percentages."""
    return f"{pct(float(np.min(x)))} … {pct(float(np.max(x)))}"


def mapping_rows() -> list[dict]:
    """ER cuts all-to-all at every setting, all-reduce ≈2× for 2×2 FTDs, MoE comm falls, more so at top-k 8."""
    t = mapping_table()
    reading = figures.label(figures.MOENTWINE)
    k8, k2 = t[t["model.num_experts_per_tok"] == 8], t[t["model.num_experts_per_tok"] == 2]
    big = k8[k8["workload.B"] == k8["workload.B"].max()]
    small = k8[k8["workload.B"] == k8["workload.B"].min()]
    ftd22 = t[t["mapping.tp"] == 16]["allreduce_ratio"]
    merged = k8.merge(k2, on=["model", "workload.B", "mapping.tp"], suffixes=("_k8", "_k2"))
    gain = merged["comm_cut_k8"] - merged["comm_cut_k2"]
    bb, bs = int(big["workload.B"].iloc[0]), int(small["workload.B"].iloc[0])
    return [
        row("mapping.a2a", "ER cuts all-to-all (dispatch + combine) at every setting that fits the wafer (2 models, "
            "top-k 2/8, B 256/1024, TP 4/8/16; Qwen3-235B at B 1,024 does not fit)", "cuts it",
            float(t["a2a_cut"].min()), lambda x: pct(-x), delta=points,
            model=f"change {_span(-t['a2a_cut'])}", source=SOURCE, reading=reading),
        row("mapping.allreduce", "ER all-reduce slowdown with 2×2 FTDs (TP 16 on 8×8): ring neighbours 2 hops apart",
            "≈2× (secondary digests)", float(ftd22.iloc[int(np.argmax(np.abs(np.log(ftd22 / 2))))]), kind="property",
            model=f"{ftd22.min():.2f}×–{ftd22.max():.2f}×", reading=reading),
        row("mapping.comm.large", f"MoE communication (all-reduce + dispatch + combine) falls under ER (top-k 8, "
            f"B={bb}, every TP, every model that fits)", "falls", float(big["comm_cut"].min()), lambda x: pct(-x),
            delta=points,
            model=f"change {_span(-big['comm_cut'])}", source=SOURCE, reading=reading),
        row("mapping.comm.small", f"the same at B={bs}", "falls", float(small["comm_cut"].min()), lambda x: pct(-x),
            delta=points, model=f"change {_span(-small['comm_cut'])}", source=SOURCE, reading=reading),
        row("mapping.topk", "ER's communication cut larger at top-k 8 than top-k 2 (every model, B, TP that fits)",
            "larger at top-k 8", float(gain.min()), pts,
            model=f"cut k8 − cut k2 ≥ {100 * gain.min():.0f} pts", source=DIGEST, reading=reading),
        row("mapping.ftd", "under ER, dispatch uses no inter-FTD link", "0 inter-FTD load",
            float(t["inter_ftd_share"].max()), lambda x: f"{100 * x:.1f}%", kind="property", reading=reading),
        context("mapping.full", "the MoE communication with the output reduction ER needs (partial expert outputs "
                "summed over the TP group)", "—", f"change {_span(-big['full_cut'])} (top-k 8, B={bb})",
                "a second all-reduce on ER's long rings; the paper names only three phases", reading=reading),
    ]
