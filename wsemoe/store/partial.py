"""A sweep's partial run: the hidden folder it fills part by part (under the run lock of store/runlock.py).

The run fills `.<name>.partial-<hash>/` beside the target, marked as ours; each chunk lands as a part
file named by its point range, written under `tmp/` and renamed into place only when whole, with its
row count and SHA-256 recorded first. A lock file beside the target keeps two runs apart. Finishing
checks that the parts tile the sweep exactly, writes the small files, the manifest (with their
checksums) and the ledger, and swaps the folder into place through `store/writer.py`, which replaces
only results that are provably this sweep's (another sweep's with --force).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq

from wsemoe.version import __version__

from wsemoe.store import ledger

from wsemoe.store import partfile

from wsemoe.store import store
from wsemoe.store import manifest as manifest_mod
from wsemoe.store.block import Block, concat_frames
from wsemoe.store.csvfile import csv_text
from wsemoe.store.ownership import PARTIAL_MARKER, check_replaceable
from wsemoe.store.atomic import atomic_bytes, os_errors
from wsemoe.store.writer import fill_folder, swap_in
from wsemoe.store.runlock import RunLock, lock_held  # noqa: F401 (the run's lock, used through this module)

from wsemoe.config import yamlio
from wsemoe.errors import ResultsError, RunError, os_error

MARKER = PARTIAL_MARKER


def _partial_re(name: str):
    return re.compile(rf"^\.{re.escape(name)}\.partial-[0-9a-f]{{16}}$")


def stale_partials(target: Path) -> list[Path]:
    """Hidden partial folders this target's runs left (matched literally, and carrying our marker)."""
    target = Path(target)
    if not target.parent.is_dir():
        return []
    pat = _partial_re(target.name)
    out = []
    for p in target.parent.iterdir():
        if pat.match(p.name) and p.is_dir() and not p.is_symlink():
            try:
                mark = json.loads((p / MARKER).read_text())
            except (OSError, ValueError):
                continue
            if isinstance(mark, dict) and mark.get("target") == target.name:
                out.append(p)
    return out


def part_files(partial: Path, start: int, stop: int) -> tuple[Path, Path, Path]:
    """Part, stats and candidates files of the chunk [start, stop) in a partial folder."""
    name = store.part_name(start, stop)
    return (partial / "points.parquet" / name, partial / "chunks" / f"{name}.json",
            partial / "chunks" / f"{name}.candidates.parquet")


def write_chunk(partial, points: Block, candidates: Block, stats: dict) -> dict:
    """Candidates and stats (with the part's size and checksum) first, the part last: a part present
    with matching stats is whole. Any process that sees the partial folder may call this. Parts are not
    flushed to disk one by one: `--resume` checks each against its recorded checksum, and the manifest
    of the finished folder is."""
    partial = Path(partial)
    part, meta, cand = part_files(partial, stats["start"], stats["stop"])
    data, kept = partfile.to_bytes(points), partfile.to_bytes(candidates)
    stats = {**stats, "file": part.name, "rows": int(len(points)), "bytes": len(data),
             "sha256": hashlib.sha256(data).hexdigest(), "candidates_sha256": hashlib.sha256(kept).hexdigest()}
    stats["stats_sha256"] = _stats_hash(stats)   # the counts a resumed run adds up, as this run wrote them
    tmp = partial / "tmp"
    with os_errors(part, "write a part of the results (finished parts are kept for --resume)"):
        atomic_bytes(cand, kept, tmp, durable=False)
        atomic_bytes(meta, json.dumps(stats).encode(), tmp, durable=False)
        atomic_bytes(part, data, tmp, durable=False)
    return stats


def _stats_hash(stats: dict) -> str:
    """SHA-256 of a chunk's stats (all but this hash itself), in one canonical form."""
    body = {k: v for k, v in stats.items() if k != "stats_sha256"}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


# What a run writes in its partial folder's subfolders, by name: parts, their chunk files, temporary files.
_OURS = {"points.parquet": lambda n: store.part_range(n) is not None,
         "chunks": lambda n: store.part_range(n.removesuffix(".json").removesuffix(".candidates.parquet")) is not None,
         "tmp": lambda n: ".wsemoe-tmp-" in n}


def _our_file(entry: os.DirEntry, led: ledger.Ledger) -> bool:
    """A file at the top of a partial folder that a run wrote: the marker, the ledger, a temporary file by the name
    a run gives it, or a file a finishing run wrote (config.yaml, manifest.json, ...) as its ledger records it."""
    if not entry.is_file(follow_symlinks=False):
        return False
    return (entry.name in (MARKER, ledger.NAME) or ".wsemoe-tmp-" in entry.name
            or ledger.matches(Path(entry.path), led.entry(entry.name)))


