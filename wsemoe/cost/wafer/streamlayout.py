"""Where a weight-streaming MoE layer's experts sit on the PE fabric: candidate layouts (a grid of a × b expert tiles
of h × w PEs each, `expertgrid`), what each costs per layer (the busiest expert's pipelined SwiGLU, dispatch and
combine) and the area each gives an expert (the SRAM per PE it needs follows), and the best layout that fits at
every point. numpy only.

Candidate tile sides are h = ⌊R·f/a⌋ and w = ⌊C·f'/b⌋ over the program rectangle R × C, for f, f' on the √2
ladder 1, 2^-½, 2^-1, … (exact in binary) down to one PE: f = 1 fills the rectangle, the smaller ones leave PEs
idle. The ladder makes a bigger fabric keep every layout of a smaller one (⌊2R·f/2/a⌋ = ⌊R·f/a⌋), so more PEs,
SRAM or link bandwidth can only add or speed up candidates: the best never gets slower or less feasible.

Per candidate, in cycles (docs/cost-model.md, "Weight streaming at PE level"):

    experts   n·A + B          the busiest region's up/gate, SiLU·mul and down (decode.ffn, input from another
                               region): A its pacing per token (marginal cost of one more token), B its fill and
                               drain, latencies and operator overheads once; n its tokens (a step's expected
                               maximum over its routing, routing.busiest_expert; k·p_max·T at many); per pass
    dispatch  T·D_d + L_d      D_d = wavelets per token × k (unicast) × max(east/west tile link / h,
                               south/north tile link / w); L_d the longest path (tile hops × sides, a turn) and one
                               operator overhead; combine likewise (multicast: a relay per tile hop); per move
                               (a step moves the tokens once a pass in inference, 3 times to the matmuls' 4
                               forward-equivalents in training with full recompute: `streaming.moves`)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace

import numpy as np

from wsemoe.cost import structure
from wsemoe.cost.fabric.cache import bounded_cache
from wsemoe.cost.wafer import decode, expertgrid
from wsemoe.cost.wafer.decode import add
from wsemoe.cost.wafer.fabric import path_cycles, wavelets

PE_FIELDS = ("clock_hz", "fmac_width", "link_bytes_per_cycle", "hop_cycles", "turn_cycles", "relay_cycles", "op_overhead_cycles")
SWIGLU = ("up_gate", "silu_mul", "down")
REDUCTIONS = ("tree", "chain", "ring")   # all-reduce patterns of the regions' matmuls (cost/wafer/collectives.py)
FIELDS = ("a", "b", "h", "w", "pattern", "A", "B", "Dd", "Dc", "Ld", "Lc", "hops", "link", "linkc")


@dataclass(frozen=True)
class Key:
    """Everything a layer's candidate layouts depend on (one unique combination of a frame)."""

    experts: int
    top_k: int
    hidden: int
    width: int            # routed expert FFN width F
    act_bytes: float
    rows: int             # program rectangle
    cols: int
    pe: tuple             # ((PE fact, value), ...) of PE_FIELDS
    mode: str             # multicast | unicast
    bal: structure.BalanceKey = structure.UNIFORM

    def facts(self):
        """The PE facts as attributes."""
        return SimpleNamespace(**dict(self.pe))


@dataclass(frozen=True, eq=False)
class Table:
    """The candidate layouts that can be best at some point (the others are beaten on every count), as arrays."""

    a: np.ndarray
    b: np.ndarray
    h: np.ndarray
    w: np.ndarray
    pattern: np.ndarray    # index into REDUCTIONS
    A: np.ndarray          # pipeline cycles per token of the busiest region
    B: np.ndarray          # its fill and drain, latencies and overheads (cycles, once)
    Dd: np.ndarray         # dispatch cycles per token of the micro-batch
    Dc: np.ndarray
    Ld: np.ndarray         # dispatch latency and overhead (cycles)
    Lc: np.ndarray
    hops: np.ndarray       # PE hops of the longest dispatch path
    link: np.ndarray = field(repr=False)   # dispatch tokens on the busiest PE link per token of the micro-batch
    linkc: np.ndarray = field(repr=False)  # combine tokens on the busiest PE link per token of the micro-batch
    p_max: float = 0.0     # the busiest expert's share of the token copies
    shares: np.ndarray = field(default=None, repr=False)   # every expert's share (routing.busiest_expert)

    @property
    def area(self) -> np.ndarray:
        """PEs of one expert's region."""
        return self.h * self.w


