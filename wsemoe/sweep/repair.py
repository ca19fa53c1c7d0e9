"""`sweep --resume` on finished results whose parts fail their checksums: recompute just those parts.

A grid sweep is deterministic: the part of points [start, stop) evaluated again is the same bytes the
run wrote, and the manifest, front and comparison (reduced from those very bytes) stay valid. So when
the only fault of a results folder is parts that no longer match their SHA-256, each is evaluated
again, checked against the checksum the manifest recorded, and put back in place atomically. Anything
else (another config, a damaged manifest or small file, a search, whose parts can only be replayed
with the whole search, or a recomputed part that comes out different) leaves the folder to a full run.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from wsemoe.errors import ResultsError
from wsemoe.sweep import chunked
from wsemoe.store import partfile
from wsemoe.store import store
from wsemoe.store.atomic import atomic_bytes, os_errors


def repair(cfg, path: Path, config_hash: str) -> tuple[dict, int, int] | None:
    """(manifest, parts recomputed, points recomputed) when damaged parts were recomputed in place; None
    when the folder needs a full run instead (the caller holds the run's lock)."""
    man = store.read_manifest(path)
    if not man or man["config_hash"] != config_hash or (man.get("search") and not man["search"]["enumerated"]):
        return None
    try:
        damaged = store.verify(path, man, first_only=False)
    except ResultsError:
        return None
    if not damaged:
        return None
    parts = {p["file"]: p for p in man["parts"]}
    baselines = chunked.baseline_best(cfg, man["chunk_size"] or chunked.DEFAULT_CHUNK)
    fresh = {}
    for name in damaged:
        p = parts[name]
        data = partfile.to_bytes(chunked.run_chunk(cfg, p["start"], p["stop"], baselines).points)
        if len(data) != p["bytes"] or hashlib.sha256(data).hexdigest() != p["sha256"]:
            return None  # not the bytes recorded (another library version?): a full run makes all of them again
        fresh[name] = data
    for name, data in fresh.items():
        with os_errors(path / "points.parquet" / name, "put a recomputed part in place"):
            atomic_bytes(path / "points.parquet" / name, data, tmp_dir=path)
    store.verify(path, man)
    return man, len(fresh), sum(parts[n]["rows"] for n in fresh)