def foreign_entry(path: Path) -> str | None:
    """The first entry of a partial folder that wsemoe did not write there ('NOTES.txt', 'chunks/x'), or None:
    ours are the files `_our_file` proves and, in the parts, chunks and temporary folders, regular files by the
    names a run gives them."""
    led = ledger.read(path)
    for top in sorted(os.scandir(path), key=lambda e: e.name):
        if top.name in _OURS and top.is_dir(follow_symlinks=False):
            for f in sorted(os.scandir(top.path), key=lambda e: e.name):
                if not (_OURS[top.name](f.name) and f.is_file(follow_symlinks=False)):
                    return f"{top.name}/{f.name}"
        elif not _our_file(top, led):
            return top.name
    return None


def remove_partial(path: Path) -> bool:
    """Remove a partial folder that holds only what wsemoe wrote there (`foreign_entry`): its entries, then the
    folder. One holding anything else is kept whole, nothing removed: a user's file in it stays with the parts
    beside it, and the folder stays listed. True when it is gone."""
    if foreign_entry(path) is not None:
        return False
    led = ledger.read(path)
    for sub, ours in _OURS.items():
        folder = path / sub
        if folder.is_dir() and not folder.is_symlink():
            for f in os.scandir(folder):
                if ours(f.name) and f.is_file(follow_symlinks=False):
                    os.unlink(f.path)
            with contextlib.suppress(OSError):
                os.rmdir(folder)
    for f in os.scandir(path):
        if f.name != ledger.NAME and _our_file(f, led):
            os.unlink(f.path)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path / ledger.NAME)  # last: until then it proves the files it lists ours
    try:
        os.rmdir(path)
    except OSError:
        return False
    return True


def _unmake(path: Path, subfolders) -> None:
    """Remove a partial folder just made and what its preparation put in it (nothing else is there yet)."""
    for sub in subfolders:
        with contextlib.suppress(OSError):
            os.rmdir(sub)
    with contextlib.suppress(OSError):
        os.unlink(path / MARKER)
    with contextlib.suppress(OSError):
        os.rmdir(path)


