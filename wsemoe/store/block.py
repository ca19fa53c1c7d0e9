"""Columnar chunks: numpy arrays and integer-coded labels, from the engine to parquet without a DataFrame.

A Block is the points of one chunk (or of one search generation): their indices in the full grid
and one column per input or output. Numbers stay numpy arrays; labels (`bound`, `*_bound`,
`infeasible_reason`) are `Labels` (integer codes into a short list of categories) and text inputs
(strategy, preset names) are `Text` (codes into the axis values), so nothing builds Python strings
per point. `to_frame()` gives the DataFrame users see (labels as categoricals).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

MAX_PEEL = 16  # distinct labels found by repeated vectorized comparison before falling back to a sort


@dataclass
class Labels:
    """Integer codes into `categories` (-1: missing); read back as a pandas categorical."""

    codes: np.ndarray
    categories: list

    def __len__(self) -> int:
        return len(self.codes)

    def take(self, rows) -> "Labels":
        return Labels(self.codes[rows], self.categories)

    def compact(self) -> "Labels":
        """Only the categories present, sorted (as `pd.Categorical(values)` orders them)."""
        present = np.flatnonzero(np.bincount(self.codes[self.codes >= 0], minlength=len(self.categories)))
        order = sorted(present, key=lambda i: self.categories[i])
        remap = np.full(len(self.categories) + 1, -1, dtype=np.int32)
        remap[np.asarray(order, dtype=np.int64)] = np.arange(len(order), dtype=np.int32)
        return Labels(remap[self.codes], [self.categories[i] for i in order])

    def to_pandas(self) -> pd.Categorical:
        return pd.Categorical.from_codes(self.codes, categories=self.categories)

    def values(self) -> np.ndarray:
        """The labels as an object array (None where missing)."""
        lut = np.empty(len(self.categories) + 1, dtype=object)
        lut[:-1] = self.categories
        return lut[self.codes]


@dataclass
class Text(Labels):
    """A text input (strategy, preset name): codes into the axis values; read back as plain strings."""

    def take(self, rows) -> "Text":
        return Text(self.codes[rows], self.categories)

    def to_pandas(self) -> np.ndarray:
        return self.values()


def factorize(values) -> tuple[np.ndarray, list]:
    """(int32 codes, categories in order of first appearance) of an array of labels.

    Cost-model labels take a handful of values, so each is found by one vectorized comparison over
    what is left; past MAX_PEEL distinct values a sort takes over.
    """
    arr = np.asarray(values)
    flat = arr.ravel()
    codes = np.full(flat.shape, -1, dtype=np.int32)
    cats: list = []
    left = np.ones(flat.shape, dtype=bool)
    while len(cats) < MAX_PEEL:
        todo = np.flatnonzero(left)
        if not todo.size:
            return codes.reshape(arr.shape), cats
        value = flat[todo[0]]
        hit = flat == value
        codes[hit] = len(cats)
        left &= ~hit
        cats.append(value.item() if hasattr(value, "item") else value)
    uniq, inv = np.unique(flat.astype(object), return_inverse=True)
    first = np.full(len(uniq), len(flat))
    np.minimum.at(first, inv, np.arange(len(flat)))
    order = np.argsort(first)
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return rank[inv].astype(np.int32).reshape(arr.shape), [uniq[i] for i in order]


def _concat(cols: list):
    if not isinstance(cols[0], Labels):
        return np.concatenate(cols)
    cats: dict = {}
    codes = []
    for c in cols:
        lut = np.asarray([cats.setdefault(x, len(cats)) for x in c.categories] + [-1], dtype=np.int32)
        codes.append(lut[c.codes])
    merged = type(cols[0])(np.concatenate(codes), list(cats))
    return merged if isinstance(merged, Text) else merged.compact()


class Block:
    """Points of one chunk: grid indices and named columns (ndarray, Labels or Text), in output order."""

    def __init__(self, index: np.ndarray, columns: dict, digits: list | None = None, violation=None):
        self.index = index
        self.columns = columns
        self.digits = digits  # value position of every factor at each point (from the engine), if known
        self.violation = violation  # worst constraint value g per point (≤ 0 feasible), if known

    def __len__(self) -> int:
        return len(self.index)

    def __getitem__(self, name: str):
        return self.columns[name]

    def __contains__(self, name: str) -> bool:
        return name in self.columns

    @property
    def names(self) -> list[str]:
        return list(self.columns)

    def numbers(self, name: str) -> np.ndarray:
        """A numeric column as float64 (NaN where missing)."""
        return np.asarray(self.columns[name], dtype=float)

    def select(self, names) -> "Block":
        return Block(self.index, {n: self.columns[n] for n in names}, self.digits, self.violation)

    def take(self, rows) -> "Block":
        """The rows at `rows` (positions or a boolean mask), every column."""
        cols = {n: (c.take(rows) if isinstance(c, Labels) else c[rows]) for n, c in self.columns.items()}
        return Block(self.index[rows], cols, None if self.digits is None else [d[rows] for d in self.digits],
                     None if self.violation is None else self.violation[rows])

    def compacted(self) -> "Block":
        """The same rows with each label column cut to the categories present (text inputs keep their axis
        values): a chunk's few hundred candidate rows would otherwise carry its thousands of reasons."""
        cols = {n: (c.compact() if type(c) is Labels else c) for n, c in self.columns.items()}
        return Block(self.index, cols, self.digits, self.violation)

    @staticmethod
    def concat(blocks: list["Block"]) -> "Block":
        """Rows of several blocks with the same columns, in order (labels merged into one category list)."""
        if len(blocks) == 1:
            return blocks[0]
        first = blocks[0]
        cols = {n: _concat([b.columns[n] for b in blocks]) for n in first.columns}
        digits = None if first.digits is None else [np.concatenate(ds) for ds in zip(*(b.digits for b in blocks))]
        viol = None if first.violation is None else np.concatenate([b.violation for b in blocks])
        return Block(np.concatenate([b.index for b in blocks]), cols, digits, viol)

    def to_frame(self) -> pd.DataFrame:
        """The DataFrame users see: indexed by `point`, labels as categoricals, text as strings."""
        cols = {n: (c.to_pandas() if isinstance(c, Labels) else c) for n, c in self.columns.items()}
        return pd.DataFrame(cols, index=pd.Index(self.index, name="point"))


def concat_frames(frames) -> pd.DataFrame:
    """Frames of several chunks or parts as one, each categorical column over the sorted union of their categories
    (as `Labels.compact` orders one chunk's): pd.concat turns categoricals whose categories differ into strings, so
    `bound` was a category or a string depending on how the points happened to be chunked."""
    frames = list(frames)
    if len(frames) == 1:
        return frames[0]
    unions = {n: sorted(set().union(*(f[n].cat.categories for f in frames))) for n in frames[0].columns
              if all(n in f and isinstance(f[n].dtype, pd.CategoricalDtype) for f in frames)}
    if unions:
        frames = [f.assign(**{n: f[n].cat.set_categories(u) for n, u in unions.items()}) for f in frames]
    return pd.concat(frames)


def sorted_categories(df: pd.DataFrame) -> pd.DataFrame:
    """`df` with each categorical's categories sorted, as `Labels.compact` orders one chunk's: pyarrow concatenates
    parts' dictionaries in order of first appearance, so the order depended on the chunking. In place, cheap: the
    codes are remapped, no string is touched."""
    for n in df.columns:
        if isinstance(df[n].dtype, pd.CategoricalDtype):
            df[n] = df[n].cat.reorder_categories(sorted(df[n].cat.categories))
    return df
