"""Axes → design space: the cartesian product of grid axes and zipped groups, by index arithmetic.

Point i is computed from i alone, so any slice (or any set of points, for a search) of a huge
sweep can be built without the rest. The first factor varies slowest. A range of points is a
union of at most 2·d − 1 hyper-rectangles of the d factors (`Grid.rectangles`), which lets the
engine broadcast the numeric axes of each rectangle instead of repeating values per point.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from wsemoe.arguments import whole
from wsemoe.config.schema import SweepConfig
from wsemoe.errors import ConfigError
from wsemoe.store.block import Text


def is_number(v) -> bool:
    """A plain number (booleans are not)."""
    return isinstance(v, (int, float, np.number)) and not isinstance(v, (bool, np.bool_))


STRUCTURAL = ("hardware.scale_up_size",)   # beside every model field: the GPUs a server's switch joins


def structural(path: str) -> bool:
    """Whether a path's values change what the cost model builds (a model's layers, ranks, experts and routing; a
    server's size): each value is then its own call of the model, as a preset is, never a broadcast array."""
    return path.startswith("model.") or path in STRUCTURAL


def _is_number(v) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))


def _as_array(values: list) -> np.ndarray:
    """Typed column values: numbers as numpy numbers, anything else (names, tuples) as objects.
    Numpy types a list in one C pass: only numbers become an integer or float array."""
    try:
        arr = np.asarray(values)
    except ValueError:  # ragged tuples (explicit placements)
        arr = None
    if arr is not None and arr.ndim == 1 and (arr.dtype.kind == "b" or (
            arr.dtype.kind in "iuf" and not any(type(v) in (bool, np.bool_) for v in values))):
        return arr
    arr = np.empty(len(values), dtype=object)
    arr[:] = values
    return arr


@dataclass(frozen=True)
class Factor:
    """One independent factor: a grid axis, or a zip group of paths that move together."""

    values: dict          # path -> list of values (all of one length)
    size: int
    numeric: bool         # every path takes plain numbers (ordered values)

    @property
    def broadcast(self) -> bool:
        """Numbers the cost model takes as one float64 array along the factor's own dimension (not structural)."""
        return self.numeric and not any(structural(p) for p in self.values)

    @property
    def paths(self) -> list[str]:
        return list(self.values)


