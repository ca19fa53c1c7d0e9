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
WIDE = 4096       # open combinations × capacities from which a round halves its bracket pass by pass instead of
                  # trying all its capacities in one (where a pass's arithmetic outweighs its loop over the layers)
SPLIT_KEYS = ("d", "a", "e", "E", "emb", "head")   # the item bytes a pass reads
# Results by combination: a memo of a pure function, kept inside an object so that the fingerprint of the cost
# model's module state (unique.state, which looks into module-level dicts) does not change as it fills.
_MEMO = SimpleNamespace(entries={})
_MEMO_MAX = 200_000


class Fill:
    """One greedy pass at capacity `C` over arrays of combinations: stages used, crossings, the fullest stage's
    bytes, the stage each layer starts on, and (with `kv`) the most sequences whose cache fits every stage."""

    def __init__(self, C, kv=None):
        self.C = np.asarray(C, dtype=float)
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
        self.top = np.maximum(self.top, np.where(mask, self.load, 0.0))
        self._room(mask)
        self.nkv = np.where(mask, 0.0, self.nkv)
        self.load = np.where(mask, 0.0, self.load)

    def atom(self, x, kv_layers=0.0):
        """An indivisible item of `x` bytes (holding `kv_layers` layers' KV cache)."""
        self._close((self.load > 0) & (self.load + x > self.C_slack))
        self.load = self.load + x
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
        self.top = np.maximum(self.top, (full > 0) * per * e)
        self.cross = self.cross + extra
        split = rest > 0
        if np.any(split):   # only the combinations this layer splits (often few of a wide frame's)
            fit, E, k, per, full, last, split = np.broadcast_arrays(fit, E, k, per, full, last, split)
            E, k = E[split], k[split]   # one call for the three counts (a call costs its loop over k)
            got = picked(np.stack([fit[split], per[split], last[split]]), E, k)
            held = got[0] + full[split] * got[1] + got[2]
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
    i = np.arange(int(np.max(k, initial=0.0)), dtype=float).reshape((-1,) + (1,) * n.ndim)   # the factors on an axis
    step = np.where(i < k, np.clip((E - n - i) / np.maximum(E - i, 1.0), 0.0, 1.0), 1.0)
    none = np.multiply.reduce(np.concatenate([np.ones((1,) + n.shape), step]), axis=0)   # 1 · f0 · f1 …, in order
    return np.where(n > 0, 1.0 - none, 0.0)


def run(moe, parts: dict, C, kv=None, record: bool = False) -> Fill:
    """The greedy pass over every layer: `moe` is one entry per layer (bool, or an array over the combinations),
    `parts` the item bytes {d, a, e, E, emb, head} and experts a token picks (`topk`, 1 unless given; arrays over
    the combinations)."""
    f = Fill(C, kv)
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
    return np.where(largest(moe, parts) <= np.asarray(C) * (1 + SLACK), count(moe, parts, C), np.inf)


def count(moe, parts: dict, C):
    """The stages a greedy pass at `C` opens: `run(...).stages` bit for bit, in fewer array operations
    per layer (a closing stage's load is the item itself, 0 + x = x; a MoE layer's experts open ⌈rest / per⌉
    stages, the closing one and the full ones together), the loop over the layers being what a pass costs."""
    C = np.asarray(C, dtype=float)
    C_slack, e = C * (1 + SLACK), parts["e"]
    per = np.maximum(np.floor(C / e + SLACK), 1.0)
    if not np.all(np.isfinite(per)):   # experts of no bytes (or no bound): the full pass's NaNs, as it makes them
        return run(moe, parts, C).stages
    stages, load = np.ones(C.shape), np.zeros(C.shape)
    every_expert = np.where(True, parts["E"], 0.0)

    def atom(load, x):
        x_in = load + x
        close = (load > 0) & (x_in > C_slack)
        return close, np.where(close, x, x_in)

    close, load = atom(load, parts["emb"])
    stages = stages + close
    for is_moe in moe:
        scalar = np.ndim(is_moe) == 0
        close, load = atom(load, (parts["a"] if is_moe else parts["d"]) if scalar
                           else np.where(is_moe, parts["a"], parts["d"]))
        stages = stages + close
        if scalar and not is_moe:
            continue
        E = every_expert if scalar else np.where(is_moe, parts["E"], 0.0)
        fit = np.minimum(np.maximum(np.floor((C - load) / e + SLACK), 0.0), E)
        rest = E - fit
        extra = np.ceil(rest / per)
        split = rest > 0
        stages = stages + np.maximum(extra, split)   # = (rest > 0) + max(extra − 1, 0), also where per is inf
        load = np.where(split, (rest - np.maximum(extra - 1.0, 0.0) * per) * e, load + fit * e)
    close, load = atom(load, parts["head"])
    return stages + close


