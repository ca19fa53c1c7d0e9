"""The figure of `wsemoe validate --silicon --plot`: predicted against measured TTFT and TPOT of every
modelled run, log-log, one colour per system, with the ×1.5 band around parity."""

from __future__ import annotations

import numpy as np
from matplotlib import rc_context
from matplotlib.figure import Figure

from wsemoe.report.figures.style import DOUBLE, STYLE, cue, heading, outside_legend
from wsemoe.report.figures.textfit import literal

BAND = 1.5  # the dashed lines: predicted within ×1.5 of measured


def figure(rows: list[dict], title: str) -> Figure:
    """Two panels (TTFT, TPOT); `rows` as accuracy.evaluate gives them (runs without a prediction left out)."""
    with rc_context(STYLE):
        return _figure(rows, title)


def _figure(rows, title) -> Figure:
    fig = Figure(figsize=(DOUBLE[0], DOUBLE[1] + 0.6), layout="constrained")
    axes = fig.subplots(1, 2)
    shown = [r for r in rows if r["pred_ttft_ms"] is not None]
    systems = sorted({r["system"] for r in shown})
    for ax, what, unit in ((axes[0], "ttft", "time to first token"), (axes[1], "tpot", "time per output token")):
        lo, hi = np.inf, 0.0
        for j, system in enumerate(systems):
            pts = [(r[f"{what}_ms"], r[f"pred_{what}_ms"]) for r in shown if r["system"] == system]
            x, y = np.array(pts, float).T
            ax.scatter(x, y, s=9, alpha=0.55, **cue(j), linewidths=0, label=literal(system))
            lo, hi = min(lo, x.min(), y.min()), max(hi, x.max(), y.max())
        if hi > 0:
            line = np.array([lo / 1.2, hi * 1.2])
            ax.plot(line, line, color="0.2", lw=0.8)
            for f in (BAND, 1 / BAND):
                ax.plot(line, line * f, color="0.5", lw=0.7, ls="--")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(f"measured {unit} [ms]")
        ax.set_ylabel(f"predicted {unit} [ms]")
        ratio = np.array([r[f"pred_{what}_ms"] / r[f"{what}_ms"] for r in shown], float)
        if ratio.size:  # the panel's title leads with what its points show
            within = np.mean((ratio <= BAND) & (ratio >= 1 / BAND))
            ax.set_title(f"{what.upper()}: {within:.0%} of runs within ×{BAND:g},\nmedian predicted/measured "
                         f"{np.median(ratio):.2f}")
        else:
            ax.set_title(what.upper())
    heading(fig, title, f"{len(shown)} runs modelled of {len(rows)}; solid: parity, dashed: ×{BAND:g} and ÷{BAND:g}")
    if systems:
        handles, labels = axes[0].get_legend_handles_labels()
        outside_legend(fig, handles, labels, markerscale=2)
    return fig
