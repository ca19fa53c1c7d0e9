"""Writing a sweep's results without ever touching what is not ours.

A sweep may replace only a folder its manifest identifies as wsemoe results holding nothing else
(and then only the same sweep, or with --force). It fills a hidden partial folder beside the
target, `.<name>.partial-<hash>/`, marked as ours; each chunk lands as a part file named by its
point range, written under `tmp/` and renamed into place only when whole, with its row count and
SHA-256 recorded first. A lock file beside the target keeps two runs apart. Finishing checks that
the parts tile the sweep exactly, writes the manifest last and swaps the folder into place.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq

from wsemoe.version import __version__

from wsemoe.sweep import csvfile, partfile, store
from wsemoe.sweep.block import Block

from wsemoe.config import yamlio
from wsemoe.errors import ResultsError, RunError

MARKER = "wsemoe-partial.json"
MAX_NAME = 200  # file-name bytes left for the target once the partial's suffix is added (255 in all)


def _partial_re(name: str):
    return re.compile(rf"^\.{re.escape(name)}\.partial-[0-9a-f]{{16}}$")


def check_target(target: Path, name: str, force: bool) -> None:
    """Refuse, in one line naming the path, any target a sweep must not replace."""
    target = Path(target)
    if len(target.name.encode()) > MAX_NAME:
        raise ResultsError(f"folder name is {len(target.name.encode())} bytes; at most {MAX_NAME} are supported",
                           loc=(str(target),))
    if target.is_symlink():
        raise ResultsError("is a symbolic link; give the folder it points to, or another path", loc=(str(target),))
    if not target.exists():
        return
    if not target.is_dir():
        raise ResultsError("exists and is not a folder; refusing to replace it", loc=(str(target),))
    here = Path.cwd().resolve()
    if target.resolve() in (here, *here.parents):
        raise ResultsError("is the current folder or one of its parents; refusing to replace it", loc=(str(target),))
    if not any(target.iterdir()):
        return  # an empty folder holds nothing to lose
    man = store.read_manifest(target)
    if man is None:
        raise ResultsError("exists and is not a wsemoe results folder; refusing to replace it "
                           "(choose another -o, or remove it yourself)", loc=(str(target),))
    foreign = store.foreign_entries(target)
    if foreign:
        raise ResultsError(f"holds '{foreign[0]}', which wsemoe did not write; refusing to replace it "
                           "(move it out first)", loc=(str(target),))
    if man.get("name") != name and not force:
        raise ResultsError(f"holds results of sweep '{man.get('name')}'; pass --force to replace them",
                           loc=(str(target),))
    _check_removable(target)


def _check_removable(target: Path) -> None:
    """Every folder we would delete must be writable, or the old results would linger half-removed."""
    for folder in [target, *(p for p in target.rglob("*") if p.is_dir() and not p.is_symlink())]:
        if not os.access(folder, os.W_OK | os.X_OK):
            raise ResultsError("results folder is not writable; cannot replace it", loc=(str(folder),))


class RunLock:
    """An exclusive lock on `.<name>.lock` beside the target, for the whole run (removed after)."""

    def __init__(self, target: Path):
        self.target = Path(target)
        self.path = self.target.with_name(f".{self.target.name}.lock")
        self.fd = None

    def __enter__(self):
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            # The holder before us may have removed the file after we opened it: lock the live one.
            if os.fstat(fd).st_ino != os.stat(self.path).st_ino:
                raise BlockingIOError
        except (BlockingIOError, FileNotFoundError):
            os.close(fd)
            raise RunError("another run is writing these results; wait for it to finish",
                           loc=(str(self.path.with_name(self.path.name[1:-5])),)) from None
        os.write(fd, str(os.getpid()).encode())
        self.fd = fd
        return self

    def __exit__(self, *exc):
        self.path.unlink(missing_ok=True)
        os.close(self.fd)
        return False


def lock_held(target: Path) -> bool:
    """True while a run holds the lock of `target` (its partial folder is in use, not stale)."""
    path = Path(target).with_name(f".{Path(target).name}.lock")
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False  # no lock file: no run
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing releases a lock we took
    return False


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
    with matching stats is whole. Any process that sees the partial folder may call this."""
    partial = Path(partial)
    part, meta, cand = part_files(partial, stats["start"], stats["stop"])
    data = partfile.to_bytes(points)
    stats = {**stats, "file": part.name, "rows": int(len(points)), "bytes": len(data),
             "sha256": hashlib.sha256(data).hexdigest()}
    tmp = partial / "tmp"
    _atomic_bytes(cand, partfile.to_bytes(candidates), tmp)
    _atomic_bytes(meta, json.dumps(stats).encode(), tmp)
    _atomic_bytes(part, data, tmp)
    return stats


