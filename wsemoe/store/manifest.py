"""A results folder's manifest read as untrusted input: bounded parsing, then one strict schema.

The file is read up to a size limit before any parsing; JSON numbers are bounded as they are parsed
(no NaN or infinities, no integers beyond 2^53), nesting that exhausts the parser is refused; then every
key is checked for its type (strictly: no coercion), its range and its length, and the part list for
tiling the points exactly (sorted, no gaps or overlaps, names matching ranges, rows matching sizes).
Whatever is wrong comes back as one line naming the manifest and the first key at fault.
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
from pathlib import Path
from typing import Annotated, Literal, Optional

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, model_validator

from wsemoe.config.schema import MAX_DESCRIPTION, NAME_RE
from wsemoe.errors import ResultsError, os_error

FORMAT = "wsemoe-results/2"
MAX_BYTES = 64 << 20  # a manifest of 10^9 points in 131,072-point parts is under 2 MB
MAX_INT = 2**53  # counts, sizes and point indices: exact in float64 and in every JSON reader
MAX_DIGITS = 16
MAX_PARTS = 10_000_000
HEX64, HEX16 = r"^[0-9a-f]{64}$", r"^[0-9a-f]{16}$"
PART = r"^part-\d{12}-\d{12}\.parquet$"
FILES = ("config.yaml", "pareto.csv", "comparison.csv")  # small files whose checksums the manifest records


PART_RE = re.compile(r"^part-(\d{12})-(\d{12})\.parquet$")


def part_name(start: int, stop: int) -> str:
    """File name of the part holding points [start, stop)."""
    return f"part-{start:012d}-{stop:012d}.parquet"


def part_range(name: str) -> tuple[int, int] | None:
    """(start, stop) of a part file name, or None for any other name."""
    m = PART_RE.match(name)
    return (int(m.group(1)), int(m.group(2))) if m else None


def _printable(text: str) -> str:
    if not text.isprintable():
        raise ValueError("holds control characters")
    return text


Count = Annotated[int, Field(ge=0, le=MAX_INT)]
Name = Annotated[str, Field(min_length=1, max_length=200), AfterValidator(_printable)]
Short = Annotated[str, Field(max_length=200)]


class Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)


class Part(Strict):
    """One part file: its point range, rows, size and checksum."""

    file: str = Field(pattern=PART)
    start: Count
    stop: Count
    rows: Count
    bytes: Count
    sha256: str = Field(pattern=HEX64)

    @model_validator(mode="after")
    def _consistent(self):
        if self.stop <= self.start:
            raise ValueError(f"stop {self.stop} is not after start {self.start}")
        if self.rows != self.stop - self.start:
            raise ValueError(f"rows {self.rows} is not stop - start ({self.stop - self.start})")
        if self.file != part_name(self.start, self.stop):
            raise ValueError(f"file name {self.file} does not match its range {self.start}..{self.stop}")
        return self


class FileRecord(Strict):
    bytes: Count
    sha256: str = Field(pattern=HEX64)


class ColumnDoc(Strict):
    unit: Short
    doc: Annotated[str, Field(max_length=2000)]


class SearchInfo(Strict):
    algorithm: Literal["nsga2"]
    evaluations: Count
    seed: Count
    population: Count
    library: Short
    generations: Count
    evaluated: Count
    budget: Count
    space_points: Count
    stopped: Optional[Short] = None
    enumerated: bool = False


class Manifest(Strict):
    """What a finished sweep wrote: provenance, counts, columns, and the parts with their checksums."""

    format: Literal["wsemoe-results/2"]
    version: Short
    dependencies: dict[Short, Optional[Short]] = Field(max_length=100)
    name: str = Field(pattern=NAME_RE.pattern)
    description: Annotated[str, Field(max_length=MAX_DESCRIPTION)] = ""
    config_hash: str = Field(pattern=HEX16)
    source: Optional[Annotated[str, Field(max_length=4096)]] = None
    points: Count
    feasible: Count
    pareto: Count
    pareto_points: Optional[Count] = None  # points the front rows stand for (exact ties in one row)
    pareto_groups: Optional[list[Name]] = Field(None, max_length=1000)  # one front per combination of these
    pareto_fronts: Optional[Count] = None
    objectives: dict[Name, Literal["max", "min"]] = Field(min_length=1, max_length=100)
    axes: list[Name] = Field(max_length=1000)
    objectives_not_finite: Count = 0
    bounds: dict[Name, Count] = Field(max_length=10_000)
    chunks: Count
    chunk_size: Count
    chunks_reused: Count
    points_reused: Count
    eval_seconds: float = Field(ge=0, le=1e12)
    columns: dict[Name, ColumnDoc] = Field(max_length=100_000)
    parts: list[Part] = Field(max_length=MAX_PARTS)
    search: Optional[SearchInfo] = None
    files: dict[Literal["config.yaml", "pareto.csv", "comparison.csv"], FileRecord] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _tiles(self):
        """The parts tile [0, points) in order: no gap, no overlap; the counts agree with each other."""
        end = 0
        for p in self.parts:
            if p.start != end:
                what = "overlaps the one before" if p.start < end else f"leaves points {end}..{p.start} uncovered"
                raise ValueError(f"part {p.file} {what}")
            end = p.stop
        if end != self.points:
            raise ValueError(f"parts cover {end} points, the manifest says {self.points}")
        if self.feasible > self.points or self.pareto > self.feasible or self.points_reused > self.points:
            raise ValueError("feasible, pareto and reused counts exceed the points")
        if self.pareto_points is not None and not self.pareto <= self.pareto_points <= self.feasible:
            raise ValueError(f"pareto_points {self.pareto_points} is not between the front's rows and the feasible points")
        if self.pareto_fronts is not None and self.pareto_fronts > self.pareto:
            raise ValueError(f"pareto_fronts {self.pareto_fronts} exceeds the front's rows {self.pareto}")
        if self.chunks != len(self.parts) or self.chunks_reused > self.chunks:
            raise ValueError(f"chunks {self.chunks} does not match the {len(self.parts)} parts")
        return self


def _no_constant(text: str):
    raise ValueError(f"{text} is not a number JSON allows")


def _float(text: str) -> float:
    x = float(text)
    if not math.isfinite(x):
        raise ValueError(f"number {text[:20]} is out of range")
    return x


def _int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_DIGITS:
        raise ValueError(f"integer of {len(text)} digits is out of range")
    return int(text)


def parse(data: bytes, where) -> dict:
    """A manifest's bytes as a validated dict (the schema's fields, defaults filled); one line otherwise."""
    if len(data) > MAX_BYTES:
        raise ResultsError(f"manifest.json is larger than {MAX_BYTES:,} bytes; not a manifest wsemoe wrote",
                           loc=(str(where),))
    try:
        raw = json.loads(data, parse_constant=_no_constant, parse_float=_float, parse_int=_int)
    except RecursionError:
        raise ResultsError("manifest.json is nested too deeply; not a manifest wsemoe wrote", loc=(str(where),)) from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise ResultsError(f"manifest.json is not valid JSON ({str(exc)[:80]})", loc=(str(where),)) from None
    if not isinstance(raw, dict):
        raise ResultsError(f"manifest.json holds a {type(raw).__name__}, not an object", loc=(str(where),))
    if raw.get("format") != FORMAT:
        held = "names no format" if raw.get("format") is None else f"is of format {str(raw['format'])[:40]!r}"
        raise ResultsError(f"manifest.json {held}, not {FORMAT}: from another version of wsemoe, or not a results "
                           "folder (re-run the sweep)", loc=(str(where),))
    try:
        return Manifest.model_validate(raw).model_dump()
    except ValidationError as exc:
        err = exc.errors()[0]
        key = " -> ".join(str(k) for k in err["loc"]) or "manifest"
        raise ResultsError(f"manifest.json is malformed at {key}: {err['msg']}", loc=(str(where),)) from None


def read(folder) -> dict | None:
    """The validated manifest of `folder`, None when it has no manifest.json; one line when it is not one
    wsemoe could have written (not a regular file, too large, malformed)."""
    path = Path(folder) / "manifest.json"
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == 40:  # ELOOP: a symbolic link
            raise ResultsError("manifest.json is a symbolic link; not a manifest wsemoe wrote", loc=(str(folder),)) from None
        raise os_error(exc, path, "read the manifest") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ResultsError("manifest.json is not a regular file", loc=(str(folder),))
        with os.fdopen(fd, "rb", closefd=False) as fh:
            data = fh.read(MAX_BYTES + 1)
    except OSError as exc:
        raise os_error(exc, path, "read the manifest") from None
    finally:
        os.close(fd)
    man = parse(data, folder)   # what is wrong with a malformed one is said first: more than "changed"
    _as_recorded(folder, data)
    return man


# a file the sweep recorded no longer holds what it wrote: the sweep will not write over it (it cannot prove the
# bytes are its own), so the way back is to move it out first
CHANGED_HINT = "move it out of the folder, then re-run the sweep"


def _as_recorded(folder, data: bytes) -> None:
    """The manifest holds the bytes the folder's ledger records for it: every other file a reader uses is
    verified against the manifest, so an edited manifest (other objectives, say) would be trusted unchecked.
    A folder whose ledger records no manifest (an earlier wsemoe's results) has only the manifest's own rules."""
    import hashlib

    from wsemoe.store import ledger

    e = ledger.read(folder).entry("manifest.json")
    recorded = (e.get("bytes"), e.get("sha256")) if e and e.get("kind") == "file" else None
    if recorded is not None and (len(data), hashlib.sha256(data).hexdigest()) != recorded:
        raise ResultsError("manifest.json does not match its checksum (changed since the sweep wrote it); "
                           f"{CHANGED_HINT}", loc=(str(folder),))