def least_peak(moe, parts: dict, W, kv=None, record: bool = False) -> Fill:
    """The split of least peak over `W` stages (a search on the capacity), its pass at that peak: `top` the
    fullest stage's bytes, `cross` the crossings, `visits` the expected extra expert wafers a token visits,
    `seqs` (with `kv`) the sequences whose cache fits.

    Each round cuts every open bracket into FANOUT parts and finds the first of the FANOUT − 1 capacities inside
    it that fits: in one pass trying them all (on a leading axis) where few combinations are open, a pass costing
    its loop over the layers more than its arrays' length; where many are, by halving (log2 FANOUT passes of one
    capacity each over the open combinations only: the same first, since the stages a pass needs never grow with
    the capacity, for less than half the arithmetic). A combination's bracket stops moving once it is within
    PRECISION, so its result never depends on the others evaluated beside it."""
    W = np.asarray(W, dtype=float)
    big = largest(moe, parts)
    lo = np.maximum(big, total(moe, parts) / W)
    hi = lo + big
    ok = count(moe, parts, lo) <= W
    steps = (np.arange(1.0, FANOUT) / FANOUT).reshape((-1,) + (1,) * np.ndim(lo))
    for _ in range(BISECTIONS):
        done = ok | (hi - lo <= PRECISION * lo)
        if np.all(done):
            break
        tries = lo + (hi - lo) * steps   # FANOUT − 1 capacities strictly inside (lo, hi]
        first = _first_fit(moe, parts, W, tries, ~done)   # FANOUT − 1 where none fits
        some = first < FANOUT - 1
        new_lo = np.where(some, np.where(first > 0, _pick(tries, np.maximum(first - 1, 0)), lo), tries[-1])
        hi_at = _pick(tries, np.minimum(first, FANOUT - 2))
        lo, hi = np.where(done, lo, new_lo), np.where(done, hi, np.where(some, hi_at, hi))
    return run(moe, parts, np.where(ok, lo, hi), kv, record)


def _first_fit(moe, parts: dict, W, tries, open_):
    """Per combination, the index of the first capacity in `tries` (leading axis, increasing) whose pass needs at
    most `W` stages (len(tries) where none does); exact only where `open_`."""
    n = len(tries)
    if np.ndim(open_) == 0 or np.sum(open_) * n < WIDE:
        fits = count(moe, parts, tries) <= W
        return np.where(np.any(fits, axis=0), np.argmax(fits, axis=0), n)
    shape = open_.shape
    idx = np.flatnonzero(open_)
    sub = lambda x: np.broadcast_to(x, shape).ravel()[idx]   # noqa: E731
    moe_open = [x if np.ndim(x) == 0 else sub(x) for x in moe]
    parts_open = {k: sub(v) if k in SPLIT_KEYS else v for k, v in parts.items()}
    W_open, tries_open = sub(W), tries.reshape(n, -1)[:, idx]
    low, high = np.zeros(idx.size, dtype=np.int64), np.full(idx.size, n)   # the answer lies in [low, high]
    while np.any(low < high):   # the sentinel n fits: a bracket of n + 1 = FANOUT indices, halved log2(FANOUT) times
        mid, moving = (low + high) // 2, low < high
        probe = np.take_along_axis(tries_open, np.minimum(mid, n - 1)[None], axis=0)[0]
        fits = count(moe_open, parts_open, probe) <= W_open
        low, high = np.where(moving & ~fits, mid + 1, low), np.where(moving & fits, mid, high)
    first = np.full(shape, n)
    first.reshape(-1)[idx] = low
    return first


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
    # an elementwise weighted sum, not `rows @ w`: a matrix-vector product goes to BLAS, whose threads cost a
    # 10^5-row call more than they save (cold serving space 7.4 s wall on one thread, 9.2 s on two)
    key = (rows * (1.0 + np.sqrt(np.arange(2.0, rows.shape[1] + 2.0)) % 1.0)).sum(axis=1)
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    inverse = inverse.ravel()
    if np.array_equal(rows[first][inverse], rows, equal_nan=True):
        return rows[first], inverse
    uniq, inverse = np.unique(rows, axis=0, return_inverse=True)
    return uniq, inverse.ravel()


def clear():
    """Forget every cached split (cold benchmarks)."""
    _MEMO.entries.clear()
