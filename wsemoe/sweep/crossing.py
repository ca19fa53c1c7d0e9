"""The one definition of a crossover: where a ratio of a candidate over its baseline crosses 1 along a load axis.

Every crossing is found, not only the first: a wafer can be behind at the smallest loads, ahead in the middle and
behind again at the largest. A crossing lies between two swept loads and is placed by linear interpolation of the
ratio on log2 of the load (loads are swept in powers of two); the text always names the metric and the reading the
ratio was computed under, so two commands that print a crossover print the same one, or say why not. `show`,
`compare`, `readings`, `validate`, the figures and the report use this module.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from wsemoe.wording import number, span


@dataclass(frozen=True)
class Crossing:
    """One crossing of 1: the load it is interpolated at, the swept loads either side, and the side the
    candidate moves to ('behind' when the ratio falls below 1 as the load grows, 'ahead' when it rises to 1)."""

    at: float
    low: float
    high: float
    to: str


def crossings(ratio: pd.Series) -> list[Crossing]:
    """Every crossing of 1 of `ratio` (indexed by load, ascending), in order; loads where either side cannot
    run (NaN) are skipped, so a crossing spans the nearest loads both sides ran at."""
    r = ratio.dropna().sort_index()
    x, y = r.index.to_numpy(dtype=float), r.to_numpy(dtype=float)
    out = []
    for i in range(len(y) - 1):
        a, b = y[i], y[i + 1]
        if (a >= 1) == (b >= 1):
            continue
        lx, hx = np.log2(x[i]), np.log2(x[i + 1])
        at = float(2 ** (lx + (a - 1) / (a - b) * (hx - lx))) if a != b else float(x[i + 1])
        out.append(Crossing(at, float(x[i]), float(x[i + 1]), "behind" if a >= 1 else "ahead"))
    return out


def first_behind(ratio: pd.Series) -> float | None:
    """The load of the last crossing to 'behind' after which the candidate stays behind, or None (it never
    ends behind, or is behind at every load)."""
    found = crossings(ratio)
    return found[-1].at if found and found[-1].to == "behind" else None


def _g(x: float) -> str:
    """A load or length where a ratio crosses: 3 digits below 10, else whole and grouped ('98,304')."""
    return number(x, 3) if x < 10 else number(round(x))


def sides(ratio: pd.Series, unit: str = "tokens/device", along: str = "load") -> str:
    """'ahead at 1–64, behind from 72 (between 64 and 128) tokens/device', 'behind at every load (1–256
    tokens/device)', or with several crossings 'behind at 1–1.4, ahead from 1.4 (between 1 and 2), behind from 72
    (...)'. An axis that is no load in tokens (`along`, such as the context) is named before its values:
    'ahead at every seq len (8,192–131,072)', 'ahead at seq len 8,192–65,536, behind from 98,304 (...)'."""
    r = ratio.dropna().sort_index()
    if r.empty:
        return "no load where both sides run"
    loads = r.index.to_numpy(dtype=float)
    span_ = span(_g(loads[0]), _g(loads[-1]))
    found = crossings(r)
    if not found:
        return f"{'ahead' if r.iloc[0] >= 1 else 'behind'} at every {along} ({span_}{f' {unit}' if unit else ''})"
    named = f"{along} " if along != "load" else ""
    parts = [f"{'ahead' if r.iloc[0] >= 1 else 'behind'} at {named}{span(_g(loads[0]), _g(found[0].at))}"]
    parts += [f"{c.to} from {_g(c.at)} (between {_g(c.low)} and {_g(c.high)})" for c in found]
    return ", ".join(parts) + (f" {unit}" if unit else "")


def statement(ratio: pd.Series, metric: str, reading: str, who: str = "", unit: str = "tokens/device",
              along: str = "load") -> str:
    """The crossover in one line, naming what it is of: 'wafer vs nvl72, per_device_tokens_per_s at the default
    readings: ahead at 1–72, behind from 72 (between 64 and 128) tokens/device'."""
    head = ", ".join(filter(None, [who, f"{metric} {reading}".strip()]))
    return f"{head}: {sides(ratio, unit, along)}"


# What a crossover runs along: a load (tokens per device, requests, the batch, the context), never a design
# axis such as top-k or the expert count, along which "ahead from k = 4" would read as a load the system meets.
LOAD_NAMES = ("tokens_per_device", "workload.B", "seq_len", "context", "batch", "concurrency", "requests")


def is_load(column: str) -> bool:
    """Whether a column is a load a crossover can run along."""
    return any(name in column for name in LOAD_NAMES)


def table_lines(df: pd.DataFrame, keys: list[str], ratios: list[str], reading: str = "as configured") -> list[str]:
    """A crossover line per ratio column and per value of the other keys, along the load key (`is_load`) with the
    most values (at least 3, such as tokens per device); none when no key is such an axis."""
    numeric = [k for k in keys if k in df and is_load(k) and pd.api.types.is_numeric_dtype(df[k])
               and df[k].nunique() >= 3]
    if not numeric or df.empty:
        return []
    load = max(numeric, key=lambda k: df[k].nunique())
    name = load.split(".")[-1].replace("_", " ")
    # Tokens per device is a load in its own unit; any other axis (the context, the batch B) is named instead.
    unit, along = (name, "load") if load.endswith("tokens_per_device") else ("", name)
    others = [k for k in keys if k != load and k in df]
    out = []
    for q in ratios:
        parts = df.groupby(others, sort=False, observed=True) if others else [((), df)]
        for key, part in parts:
            key = key if isinstance(key, tuple) else (key,)
            who = ", ".join(f"{k.split('.')[-1]}={v}" for k, v in zip(others, key))
            series = part.set_index(load)[q].astype(float)
            out.append("crossover: " + statement(series, q, reading, who, unit, along))
    return out
