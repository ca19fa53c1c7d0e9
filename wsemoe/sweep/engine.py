"""Evaluate design points: split them into pieces the cost model sees as arrays, fill columns in place.

A range of points is a few hyper-rectangles of the grid (`space.Grid.rectangles`). Within one,
each combination of categorical values (mode, strategy, presets, ...) is one call of the cost
model, and every numeric axis is a float64 array along its own dimension, so a term that depends
on two axes is computed once per pair of values, not once per point; structural terms are built
once per unique combination. Any other set of points (a search generation) is grouped by its
categorical values and evaluated as flat arrays. Either way each output lands in a preallocated
column at its points' positions: no DataFrame is built, concatenated or reordered.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd

from wsemoe.config.loader import load_config
from wsemoe.config.schema import SECTIONS, SweepConfig
from wsemoe.cost.node.stages import Coded
from wsemoe.sweep import space
from wsemoe.store.block import Block, Labels, factorize
from wsemoe.sweep.feasibility import feasibility
from wsemoe.sweep.outputs import base_fields, evaluate, namespaces, preset_fields


class _Slab:
    """Points of one categorical combination inside a rectangle: a strided view of the chunk."""

    def __init__(self, offset: int, shape: tuple, where: tuple):
        self.offset, self.shape, self.where = offset, shape, where

    def put(self, arr: np.ndarray, value) -> None:
        arr[self.offset:self.offset + math.prod(self.shape)].reshape(self.shape)[self.where] = value


class Rows:
    """Points of one categorical combination among arbitrary points: their row positions."""

    def __init__(self, rows: np.ndarray):
        self.rows = rows

    def put(self, arr: np.ndarray, value) -> None:
        arr[self.rows] = value


def _is_label(v) -> bool:
    return isinstance(v, Coded) or np.asarray(v).dtype.kind in "OUS"


class Outputs:
    """The cost model's outputs over n points, kept as computed (broadcast shapes) until a column is asked for."""

    def __init__(self, n: int, pieces: list):
        self.n, self.pieces = n, pieces  # [(placement, {column: value})]
        self.names = list(dict.fromkeys(k for _, out in pieces for k in out))
        self._cache: dict = {}

    def column(self, name: str):
        """One output for every point: an ndarray (NaN where a piece lacks it) or `Labels`."""
        if name not in self._cache:
            vals = [(where, out.get(name)) for where, out in self.pieces]
            present = [v for _, v in vals if v is not None]
            if any(_is_label(v) for v in present):
                self._cache[name] = self._labels(vals)
            else:
                dtype = np.result_type(*(np.asarray(v).dtype for v in present))
                missing = len(present) < len(vals)
                arr = np.full(self.n, np.nan) if missing else np.empty(self.n, dtype=dtype)
                for where, v in vals:
                    if v is not None:
                        where.put(arr, v)
                self._cache[name] = arr
        return self._cache[name]

    def applies(self, name: str) -> np.ndarray:
        """Points whose piece has the column (a constraint of another kind of point does not bind them)."""
        mask = np.zeros(self.n, dtype=bool)
        for where, out in self.pieces:
            if name in out:
                where.put(mask, True)
        return mask

    def _labels(self, vals) -> Labels:
        codes = np.full(self.n, -1, dtype=np.int32)
        cats: dict = {}
        for where, v in vals:
            if v is None:
                continue
            local, names = (v.codes, v.labels) if isinstance(v, Coded) else factorize(v)
            lut = np.asarray([cats.setdefault(c, len(cats)) for c in names] + [-1], dtype=np.int32)
            where.put(codes, lut[local])
        return Labels(codes, list(cats)).compact()



