"""What a sweep's readings do to each quantity: its value as configured and at the default readings, its range
over every combination, the readings that flip a comparison, and the reading it hinges on.

Definitions (docs/cost-model.md, Readings):
- a ratio (a comparison's `speedup_vs_<name>`) has a side: ahead (> 1 + TIE), even, or behind (< 1/(1 + TIE));
  a reading flips it when one of its options, every other reading as configured, puts the ratio on another
  side than the configured sweep's; `flipped` counts the combinations on another side, and a combination where a
  side has no feasible point is `undefined`, counted apart (it is on no side);
- the main effect of a reading is the spread of its marginal means over the full factorial: for each option,
  the mean over every combination that has it, of log(value) for positive quantities (a factor, shown ×) or of
  the value otherwise; the largest main effect names the reading the quantity hinges on;
- where the factorial is too large to run (readings.MAX_COMBINATIONS), the design is one reading at a time: the
  range is over the configured sweep and each reading moved alone, a reading's effect the spread of those runs'
  values (the configured sweep's at its configured option), and no interaction is seen.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from wsemoe.sweep.compare import AT_END
from wsemoe.wording import count, number, span

TIE = 0.005  # ratios within 0.5% of 1 read "1.00×": neither side is ahead
RATIO = "speedup_vs_"


def is_ratio(quantity: str) -> bool:
    """A comparison's ratio: a sweep's speedup_vs_<name>, or a cross-run 'b/a:metric'."""
    return quantity.startswith(RATIO) or "/" in quantity


def side(x: float) -> str:
    """'ahead', 'even' or 'behind' of a ratio; '' when undefined."""
    if not np.isfinite(x):
        return ""
    return "ahead" if x > 1 + TIE else "behind" if x < 1 / (1 + TIE) else "even"


def _effects(sub: pd.DataFrame, names: list[str], logscale: bool) -> dict[str, float]:
    """Main effect of each reading over the factorial rows `sub` (columns: readings, value)."""
    y = np.log(sub["value"]) if logscale else sub["value"]
    out = {}
    for n in names:
        means = y.groupby(sub[n].astype(str)).mean()
        out[n] = float(means.max() - means.min()) if len(means) > 1 else 0.0
    return out


def population(runs: pd.DataFrame) -> pd.Series:
    """Which runs a quantity's range is over: the full factorial's combinations, or where the design is one
    reading at a time (no combination run), the configured sweep and each reading alone."""
    screened = not (runs["role"] == "combination").any()
    return runs["role"].isin(("configured", "alone")) if screened else runs["role"] == "combination"


def screened(result) -> bool:
    """Whether a readings result is one reading at a time (its factorial too large to run)."""
    return not (result.runs["role"] == "combination").any() and bool(result.varied)


def runs_word(result, n: int) -> str:
    """'36 combinations', or '15 runs one reading at a time' where the factorial was too large to run."""
    if screened(result):
        return f"{count(n, 'run')} one reading at a time"
    return count(n, "combination")


def _screen_effects(d: pd.DataFrame, names: list[str], logscale: bool) -> dict[str, float]:
    """One reading at a time: each reading's spread over the configured run and its own alone runs."""
    conf = d[d["role"] == "configured"]
    out = {}
    for n in names:
        own = pd.concat([conf, d[(d["role"] == "alone") & d["label"].str.startswith(f"{n}=")]])
        own = own[np.isfinite(own["value"])]
        out.update(_effects(own, [n], logscale) if len(own) else {n: 0.0})
    return out


