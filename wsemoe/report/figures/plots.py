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
from contextlib import ExitStack
from pathlib import Path

from matplotlib import rc_context

from wsemoe.arguments import choice
from wsemoe.errors import ConfigError, ResultsError
from wsemoe.report.figures import (fig_balance, fig_bta, fig_comm, fig_memory, fig_mesh, fig_pareto, fig_readings,
                                   fig_roofline, fig_sensitivity, fig_serving, fig_streaming, fig_versus)
from wsemoe.report.figures import fig_energy
from wsemoe.report.figures.claims import caption_of
from wsemoe.report.figures.render import rendered
from wsemoe.report.figures.style import ALL_FORMATS, FORMATS, STYLE, figure_bytes
from wsemoe.report.figures.view import ResultsView
from wsemoe.store import inventory, ownership, store, writer

# Each family: figures(view) yields (stem, figure, or None when the data does not support it), each figure built
# when asked for, so one renders while the next is built.
FAMILIES = (fig_pareto, fig_bta, fig_memory, fig_roofline, fig_comm, fig_versus, fig_balance, fig_mesh, fig_sensitivity,
            fig_readings, fig_serving, fig_streaming, fig_energy)
DYNAMIC = (*fig_balance.DYNAMIC, *fig_mesh.DYNAMIC, *fig_serving.DYNAMIC)  # stems that carry a value: cleaned by pattern


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
            known = sorted({*names, *stems})   # a family and its figure may share a name (pareto)
            close = difflib.get_close_matches(str(item), known, n=1)
            hint = f"; did you mean '{close[0]}'?" if close else f"; known: {', '.join(known)}"
            raise ConfigError(f"no figure or figure family named '{item}'{hint}", loc=("--only",))
        if hit not in wanted or wanted[hit] is not None:
            wanted[hit] = {*(wanted.get(hit) or ()), item}
    return {f: wanted[f] for f in FAMILIES if f in wanted}


def figures(path, only=None, on_progress=None):
    """(stem, figure or None) of every figure the results support, family by family (each built and
    yielded inside the plot style; a caller saves or renders a figure before asking for the next).
    `on_progress(done, total, family)` hears of each family done.

    A family whose `NEEDS_AXES` (alternatives, each a set of axes that must all be swept) the results lack
    draws nothing, so its points are not read; the columns every view holds, the front, the config and the
    analyses are read once for all."""
    path = Path(path)
    man = store.load_manifest(path)  # a missing, incomplete or damaged folder fails here, in one line
    shared = None  # the columns every view holds, the front, config and analyses: read once for all families
    wanted = _wanted(only)
    for k, (family, keep) in enumerate(wanted.items()):
        needs = getattr(family, "NEEDS_AXES", None)
        if needs is not None and not any(set(alt) <= set(man.get("axes", [])) for alt in needs):
            for stem in getattr(family, "STEMS", ()):
                if "*" not in stem and (keep is None or stem in keep):
                    yield stem, None
        else:
            shared = shared or ResultsView.load(path, columns=())
            view = ResultsView.load(path, getattr(family, "COLUMNS", None), base=shared.points, like=shared)
            # Local style: callers' matplotlib settings stay untouched; figures take their fonts when built.
            with rc_context(STYLE):
                for stem, fig in family.figures(view):
                    # what --only named: a stem, or a family pattern ('link_heatmap_*') its stems match
                    if keep is None or any(fnmatch.fnmatchcase(stem, k) for k in keep):
                        yield stem, fig
            del view
        if on_progress:
            on_progress(k + 1, len(wanted), family_name(family))


def plot_results(path, only=None, formats=FORMATS, force: bool = False, on_progress=None) -> list[Path]:
    """Write every plot the results support (or those `only` names) into <path>/plots/; return the files,
    each figure with its caption beside it as <stem>.txt. Given a results root (a folder of results folders, as
    `wsemoe ls` lists them), every results folder under it.

    plots/ is a folder `wsemoe plot` owns (its ledger lists every figure): figures are replaced only when
    they are the ones it wrote, and a file it did not write is never touched (`store/writer.py`). Every figure
    of every folder is rendered and every target checked before any file is written, so one file it may not
    replace (or one damaged results folder under a root) refuses the run with nothing changed: no plots/ ever
    holds new figures beside old ones."""
    path = Path(path)
    formats = tuple(dict.fromkeys(formats or FORMATS))
    for ext in formats:
        choice(ext, ALL_FORMATS, "--format")
    sources = _sources(path)
    for source in sources:
        store.load_manifest(source)  # a damaged folder is refused before any plots/ is looked at
        writer.make_folder(source / "plots", "plot", create=False)
    written = []
    # All under the results' run locks, so a sweep never replaces the results between two figures.
    with ExitStack() as locks:
        plans = []
        for k, source in enumerate(sources):
            locks.enter_context(writer.results_locked(source / "plots"))
            told = None if on_progress is None else _progress(on_progress, k, len(sources), source.name)
            plans.append((source / "plots", *_render(source, only, formats, told)))
        for _, made, _ in plans:
            for target, _ in made:
                writer.check_file(target, "plot", force)
        for folder, made, absent in plans:
            if made:
                writer.make_folder(folder, "plot")
            here = [writer.write_file(target, data, "plot", force) for target, data in made]
            if folder.is_dir() and not only:
                _clean(folder, absent, {p.stem for p in here})
            written += here
    return written


def _sources(path: Path) -> list[Path]:
    """The results folders a plot of `path` draws: the folder itself, or every one under a results root."""
    if not path.is_dir() or not ownership.holds_results(path):
        return [path]
    found = [r.path for r in inventory.results_in(path)]
    if not found:
        raise ResultsError("a results root with no finished results folder in it (only a sweep's partial folder): "
                          "nothing to plot", loc=(str(path),))
    return found


def _progress(on_progress, k: int, n: int, name: str):
    """`on_progress` of one folder's families as a share of all `n` folders' (the k-th), named by folder."""
    if n == 1:
        return on_progress
    return lambda done, total, family: on_progress(k * total + done, n * total, f"{name}: {family}")


def _render(path: Path, only, formats, on_progress) -> tuple[list, list]:
    """([(file, bytes)] of every figure of one results folder and its caption, [stems the data does not support]):
    each figure rendered (in a forked child when a core is free) while the next is built."""
    folder, made, absent = path / "plots", [], []

    def files(fig) -> tuple[dict, str]:
        return {ext: figure_bytes(fig, ext) for ext in formats}, caption_of(fig)

    for stem, out, _ in rendered(figures(path, only, on_progress), files):
        if out is None:
            absent.append(stem)
            continue
        data, caption = out
        made += [(folder / f"{stem}.{ext}", data[ext]) for ext in formats]
        made += [(folder / f"{stem}.txt", caption + "\n")] if caption else []
    return made, absent


def _clean(folder: Path, absent: list[str], produced: set) -> None:
    """Remove plots the data no longer supports (in every format), so none lingers from an earlier run; only
    figures this command wrote, unchanged, are removed."""
    exts = (*ALL_FORMATS, "txt")
    stale = [folder / f"{s}.{ext}" for s in absent for ext in exts]
    stale += [p for pat in DYNAMIC for ext in exts for p in folder.glob(f"{pat}.{ext}")]
    for p in stale:
        if p.stem not in produced and p.exists():
            writer.remove_file(p, "plot")