class PartialRun:
    """The hidden folder a sweep fills part by part before it becomes results/<name>."""

    def __init__(self, target: Path, config_hash: str, resume: bool):
        self.target = Path(target)
        self.path = self.target.with_name(f".{self.target.name}.partial-{config_hash}")
        self.parts, self.chunks, self.tmp = self.path / "points.parquet", self.path / "chunks", self.path / "tmp"
        with os_errors(self.path, "prepare the run's partial folder"):
            stale = stale_partials(self.target)
            for old in stale:  # ours: other configs' progress, or this one's without --resume
                if (old != self.path or not resume) and not remove_partial(old) and old == self.path:
                    # kept whole for a file of the user's: its old parts must not mix with this run's
                    raise ResultsError(f"holds '{foreign_entry(old)}', which wsemoe did not write, beside an earlier "
                                       "run's parts; move it out first (or continue that run with --resume)",
                                       loc=(str(old),))
            if os.path.islink(self.path) or (os.path.lexists(self.path) and self.path not in stale
                                             and any(os.scandir(self.path))):
                raise ResultsError("exists and is not a partial folder wsemoe made; move it away", loc=(str(self.path),))
            # only a folder kept for --resume is looked into: without it the stale folder was just removed
            stray = foreign_entry(self.path) if resume and self.path in stale else None
            if stray is not None:   # a resumed run would read it as a part of the results
                raise ResultsError(f"holds '{stray}', which wsemoe did not write; move it out first, then --resume",
                                   loc=(str(self.path),))
            made = not os.path.lexists(self.path)
            os.makedirs(self.path, exist_ok=True)
            try:
                atomic_bytes(self.path / MARKER, json.dumps({"target": self.target.name,
                                                             "config_hash": config_hash}).encode(), durable=False)
                for folder in (self.parts, self.chunks, self.tmp):
                    os.makedirs(folder, exist_ok=True)
            except BaseException:
                if made:   # a folder this run made and could not prepare (a name too long, a full disk) goes
                    _unmake(self.path, (self.parts, self.chunks, self.tmp))
                raise
            for f in os.scandir(self.tmp):  # half-written files of a killed run
                if ".wsemoe-tmp-" in f.name and f.is_file(follow_symlinks=False):
                    os.unlink(f.path)

    def _files(self, start: int, stop: int) -> tuple[Path, Path, Path]:
        return part_files(self.path, start, stop)

    def reusable(self) -> list[tuple[int, int]]:
        """Ranges whose part is whole (size and SHA-256 as recorded) and disjoint; the rest is deleted."""
        kept, end = [], -1
        for part in sorted(self.parts.iterdir(), key=lambda p: store.part_range(p.name) or (-1, -1)):
            rng = store.part_range(part.name)
            if rng is None:
                continue  # not a part: never ours to delete (the finished folder would refuse it)
            if rng[0] >= end and self._whole(*rng):
                kept.append(rng)
                end = rng[1]
            else:
                part.unlink()
        wanted = {f"{store.part_name(*r)}{suffix}" for r in kept for suffix in (".json", ".candidates.parquet")}
        for f in self.chunks.iterdir():
            if f.name not in wanted and store.part_range(f.name.removesuffix(".json").removesuffix(".candidates.parquet")):
                f.unlink()
        return kept

    def _whole(self, start: int, stop: int) -> bool:
        part, meta, cand = self._files(start, stop)
        try:
            stats = json.loads(meta.read_text())
            # the part, its Pareto candidates and its counts each as written: a chunk any of them does not match
            # is computed again (a resumed run adds them up into the manifest, which nothing checks after)
            return (isinstance(stats, dict) and cand.is_file() and stats.get("rows") == stop - start
                    and stats.get("stats_sha256") == _stats_hash(stats)
                    and stats.get("bytes") == part.stat().st_size and stats.get("sha256") == store.sha256_of(part)
                    and stats.get("candidates_sha256") == store.sha256_of(cand))
        except (OSError, ValueError, RecursionError):
            return False

    def read_reductions(self, total: int) -> tuple[pd.DataFrame, list[dict]]:
        """All parts' candidate rows and stats, after checking that the parts tile [0, total) exactly."""
        ranges = sorted(r for r in (store.part_range(p.name) for p in self.parts.iterdir()) if r)
        stats, cands, end = [], [], 0
        for start, stop in ranges:
            if start != end:
                raise RunError(f"points {end:,}..{start:,} are missing from the run; rerun with --resume",
                               loc=(str(self.path),))
            part, meta, cand = self._files(start, stop)
            stats.append(json.loads(meta.read_text()))
            cands.append(pq.ParquetFile(cand).read().to_pandas())  # one small file: no dataset discovery
            end = stop
        if end != total or sum(s["rows"] for s in stats) != total:
            raise RunError(f"the run holds {end:,} of {total:,} points; rerun with --resume", loc=(str(self.path),))
        return (concat_frames(cands) if cands else pd.DataFrame()), stats

    def finish(self, config: dict, pareto: pd.DataFrame, manifest: dict, extra_csv: dict | None = None,
               force: bool = False) -> dict:
        """Write the small files, the manifest (with their checksums) and the ledger, and swap the folder
        into place; the target is checked again first, so a file put there during the run is never lost.
        Returns the manifest as readers will read it."""
        name = manifest["name"]
        with os_errors(self.target, "finish the results (finished parts are kept for --resume)"):
            if os.path.isdir(self.target) and any(os.scandir(self.target)):
                check_replaceable(self.target, "sweep", name, force)
            listed = {p["file"] for p in manifest["parts"]}
            for f in os.scandir(self.parts):   # a file put among the parts is the user's: never made part of results
                if f.name not in listed:
                    raise ResultsError(f"holds '{f.name}', which wsemoe did not write, among the run's parts; move it "
                                       "out, then continue with --resume", loc=(str(self.parts),))
            files = {"config.yaml": yamlio.dumps(config).encode(), "pareto.csv": csv_text(pareto, index=True).encode(),
                     **{n: csv_text(f, index=False).encode() for n, f in (extra_csv or {}).items()}}
            records = {n: {"bytes": len(d), "sha256": hashlib.sha256(d).hexdigest()} for n, d in files.items()}
            manifest = {"format": store.FORMAT, "version": __version__, "dependencies": store.dependency_versions(),
                        **manifest, "files": records}
            data = json.dumps(manifest, indent=2).encode()
            written = manifest_mod.parse(data, self.target)  # what readers accept: a bug fails the run, not them
            fill_folder(self.path, {**files, "manifest.json": data}, "sweep", key=name)
            led = ledger.read(self.path)
            led.record("points.parquet", "parts", "sweep")
            atomic_bytes(self.path / ledger.NAME, led.to_bytes())
            for folder in (self.chunks, self.tmp):
                for f in os.scandir(folder):
                    os.unlink(f.path)
                os.rmdir(folder)
            mark = (self.path / MARKER).read_bytes()
            os.unlink(self.path / MARKER)
            try:
                swap_in(self.path, self.target, "sweep", force, key=name)
            except BaseException:
                # Not swapped in (a busy mount point, Ctrl-C): the folder is marked ours again, so `ls --clean`
                # removes it and the next run (`--resume`) takes it up instead of finding it in its way for good.
                if os.path.isdir(self.path) and not os.path.lexists(self.path / MARKER):
                    with contextlib.suppress(OSError):
                        atomic_bytes(self.path / MARKER, mark, durable=False)
                raise
        return written

    def has_parts(self) -> bool:
        """True once any chunk has been written (progress worth keeping for --resume)."""
        return self.parts.is_dir() and any(self.parts.iterdir())

    def discard(self) -> None:
        """Remove the partial folder (a run that failed on its input leaves nothing behind)."""
        with contextlib.suppress(OSError):
            remove_partial(self.path)