def summarize(result) -> pd.DataFrame:
    """One row per quantity and group (see the module docstring for each column's meaning)."""
    runs, values, names = result.runs, result.values, result.varied
    defaults = {s["name"]: s["default"] for s in result.meta["readings"]}
    merged = values.merge(runs, on="run")
    fact = merged[population(merged)]
    screen = screened(result)
    rows = []
    facts = dict(iter(fact.groupby(["quantity", "group"], sort=False)))   # one pass, not one filter per group
    for (q, g), d in merged.groupby(["quantity", "group"], sort=False):
        conf = d.loc[d["role"] == "configured", "value"]
        conf = float(conf.iloc[0]) if len(conf) else math.nan
        f = facts.get((q, g), fact.iloc[:0])
        ok = f[np.isfinite(f["value"])]
        dflt = ok
        for n in names:
            dflt = dflt[dflt[n].astype(str) == str(defaults[n])]
        logscale = bool(len(ok)) and bool((ok["value"] > 0).all())
        eff = ({} if not (len(ok) and names) else _screen_effects(d, names, logscale) if screen
               else _effects(ok, names, logscale))
        small = math.log1p(TIE) if logscale else 1e-12  # an effect below the tie band names no hinge
        hinge = max(eff, key=eff.get) if eff and max(eff.values()) > small else ""
        row = {"quantity": q, "group": g, "configured": conf,
               "default": float(dflt["value"].iloc[0]) if len(dflt) else math.nan,
               "low": float(ok["value"].min()) if len(ok) else math.nan,
               "high": float(ok["value"].max()) if len(ok) else math.nan,
               "combinations": len(f), "undefined": int(len(f) - len(ok)),
               "hinge": hinge, "effect": _factor(max(eff.values()), logscale) if eff else math.nan,
               "log_effect": logscale,
               "effects": "; ".join(f"{n} {_shown(e, logscale)}" for n, e in sorted(eff.items(), key=lambda kv: -kv[1])),
               "flips": "", "flipped": 0}
        if is_ratio(q):
            ref = side(conf)
            alone = d[d["role"] == "alone"]
            row["flips"] = "; ".join(f"{lab} ({ratio(v)}, {side(v) or 'undefined'})"
                                     for lab, v in zip(alone["label"], alone["value"]) if side(v) != ref)
            row["flipped"] = int(sum(side(v) not in (ref, "") for v in f["value"]))   # undefined: counted apart
        rows.append(row)
    return pd.DataFrame(rows)


def _factor(effect: float, logscale: bool) -> float:
    """A main effect as shown: a factor for log-scale quantities, a difference otherwise."""
    return math.exp(effect) if logscale else effect


def _shown(effect: float, logscale: bool) -> str:
    return f"{math.exp(effect):.3g}×" if logscale else f"{effect:.3g}"


def ends(result) -> pd.DataFrame:
    """Where a side's best sits at the largest value a tuned axis sweeps, by the one tie rule
    (`compare.nearest_interior`): one row per run, group, side ('best', 'baseline') and axis where the stored
    `<side>_reach_<axis>` (the reach of the design tied with the best nearest the interior) is 1; `legacy` rows are
    of results stored before that quantity was, read as they were then: the tie-break's pick (`<side>_<axis>`)
    at the axis's largest value, which may name an end an interior design ties."""
    cmp = result.meta.get("comparison") or {}
    merged = result.values.merge(result.runs, on="run")
    legacy = "ends" not in cmp   # stored before the reach was: every side read by its tie-break's pick
    extents = {s: e for s, e in (cmp.get("extents") or {}).items() if e["count"] >= 3}
    sides = {side: extents if legacy else cmp["ends"].get(side, {}) for side in ("baseline", "best")}
    parts = []
    for short in dict.fromkeys([*extents, *sides["baseline"], *sides["best"]]):   # an axis's sides together
        for side, axes in sides.items():
            if short not in axes:
                continue
            top = float(axes[short]["max"])
            d = merged[merged["quantity"] == (f"{side}_{short}" if legacy else f"{side}_reach_{short}")]
            hit = d[np.isclose(d["value"], top)] if legacy else d[d["value"] >= AT_END]
            parts.append(hit.assign(side=side, short=short, axis=axes[short]["axis"], top=top, legacy=legacy))
    cols = [*merged.columns, "side", "short", "axis", "top", "legacy"]
    return pd.concat(parts, ignore_index=True)[cols] if parts else pd.DataFrame(columns=cols)


def edges(result, group: str) -> list[str]:
    """Tuned values that sit at the largest value their axis sweeps, in some run (`ends`: of the designs tied
    with the best, the one nearest the interior): the axis, not the model, may be what caps them (e.g. uniform
    batching's B under a kernel that frees attention memory)."""
    out = []
    merged = result.values.merge(result.runs, on="run")
    hits = ends(result)
    for (sidename, short), hit in hits[hits["group"] == group].groupby(["side", "short"], sort=False):
        d = merged[(merged["quantity"] == f"{sidename}_{'reach_' * (not hit['legacy'].iloc[0])}{short}")
                   & (merged["group"] == group)]
        # Every run named, the configured and alone runs first, up to three (one label for two runs read as if
        # that one run were all of them).
        labels = [*hit[hit["role"] != "combination"]["label"], *hit[hit["role"] == "combination"]["label"]]
        named = "; ".join(labels[:3]) + (f" and {len(labels) - 3} more" if len(labels) > 3 else "")
        old = ("; read from the tie-break's pick, as stored before the reach of the designs tied with it was: "
               "`wsemoe readings` re-computes it") if hit["legacy"].iloc[0] else ""
        out.append(f"{'candidate' if sidename == 'best' else 'baseline'} {hit['axis'].iloc[0]} at its largest swept "
                   f"value ({number(hit['top'].iloc[0])}) in {len(hit)} of {len(d)} runs ({named}{old})")
    return out


