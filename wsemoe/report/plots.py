"""Paper-ready PNG and SVG plots of a results folder: asks every figure family for its figures and saves them."""

from __future__ import annotations

from pathlib import Path

from matplotlib import rc_context

from wsemoe.report import fig_balance, fig_bta, fig_comm, fig_memory, fig_mesh, fig_pareto, fig_sensitivity, fig_versus
from wsemoe.report.style import FORMATS, STYLE, save
from wsemoe.report.view import ResultsView

# Each family: figures(view) -> {stem: figure, or None when the data does not support it}.
FAMILIES = (fig_pareto, fig_bta, fig_memory, fig_comm, fig_versus, fig_balance, fig_mesh, fig_sensitivity)
DYNAMIC = (*fig_balance.DYNAMIC, *fig_mesh.DYNAMIC)  # stems that carry a value: cleaned by pattern


def plot_results(path) -> list[Path]:
    """Write every plot the results support as PNG and SVG into <path>/plots/; return the written files."""
    path = Path(path)
    view = ResultsView.load(path)
    folder = path / "plots"
    folder.mkdir(exist_ok=True)
    written, absent = [], []
    # Local style: callers' matplotlib settings stay untouched. Figures take their fonts when built, so
    # they are built and saved inside it, one family at a time.
    with rc_context(STYLE):
        for family in FAMILIES:
            for stem, fig in family.figures(view).items():
                if fig is None:
                    absent.append(stem)
                else:
                    written += save(fig, folder, stem)
    _clean(folder, absent, {p.name for p in written})
    return written


def _clean(folder: Path, absent: list[str], keep: set) -> None:
    """Remove plots the data no longer supports, so none lingers from an earlier run."""
    stale = [folder / f"{s}.{ext}" for s in absent for ext in FORMATS]
    stale += [p for pat in DYNAMIC for ext in FORMATS for p in folder.glob(f"{pat}.{ext}")]
    for p in stale:
        if p.name not in keep:
            p.unlink(missing_ok=True)
