"""What a figure claims and whether its data bear the claim out: every figure family declares the claim of
each figure (`CLAIMS`), and each figure carries a caption that leads with the finding — what its data say,
where the claim holds and where it does not — and then names the claim it tests (a caption that opened with
the claim and then said the data contradict it read as the claim).

The report shows the caption under the figure; `wsemoe plot` writes it beside the image (`<stem>.txt`).
"""

from __future__ import annotations

import fnmatch

import numpy as np
from matplotlib.figure import Figure

from wsemoe.errors import printable
from wsemoe.report.figures.style import pct


TESTED = "Claim tested: "  # what precedes the claim after the finding


def caption(fig: Figure | None, claim: str, verdict: str) -> Figure | None:
    """Attach the caption (what the data say, then the claim they test) to a figure; returns the figure."""
    if fig is not None:  # names from files reach it: control characters shown escaped, as everywhere
        finding = verdict.strip()  # not capitalised: it may open with a symbol (k = 8) or a preset name
        fig.wsemoe_claim = printable(claim.rstrip("."))
        fig.wsemoe_caption = printable(f"{finding} {TESTED}{claim.rstrip('.')}.".strip())
    return fig


def finding_of(fig: Figure) -> str:
    """A figure's caption without the claim it tests (its finding)."""
    return caption_of(fig).rpartition(f" {TESTED}")[0] or caption_of(fig)


def tested_claim(fig: Figure) -> str:
    """The claim a figure's caption tests ('' for none)."""
    return getattr(fig, "wsemoe_claim", "")


def caption_of(fig: Figure) -> str:
    """The caption a figure module attached ('' for none)."""
    return getattr(fig, "wsemoe_caption", "")


def claim_of(module, stem: str) -> str:
    """The claim a family declares for a figure stem (patterns such as link_heatmap_* match)."""
    claims = getattr(module, "CLAIMS", {})
    return next((c for pat, c in claims.items() if fnmatch.fnmatchcase(stem, pat)), "")


def listing(items: list[str]) -> str:
    """'a', 'a and b', 'a, b and c'; 'a, x; b, y; and c, z' when an item holds a comma (a label 'model, B 1'
    or a value '1,883'): parted by commas alone, a name and its value read as two items."""
    items = [str(i) for i in items]
    if len(items) > 2 and any("," in i for i in items):
        return "; ".join(items[:-1]) + "; and " + items[-1]
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1] if items else ""


def parted(items: list[str]) -> str:
    """Items joined by ', ', or by '; ' when one holds a comma or a semicolon itself."""
    items = [str(i) for i in items]
    return ("; " if any("," in i or ";" in i for i in items) else ", ").join(items)


def changes(values) -> str:
    """'−7%' or '−16% … +8%': the span of relative changes (fractions), signed."""
    v = np.asarray([x for x in values if np.isfinite(x)], dtype=float)
    if not len(v):
        return "–"
    lo, hi = float(v.min()), float(v.max())
    return pct(lo) if np.isclose(lo, hi) else f"{pct(lo)} … {pct(hi)}"


def where(labels: list[str], holds, yes: str, no: str, values=None) -> str:
    """'<yes> at every TP', or '<yes> at TP 8 (−17%) and TP 16; <no> at TP 1 (+0%)': where a per-slice verdict
    holds and where not (each slice with its value when given); when it holds nowhere, the text says the data
    do not bear the claim out."""
    holds = [bool(h) for h in holds]
    shown = [f"{lab} ({v})" if values is not None else str(lab) for lab, v in zip(labels, values or labels)]
    good = [s for s, h in zip(shown, holds) if h]
    bad = [s for s, h in zip(shown, holds) if not h]
    listed = [f"{lab}: {v}" for lab, v in zip(labels, values)] if values is not None else []
    every = f"at every {labels_kind(labels)}" + (f" ({parted(listed)})" if listed else "")
    if not bad:
        return f"{yes} {every}" if len(good) > 1 else f"{yes} at {good[0]}" if good else ""
    if not good:
        return (f"{no} {every}" if len(bad) > 1 else f"{no} at {bad[0]}") + ": here the data do not bear the claim out"
    return f"{yes} at {listing(good)}; {no} at {listing(bad)}"


def labels_kind(labels: list[str]) -> str:
    """'TP' for ['TP 1', 'TP 2']: the word the labels share, else 'setting' (the reader's word; 'slice' was ours)."""
    heads = {str(lab).rsplit(" ", 1)[0] for lab in labels}
    head = heads.pop() if len(heads) == 1 and " " in str(labels[0]) else "setting"
    return head if "," not in head else "setting"   # 'm, B 1' and 'm, B 4' share 'm, B', no word for them