def headline(summary: pd.DataFrame, quantity: str) -> pd.Series | None:
    """The group a comparison's claim is read at: where the configured ratio is furthest from 1."""
    d = summary[summary["quantity"] == quantity]
    d = d[np.isfinite(d["configured"]) & (d["configured"] > 0)]
    if not len(d):
        return None
    return d.loc[np.abs(np.log(d["configured"])).idxmax()]


def statement(result, summary: pd.DataFrame | None = None, quantity: str | None = None) -> list[str]:
    """The robustness of a comparison in one line (and a line per axis edge): value as configured and at the
    default readings, range over the combinations, what flips it, what it hinges on."""
    cmp = result.meta.get("comparison") or {}
    quantity = quantity or cmp.get("quantity")
    summary = summarize(result) if summary is None else summary
    row = headline(summary, quantity) if quantity else None
    if row is None:
        return [f"{quantity or 'the sweep'}: no comparison defined at every reading"] if quantity else []
    n = row["combinations"]
    screen = screened(result)
    groups = summary[summary["quantity"] == quantity]
    if not result.varied:
        states = [s["state"] for s in result.meta["readings"]]
        return _labelled(result, [f"{quantity}: {ratio(row['configured'])} as configured; no reading varies for "
                                  "this sweep (" + ", ".join(f"{states.count(k)} {k}" for k in dict.fromkeys(states))
                                  + ")"])
    where = f" at {row['group']}" if len(groups) > 1 else ""
    fixed = "".join(f", {k}={v} fixed" for k, v in (result.meta.get("fixed") or {}).items())
    text = [f"{quantity}: {ratio(row['configured'])} as configured{where}{fixed}"]
    if at_defaults(result):   # the same run, not merely the same value (flash ties per_head at 1.00× on top-k 8)
        text[0] += " (= the default readings)"
    elif np.isfinite(row["default"]) or not screen:   # one at a time runs the defaults together only as configured
        text.append(f"{ratio(row['default'])} at the default readings")
    text.append(f"{span(ratio(row['low']), ratio(row['high']))} over {runs_word(result, n)} of "
                f"{', '.join(result.varied) or 'no reading'}" + (f" ({row['undefined']} undefined)" if row["undefined"] else "")
                + (f" (the factorial, {result.meta['screened']}, not run: interactions unseen)"
                   if screen and result.meta.get("screened") else ""))
    text.append(f"flips from {side(row['configured']) or 'undefined'} with {row['flips']}" if row["flips"]
                else "no reading alone flips it" + ("" if screen else f" ({row['flipped']} of {n} combinations do)"))
    if row["hinge"]:
        shown = f"{row['effect']:.3g}×" if row["log_effect"] else f"{row['effect']:.3g}"
        text.append(f"hinges on {row['hinge']} ({'effect alone' if screen else 'main effect'} {shown})")
    elsewhere = _elsewhere(summary, quantity, row["group"])
    if elsewhere:
        text.append(f"elsewhere {elsewhere}")
    lines = ["; ".join(text)]
    if len(groups) > 1:
        lines.append(f"{quantity}: candidate ahead in {_ahead(result, quantity)}")
    lines += [f"note: {e}" for e in edges(result, row["group"])]
    return _labelled(result, lines)


def at_defaults(result) -> bool:
    """Whether the configured sweep is the run at the default readings: every varied reading configured at its
    default, or a run at the defaults that is the same config (its key: options that coincide)."""
    runs, defaults = result.runs, {s["name"]: s["default"] for s in result.meta["readings"]}
    conf = runs[runs["role"] == "configured"]
    if not len(conf):
        return False
    if all(str(conf[n].iloc[0]) == str(defaults[n]) for n in result.varied):
        return True
    if "key" not in runs:
        return False
    dflt = runs[runs["role"] != "configured"]
    for n in result.varied:
        dflt = dflt[dflt[n].astype(str) == str(defaults[n])]
    return bool((dflt["key"].astype(str) == str(conf["key"].iloc[0])).any())


def _keys(labels) -> pd.DataFrame:
    """The group labels ('model=deepseek-v3, tokens_per_device=8') as columns, numbers as numbers."""
    rows = [dict(item.split("=", 1) for item in str(g).split(", ") if "=" in item) for g in labels]
    keys = pd.DataFrame(rows, index=list(labels))
    for c in keys:
        num = pd.to_numeric(keys[c], errors="coerce")
        if num.notna().all():
            keys[c] = num
    return keys


