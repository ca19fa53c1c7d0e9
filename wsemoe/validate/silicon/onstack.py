"""How far a comparison's GPU baseline moves on measured serving software: each compared point's baseline (a
decode step on a GPU system) evaluated again by the measured-serving model (cost/gpu/serving.py) with a backend's
fitted stack (wsemoe/presets/gpu/stacks.yaml), on the same hardware figures, layout, batch, context and formats,
as the ratio of its throughput to the node-level model's.

The node-level model prices ideal kernels at the preset's calibration and graph-replayed calls; a fitted stack
adds what the 2025 serving software the measured runs used spends beyond that (host time per layer, per MoE layer
and per running sequence; kernels below peak). The comparison keeps the node-level model on both sides, since the
wafer has no measured stack: charging one side a measured framework and the other none would decide the
comparison by that choice. The ratio says how far the GPU side would move, and is shown beside it, not applied.

A baseline point maps onto the serving model's layout as the node-level model runs it: TP groups of `tp` GPUs
(attention data parallel over the rest), experts over every GPU (EP = the system's GPUs), `B` sequences per TP
group (B = tokens per device x TP / G where the sweep gives tokens per device), one decode worker (no prefill in
its steps) at the point's context.
"""

from __future__ import annotations

import math

import numpy as np

from wsemoe.cost.node import formats
from wsemoe.validate.silicon import fit
from wsemoe.wording import span

METRICS = ("tokens_per_s_per_user", "per_device_tokens_per_s", "tokens_per_s")  # decode rates it can restate


def _value(row, cfg, key: str):
    """A point's setting: its comparison row's column where the sweep varies it, else the sweep's base."""
    v = row.get(key)
    if v is not None and not (isinstance(v, float) and math.isnan(v)):
        return v
    section, _, field = key.partition(".")
    return getattr(getattr(cfg, section), field, None)


def point_ratio(row, cfg, hw, stack: dict, backend: str) -> float | None:
    """The fitted stack's throughput over the node-level model's at one comparison row, for the compared
    metric; None where the point is not a decode step or the baseline did not run."""
    from wsemoe.config import presets

    metric = cfg.compare.metric
    base = row.get(f"baseline_{metric}")
    if metric not in METRICS or base is None or not np.isfinite(base) or base <= 0 \
            or _value(row, cfg, "workload.mode") != "decode":
        return None
    devices = hw.rows * hw.cols
    tp = row.get("baseline_tp")
    tp = float(devices) if tp is None or not np.isfinite(tp) else float(tp)
    B = row.get("baseline_B")  # tuned per side; else the group's (tokens per device first, as the model reads)
    if B is None or not np.isfinite(B):
        tau = _value(row, cfg, "workload.tokens_per_device")
        G = float(_value(row, cfg, "workload.G") or 1)
        B = _value(row, cfg, "workload.B") if tau is None else float(tau) * tp / G
    if B is None:
        return None
    B = float(B)
    model = row.get("model") or cfg.model.name
    m = presets.load_model(str(model)) if isinstance(model, str) else cfg.model
    dp, S = devices / tp, float(_value(row, cfg, "workload.seq_len"))
    res = {"hardware": hw, "model": m, "backend": backend, "isl": S - 1.0, "osl": 2.0,  # mean context S
           "gemm": str(_value(row, cfg, "workload.attn_weight_format")),
           "moe": str(_value(row, cfg, "workload.expert_weight_format")),
           # the point's own attention and cache formats, not a measured run's checkpoint rule (checkpoints.py)
           "attn": str(_value(row, cfg, "workload.attn_weight_format")),
           "kv": str(_value(row, cfg, "workload.kv_format")),
           "workers": {"decode": {"C": B * dp, "tp": tp, "pp": 1.0, "dp": dp, "moe_tp": 1.0,
                                  "moe_ep": float(devices), "gpus": float(devices)}}}
    kv = formats.nbytes(str(_value(row, cfg, "workload.kv_format")))   # the point's cache, not the run rule's
    tpot = float(fit.predict_one(res, "decode", stack, b_kv=kv)["tpot"][0])
    got = {"tokens_per_s_per_user": 1.0 / tpot, "per_device_tokens_per_s": B / (tp * tpot),
           "tokens_per_s": B * dp / tpot}[metric]
    return got / float(base)


def ratios(table, cfg, backend: str) -> list[tuple[dict, float]]:
    """[(the row's group keys, ratio)] over a comparison table's rows whose baseline the stack can restate."""
    from wsemoe.config import presets
    from wsemoe.validate.silicon import stacks

    name = (cfg.compare.baseline or {}).get("hardware") if cfg.compare else None
    if name is None:
        return []
    hw = presets.load_hardware(str(name))
    if hw.topology == "mesh" or getattr(hw, "weight_source", "resident") != "resident":
        return []
    stack = stacks.load()[0][backend]
    grid = {*cfg.axes, *(next(iter(z)) for z in cfg.zip if z)}  # what names a point; a zip by its first column
    keys = [c for c in table.columns if c in grid or c.split(".")[-1] in grid]
    out = []
    for row in table.to_dict("records"):
        r = point_ratio(row, cfg, hw, stack, backend)
        if r is not None and np.isfinite(r):
            out.append(({k: row[k] for k in keys}, r))
    return out


def line(table, cfg, backend: str) -> str | None:
    """One line: the range of the ratios over the compared points, where they are lowest and highest."""
    from wsemoe.validate.silicon import stacks

    got = ratios(table, cfg, backend)
    if not got:
        return None
    vals = np.array([r for _, r in got])
    where = lambda i: ", ".join(f"{k.split('.')[-1]}={v:g}" if isinstance(v, float) else  # noqa: E731
                                f"{k.split('.')[-1]}={v}" for k, v in got[i][0].items())
    lo, hi = int(np.argmin(vals)), int(np.argmax(vals))
    return (f"on measured serving software, the fitted {backend} stack ({stacks.STACKS.name}) runs the "
            f"{cfg.compare.baseline['hardware']} baseline at {span(f'{vals[lo]:.2f}', f'{vals[hi]:.2f}')}× the node-level model's "
            f"{cfg.compare.metric} (median {np.median(vals):.2f}× over {len(vals)} compared points; lowest at "
            f"{where(lo)}, highest at {where(hi)}); not applied: the wafer side has no measured stack")
