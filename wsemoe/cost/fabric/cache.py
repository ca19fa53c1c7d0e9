"""A least-recently-used cache bounded by entries and by weight (the nodes of what it holds).

A structure keeps per-link loads and per-node volumes, O(N) numbers (about 0.7 kB per node, ≈ 3 MB on a 64×64
mesh), so a cache bounded by entries alone holds 256× that on huge meshes. Bounding the nodes held as well keeps
its memory bounded whatever the mesh size, while small meshes keep every entry.
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from typing import NamedTuple


class CacheInfo(NamedTuple):
    hits: int
    misses: int
    maxsize: int
    currsize: int
    weight: int


def bounded_cache(maxsize: int, budget: int, weight):
    """Decorator: cache results by their (hashable) arguments, dropping the least recently used while more than
    `maxsize` entries or more than `budget` in total `weight(args, result)` are held (the newest is always kept)."""

    def wrap(fn):
        entries: OrderedDict = OrderedDict()
        state = {"hits": 0, "misses": 0, "weight": 0}

        lock = threading.Lock()   # threads of a Dask worker may share the cache; `fn` runs outside the lock

        @functools.wraps(fn)
        def cached(*args, **kwargs):
            key = (args, tuple(sorted(kwargs.items())))
            with lock:
                if key in entries:
                    state["hits"] += 1
                    entries.move_to_end(key)
                    return entries[key][0]
                state["misses"] += 1
            value = fn(*args, **kwargs)
            w = int(weight(args, value))
            with lock:
                if key not in entries:
                    entries[key] = (value, w)
                    state["weight"] += w
                while len(entries) > 1 and (len(entries) > maxsize or state["weight"] > budget):
                    _, (_, old) = entries.popitem(last=False)
                    state["weight"] -= old
            return value

        def cache_info() -> CacheInfo:
            return CacheInfo(state["hits"], state["misses"], maxsize, len(entries), state["weight"])

        def cache_clear() -> None:
            entries.clear()
            state.update(hits=0, misses=0, weight=0)

        cached.cache_info, cached.cache_clear = cache_info, cache_clear
        return cached

    return wrap