class Evaluator:
    """The cost model over any points of one sweep: ranges (broadcast rectangles) or index sets."""

    def __init__(self, cfg: SweepConfig):
        self.cfg = cfg
        self.grid = space.Grid(cfg)
        self.base = base_fields(cfg)
        self.preset = {s: {} for s in SECTIONS}  # preset axes (hardware, model): name -> validated fields
        for f in self.grid.factors:
            for s in set(f.paths) & set(SECTIONS):
                self.preset[s].update({name: preset_fields(cfg, s, name) for name in f.values[s]})

    def _namespaces(self, values: dict) -> dict:
        """Section namespaces for one call: base spec (or preset) fields, then swept values."""
        return namespaces(self.base, self.preset, values)

    def call(self, values: dict) -> dict:
        """The cost model on one piece (communication from the fabric when it applies)."""
        return evaluate(self.cfg, self._namespaces(values))

    def _categorical(self, i: int, d: int) -> dict:
        """Values of a categorical or structural factor at position d; numbers among them (a zip group's numeric
        paths) as floats, as the numeric axes reach the model, except structural ones, as a preset gives them."""
        f = self.grid.factors[i]
        return {p: (float(v) if space.is_number(v) and not space.structural(p) else v)
                for p, v in ((p, f.values[p][d]) for p in f.paths)}

    def range(self, start: int, stop: int) -> Outputs:
        """Outputs of points [start, stop), rectangle by rectangle (one call per categorical combination;
        splitting further into cache-sized blocks measured slower: the call overhead outweighs it)."""
        pieces, offset = [], 0
        cats = [i for i, f in enumerate(self.grid.factors) if not f.broadcast]
        nums = [i for i, f in enumerate(self.grid.factors) if f.broadcast]
        for rect in self.grid.rectangles(start, stop):
            shape = tuple(hi - lo for lo, hi in rect)
            numeric = {}
            for k, i in enumerate(nums):
                lo, hi = rect[i]
                dims = [1] * len(nums)
                dims[k] = hi - lo
                for path in self.grid.factors[i].paths:
                    numeric[path] = self.grid.values(i, path)[lo:hi].astype(np.float64).reshape(dims)
            for combo in itertools.product(*(range(*rect[i]) for i in cats)):
                values = {**numeric}
                where = [slice(None)] * len(shape)
                for i, d in zip(cats, combo):
                    values.update(self._categorical(i, d))
                    where[i] = d - rect[i][0]
                pieces.append((_Slab(offset, shape, tuple(where)), self.call(values)))
            offset += math.prod(shape)
        return Outputs(stop - start, pieces)

    def at(self, digits: list[np.ndarray]) -> Outputs:
        """Outputs of arbitrary points (a search generation, given by their digits), grouped by their
        categorical values."""
        cats = [i for i, f in enumerate(self.grid.factors) if not f.broadcast]
        zero = np.zeros(len(digits[0]) if digits else 0, dtype=np.int64)  # one key per point, even with no category
        key = self.grid.index_of([digits[i] if i in cats else zero for i in range(len(digits))])
        order = np.argsort(key, kind="stable")
        bounds = np.flatnonzero(np.diff(key[order])) + 1
        pieces = []
        for rows in np.split(order, bounds) if len(order) else []:
            values = {}
            for i, d in enumerate(digits):
                if i in cats:
                    values.update(self._categorical(i, int(d[rows[0]])))
                else:
                    values.update({p: self.grid.values(i, p)[d[rows]].astype(np.float64)
                                   for p in self.grid.factors[i].paths})
            pieces.append((Rows(rows), self.call(values)))
        return Outputs(len(key), pieces)


def evaluate_block(cfg: SweepConfig, start: int = 0, stop: int | None = None, index=None, keep=None,
                   evaluator: Evaluator | None = None) -> Block:
    """Points [start, stop) (or the points `index`): input columns, then outputs, then feasibility.

    `keep(names) -> names`, if given, picks the columns to build; the other outputs are never
    materialized (a narrow `output.columns` costs only what it keeps).
    """
    ev = evaluator or Evaluator(cfg)
    if index is None:
        stop = cfg.size() if stop is None else stop
        index = np.arange(start, stop, dtype=np.int64)
        outputs, digits = ev.range(start, stop), ev.grid.range_digits(start, stop)
    else:
        index = np.asarray(index, dtype=np.int64)
        digits = ev.grid.digits(index)
        outputs = ev.at(digits)
    inputs = ev.grid.inputs(digits)
    extra, worst = feasibility(cfg, outputs, inputs)
    names = [*inputs, *outputs.names, *extra]
    wanted = names if keep is None else keep(names)
    cols = {c: inputs[c] if c in inputs else extra[c] if c in extra else outputs.column(c) for c in wanted}
    return Block(index, cols, digits, worst)


def evaluate_points(config, start: int = 0, stop: int | None = None) -> pd.DataFrame:
    """Points [start, stop) of a sweep: input columns (dotted names) then output columns, no comparison."""
    cfg = load_config(config)
    return evaluate_block(cfg, start, stop).to_frame()
