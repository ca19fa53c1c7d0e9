"""Paper-ready plots of a results folder: asks every figure family for its figures and saves them (PNG and SVG
by default, PDF on request, each with its caption beside it as <stem>.txt), or hands them to a caller (the HTML
report) without writing files.

Each family is built from its own view of the results, holding only the columns it declares in `COLUMNS`
(names or patterns; a family without the declaration sees every column), so memory follows what one
family draws, not the whole sweep.
"""

from __future__ import annotations

import difflib
import fnmatch
from pathlib import Path

from matplotlib import rc_context

from wsemoe.errors import ConfigError
from wsemoe.report.figures import fig_balance, fig_bta, fig_comm, fig_memory, fig_mesh, fig_pareto, fig_sensitivity, fig_versus
from wsemoe.report.figures.claims import caption_of
from wsemoe.report.figures.style import ALL_FORMATS, FORMATS, STYLE, save
from wsemoe.report.figures.view import ResultsView
from wsemoe.sweep import store

# Each family: figures(view) -> {stem: figure, or None when the data does not support it}.
FAMILIES = (fig_pareto, fig_bta, fig_memory, fig_comm, fig_versus, fig_balance, fig_mesh, fig_sensitivity)
DYNAMIC = (*fig_balance.DYNAMIC, *fig_mesh.DYNAMIC)  # stems that carry a value: cleaned by pattern


def family_name(module) -> str:
    """'pareto' for fig_pareto: the name `--only` takes for a whole family."""
    return module.__name__.rsplit(".", 1)[-1].removeprefix("fig_")


def _wanted(only) -> dict:
    """{family: stems to keep, or None for all} for `only` (family names or figure stems; None: everything)."""
    if not only:
        return {f: None for f in FAMILIES}
    names = {family_name(f): f for f in FAMILIES}
    stems = {s: f for f in FAMILIES for s in getattr(f, "STEMS", ())}
    wanted: dict = {}
    for item in only:
        if item in names:
            wanted[names[item]] = None
            continue
        hit = next((f for s, f in stems.items() if fnmatch.fnmatchcase(item, s)), None)
        if hit is None:
            known = sorted([*names, *stems])
            close = difflib.get_close_matches(str(item), known, n=1)
            hint = f"; did you mean '{close[0]}'?" if close else f"; known: {', '.join(known)}"
            raise ConfigError(f"no figure or figure family named '{item}'{hint}", loc=("--only",))
        if hit not in wanted or wanted[hit] is not None:
            wanted[hit] = {*(wanted.get(hit) or ()), item}
    return {f: wanted[f] for f in FAMILIES if f in wanted}


def figures(path, only=None, on_progress=None):
    """(stem, figure or None) of every figure the results support, family by family (each built and
    yielded inside the plot style; a caller saves or renders a figure before asking for the next).
    `on_progress(done, total, family)` hears of each family done."""
    path = Path(path)
    store.load_manifest(path)  # a missing, incomplete or damaged folder fails here, in one line
    wanted = _wanted(only)
    for k, (family, keep) in enumerate(wanted.items()):
        view = ResultsView.load(path, getattr(family, "COLUMNS", None))
        # Local style: callers' matplotlib settings stay untouched; figures take their fonts when built.
        with rc_context(STYLE):
            for stem, fig in family.figures(view).items():
                if keep is None or stem in keep:
                    yield stem, fig
        del view
        if on_progress:
            on_progress(k + 1, len(wanted), family_name(family))


def plot_results(path, only=None, formats=FORMATS, on_progress=None) -> list[Path]:
    """Write every plot the results support (or those `only` names) into <path>/plots/; return the files."""
    path = Path(path)
    formats = tuple(dict.fromkeys(formats or FORMATS))
    for ext in formats:
        if ext not in ALL_FORMATS:
            raise ConfigError(f"unknown format '{ext}'; use {', '.join(ALL_FORMATS)}", loc=("--format",))
    folder = path / "plots"
    written, absent = [], []
    for stem, fig in figures(path, only, on_progress):
        folder.mkdir(exist_ok=True)
        if fig is None:
            absent.append(stem)
        else:
            with rc_context(STYLE):
                written += save(fig, folder, stem, formats, caption_of(fig))
    if folder.is_dir() and not only:
        _clean(folder, absent, {p.stem for p in written})
    return written


def _clean(folder: Path, absent: list[str], produced: set) -> None:
    """Remove plots the data no longer supports (in every format), so none lingers from an earlier run."""
    exts = (*ALL_FORMATS, "txt")
    stale = [folder / f"{s}.{ext}" for s in absent for ext in exts]
    stale += [p for pat in DYNAMIC for ext in exts for p in folder.glob(f"{pat}.{ext}")]
    for p in stale:
        if p.stem not in produced:
            p.unlink(missing_ok=True)
