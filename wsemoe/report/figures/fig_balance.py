"""Expert-load balancing figures: per-die expert load before and after balancing, throughput over skew; each title
states what the drawn data show (the busiest die before and after, the best balancer's gain at the most skew)."""

from __future__ import annotations

from collections.abc import Iterator

from types import SimpleNamespace

import numpy as np
import pandas as pd
from matplotlib import colormaps, ticker, transforms
from matplotlib.colors import TwoSlopeNorm
from matplotlib.figure import Figure

from wsemoe.cost import comm
from wsemoe.report.figures.meshdraw import draw_ftd, draw_wafers, mesh_axes
from wsemoe.report.figures.claims import caption
from wsemoe.report.figures.style import DOUBLE, LINESTYLES, MARKERS, PALETTE, heading, outside_legend, pct, single
from wsemoe.report.figures.view import ResultsView
from wsemoe.wording import number

DYNAMIC = ("node_load_*",)  # stems that carry a value: the orchestrator cleans them by pattern
STEMS = ("throughput_vs_skew", *DYNAMIC)
CLAIMS = {"throughput_vs_skew": "Balancing keeps throughput up as expert popularity grows more skewed",
          "node_load_*": "The balancer evens the expert load across dies (busiest die over the mean)"}
COLUMNS = ("tokens_per_s", "expert_imbalance")
NEEDS_AXES = (("balance.balancer",),)  # without it swept it draws nothing


def figures(view: ResultsView) -> Iterator[tuple[str, Figure | None]]:
    """(stem, figure) pairs, each built when asked for; None where the data does not support the figure
    (node-load stems appear only when drawn)."""
    yield "throughput_vs_skew", throughput_vs_skew(view)
    yield from node_loads(view).items()


# ---------------------------------------------------------------- expert load per die

def node_loads(view: ResultsView) -> dict:
    """{node_load_<balancer>: figure} for the first balancer that places replicas (all place them alike)."""
    if "balance.balancer" not in view.axes or not view.cfg:
        return {}
    balancers = [b for b in pd.unique(view.points["balance.balancer"]) if b != "none"]
    if not balancers:
        return {}
    # Every balancer but 'none' places replicas the same way; they differ in migration cost only.
    balancer = "replicate" if "replicate" in balancers else balancers[0]
    df, said = view.slice(keep=("balance.balancer", "balance.zipf_s", "balance.churn"))
    placed = ("balance.spare_slots", "balance.replica_policy", "balance.replica_split", "balance.skew_devices",
              "balance.skew_target")   # these change where replicas go; the rest keep the base config's skew
    row = {k: v for k, v in view.first_row(df).items() if not k.startswith("balance.") or k in placed}
    return {f"node_load_{balancer}": _node_load_figure(view, row, balancer, said)}


def balanced_structures(view: ResultsView, row: dict, balancer: str) -> tuple:
    """(structure without balancing, structure with `balancer`) at the base config's skew."""
    sec = view.sections(row)
    bal, k = sec["balance"], int(sec["model"]["num_experts_per_tok"])
    hist = view.cfg.get("expert_histogram")
    keys = [comm.balance_key(SimpleNamespace(**{**bal, "balancer": b}),
                             (bal["zipf_s"], bal["seed"], bal["spare_slots"], bal.get("skew_target"),
                              bal.get("skew_devices")), hist, k) for b in ("none", balancer)]
    return view.build(row, keys[0]), view.build(row, keys[1])


