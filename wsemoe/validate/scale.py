"""MoEntwine at its evaluated scale (Tang et al., HPCA 2026): hierarchical ER on 4 wafers and NI-Balancer at one
expert per die, at MoEntwine's reading (`figures.MOENTWINE`). The comparison with NVL72 is validate/versus.py's.

The tolerances are set by what the paper publishes ("up to" figures are one maximum of a sweep it does not
publish, ±15 points; the balancer cuts use the single-wafer rows' bands), in validate/tolerances.py.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from wsemoe.sweep import chunked
from wsemoe.validate import figures
from wsemoe.validate.common import context, pct, points, pts, row, sweep_config

TAU = "workload.tokens_per_device"
SAME = ["model", TAU, "mapping.tp", "mapping.token_source", "mapping.ring_directions"]
BLOCK = "per_device_moe_block_tokens_per_s"
ABSTRACT = "abstract"


def her_table() -> pd.DataFrame:
    """HER against the flat baseline mapping (block) at the same model, tokens per device, TP, flow and rings."""
    df = chunked.evaluate(figures.at(sweep_config("moentwine_scale"), figures.MOENTWINE))
    df = df[df["feasible"]].copy()
    df["named_s"] = df["moe_comm_s"] - df["moe_reduce_s"]  # the phases the paper names
    p = df.pivot_table(index=SAME, columns="mapping.strategy", values=["moe_comm_s", "named_s"], observed=True)
    out = pd.DataFrame({"cut": 1 - p["moe_comm_s"]["her"] / p["moe_comm_s"]["block"],
                        "named_cut": 1 - p["named_s"]["her"] / p["named_s"]["block"]}).dropna().reset_index()
    best = df.groupby(["model", TAU, "mapping.strategy"], observed=True)["moe_comm_s"].min().unstack()
    out.attrs["best_cut"] = (1 - best["her"] / best["block"]).dropna()
    out.attrs["wafer_share"] = df.loc[(df["mapping.strategy"] == "her") & (df["token_flow"] == "replicated"),
                                      "dispatch_inter_wafer_share"]
    return out


def her_rows() -> list[dict]:
    """HER vs the flat baseline on 4 wafers: the communication cut, and dispatch kept on the expert's wafer."""
    t, reading = her_table(), figures.label(figures.MOENTWINE)
    top = t.loc[t["cut"].idxmax()]
    where = f"{top['model']}, {int(top[TAU])} tokens/device, TP {int(top['mapping.tp'])}, " \
            f"{top['mapping.token_source']}, {int(top['mapping.ring_directions'])}-way rings"
    cut, best, share = float(top["cut"]), t.attrs["best_cut"], t.attrs["wafer_share"]
    return [
        row("scale.her", "HER cuts MoE communication against the flat baseline mapping on 4 wafers (same TP, flow and "
            "rings; both models, 1–256 tokens/device)", f"up to −62% ({ABSTRACT})", cut, lambda x: pct(-x),
            model=f"up to {pct(-cut)} ({where}); median {pct(-t['cut'].median())}", delta=points,
            source=ABSTRACT, reading=reading),
        context("scale.her.named", "the same counting only the phases the paper names (all-reduce, dispatch, "
                "combine)", "up to −62%", f"up to {pct(-t['named_cut'].max())}; median {pct(-t['named_cut'].median())}",
                "without the output reduction", reading=reading),
        context("scale.her.best", "best HER against the best flat baseline, each tuned over TP, flow and rings (per "
                "model and load)", "—", f"change {pct(-best.max())} … {pct(-best.min())}", "tuned on each side",
                reading=reading),
        row("scale.her.wafer", "HER dispatch never crosses a wafer boundary (token source on the expert's own wafer)",
            "0 inter-wafer load", float(share.max()), lambda x: f"{100 * x:.1f}%", kind="property", reading=reading),
    ]


def balance_table() -> pd.DataFrame:
    """NI-Balancer at one expert per die: per tokens per device, skew reading, replica policy and windows."""
    df = chunked.evaluate(figures.at(sweep_config("moentwine_scale_balance"), figures.MOENTWINE))
    return df[df["feasible"]]


def _at(df: pd.DataFrame, **values) -> pd.DataFrame:
    """Rows with the given (dotted-name) values; keyword names use '__' for '.'."""
    mask = np.ones(len(df), dtype=bool)
    for key, v in values.items():
        mask &= (df[key.replace("__", ".")] == v).to_numpy()
    return df[mask].set_index(TAU).sort_index()