class Grid:
    """The design space of a sweep: its factors, sizes and the index arithmetic over them."""

    def __init__(self, cfg: SweepConfig):
        self._arrays = [{p: _as_array(v) for p, v in f.items()} for f in cfg.factors()]
        self.factors = [Factor(f, len(next(iter(f.values()))), all(a.dtype.kind in "iuf" for a in arrays.values()))
                        for f, arrays in zip(cfg.factors(), self._arrays)]
        self.shape = tuple(f.size for f in self.factors)
        self.size = math.prod(self.shape)
        strides, s = [], 1
        for n in reversed(self.shape):
            strides.append(s)
            s *= n
        self.strides = tuple(reversed(strides))

    def digits(self, index: np.ndarray) -> list[np.ndarray]:
        """The value position of every factor at each point index."""
        return [(index // stride) % n for stride, n in zip(self.strides, self.shape)]

    def range_digits(self, start: int, stop: int) -> list[np.ndarray]:
        """`digits` of the points [start, stop), filled rectangle by rectangle (no division per point)."""
        out = [np.empty(stop - start, dtype=np.intp) for _ in self.shape]
        pos = 0
        for rect in self.rectangles(start, stop):
            shape = tuple(hi - lo for lo, hi in rect)
            size = math.prod(shape)
            for i, (lo, hi) in enumerate(rect):
                dims = [1] * len(shape)
                dims[i] = hi - lo
                out[i][pos:pos + size].reshape(shape)[...] = np.arange(lo, hi).reshape(dims)
            pos += size
        return out

    def index_of(self, digits) -> np.ndarray:
        """Point indices from value positions (the inverse of `digits`)."""
        out = np.zeros(np.shape(digits[0]) if digits else (), dtype=np.int64)
        for d, stride in zip(digits, self.strides):
            out = out + np.asarray(d, dtype=np.int64) * stride
        return out

    def values(self, factor: int, path: str) -> np.ndarray:
        """A path's values as a typed array (numbers, booleans, or objects)."""
        return self._arrays[factor][path]

    def inputs(self, digits: list[np.ndarray]) -> dict:
        """Input columns at points given by their digits: numbers as arrays, text axes as `Text` codes."""
        cols = {}
        for i, d in enumerate(digits):
            for path in self.factors[i].paths:
                vals = self._arrays[i][path]
                if vals.dtype == object and all(isinstance(v, str) for v in vals):
                    cols[path] = Text(d.astype(np.int32), list(vals))
                elif vals.dtype == object and all(v is None or _is_number(v) for v in vals):
                    cols[path] = np.array([np.nan if v is None else v for v in vals], dtype=float)[d]   # unset: NaN
                else:
                    cols[path] = vals[d]
        return cols

    def rectangles(self, start: int, stop: int) -> list[list[tuple[int, int]]]:
        """Points [start, stop) as consecutive hyper-rectangles, each a (lo, hi) per factor, in point order."""
        return _split(start, stop, self.shape)


def _split(start: int, stop: int, shape: tuple) -> list:
    """[start, stop) of a C-order grid of `shape` as rectangles in point order: a partial slab of
    the first factor, whole slabs, then a partial slab (the partial ones split recursively)."""
    if start >= stop:
        return []
    if not shape:
        return [[]]
    inner = math.prod(shape[1:])
    (a, ra), (b, rb) = divmod(start, inner), divmod(stop, inner)
    if a == b:
        return [[(a, a + 1), *r] for r in _split(ra, rb, shape[1:])]
    out = []
    if ra:
        out += [[(a, a + 1), *r] for r in _split(ra, inner, shape[1:])]
        a += 1
    if b > a:
        out.append([(a, b), *[(0, n) for n in shape[1:]]])
    if rb:
        out += [[(b, b + 1), *r] for r in _split(0, rb, shape[1:])]
    return out


def build_values(grid: Grid, index: np.ndarray, paths: list[str]) -> pd.DataFrame:
    """The values of some paths at the given point indices, as a DataFrame (a lookup-table key)."""
    cols = grid.inputs(grid.digits(np.asarray(index, dtype=np.int64)))
    return pd.DataFrame({p: (cols[p].to_pandas() if isinstance(cols[p], Text) else cols[p]) for p in paths})


def build_frame(cfg: SweepConfig, start: int = 0, stop: int | None = None) -> pd.DataFrame:
    """Rows [start, stop) of the design frame: one column per swept path, dotted names."""
    total = cfg.size()
    stop = total if stop is None else min(stop, total)
    index = np.arange(start, stop, dtype=np.int64)
    grid = Grid(cfg)
    cols = {p: (c.to_pandas() if isinstance(c, Text) else c) for p, c in grid.inputs(grid.digits(index)).items()}
    return pd.DataFrame(cols, index=pd.RangeIndex(start, stop, name="point"))


def check_range(total: int, start, stop, chunk_size=None) -> tuple[int, int]:
    """Validated [start, stop) of a sweep of `total` points (stop None: to the end)."""
    start, stop, chunk_size = (None if v is None else whole(v, name, None) for name, v in
                               (("start", start), ("stop", stop), ("chunk_size", chunk_size)))   # ranges: below
    stop = total if stop is None else stop
    if not 0 <= start < total:
        raise ConfigError(f"start {start} out of range: the sweep has {total} points (0..{total - 1})", loc=("start",))
    if not start < stop <= total:
        raise ConfigError(f"stop {stop} out of range: need start < stop <= {total}", loc=("stop",))
    if chunk_size is not None and chunk_size < 1:
        raise ConfigError(f"chunk_size must be at least 1, got {chunk_size}", loc=("chunk_size",))
    return int(start), stop