def _node_load_figure(view: ResultsView, row: dict, balancer: str, said: str) -> Figure:
    before, after = balanced_structures(view, row, balancer)
    bal, pl = view.sections(row)["balance"], before.placement
    maps = [s.node_load.reshape(pl.rows, pl.cols) / s.node_load.mean() for s in (before, after)]
    vmax = max(1.05, max(float(m.max()) for m in maps))
    # Centred on the mean load: white = balanced, red = busier than the mean, blue = idler.
    norm = TwoSlopeNorm(vcenter=1.0, vmin=0.0, vmax=vmax)
    fig = Figure(figsize=(DOUBLE[0] * 0.85, 4.9), layout="constrained")
    fig.get_layout_engine().set(h_pad=0.06)  # air between the figure title and the two-line panel titles
    axes = fig.subplots(1, 2)
    titles = ["no balancing", f"{balancer}, +{bal['spare_slots']} spare expert slots per die"]
    for ax, m, s, title, when in zip(axes, maps, (before, after), titles, ("before", "after")):
        mesh_axes(ax, pl.rows, pl.cols)
        im = ax.imshow(m, cmap=colormaps["RdBu_r"], norm=norm, extent=(-0.5, pl.cols - 0.5, pl.rows - 0.5, -0.5),
                       zorder=0)
        im.set_gid(f"node-load-{when}")  # lets tests read the drawn maps back
        draw_wafers(ax, s.layout)
        draw_ftd(ax, pl)
        _cell_labels(ax, m, norm)
        ax.set_title(f"{title}\nimbalance (busiest die / mean) {s.expert_imbalance:.2f}×")
    cb = fig.colorbar(im, ax=axes, location="right", shrink=0.85, pad=0.02)
    cb.set_label("expert load per die (× mean load)")
    zipf = bal["distribution"] == "zipf"
    solved = (f"{before.zipf_s:.3f}, solved for {number(bal['skew_target'])}× on "
              f"{bal.get('skew_devices') or pl.num_nodes} devices" if bal.get("skew_target") else number(bal["zipf_s"]))
    skew = f"Zipf s = {solved} (seed {bal['seed']})" if zipf else f"{bal['distribution']} popularity"
    heading(fig, f"{view.name}: {_load_headline(balancer, before.expert_imbalance, after.expert_imbalance)} at {skew}",
            view.subtitle(", ".join(p for p in (view.context(row), f"TP {pl.tp}", said) if p)))
    fig.supxlabel("token copies each die's experts receive, over the mean; dashed: FTD tiles"
                  + ("; solid: wafer boundaries" if before.layout.wafers != (1, 1) else "")
                  + "; non-invasive and stop-the-world place replicas alike", fontsize=8.5)
    a, b = before.expert_imbalance, after.expert_imbalance
    verdict = (f"With {balancer} and {bal['spare_slots']} spare slots per die the busiest die's load falls from "
               f"{a:.2f}× to {b:.2f}× the mean" if b < a else
               f"With {balancer} the busiest die's load does not fall ({a:.2f}× → {b:.2f}× the mean): the claim does "
               "not hold here")
    return caption(fig, CLAIMS["node_load_*"], verdict + ".")


def _load_headline(balancer: str, before: float, after: float) -> str:
    """The title's finding, from the two maps drawn: the busiest die's load over the mean without balancing and
    with ('replicate takes the busiest die from 2.12× to 1.01× the mean load')."""
    if after < before:
        return f"{balancer} takes the busiest die from {before:.2f}× to {after:.2f}× the mean load"
    return f"{balancer} leaves the busiest die at {after:.2f}× the mean load (unbalanced {before:.2f}×)"


def _cell_labels(ax, m: np.ndarray, norm) -> None:
    """The value in every cell (a colour alone is hard to read back), white on saturated cells."""
    rows, cols = m.shape
    if rows * cols > 256:
        return
    size = min(7.0, 60 / max(rows, cols))
    for (r, c), v in np.ndenumerate(m):
        dark = abs(float(norm(v)) - 0.5) > 0.32
        ax.text(c, r, f"{v:.2f}", ha="center", va="center", fontsize=size, color="white" if dark else "0.1",
                in_layout=False)  # inside the axes; measuring every label only slows the layout


# ---------------------------------------------------------------- throughput over skew

