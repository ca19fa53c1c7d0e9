"""Placements of attention TP groups (with ring orders) and of experts on a 2D mesh."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = [
    "STRATEGIES",
    "place_her",
    "Placement",
    "ExpertPlacement",
    "place_groups",
    "place_block",
    "place_er",
    "place_snake",
    "place_random",
    "place_explicit",
    "place_experts",
    "snake_order",
    "cycle_order",
    "near_square_factor",
]

STRATEGIES = ("block", "er", "her", "snake", "random", "explicit")


@dataclass(frozen=True, eq=False)
class Placement:
    """TP groups on a rows x cols mesh.

    ``group_of[n]`` is the group of node n, ``rings[g]`` the node ids of group g
    in ring all-reduce order, ``ftd_id[n]`` the full-token-domain tile of node n
    (ER placements only, else -1) and ``ftd_shape`` that tile's (fr, fc). Hierarchical ER adds
    ``family_of[g]`` (groups at the same place on every wafer share a family and, after the
    cross-wafer all-gather, each other's tokens) and ``cross_rings[l]`` (the dies at local
    position l on every wafer, in cross-wafer ring order); elsewhere both are None.
    """

    rows: int
    cols: int
    tp: int
    group_of: np.ndarray
    rings: np.ndarray
    ftd_id: np.ndarray
    strategy: str = "explicit"
    ftd_shape: tuple[int, int] | None = None
    family_of: np.ndarray | None = None
    cross_rings: np.ndarray | None = None

    def __post_init__(self) -> None:
        n, ng = self.rows * self.cols, self.num_groups
        if self.group_of.shape != (n,) or self.rings.shape != (ng, self.tp) or self.ftd_id.shape != (n,):
            raise ValueError("placement arrays do not match the mesh and tp sizes")
        if sorted(self.rings.ravel().tolist()) != list(range(n)):
            raise ValueError("rings must list every node exactly once")
        if np.any(self.group_of[self.rings] != np.arange(ng)[:, None]):
            raise ValueError("rings disagree with group_of")

    @property
    def families(self) -> np.ndarray:
        """Family of every group (its own id outside hierarchical ER)."""
        return np.arange(self.num_groups) if self.family_of is None else self.family_of

    @property
    def num_wafers(self) -> int:
        """Wafers a hierarchical placement spans (1 otherwise)."""
        return 1 if self.cross_rings is None else self.cross_rings.shape[1]

    @property
    def num_nodes(self) -> int:
        """Number of mesh nodes N."""
        return self.rows * self.cols

    @property
    def num_groups(self) -> int:
        """Number of TP groups N / tp."""
        return self.rows * self.cols // self.tp


@dataclass(frozen=True, eq=False)
class ExpertPlacement:
    """Expert copies on mesh nodes: ``hosts[e, n]`` is True if node n holds expert e.

    ``split[e, n]`` is the share of expert e's tokens its copy on node n receives (rows sum to 1,
    zero where n holds no copy); None means an even split over the copies.
    """

    hosts: np.ndarray
    split: np.ndarray | None = None

    @property
    def weights(self) -> np.ndarray:
        """Share of each expert's tokens each node receives, shape (E, N): ``split`` or an even split."""
        if self.split is not None:
            return self.split
        return self.hosts / self.hosts.sum(axis=1, keepdims=True)

    @property
    def num_experts(self) -> int:
        """Number of distinct experts E."""
        return self.hosts.shape[0]

    @property
    def replicas(self) -> np.ndarray:
        """Copies of every expert, shape (E,)."""
        return self.hosts.sum(axis=1)

    @property
    def optimizer_shares(self) -> np.ndarray:
        """Per node, the routed experts' optimizer state it keeps, in whole experts, when ZeRO-1 shards each
        expert's state over its copies: Σ over the experts it holds of 1 / copies, shape (N,)."""
        return (self.hosts / self.replicas[:, None]).sum(axis=0)

    @property
    def slots_per_node(self) -> np.ndarray:
        """Expert copies held by every node, shape (N,)."""
        return self.hosts.sum(axis=0)

    def hosts_of(self, expert: int) -> np.ndarray:
        """Ascending node ids hosting ``expert``."""
        return np.flatnonzero(self.hosts[expert])


