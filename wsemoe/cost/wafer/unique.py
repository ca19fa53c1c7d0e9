"""Structural terms once per unique combination: a function of a design frame's inputs evaluated on the distinct
rows of the arrays it reads, its outputs scattered back to every point. Numpy only.

A frame's points share few structures (model, fabric, region shapes, context, wafers …) while the batch and the
readings vary freely, and the PE-level terms of a layout depend on the structure alone; evaluating them over all
points × candidate layouts repeats the same arithmetic thousands of times. `once(fn, *args)` walks `args`
(dicts, lists, tuples, named tuples and namespaces; anything else is a constant), stacks every numeric array
leaf broadcast to the common shape, finds the distinct rows by their exact bits (so -0.0, 0.0 and every NaN
payload stay apart, and the results are bit-identical to evaluating every point), calls `fn` on those rows
(each array leaf a 1-D array of the rows' values, in its own dtype) and gathers each output leaf back.

The outputs over the distinct rows also go into a cache (at most CACHE_BYTES, least recently used out) keyed by
`fn`, the constants and a digest of the rows' exact bytes, so a frame evaluated again (a warm re-run, a figure
after its sweep, the same layouts under another placement) skips `fn` altogether. `fn` must be a pure function of
its arguments and elementwise in the rows: every output leaf a scalar, or an array whose last axis is the rows
(leading axes of its own, such as candidate layouts, are kept), each row's values a function of that row alone.
"""

from __future__ import annotations

import hashlib
import sys
import threading
from collections import OrderedDict
from types import SimpleNamespace

import numpy as np

DEDUP = True      # False: every call evaluates fn on every point (the reference the tests compare with)
CACHE = True      # keep results for re-runs (module docstring)
CACHE_BYTES = 256 << 20   # the results' arrays kept at most (a sweep's frames hold tens of MB of distinct rows)
_cache: OrderedDict = OrderedDict()   # key -> (result, its bytes)
_held = [0]   # bytes of the results held
_lock = threading.Lock()   # threads of a Dask worker share the cache
stats = {"points": 0, "rows": 0, "hits": 0}   # points seen, distinct rows evaluated, results from the cache
_ARRAY = "<array>"   # a leaf's place in the constants' signature
PACKAGE = "wsemoe.cost"   # the modules whose state the cached functions may read (`state`)


class Unsupported(Exception):
    """An argument holds arrays this module cannot see into (the caller evaluates every point instead)."""


def flatten(tree, leaves: list):
    """(signature of `tree`'s constants, with array leaves appended to `leaves` in walk order)."""
    if isinstance(tree, np.ndarray) and tree.ndim > 0:
        if tree.dtype.kind not in "biuf":
            raise Unsupported(f"array of dtype {tree.dtype}")
        leaves.append(tree)
        return _ARRAY
    if isinstance(tree, dict):
        return ("dict", tuple((k, flatten(v, leaves)) for k, v in tree.items()))
    if isinstance(tree, SimpleNamespace):
        return ("ns", tuple((k, flatten(v, leaves)) for k, v in vars(tree).items()))
    if isinstance(tree, (list, tuple)):
        return (type(tree).__name__, tuple(flatten(v, leaves) for v in tree))
    if isinstance(tree, np.ndarray):   # 0-d: a constant by value
        return ("0d", tree.dtype.str, tree.tobytes())
    if isinstance(tree, (str, bytes, int, float, complex, bool, type(None), np.generic)):
        return (type(tree).__name__, repr(tree))
    if any(isinstance(v, np.ndarray) for v in getattr(tree, "__dict__", {}).values()):
        raise Unsupported(f"arrays inside a {type(tree).__name__}")
    return None   # an opaque constant (a pydantic spec of scalars): its rows deduplicated, the result never cached


def rebuild(tree, leaves):
    """`tree` with its array leaves replaced, in walk order, by the next items of the iterator `leaves`."""
    if isinstance(tree, np.ndarray) and tree.ndim > 0:
        return next(leaves)
    if isinstance(tree, dict):
        return {k: rebuild(v, leaves) for k, v in tree.items()}
    if isinstance(tree, SimpleNamespace):
        return SimpleNamespace(**{k: rebuild(v, leaves) for k, v in vars(tree).items()})
    if isinstance(tree, tuple) and hasattr(tree, "_fields"):
        return type(tree)(*(rebuild(v, leaves) for v in tree))
    if isinstance(tree, (list, tuple)):
        return type(tree)(rebuild(v, leaves) for v in tree)
    return tree


