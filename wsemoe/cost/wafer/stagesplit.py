"""How a served model's bytes split into pipeline stages (wafers): a byte-balanced contiguous split in which a stage
may hold a MoE layer beside dense ones and a MoE layer's routed experts may continue on the next wafer.

The items, in order: the embedding; per layer either a dense layer (`d` bytes, indivisible) or a MoE layer — its
attention part (`a`: attention, norms, router, shared experts and the layer's KV cache; indivisible) then its `E`
routed experts of `e` bytes each, which a stage boundary may fall between; the head. A greedy pass fills a stage
until the next item would overflow it; for a given capacity it needs the fewest stages of any contiguous split, so
the least peak for `W` stages is the least capacity whose pass needs at most `W`, found by bisection between two
bounds (below: the largest item and total/W; above: total/W plus the largest item, since every closed stage holds
more than the capacity less one item). A boundary inside a MoE layer is a *crossing*: the token's expert input
travels on beside the residual with the partial sum of the experts already applied, so that wafer hop carries two
activation vectors instead of one (cost/wafer/serving.links), and a token whose top-k experts lie on both wafers
passes through expert regions on each: `visits` sums, over the MoE layers, the expected wafers of a layer holding
one of a token's experts, less one (uniform routing: a wafer holding n of the E experts holds one of the k a token
picks with probability 1 − C(E − n, k) / C(E, k)), the dispatch, expert GEMVs and combine a pass adds.

Whole design frames at once: every input is an array that broadcasts over the points, a pass is a loop over the
layers of numpy operations on the unique combinations (np.unique), and each combination's result is cached, so a
sweep pays for each structural combination once.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

BISECTIONS = 40   # at most this many rounds of narrowing a bracket one item wide...
FANOUT = 8        # ...each trying 7 capacities at once, the bracket 8 times narrower after it (a pass costs its
                  # loop over the layers, not its arrays' width: 8 took 30 s of `wsemoe invariants` on the serving
                  # sweep where 4 took 42 s, and 16 no less than 8)
PRECISION = 1e-5  # ... stopping once it is narrower than this share of the peak (of a 40 GB wafer: 400 kB)
SLACK = 1e-12     # relative tolerance of "fits" (an item exactly the room left still fits)
# Results by combination: a memo of a pure function, kept inside an object so that the fingerprint of the cost
# model's module state (unique.state, which looks into module-level dicts) does not change as it fills.
_MEMO = SimpleNamespace(entries={})
_MEMO_MAX = 200_000


class Fill:
    """One greedy pass at capacity `C` over arrays of combinations: stages used, crossings, the fullest stage's
    bytes, the stage each layer starts on, and (with `kv`) the most sequences whose cache fits every stage."""

    def __init__(self, C, kv=None, light: bool = False):
        self.C, self.light = np.asarray(C, dtype=float), light   # light: count stages only (the bisection)
        self.C_slack = self.C * (1 + SLACK)   # what an item may fill a stage to (once, not per item)
        z = np.zeros(self.C.shape)
        self.stages, self.load, self.top, self.cross, self.nkv = z + 1.0, z.copy(), z.copy(), z.copy(), z.copy()
        self.visits = z.copy()
        self.kv, self.seqs = kv, z + np.inf

    def _room(self, mask):
        """Fold the closing stages' cache room into `seqs`: (bytes a wafer holds − its weights) / the cache one
        more sequence adds there; `kv` = (bytes a wafer holds, one layer's cache of the split's sequences, one
        layer's cache of one sequence)."""
        if self.kv is not None:
            room, held, one = self.kv
            has = mask & (self.nkv > 0)
            n = np.where(has, (room - (self.load - self.nkv * held)) / np.where(has, self.nkv * one, 1.0), np.inf)
            self.seqs = np.minimum(self.seqs, n)

    def _close(self, mask):
        self.stages = self.stages + mask
        if not self.light:
            self.top = np.maximum(self.top, np.where(mask, self.load, 0.0))
            self._room(mask)
            self.nkv = np.where(mask, 0.0, self.nkv)
        self.load = np.where(mask, 0.0, self.load)

    def atom(self, x, kv_layers=0.0):
        """An indivisible item of `x` bytes (holding `kv_layers` layers' KV cache)."""
        self._close((self.load > 0) & (self.load + x > self.C_slack))
        self.load = self.load + x
        if not self.light:
            self.nkv = self.nkv + kv_layers

    def experts(self, e, E, per, k=1.0):
        """`E` routed experts of `e` bytes each, any number per stage (`per`: how many one stage holds); a token
        picks `k` of them (the expected wafers it visits: `visits`)."""
        fit = np.minimum(np.maximum(np.floor((self.C - self.load) / e + SLACK), 0.0), E)   # = E when all fit
        rest = E - fit
        self.rest = rest   # the experts that continue on later stages (run's record)
        extra = np.ceil(rest / per)   # stages they open
        self.load = self.load + fit * e
        self._close(rest > 0)
        full = np.maximum(extra - 1.0, 0.0)   # stages holding only this layer's experts
        self.stages = self.stages + full
        last = rest - full * per   # the experts on the last of them
        self.load = self.load + last * e
        if not self.light:
            self.top = np.maximum(self.top, (full > 0) * per * e)
            self.cross = self.cross + extra
            split = rest > 0
            if np.any(split):   # only the combinations this layer splits (often few of a wide frame's)
                fit, E, k, per, full, last, split = np.broadcast_arrays(fit, E, k, per, full, last, split)
                held = (picked(fit[split], E[split], k[split]) + full[split] * picked(per[split], E[split], k[split])
                        + picked(last[split], E[split], k[split]))
                visits = np.array(np.broadcast_to(self.visits, split.shape), dtype=float)
                visits[split] += held - 1.0
                self.visits = visits

    def finish(self):
        """Close the last stage: its bytes and its cache room count too."""
        self.top = np.maximum(self.top, self.load)
        self._room(np.ones(self.C.shape, dtype=bool))
        return self


def picked(n, E, k):
    """The chance that `n` of `E` experts hold at least one of the `k` distinct ones a token picks (uniform
    routing): 1 − C(E − n, k) / C(E, k) = 1 − Π_{i<k} (E − n − i) / (E − i)."""
    n, E, k = np.broadcast_arrays(*(np.asarray(x, dtype=float) for x in (n, E, k)))
    none = np.ones(n.shape)
    for i in range(int(np.max(k, initial=0.0))):
        step = np.clip((E - n - i) / np.maximum(E - i, 1.0), 0.0, 1.0)
        none = none * np.where(i < k, step, 1.0)
    return np.where(n > 0, 1.0 - none, 0.0)


def run(moe, parts: dict, C, kv=None, record: bool = False, light: bool = False) -> Fill:
    """The greedy pass over every layer: `moe` is one entry per layer (bool, or an array over the combinations),
    `parts` the item bytes {d, a, e, E, emb, head} and experts a token picks (`topk`, 1 unless given; arrays over
    the combinations)."""
    f = Fill(C, kv, light)
    per = np.maximum(np.floor(f.C / parts["e"] + SLACK), 1.0)
    topk = parts.get("topk", 1.0)
    f.start, f.far = ([], []) if record else (None, None)
    f.atom(parts["emb"])
    every_expert = np.where(True, parts["E"], 0.0)   # a MoE layer's experts (as np.where gives them), once
    for is_moe in moe:
        scalar = np.ndim(is_moe) == 0
        if scalar:
            if is_moe:
                f.atom(parts["a"], 1.0)
            else:
                f.atom(parts["d"], 1.0)
        else:
            f.atom(np.where(is_moe, parts["a"], parts["d"]), 1.0)
        if record:
            f.start.append(f.stages - 1.0)
        if not scalar or is_moe:
            f.experts(parts["e"], every_expert if scalar else np.where(is_moe, parts["E"], 0.0), per, topk)
            if record:
                f.far.append(f.rest)
    f.atom(parts["head"])
    return f.finish()


def largest(moe, parts: dict):
    """The largest indivisible item: a dense layer, a MoE layer's attention part, one expert, embedding or head."""
    any_moe, any_dense = np.any(moe, axis=0), ~np.all(moe, axis=0)
    expert = np.where(np.asarray(parts["E"]) > 0, parts["e"], 0.0)   # no experts, no expert item
    items = [parts["emb"], parts["head"], np.where(any_moe, np.maximum(parts["a"], expert), 0.0),
             np.where(any_dense, parts["d"], 0.0)]
    return np.max(np.broadcast_arrays(*items), axis=0)


def total(moe, parts: dict):
    """Bytes of every item."""
    n_moe = np.sum(np.asarray(moe, dtype=float), axis=0)
    n_dense = len(moe) - n_moe
    return parts["emb"] + parts["head"] + n_dense * parts["d"] + n_moe * (parts["a"] + parts["E"] * parts["e"])


def stages_needed(moe, parts: dict, C):
    """Stages the greedy split needs at `C` bytes per stage (inf where an item alone does not fit)."""
    f = run(moe, parts, C, light=True)
    return np.where(largest(moe, parts) <= np.asarray(C) * (1 + SLACK), f.stages, np.inf)


def least_peak(moe, parts: dict, W, kv=None, record: bool = False) -> Fill:
    """The split of least peak over `W` stages (a search on the capacity), its pass at that peak: `top` the
    fullest stage's bytes, `cross` the crossings, `visits` the expected extra expert wafers a token visits,
    `seqs` (with `kv`) the sequences whose cache fits.

    Each round cuts every open bracket into FANOUT parts and tries the FANOUT − 1 capacities inside it in one
    pass (on a leading axis): a pass costs its loop over the layers more than its arrays' length, so a round
    costs little more than one bisection step and narrows the bracket FANOUT-fold. A combination's bracket stops
    moving once it is within PRECISION, so its result never depends on the others evaluated beside it."""
    W = np.asarray(W, dtype=float)
    big = largest(moe, parts)
    lo = np.maximum(big, total(moe, parts) / W)
    hi = lo + big
    ok = run(moe, parts, lo, light=True).stages <= W
    steps = (np.arange(1.0, FANOUT) / FANOUT).reshape((-1,) + (1,) * np.ndim(lo))
    for _ in range(BISECTIONS):
        done = ok | (hi - lo <= PRECISION * lo)
        if np.all(done):
            break
        tries = lo + (hi - lo) * steps   # FANOUT − 1 capacities strictly inside (lo, hi]
        fits = run(moe, parts, tries, light=True).stages <= W
        first = np.argmax(fits, axis=0)   # the stages a pass needs never grow with the capacity
        some = np.any(fits, axis=0)
        new_lo = np.where(some, np.where(first > 0, _pick(tries, np.maximum(first - 1, 0)), lo), tries[-1])
        lo, hi = np.where(done, lo, new_lo), np.where(done, hi, np.where(some, _pick(tries, first), hi))
    return run(moe, parts, np.where(ok, lo, hi), kv, record)


def _pick(tries, j):
    """Per combination, the `j`-th of the capacities tried (on the leading axis)."""
    return np.take_along_axis(tries, j[None], axis=0)[0]


def once(fn, arrays: dict, tag: tuple):
    """`fn(**unique rows)` evaluated once per unique combination of the broadcast `arrays` (and cached across
    calls under `tag`, the structure they do not carry), scattered back to the broadcast shape: a dict of arrays."""
    keys = list(arrays)
    cols = np.broadcast_arrays(*[np.asarray(arrays[k], dtype=float) for k in keys])
    shape = cols[0].shape
    rows = np.stack([c.ravel() for c in cols], axis=1)
    uniq, inverse = unique_rows(rows)
    done = [_MEMO.entries.get((tag, r.tobytes())) for r in uniq]
    todo = [i for i, d in enumerate(done) if d is None]
    if todo:
        got = fn(**{k: uniq[todo, j] for j, k in enumerate(keys)})
        for n, i in enumerate(todo):
            done[i] = {k: v[n] for k, v in got.items()}
            if len(_MEMO.entries) < _MEMO_MAX:
                _MEMO.entries[(tag, uniq[i].tobytes())] = done[i]
    return {k: np.asarray([d[k] for d in done])[inverse].reshape(shape) for k in done[0]}


def unique_rows(rows):
    """(unique rows, inverse) of a 2-D array: rows told apart by one float key each (a fixed irrational weighting,
    a sort of N numbers instead of N rows), exact because every row is checked against its representative (any
    collision falls back to the row-wise sort)."""
    key = rows @ (1.0 + np.sqrt(np.arange(2.0, rows.shape[1] + 2.0)) % 1.0)
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    inverse = inverse.ravel()
    if np.array_equal(rows[first][inverse], rows, equal_nan=True):
        return rows[first], inverse
    uniq, inverse = np.unique(rows, axis=0, return_inverse=True)
    return uniq, inverse.ravel()


def clear():
    """Forget every cached split (cold benchmarks)."""
    _MEMO.entries.clear()