def _atomic_bytes(path: Path, data: bytes, tmp_dir: Path) -> None:
    """Write through a temp file in `tmp_dir` (same file system), then rename into place."""
    tmp = tmp_dir / f"{path.name}.{os.getpid()}"
    tmp.write_bytes(data)
    os.replace(tmp, path)


class PartialRun:
    """The hidden folder a sweep fills part by part before it becomes results/<name>."""

    def __init__(self, target: Path, config_hash: str, resume: bool):
        self.target = Path(target)
        self.path = self.target.with_name(f".{self.target.name}.partial-{config_hash}")
        self.parts, self.chunks, self.tmp = self.path / "points.parquet", self.path / "chunks", self.path / "tmp"
        for old in stale_partials(self.target):  # ours: other configs' progress, or this one's without --resume
            if old != self.path or not resume:
                shutil.rmtree(old)
        for folder in (self.parts, self.chunks):
            folder.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(self.tmp, ignore_errors=True)  # half-written files of a killed run
        self.tmp.mkdir()
        (self.path / MARKER).write_text(json.dumps({"target": self.target.name, "config_hash": config_hash}))

    def _files(self, start: int, stop: int) -> tuple[Path, Path, Path]:
        return part_files(self.path, start, stop)

    def reusable(self) -> list[tuple[int, int]]:
        """Ranges whose part is whole (size and SHA-256 as recorded) and disjoint; the rest is deleted."""
        kept, end = [], -1
        for part in sorted(self.parts.iterdir(), key=lambda p: store.part_range(p.name) or (-1, -1)):
            rng = store.part_range(part.name)
            ok = rng is not None and rng[0] >= end and self._whole(*rng)
            if ok:
                kept.append(rng)
                end = rng[1]
            else:
                part.unlink()
        wanted = {f"{store.part_name(*r)}{suffix}" for r in kept for suffix in (".json", ".candidates.parquet")}
        for f in self.chunks.iterdir():
            if f.name not in wanted:
                f.unlink()
        return kept

    def _whole(self, start: int, stop: int) -> bool:
        part, meta, cand = self._files(start, stop)
        try:
            stats = json.loads(meta.read_text())
        except (OSError, ValueError):
            return False
        return (cand.is_file() and stats.get("rows") == stop - start and stats.get("bytes") == part.stat().st_size
                and stats.get("sha256") == store.sha256_of(part))

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
        return (pd.concat(cands) if cands else pd.DataFrame()), stats

    def finish(self, config: dict, pareto: pd.DataFrame, manifest: dict, extra_csv: dict | None = None) -> Path:
        """Write the small files, the manifest last, and swap the folder into place."""
        shutil.rmtree(self.chunks)
        shutil.rmtree(self.tmp)
        (self.path / MARKER).unlink()
        (self.path / "config.yaml").write_text(yamlio.dumps(config))
        csvfile.write_csv(pareto, self.path / "pareto.csv", index=True)
        for name, frame in (extra_csv or {}).items():
            csvfile.write_csv(frame, self.path / name, index=False)
        manifest = {"format": store.FORMAT, "version": __version__, "dependencies": store.dependency_versions(),
                    **manifest}
        self.tmp.mkdir()
        _atomic_bytes(self.path / "manifest.json", json.dumps(manifest, indent=2, default=str).encode(), self.tmp)
        self.tmp.rmdir()
        _swap(self.path, self.target)
        return self.target

    def has_parts(self) -> bool:
        """True once any chunk has been written (progress worth keeping for --resume)."""
        return self.parts.is_dir() and any(self.parts.iterdir())

    def discard(self) -> None:
        """Remove the partial folder (a run that failed on its input leaves nothing behind)."""
        shutil.rmtree(self.path, ignore_errors=True)


def _swap(new: Path, target: Path) -> None:
    """Replace `target` (already checked to be ours) by `new` with renames; the old folder is removed after."""
    old = None
    if target.exists():
        old = target.with_name(f".{target.name}.old-{os.getpid()}")
        os.replace(target, old)
    os.replace(new, target)
    if old is not None:
        shutil.rmtree(old)