def bits(column: np.ndarray) -> np.ndarray:
    """The exact bit pattern of each value as an unsigned integer (equal bits: the same value for any function)."""
    c = np.ascontiguousarray(column)
    if c.dtype.kind == "b":
        return c.astype(np.uint64)
    word = c.view(np.dtype(f"u{c.dtype.itemsize}"))
    return word if word.dtype == np.uint64 else word.astype(np.uint64)


def rows(columns: list, ordered: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(first row of each distinct row, each row's index into them) of the rows of equal bits across `columns`
    (1-D, equal length): a mixing hash sorted once, each group checked against its first row; exact groups by
    one column at a time if the hash ever joined two different rows. `ordered`: the distinct rows in
    lexicographic order of their values, first column first (as np.unique(axis=0) orders them)."""
    first, inverse = _rows(columns)
    if not ordered:
        return first, inverse
    order = np.lexsort([np.asarray(c)[first] for c in reversed(columns)])
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return first[order], rank[inverse]


def _rows(columns: list) -> tuple[np.ndarray, np.ndarray]:
    """`rows` in the order of the hash."""
    words = [bits(c) for c in columns]
    h = mix(words)
    _, first, inverse = np.unique(h, return_index=True, return_inverse=True)
    inverse = inverse.ravel()
    if all(np.array_equal(w, w[first][inverse]) for w in words):
        return first, inverse
    key = np.zeros(len(h), dtype=np.int64)
    for w in words:   # exact: the running group index times the column's distinct values, renumbered
        _, code = np.unique(w, return_inverse=True)
        _, key = np.unique(key * (int(code.max()) + 1) + code.ravel(), return_inverse=True)
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    return first, inverse.ravel()


def mix(words: list) -> np.ndarray:
    """A 64-bit hash of each row of the columns' bit patterns (multiply-xorshift mixing, as in splitmix64)."""
    h = np.full(len(words[0]), 0x9E3779B97F4A7C15, dtype=np.uint64)
    for w in words:   # in place: a candidate frame hashes a million rows of twenty columns
        h ^= w
        h *= np.uint64(0xBF58476D1CE4E5B9)   # unsigned products wrap modulo 2^64, as intended
        h ^= h >> np.uint64(31)
    return h


def scatter(tree, inverse: np.ndarray, shape: tuple, count: int):
    """Output `tree` over the distinct rows gathered back to every point (`shape`); scalars stay scalars."""
    if isinstance(tree, dict):
        return {k: scatter(v, inverse, shape, count) for k, v in tree.items()}
    if isinstance(tree, tuple) and hasattr(tree, "_fields"):
        return type(tree)(*(scatter(v, inverse, shape, count) for v in tree))
    if isinstance(tree, (list, tuple)):
        return type(tree)(scatter(v, inverse, shape, count) for v in tree)
    if isinstance(tree, np.ndarray) and tree.ndim > 0:
        lead = tree.shape[:-1]   # leading axes of the output's own (candidates), the rows last
        if tree.shape[-1] == count:
            return tree[..., inverse].reshape(lead + shape)
        if tree.shape[-1] == 1:   # the same for every row (a copy: the cache keeps its own)
            return tree.reshape(lead + (1,) * len(shape)).copy()
        raise ValueError(f"an output of shape {tree.shape} over {count} rows")
    return tree


def once(fn, *args):
    """fn(*args), with fn evaluated once per distinct row of the array leaves of `args` (module docstring)."""
    out, where = distinct(fn, *args)
    return out if where is None else scatter(out, where.inverse, where.shape, where.count)


class Rows:
    """Which distinct row each point (`shape`, C order) is: `inverse` into `count` rows."""

    def __init__(self, inverse: np.ndarray, shape: tuple, count: int):
        self.inverse, self.shape, self.count = inverse, shape, count
        self._picked = None

    def picked(self, best: np.ndarray, shape: tuple) -> np.ndarray:
        """The distinct row of the point each entry of `best` picks along the leading axis of `shape` (the points'
        shape, which the rows' shape broadcasts to): np.take_along_axis(…, best, axis=0)[0] of the rows' index."""
        if self._picked is None or self._picked[0] is not best:
            index = np.broadcast_to(self.inverse.reshape(self.shape), shape)
            self._picked = (best, np.take_along_axis(index, best, axis=0)[0])
        return self._picked[1]


class Deferred:
    """An output over the distinct rows, gathered to the points only where it is read: a caller that keeps one
    candidate per point gathers that candidate's values alone (`pick`), not every candidate's (`full`)."""

    def __init__(self, values: np.ndarray, rows: Rows):
        self.values, self.rows = values, rows

    def full(self) -> np.ndarray:
        return scatter(self.values, self.rows.inverse, self.rows.shape, self.rows.count)

    def pick(self, best: np.ndarray, shape: tuple) -> np.ndarray:
        """The values at np.take_along_axis(np.broadcast_to(full, shape), best, axis=0)[0] (`Rows.picked`)."""
        return np.broadcast_to(self.values, (self.rows.count,))[self.rows.picked(best, shape)]


def deferred(tree, rows):
    """An output tree over the distinct rows with each array leaf Deferred (scalars as they are); `rows` None: the
    tree as it is (nothing was deduplicated)."""
    if rows is None:
        return tree
    if isinstance(tree, dict):
        return {k: deferred(v, rows) for k, v in tree.items()}
    if isinstance(tree, np.ndarray) and tree.ndim > 0:
        if tree.shape[-1] not in (1, rows.count) or tree.ndim > 1:
            raise ValueError(f"a deferred output of shape {tree.shape} over {rows.count} rows")
        return Deferred(tree, rows)
    return tree


def distinct(fn, *args):
    """(fn's outputs on the distinct rows of the array leaves of `args`, their Rows), the outputs from the cache when
    it holds them; (fn(*args), None) when there is nothing to deduplicate."""
    if not DEDUP:
        return fn(*args), None
    leaves: list = []
    try:
        signature = flatten(args, leaves)
    except Unsupported:
        return fn(*args), None
    if not leaves:
        return fn(*args), None
    shape = np.broadcast_shapes(*(leaf.shape for leaf in leaves))
    columns = [np.broadcast_to(leaf, shape).reshape(-1) for leaf in leaves]
    first, inverse = rows(columns)
    values = [c[first] for c in columns]
    key = _key(fn, signature, values) if CACHE and _cachable(signature) else None
    with _lock:
        held = _cache.get(key) if key is not None else None
        stats["points"] += len(inverse)
        if held is not None:
            _cache.move_to_end(key)
            stats["hits"] += 1
        else:
            stats["rows"] += len(first)
    if held is None:
        out = fn(*rebuild(args, iter(values)))   # outside the lock: other threads go on meanwhile
        if key is not None:
            keep(key, out)
    else:
        out = held[0]
    return out, Rows(inverse, shape, len(first))


def keep(key, out) -> None:
    """Cache `out`, dropping the least recently used results while more than CACHE_BYTES are held."""
    size = nbytes(out)
    with _lock:
        if key in _cache:   # another thread got there first
            return
        _cache[key] = (out, size)
        _held[0] += size
        while len(_cache) > 1 and _held[0] > CACHE_BYTES:
            _, (_, old) = _cache.popitem(last=False)
            _held[0] -= old


def nbytes(tree) -> int:
    """Bytes of the arrays in an output tree."""
    if isinstance(tree, dict):
        return sum(nbytes(v) for v in tree.values())
    if isinstance(tree, (list, tuple)):
        return sum(nbytes(v) for v in tree)
    return int(getattr(tree, "nbytes", 0))


def _key(fn, signature, values: list) -> tuple:
    """The cache key: the function, the constants, the distinct rows' exact bytes (a digest of them) and the state
    of the cost model's modules."""
    digest = hashlib.blake2b(digest_size=16)
    for c in values:
        digest.update(c.dtype.str.encode())
        digest.update(np.ascontiguousarray(c).tobytes())
    return fn, signature, digest.hexdigest(), state()


def state() -> int:
    """A fingerprint of the cost model's module-level state: the identity of every name's value in every loaded
    `wsemoe.cost` module and of the items of its dicts, lists and sets, so a test or tool that replaces a constant or
    a function (SIZED_STEPS, a format's bytes) never meets a stale result. (A replaced value is held by whoever
    restores it, as pytest's monkeypatch does, so its identity is not reused while the replacement stands.)"""
    parts = []
    for name, module in list(sys.modules.items()):
        if module is None or not name.startswith(PACKAGE) or name == __name__:   # not this cache's own state
            continue
        values = list(vars(module).values())
        parts.append(hash(tuple(map(id, values))))
        parts.extend(hash(tuple(map(id, v.values() if isinstance(v, dict) else v))) for v in values
                     if isinstance(v, (dict, list, set)))
    return hash(tuple(parts))


def _cachable(signature) -> bool:
    """Whether every constant of the signature is known by value (no opaque object)."""
    if signature is None:
        return False
    if isinstance(signature, tuple):
        return all(_cachable(s) for s in signature)
    return True


def clear() -> None:
    """Forget every cached result and the counts (cold runs, tests)."""
    with _lock:
        _cache.clear()
        _held[0] = 0
        stats.update(points=0, rows=0, hits=0)