def crossovers(result) -> list[str]:
    """Every crossover of each ratio along the load its groups vary (the one definition, sweep/crossing.py), as
    configured and at the default readings (one line when they are the same run), the metric and reading named."""
    from wsemoe.sweep import crossing

    runs, values = result.runs, result.values
    defaults = {s["name"]: s["default"] for s in result.meta["readings"]}
    conf = runs[runs["role"] == "configured"]
    fact = runs[runs["role"] == "combination"]
    for n in result.varied:
        fact = fact[fact[n].astype(str) == str(defaults[n])]
    readings = []
    if len(conf):
        same = len(fact) and fact["key"].iloc[0] == conf["key"].iloc[0]
        readings.append((int(conf["run"].iloc[0]), "as configured" + (" (= the default readings)" if same else "")))
        if len(fact) and not same:
            readings.append((int(fact["run"].iloc[0]), "at the default readings"))
    lines = []
    for run, reading in readings:
        d = values[(values["run"] == run) & values["quantity"].map(is_ratio)
                   & values["quantity"].str.startswith(RATIO)]
        if d.empty:
            continue
        frame = d.pivot_table(index="group", columns="quantity", values="value", aggfunc="first", sort=False)
        keys = _keys(frame.index)
        table = pd.concat([keys, frame], axis=1).reset_index(drop=True)
        lines += crossing.table_lines(table, list(keys.columns), list(frame.columns), reading=reading)
    return _labelled(result, lines)


def what_if(meta: dict) -> str:
    """'' for the sweep's own readings analysis; else what makes it a what-if ('fixed_latency=launch_only set;
    only mla_cache varied'): a reading fixed for every run, or only some of the readings varied."""
    fixed = "; ".join(f"{k}={v}" for k, v in (meta.get("fixed") or {}).items())
    held = [r["name"] for r in meta.get("readings", []) if r.get("state") == "held"]
    varied = meta.get("varied") or []
    return "; ".join(filter(None, [f"{fixed} set for every run" if fixed else "",
                                   f"only {', '.join(varied) or 'no reading'} varied ({', '.join(held)} held)"
                                   if held else ""]))


def _labelled(result, lines: list[str]) -> list[str]:
    """A what-if's lines say so first, wherever they are shown (it is never the sweep's stored answer)."""
    label = what_if(result.meta)
    return [f"what-if ({label}): {line}" for line in lines] if label else lines


NAMED = 3  # groups named per reading that flips the ratio elsewhere; the rest are counted


def _elsewhere(summary: pd.DataFrame, quantity: str, group: str) -> str:
    """Readings that flip the ratio alone in other groups than the headline's: 'x=y flips it at g1, g2', the
    first NAMED groups named and the rest counted ('... and 9 more of 17'; a sweep of 18 groups named them all,
    a paragraph per reading). A group of several keys is bracketed: '(model=a, B=1), (model=a, B=2)'."""
    where: dict[str, list[str]] = {}
    others = summary[(summary["quantity"] == quantity) & (summary["group"] != group)]
    for _, r in others.iterrows():
        for item in filter(None, r["flips"].split("; ")):
            where.setdefault(item.rsplit(" (", 1)[0], []).append(str(r["group"]))
    total = others["group"].nunique()

    def at(groups: list[str]) -> str:
        groups = [f"({g})" if ", " in g else g for g in groups]   # a group of several keys keeps its commas apart
        if len(groups) <= NAMED + 1:
            return ", ".join(groups)
        return f"{', '.join(groups[:NAMED])} and {len(groups) - NAMED} more of the {total} other groups"
    return "; ".join(f"{k} flips it at {at(v)}" for k, v in where.items())


def _ahead(result, quantity: str) -> str:
    """How many groups the candidate is ahead in: as configured, and the fewest and most over the combinations."""
    d = result.values[result.values["quantity"] == quantity].merge(result.runs, on="run")
    count = d.assign(ahead=d["value"].map(side) == "ahead").groupby("run")["ahead"].sum()
    roles = result.runs.set_index("run")["role"]
    conf = int(count[roles[roles == "configured"].index].iloc[0])
    fact = count[roles[population(result.runs).to_numpy()].index]
    groups = d["group"].nunique()
    over = "the runs one reading at a time" if screened(result) else "the combinations"
    span_ = f"; {span(str(int(fact.min())), str(int(fact.max())))} over {over}" if len(fact) else ""
    return f"{conf} of {groups} groups as configured{span_}"


def ratio(x: float) -> str:
    """A ratio as people read it: 1.00×, 0.73×, 18.9×."""
    if not np.isfinite(x):
        return "undefined"
    return f"{x:.2f}×" if abs(x) < 10 else f"{x:.3g}×"