def throughput_vs_skew(view: ResultsView) -> Figure | None:
    col = "tokens_per_s"
    if not all(a in view.axes for a in ("balance.balancer", "balance.zipf_s")) or not view.has(col):
        return None
    df, said = view.slice(keep=("balance.balancer", "balance.zipf_s"))
    if df.empty:
        return None
    fig, ax = single(f"{view.name}: {_skew_headline(df, col)}", subtitle=view.subtitle(
        ", ".join(p for p in (view.context(view.first_row(df)), said) if p), drawn="each point: one design point"))
    for i, (b, sub) in enumerate(df.groupby("balance.balancer", sort=False)):
        sub = sub.sort_values("balance.zipf_s")
        ax.plot(sub["balance.zipf_s"], sub[col], ls=LINESTYLES[i % 4], marker=MARKERS[i % len(MARKERS)],
                ms=9 - 1.5 * i, mfc="none", mew=1.4, lw=1.5, color=PALETTE[i % len(PALETTE)], label=b)
        if b == "none" and "expert_imbalance" in sub:
            _imbalance_labels(ax, sub, PALETTE[i % len(PALETTE)])
    xs = np.sort(pd.unique(df["balance.zipf_s"]))
    ax.set_xticks(xs, [number(x) for x in xs])
    ax.set_xlim(xs[0] - 0.08 * (np.ptp(xs) or 1), xs[-1] + 0.08 * (np.ptp(xs) or 1))
    ax.set_ylim(0, float(df[col].max()) * 1.12)  # from zero: the drop under skew is not exaggerated
    ax.yaxis.set_major_formatter(ticker.EngFormatter(sep=""))
    ax.set_xlabel("Zipf exponent s of expert popularity (0 = uniform)")
    ax.set_ylabel("throughput (tokens/s)")
    outside_legend(fig, most=4, frameon=False, title="balancer")
    return caption(fig, CLAIMS["throughput_vs_skew"], _skew_verdict(df, col))


def _skew_headline(df: pd.DataFrame, col: str) -> str:
    """The title's finding, from the lines drawn: at the most skewed popularity the fastest balancer against none,
    and what no balancing loses from the least skewed ('at s = 0.6 replicate is +57% over no balancing; none
    falls 36% from s = 0'); the best of each balancer's points at an s, as the lines' tops show."""
    s_max, s_min = df["balance.zipf_s"].max(), df["balance.zipf_s"].min()
    at = df[df["balance.zipf_s"] == s_max].groupby("balance.balancer", sort=False)[col].max()
    lo = df[df["balance.zipf_s"] == s_min].groupby("balance.balancer", sort=False)[col].max()
    best = at.idxmax()
    if "none" not in at:
        return f"at s = {number(s_max)} {best} is fastest ({at[best]:.3g} tokens/s)"
    text = (f"at s = {number(s_max)} {best} is {pct(at[best] / at['none'] - 1)} over no balancing" if best != "none"
            else f"at s = {number(s_max)} no balancer beats none")
    if s_max != s_min and "none" in lo:
        r = at["none"] / lo["none"]
        text += (f"; none falls {100 * (1 - r):.0f}%" if r < 1 else f"; none changes {pct(r - 1)}") + \
            f" from s = {number(s_min)}"
    return text


def _skew_verdict(df: pd.DataFrame, col: str) -> str:
    """Each balancer's throughput at the most skewed popularity against no balancing there, and its own loss
    from the least to the most skewed."""
    s_max, s_min = df["balance.zipf_s"].max(), df["balance.zipf_s"].min()
    at = df[df["balance.zipf_s"] == s_max].groupby("balance.balancer", sort=False)[col].max()
    lo = df[df["balance.zipf_s"] == s_min].groupby("balance.balancer", sort=False)[col].max()
    if "none" not in at:
        return f"At s = {number(s_max)}: " + "; ".join(f"{b} {v:.4g} tokens/s" for b, v in at.items()) + "."
    parts = [f"{b}: {pct(v / at['none'] - 1)} against none, {pct(v / lo[b] - 1)} from s = {number(s_min)}"
             for b, v in at.items() if b != "none" and b in lo]
    worse = [b for b, v in at.items() if b != "none" and v < at["none"]]
    return (f"At the most skewed popularity (s = {number(s_max)}): " + "; ".join(parts)
            + (f". Balancing with {', '.join(worse)} is slower than none there: the claim does not hold for it"
               if worse else "") + ".")


def _imbalance_labels(ax, sub: pd.DataFrame, color) -> None:
    """A row of labels near the bottom, under each s: clear of every line, whatever the data."""
    row = transforms.blended_transform_factory(ax.transData, ax.transAxes)
    for s, imb in zip(sub["balance.zipf_s"], sub["expert_imbalance"]):
        ax.text(s, 0.04, f"{imb:.2f}×", transform=row, ha="center", va="bottom", fontsize=8.5, color=color)
    ax.text(0.5, 0.11, "imbalance without balancing (busiest die's expert load / mean):", transform=ax.transAxes,
            ha="center", va="bottom", fontsize=8.5, color=color)