def balance_rows(df: pd.DataFrame | None = None) -> list[dict]:
    """Skew at one expert per die (context), NI-Balancer's compute and communication cuts, hiding, replica cost."""
    df = balance_table() if df is None else df
    reading = figures.label(figures.MOENTWINE)
    base = dict(balance__skew_devices=256, balance__migration_windows="all")
    none = _at(df, balance__balancer="none", balance__replica_policy="hot", **base)
    big = int(none.index.max())
    single = _at(df, balance__balancer="none", balance__replica_policy="hot", balance__skew_devices=64,
                 balance__migration_windows="all")["imbalance_before"].iloc[0]
    # the busiest die of a step is the expected maximum over its routing: the expected share (what the Zipf
    # exponent is solved for) at many tokens, above it at few, where routing's noise adds (cost/balance/routing.py)
    rows = [context("scale.skew", "busiest die over mean without balancing, one expert per die", "≈2×",
                    f"{none['imbalance_before'].loc[big]:.2f}× at {big} tokens/device (Zipf s = "
                    f"{none['zipf_s_used'].iloc[0]:.3f}, solved for it; {none['imbalance_before'].iloc[0]:.2f}× at "
                    f"{int(none.index.min())}, where routing's noise adds); the single-wafer reading, 2× at 4 experts "
                    f"per die, gives {single:.2f}× here",
                    "the paper's 2× read on the layout it evaluates (by construction)", reading=reading)]
    for policy, label, kind in (("hot", "replicas for hot experts", "check"),
                                ("fill", "every spare slot filled, as EPLB; follows from the fitted 2×", "property")):
        ni = _at(df, balance__balancer="non-invasive", balance__replica_policy=policy, **base)
        comp = 1 - ni["moe_compute_s"] / none["moe_compute_s"]
        comm = 1 - ni["moe_comm_s"] / none["moe_comm_s"]
        c0, m0 = float(comp.iloc[-1]), float(comm.loc[big])
        hbm = f"; replicas add {1e6 * ni['moe_replica_hbm_s'].iloc[-1]:.0f} µs of HBM reads per layer against " \
              f"{1e6 * ni['moe_balance_saving_s'].loc[big]:.0f} µs of compute saved at {big} tokens/device"
        rows += [
            row(f"scale.ni.compute.{policy}", f"NI-Balancer cuts MoE compute (HER on 4 wafers, one expert per die, "
                f"{label})", f"−54% ({ABSTRACT})", c0, lambda x: pct(-x), kind=kind,
                model=f"{pct(-c0)} (imbalance {ni['imbalance_before'].iloc[-1]:.2f}× → "
                f"{ni['expert_imbalance'].iloc[-1]:.2f}× at {int(ni.index[-1])} tokens/device){hbm}", delta=points, source=ABSTRACT, reading=reading),
            row(f"scale.ni.comm.{policy}", f"NI-Balancer cuts MoE communication ({policy} replicas, {big} "
                "tokens/device: all-to-all bandwidth-bound)", f"−22% ({ABSTRACT})", m0, lambda x: pct(-x),
                model=f"{pct(-m0)} (at 1–{big}: {pct(-comm.max())} … {pct(-comm.min())})",
                delta=points, source=ABSTRACT, reading=reading),
        ]
    return rows + [_hidden_row(df, reading), _replica_cost_row(df, base, reading)]


def _hidden_row(df: pd.DataFrame, reading: str) -> dict:
    """NI-Balancer hides its migration in the communication phases' cold links, at every load (churn as swept)."""
    share = {}
    for windows in ("comm", "all"):
        ni = _at(df, balance__balancer="non-invasive", balance__replica_policy="hot", balance__skew_devices=256,
                 balance__migration_windows=windows)
        share[windows] = ni["migration_hidden_s"] / (ni["migration_total_s"] / 10)
    comm = share["comm"]
    return row("scale.hidden", f"non-invasive migration hidden in the communication phases at every load "
               f"({int(comm.index.min())}–{int(comm.index.max())} tokens/device, churn 0.25)", "nearly all hidden",
               float(comm.min()), lambda x: f"{100 * x:.0f}%",
               model=f"{100 * comm.min():.0f}–{100 * comm.max():.0f}% (least at {int(comm.idxmin())} tokens/device); "
               f"every window of a layer {100 * share['all'].min():.0f}–{100 * share['all'].max():.0f}%",
               source="secondary digests", reading=reading)


def _replica_cost_row(df: pd.DataFrame, base: dict, reading: str) -> dict:
    """Replicas cost HBM reads: in memory-bound decode they slow the MoE block down."""
    vals = [_at(df, balance__balancer=b, balance__replica_policy=p, **base)[BLOCK] for b, p in
            (("none", "hot"), ("non-invasive", "hot"), ("non-invasive", "fill"))]
    lo, hi = int(vals[0].index.min()), int(vals[0].index.max())
    text = " / ".join(f"{pct(v.loc[t] / vals[0].loc[t] - 1)}" for t in (lo, hi) for v in vals[1:])
    return context("scale.replica_cost", f"replicas against their HBM reads: per-device MoE-block throughput with hot "
                   f"/ fill replicas at {lo} and {hi} tokens/device", "—", text,
                   "memory-bound decode pays for every copy", reading=reading)


def scale_rows() -> list[dict]:
    """The 4-wafer rows of MoEntwine's own mechanisms: HER and the balancer at one expert per die (the comparison
    with NVL72, validate/versus.py, is the family's next part)."""
    return her_rows() + balance_rows()
