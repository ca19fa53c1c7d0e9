"""Every combination a sweep takes of a few fields, in chunks: the machinery the cross-field rules (config/checks.py)
run on. A rule names the fields it involves; these yield just their distinct combinations (preset axes resolved to
fields), counted and refused past MAX_CHECKED before anything is allocated, and `fail` raises for the first
combination a rule flags, naming the axis."""

from __future__ import annotations

import numpy as np

from wsemoe.config.schema import SweepConfig
from wsemoe.errors import ConfigError

MAX_CHECKED = 2**25  # distinct combinations of the fields one rule involves that `check` goes through
CHUNK = 2**18        # combinations held at once (object columns of ~8 bytes per entry and field)


def combos(cfg: SweepConfig, paths: list[str]):
    """Every distinct combination of values the sweep takes on `paths`, in chunks of at most CHUNK (product over the
    factors involved only, each factor reduced to its distinct rows on `paths`); the count is computed, and refused
    past MAX_CHECKED, before anything is allocated."""
    parts = []
    for f in cfg.factors():
        hit = [p for p in paths if p in f]
        if hit:
            rows = list(dict.fromkeys(zip(*(hashable(f[p]) for p in hit))))
            parts.append((hit, [objects([r[j] for r in rows]) for j in range(len(hit))]))
    n = 1
    for _, columns in parts:
        n *= len(columns[0])
    if n > MAX_CHECKED:
        swept = ", ".join(p for hit, _ in parts for p in hit)
        raise ConfigError(f"the rules between {swept} would check {n:,} combinations of their values; at most "
                          f"{MAX_CHECKED:,} are checked: sweep fewer values of these axes together, or split the "
                          "sweep", loc=("axes",))
    for start in range(0, n, CHUNK):
        index = np.arange(start, min(n, start + CHUNK))
        size = len(index)
        cols: dict[str, np.ndarray] = {}
        for hit, columns in reversed(parts):  # mixed radix, the first factor slowest (as itertools.product)
            m = len(columns[0])
            for p, column in zip(hit, columns):
                cols[p] = column[index % m]
            index = index // m
        for p in paths:
            if p not in cols:
                section, field = p.split(".", 1)
                cols[p] = np.full(size, getattr(getattr(cfg, section), field), dtype=object)
        yield cols


def hashable(values) -> list:
    """Values with lists as tuples (hashable: distinct rows can be found)."""
    return [tuple(v) if isinstance(v, list) else v for v in values]


def objects(values) -> np.ndarray:
    """A 1-D object array of `values`, list values (wafers, ftd) kept whole rather than spread into a 2-D array."""
    out = np.empty(len(values), dtype=object)
    out[:] = [tuple(v) if isinstance(v, list) else v for v in values]
    return out


def field_values(cfg: SweepConfig, paths):
    """Every combination the sweep takes of `paths`, with hardware and model preset axes resolved to fields, in
    chunks (dicts of equal-length object columns)."""
    presets = [k for k in ("hardware", "model") if k in cfg.axis_names()]
    for c in combos(cfg, [*(p for p in paths if p in cfg.axis_names()), *presets]):
        n = len(next(iter(c.values()))) if c else 1
        out = {}
        for path in paths:
            section, name = path.split(".", 1)
            if path in c:
                out[path] = c[path]
            elif section in presets:  # looked up once per preset name, spread by index
                default = type(getattr(cfg, section)).model_fields[name].default
                names, where = np.unique(c[section].astype(str), return_inverse=True)
                out[path] = objects([cfg.presets[v].get(name, default) for v in names])[where.ravel()]
            else:
                out[path] = objects([getattr(getattr(cfg, section), name)] * n)
        yield out


def as_float(column: np.ndarray) -> np.ndarray:
    """An object column as floats, None as NaN (no per-value Python loop)."""
    none = np.equal(column, None)
    return np.where(none, np.nan, np.where(none, 0, column)).astype(float)


def products(column: np.ndarray, item: int | None = None) -> np.ndarray:
    """The product of each tuple of an object column (wafers [Wr, Wc]), or its `item`, once per distinct tuple."""
    table = {w: float(np.prod(w) if item is None else w[item]) for w in set(column.tolist())}
    return np.fromiter((table[w] for w in column.tolist()), dtype=float, count=len(column))


def fail(cfg: SweepConfig, bad: np.ndarray, path: str, message) -> None:
    """Raise for the first combination flagged in `bad`, naming the axis (or base field) `path`."""
    if np.any(bad):
        i = int(np.argmax(bad))
        loc = ("axes", path) if path in cfg.axis_names() else tuple(path.split("."))
        raise ConfigError(message(i), loc=loc)