def ladder(extent: int, parts: int) -> np.ndarray:
    """Tile sides ⌊extent·2^(-j/2) / parts⌋ ≥ 1 for j = 0, 1, … (distinct, descending)."""
    j = np.arange(2 * int(np.log2(max(extent, 1))) + 3)
    f = np.ldexp(np.where(j % 2 == 1, 2.0 ** -0.5, 1.0), -(j // 2))
    sides = np.floor(extent * f / parts)
    return np.unique(sides[sides >= 1])[::-1]


SPAN = 1024.0   # tokens over which the pacing is measured: a multiple of every SIMD width (4 on WSE-2, 8 on WSE-3)


def pipeline(key: Key, h: np.ndarray, w: np.ndarray, pattern: str) -> tuple[np.ndarray, np.ndarray]:
    """(A, B) of the expert's SwiGLU on h × w PEs with its reductions by `pattern`: cycles at one token = A + B,
    each more token adds A. A is the slope over `SPAN` tokens, not the step from one token to two: the SiLU·mul
    rounds n tokens' elements up to whole SIMD words (⌈5n/4⌉·7 cycles: 7 from one token to two, 8.75 a token
    over many), so the first step undercounts the pacing by up to a word per token (1% of a 351-cycle pacing);
    over a multiple of the SIMD width the rounding cancels and A·n + B is the cycles at n within one word."""
    pe, coll = key.facts(), {"pattern": pattern, "levels": 2}

    def cycles(n):
        ops = decode.ffn(key.hidden, key.width, h, w, pe, n, key.act_bytes, coll, input_broadcast=True)
        return add(*(ops[o] for o in SWIGLU))["cycles"]

    one, many = cycles(1.0), cycles(1.0 + SPAN)
    pacing = (many - one) / SPAN
    return pacing, one - pacing


def phase(key: Key, g: expertgrid.Grid, which: str, h, w) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(cycles per token of the micro-batch, latency and overhead cycles, busiest PE link's tokens per token) of
    the grid's dispatch or combine on tiles of h × w PEs."""
    pe = key.facts()
    ew, ns = g.peaks(which)
    copies = key.top_k if g.mode == "unicast" else 1.0
    link = copies * np.maximum(ew / h, ns / w)
    per_token = wavelets(key.hidden, key.act_bytes, pe) * link
    path = np.zeros(np.shape(h))
    for dr, dc, turn in g.profile:
        path = np.maximum(path, path_cycles(dr * h + dc * w, turn, 0.0, pe))
    relays = g.relays if which == "combine" else 0.0
    return per_token, path + path_cycles(0.0, 0.0, relays, pe) + pe.op_overhead_cycles, link


def shape_candidates(key: Key, a: int, b: int) -> dict:
    """The candidates of one grid shape a × b: every tile side pair of the ladders and every reduction pattern of
    the regions' matmuls (the layout picks it as it picks the sides), those beaten within the shape dropped."""
    g = expertgrid.grid(key.experts, a, b, key.mode, key.bal)
    h, w = (x.ravel() for x in np.meshgrid(ladder(key.rows, a), ladder(key.cols, b), indexing="ij"))
    (Dd, Ld, link), (Dc, Lc, linkc) = phase(key, g, "dispatch", h, w), phase(key, g, "combine", h, w)
    # a one-expert grid (a dense FFN as one region) has no dispatch path: 0 hops on every tile pair, not a scalar
    hops = np.max([dr * h + dc * w for dr, dc, _ in g.profile] or [np.zeros(h.shape)], axis=0, initial=0.0)
    parts = []
    for pattern in REDUCTIONS:
        A, B = pipeline(key, h, w, pattern)
        parts.append({"a": np.full(h.shape, float(a)), "b": np.full(h.shape, float(b)), "h": h, "w": w, "A": A,
                      "B": B, "Dd": Dd, "Dc": Dc, "Ld": Ld, "Lc": Lc, "hops": hops, "link": link, "linkc": linkc,
                      "pattern": np.full(h.shape, float(REDUCTIONS.index(pattern)))})
    cols = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
    keep = pareto(cols)
    return {k: v[keep] for k, v in cols.items()}


def grid_shapes(key: Key) -> list[tuple[int, int]]:
    """The expert grids (a, b) that fit the program rectangle (at least one PE per tile)."""
    return [(a, b) for a, b in expertgrid.shapes(key.experts) if a <= key.rows and b <= key.cols]


def raw(key: Key) -> tuple[dict, np.ndarray]:
    """Every candidate of the key that its own grid shape does not beat, as arrays; and the experts' shares."""
    shapes = grid_shapes(key)
    parts = [shape_candidates(key, a, b) for a, b in shapes]
    shares = expertgrid.grid(key.experts, *shapes[0], key.mode, key.bal).shares
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}, np.asarray(shares, dtype=float)


def pareto(cols: dict) -> np.ndarray:
    """Indices of the candidates no other beats on every count: pacing A, fill B, the phases' one-off cycles L,
    per-token traffic D and area (more area, less SRAM per PE); of identical ones the first. `choose`'s time grows
    with each of them, so a dropped candidate is never the best."""
    x = np.stack([cols["A"], cols["B"], cols["Ld"] + cols["Lc"], cols["Dd"] + cols["Dc"], -cols["h"] * cols["w"]],
                 axis=1)
    keep = np.ones(len(x), dtype=bool)
    for i in np.argsort(x[:, 0], kind="stable"):   # one row against all; the low-pacing ones prune most
        if keep[i]:
            worse = np.all(x >= x[i], axis=1) & (np.any(x > x[i], axis=1) | (np.arange(len(x)) > i))
            keep &= ~worse
    return np.flatnonzero(keep)


def _held(_, value: Table) -> int:
    return len(value.A)


@bounded_cache(256, 1 << 20, _held)
def table(key: Key) -> Table:
    """The key's candidate layouts that can be best somewhere (cached)."""
    cols, shares = raw(key)
    keep = pareto(cols)
    return Table(*(cols[k][keep] for k in FIELDS), p_max=float(shares.max()), shares=shares)


def choose(t: Table, tokens, busiest, need_area, floor=0.0, offset=0.0, microbatch=False,
           comm_weight=1.0) -> np.ndarray:
    """Index into `t` of each point's layout: the one whose MoE layer is fastest among those whose expert area is at
    least `need_area` PEs (its SRAM fits); where none fits, the fastest of the largest (the least SRAM per PE). Per
    pass of the matmuls, in cycles: core = max(`floor`, busiest region's pipeline) + `offset` (the layer's other
    terms, `StreamingFabric.rest`), then the dispatch and combine after it, or beside it with interleaved
    micro-batches, `comm_weight` times (its moves per pass of the matmuls: 3/4 in training with full recompute).
    Points along the first axis, candidates along the second (a contiguous argmin)."""
    col = lambda x: np.asarray(x, dtype=float).reshape(-1, 1)   # noqa: E731  (points as a column)
    core = np.maximum(col(busiest) * t.A + t.B, col(floor)) + col(offset)
    comm = col(comm_weight) * (col(tokens) * (t.Dd + t.Dc) + (t.Ld + t.Lc))
    time = np.maximum(core, comm) if microbatch else core + comm
    fits = t.area >= col(need_area)
    best = np.argmin(np.where(fits, time, np.inf), axis=1)
    largest = np.flatnonzero(t.area == t.area.max())
    fallback = largest[np.argmin(time[:, largest], axis=1)]
    return np.where(fits.any(axis=1), best, fallback)