def _check_layout(rows: int, cols: int, tp: int) -> int:
    """Validate mesh size and TP degree; return the number of groups."""
    for name, v in (("rows", rows), ("cols", cols), ("tp", tp)):
        if int(v) != v or v < 1:
            raise ValueError(f"{name} must be a positive integer, got {v!r}")
    n = rows * cols
    if n % tp:
        raise ValueError(f"tp={tp} must divide the node count {rows}x{cols}={n}")
    return n // tp


def near_square_factor(total: int, rows: int, cols: int) -> tuple[int, int] | None:
    """Factor total = a*b with a | rows, b | cols, as square as possible, b >= a on ties.

    Returns None when no such factorization exists.
    """
    shapes = [(a, total // a) for a in range(1, total + 1)
              if total % a == 0 and rows % a == 0 and cols % (total // a) == 0]
    if not shapes:
        return None
    return min(shapes, key=lambda s: (abs(s[1] - s[0]), s[1] < s[0]))


def snake_order(rows: int, cols: int) -> np.ndarray:
    """Boustrophedon order of (rows x cols) row-major indices: even rows left->right, odd rows right->left."""
    grid = np.arange(rows * cols).reshape(rows, cols)
    grid[1::2] = grid[1::2, ::-1]
    return grid.ravel()


def cycle_order(rows: int, cols: int) -> np.ndarray:
    """Ring order over a rows x cols grid (row-major indices) whose steps are grid neighbours where possible.

    With an even number of rows (both dims >= 2) the ring is a Hamiltonian cycle:
    start at (0,0), snake through columns 1..cols-1 row by row, return up column 0,
    so the wrap-around is a neighbour step too (on 2 x k grids this is exactly the
    snake order). Odd rows but even columns use the transposed construction. When
    no neighbour cycle exists (a 1-wide grid or both sides odd) the plain snake
    order is used and only the wrap-around edge is longer.
    """
    if rows >= 2 and cols >= 2 and rows % 2 == 0:
        sub = snake_order(rows, cols - 1)
        r, c = np.divmod(sub, cols - 1)
        body = r * cols + c + 1
        back = np.arange(rows - 1, 0, -1) * cols
        return np.concatenate([[0], body, back]).astype(np.int64)
    if rows >= 2 and cols >= 2 and cols % 2 == 0:
        r, c = np.divmod(cycle_order(cols, rows), rows)  # transposed grid: r is a column
        return (c * cols + r).astype(np.int64)
    return snake_order(rows, cols).astype(np.int64)


def _from_rings(rows: int, cols: int, tp: int, rings: np.ndarray, strategy: str,
                ftd_id: np.ndarray | None = None, ftd_shape=None) -> Placement:
    """Build a Placement from ring orders (group g = row g of ``rings``)."""
    rings = np.asarray(rings, dtype=np.int64).reshape(-1, tp)
    group_of = np.empty(rows * cols, dtype=np.int64)
    group_of[rings] = np.arange(rings.shape[0])[:, None]
    if ftd_id is None:
        ftd_id = np.full(rows * cols, -1, dtype=np.int64)
    return Placement(rows, cols, tp, group_of, rings, ftd_id, strategy, ftd_shape)


def place_snake(rows: int, cols: int, tp: int) -> Placement:
    """Snake: consecutive runs of tp nodes along the boustrophedon order form a group; ring in that order."""
    _check_layout(rows, cols, tp)
    return _from_rings(rows, cols, tp, snake_order(rows, cols), "snake")


def place_block(rows: int, cols: int, tp: int) -> Placement:
    """Block: each group is an aligned br x bc rectangle (br*bc = tp, br | rows, bc | cols).

    The block shape is as square as possible (bc >= br on ties); blocks, and so
    groups, are numbered row-major; the ring inside a block follows
    ``cycle_order`` (snake, closed through neighbours where the block allows).
    A tiling rectangle always exists when tp divides rows·cols: take br = Π p^min(v_p(tp), v_p(rows))
    over the primes p of tp; then tp/br divides cols. So there is no fallback to substitute silently.
    """
    _check_layout(rows, cols, tp)
    shape = near_square_factor(tp, rows, cols)
    if shape is None:  # unreachable by the argument above; kept as a guard, not a substitution
        raise ValueError(f"no block of tp={tp} nodes tiles a {rows}x{cols} mesh")
    br, bc = shape
    lr, lc = np.divmod(cycle_order(br, bc), bc)  # ring positions inside a block
    bi, bj = np.divmod(np.arange(rows * cols // tp), cols // bc)  # block origin per group
    rings = (bi[:, None] * br + lr[None, :]) * cols + bj[:, None] * bc + lc[None, :]
    return _from_rings(rows, cols, tp, rings, "block")


def place_er(rows: int, cols: int, tp: int, ftd: tuple[int, int] | None = None) -> Placement:
    """Entwined rings (MoEntwine ER-Mapping) with FTD tiles of fr x fc nodes, fr*fc = N/tp.

    Node (x, y) joins group (x mod fr)*fc + (y mod fc), so every aligned fr x fc
    tile (a full token domain) holds one member of every group; the tile id is
    (x // fr)*(cols // fc) + y // fc. A group's members form a (rows/fr) x (cols/fc)
    lattice with spacings fr, fc, and its ring follows ``cycle_order`` over that
    lattice (consecutive members fr or fc hops apart). Without ``ftd`` the tile
    is as square as possible.
    """
    ng = _check_layout(rows, cols, tp)
    if ftd is None:
        ftd = near_square_factor(ng, rows, cols)
        if ftd is None:
            raise ValueError(f"no FTD tile fr x fc = {ng} groups divides a {rows}x{cols} mesh")
    fr, fc = (int(v) for v in ftd)
    if fr < 1 or fc < 1 or fr * fc != ng or rows % fr or cols % fc:
        raise ValueError(f"ftd={tuple(ftd)} must satisfy fr*fc = {ng} groups, fr | {rows}, fc | {cols}")
    lat_r, lat_c = rows // fr, cols // fc
    pr, pc = np.divmod(cycle_order(lat_r, lat_c), lat_c)  # lattice ring positions
    gr, gc = np.divmod(np.arange(ng), fc)  # group offsets inside a tile
    rings = (gr[:, None] + pr[None, :] * fr) * cols + gc[:, None] + pc[None, :] * fc
    x, y = np.divmod(np.arange(rows * cols), cols)
    ftd_id = (x // fr) * lat_c + y // fc
    return _from_rings(rows, cols, tp, rings, "er", ftd_id.astype(np.int64), (fr, fc))


def place_her(rows: int, cols: int, wafers, tp: int, ftd: tuple[int, int] | None = None) -> Placement:
    """Hierarchical ER on a (Wr, Wc) mesh of wafers of rows x cols dies: ER inside every wafer, the same layout repeated.

    Each wafer holds g_w = rows·cols/tp TP groups placed by ``place_er`` (FTD tiles inside the wafer);
    group w·g_w + j is local group j of wafer w (wafers numbered row-major), its family is j: the
    groups at the same place on every wafer. ``cross_rings[l]`` lists the die at local position l of
    every wafer in ``cycle_order`` over the wafer grid, the ring the cross-wafer all-gather runs on.
    """
    wr, wc = (int(v) for v in wafers)
    local = place_er(rows, cols, tp, ftd)
    n_w, g_w, tiles = rows * cols, local.num_groups, int(local.ftd_id.max()) + 1
    C = cols * wc
    wi, wj = np.divmod(np.arange(wr * wc), wc)
    lr, lc = np.divmod(np.arange(n_w), cols)
    glob = (wi[:, None] * rows + lr[None, :]) * C + wj[:, None] * cols + lc[None, :]   # (wafer, local id) -> id
    rings = np.concatenate([glob[w][local.rings] for w in range(wr * wc)])
    group_of = np.empty(n_w * wr * wc, dtype=np.int64)
    group_of[rings] = np.arange(rings.shape[0])[:, None]
    ftd_id = np.empty_like(group_of)
    ftd_id[glob] = local.ftd_id[None, :] + tiles * np.arange(wr * wc)[:, None]
    cross = glob[cycle_order(wr, wc)].T                                                  # (local id, W)
    return Placement(rows * wr, C, tp, group_of, rings, ftd_id, "her", local.ftd_shape,
                     np.arange(rings.shape[0]) % g_w, cross)


def place_random(rows: int, cols: int, tp: int, seed: int = 0) -> Placement:
    """Random: a seeded permutation of the nodes (np.random.default_rng(seed)); consecutive runs of tp form groups."""
    _check_layout(rows, cols, tp)
    perm = np.random.default_rng(seed).permutation(rows * cols)
    return _from_rings(rows, cols, tp, perm, "random")


def place_explicit(rows: int, cols: int, tp: int, group_ids) -> Placement:
    """Explicit: ``group_ids[n]`` is node n's group; each id 0..N/tp-1 must occur exactly tp times.

    Ring order inside a group follows the boustrophedon order of the mesh, so
    members that are snake-neighbours are also ring neighbours.
    """
    ng = _check_layout(rows, cols, tp)
    gid = np.asarray(group_ids)
    if gid.shape != (rows * cols,) or not np.issubdtype(gid.dtype, np.integer):
        raise ValueError(f"explicit placement needs {rows * cols} integer group ids, got shape {gid.shape}")
    counts = np.bincount(gid, minlength=ng) if gid.min() >= 0 else None
    if counts is None or gid.max() >= ng or np.any(counts != tp):
        raise ValueError(f"explicit group ids must be 0..{ng - 1}, each used exactly tp={tp} times")
    snake = snake_order(rows, cols)
    # Stable sort by group over the snake sequence keeps snake order inside each group.
    rings = snake[np.argsort(gid[snake], kind="stable")]
    return _from_rings(rows, cols, tp, rings, "explicit")


def place_groups(strategy: str, rows: int, cols: int, tp: int, *, ftd=None, seed: int = 0,
                 explicit=None, wafers=(1, 1)) -> Placement:
    """Dispatch to one of the placement strategies in ``STRATEGIES``.

    `rows`, `cols` are per wafer; every strategy but ``her`` places groups on the whole
    (Wr·rows) x (Wc·cols) grid as if it were one wafer (flat placements).
    """
    if strategy == "her":
        return place_her(rows, cols, wafers, tp, ftd)
    rows, cols = rows * wafers[0], cols * wafers[1]
    if strategy == "block":
        return place_block(rows, cols, tp)
    if strategy == "er":
        return place_er(rows, cols, tp, ftd)
    if strategy == "snake":
        return place_snake(rows, cols, tp)
    if strategy == "random":
        return place_random(rows, cols, tp, seed)
    if strategy == "explicit":
        if explicit is None:
            raise ValueError("strategy 'explicit' needs explicit=<list of group ids>")
        return place_explicit(rows, cols, tp, explicit)
    raise ValueError(f"unknown placement strategy {strategy!r}; choose one of {STRATEGIES}")


def _greedy_hosts(replicas: np.ndarray, n: int) -> np.ndarray:
    """Place replicas[e] copies of each expert, in expert order, on the least-loaded nodes.

    Each expert takes the replicas[e] nodes with fewest copies so far (ties to the
    lowest node id), never two copies on one node. Taking them all at once equals
    one-at-a-time greedy because a chosen node is excluded for the same expert.
    """
    hosts = np.zeros((replicas.size, n), dtype=bool)
    load = np.zeros(n, dtype=np.int64)
    nodes = np.arange(n)
    for e, k in enumerate(replicas):
        chosen = np.lexsort((nodes, load))[:k]
        hosts[e, chosen] = True
        load[chosen] += 1
    return hosts


def place_experts(num_experts: int, rows: int, cols: int, replicas=None) -> ExpertPlacement:
    """Expert copies on the mesh.

    Default: node n hosts expert n mod E when E < N (so with E | N every expert
    has N/E copies at nodes e, e+E, ...; otherwise the first N mod E experts get
    one extra copy), and expert e lives on node e mod N when E >= N. With
    ``replicas`` (E positive ints, each <= N) copies are placed greedily by
    ``_greedy_hosts``.
    """
    _check_layout(rows, cols, 1)
    if int(num_experts) != num_experts or num_experts < 1:
        raise ValueError(f"num_experts must be a positive integer, got {num_experts!r}")
    n, e = rows * cols, int(num_experts)
    if replicas is not None:
        rep = np.asarray(replicas)
        if rep.shape != (e,) or not np.issubdtype(rep.dtype, np.integer) or np.any(rep < 1) or np.any(rep > n):
            raise ValueError(f"replicas must be {e} integers in 1..{n}")
        return ExpertPlacement(_greedy_hosts(rep.astype(np.int64), n))
    hosts = np.zeros((e, n), dtype=bool)
    if e >= n:
        hosts[np.arange(e), np.arange(e) % n] = True
    else:
        hosts[np.arange(n) % e, np.arange(n)] = True
    return ExpertPlacement(hosts)
