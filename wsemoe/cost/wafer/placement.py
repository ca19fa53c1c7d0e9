"""Where one MoE layer's regions sit on a grid of tiles (one tile = one expert region), and the layer blocks of a
wafer: the `blocked` and `interleaved` strategies, and the check that every expert has exactly one tile.

A layer's attention region is `a_r × a_c` tiles: its PE rows split the hidden vector, its PE columns hold copies
of it, so each of its `a_c` tile columns (a *logical attention column*) holds a whole token split over `a_r`
tiles. The layer's block is `rows × cols` tiles (near square, at least `a_r × a_c`), the attention rows centred:

- `blocked`: the attention columns side by side at the block's west edge, the experts packed beside them;
- `interleaved`: the attention columns spread evenly across the block (column j at ⌊(j + ½)·cols / a_c⌋), so
  every expert has a copy of the token nearby (MoEntwine's entwined placement at PE scale: short dispatch, but
  attention's collectives across its columns now span the block).

Shared-expert tiles, then routed experts 0 … E − 1, take the free tiles in column-major order from the west;
each expert tile is fed by the nearest attention column (blocked; the lower on a tie) or by the column of its
slice of the block (interleaved). Numpy only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

STRATEGIES = ("blocked", "interleaved")


@dataclass(frozen=True, eq=False)
class LayerPlacement:
    """One MoE layer's tiles: attention (logical a_r × a_c), experts, shared experts, who feeds whom."""

    strategy: str
    rows: int
    cols: int
    attention: np.ndarray   # (a_r, a_c) tile ids (r·cols + c) of the logical attention tiles
    experts: np.ndarray     # (E,) tile id of each routed expert
    shared: np.ndarray      # (tiles of the shared-expert region,)
    sender: np.ndarray      # (E + shared tiles,) the logical attention column feeding each expert tile

    @property
    def tiles(self) -> int:
        """Tiles of the block."""
        return self.rows * self.cols

    @property
    def stretch(self) -> float:
        """Tile columns the attention spans per logical column (1 when side by side): how much longer its
        collectives across columns run than on a compact region."""
        c = np.sort(self.attention[0] % self.cols)
        return float((c[-1] - c[0] + 1) / len(c))

    def coordinates(self, tiles) -> tuple[np.ndarray, np.ndarray]:
        """(row, column) of tile ids."""
        return np.divmod(np.asarray(tiles, dtype=np.int64), self.cols)


def block_shape(a_r: int, a_c: int, tiles: int) -> tuple[int, int]:
    """(rows, cols) of a near-square block holding `tiles` tiles with room for an a_r × a_c attention."""
    rows = max(a_r, int(np.ceil(np.sqrt(tiles))))
    return rows, max(a_c, int(np.ceil(tiles / rows)))


def attention_columns(strategy: str, a_c: int, cols: int) -> np.ndarray:
    """Block columns of the logical attention columns."""
    if strategy == "blocked":
        return np.arange(a_c)
    if strategy == "interleaved":
        return np.floor((np.arange(a_c) + 0.5) * cols / a_c).astype(np.int64)
    raise ValueError(f"placement {strategy!r}: one of {', '.join(STRATEGIES)}")


def place_layer(strategy: str, experts: int, shared_tiles: int, a_r: int, a_c: int) -> LayerPlacement:
    """The tiles of one MoE layer under `strategy` (module docstring)."""
    rows, cols = block_shape(a_r, a_c, a_r * a_c + experts + shared_tiles)
    r0 = (rows - a_r) // 2
    acols = attention_columns(strategy, a_c, cols)
    attention = (r0 + np.arange(a_r))[:, None] * cols + acols[None, :]
    taken = np.zeros(rows * cols, dtype=bool)
    taken[attention.ravel()] = True
    order = np.arange(rows * cols).reshape(rows, cols).T.ravel()   # column-major from the west
    free = order[~taken[order]][:experts + shared_tiles]
    shared, routed = free[:shared_tiles], free[shared_tiles:]
    sender = feeders(strategy, free % cols, acols, cols)
    return LayerPlacement(strategy, rows, cols, attention, np.concatenate([routed]).astype(np.int64),
                          shared.astype(np.int64), np.concatenate([sender[shared_tiles:], sender[:shared_tiles]]))


def feeders(strategy: str, columns: np.ndarray, acols: np.ndarray, cols: int) -> np.ndarray:
    """The logical attention column feeding each expert tile in block column `columns`: blocked, the nearest
    (the lower on a tie); interleaved, the one whose slice of the block (cols / a_c columns) holds the tile."""
    if strategy == "interleaved":
        return np.minimum(columns * len(acols) // cols, len(acols) - 1)
    return np.argmin(np.abs(columns[:, None] - acols[None, :]), axis=1)


def covers_once(p: LayerPlacement, experts: int) -> bool:
    """Every routed expert has exactly one tile, no two share one, and none lies on attention or shared tiles."""
    tiles = np.concatenate([p.experts, p.shared, p.attention.ravel()])
    return (len(p.experts) == experts and len(np.unique(tiles)) == len(tiles)
            and bool(np.all((tiles >= 0) & (tiles < p.tiles))))


def wafer_blocks(tile_rows: int, tile_cols: int, block_rows: int, block_cols: int, layers: int) -> np.ndarray:
    """(layers placed, 2) tile offsets of the layer blocks on a wafer's tile grid: a grid of blocks, row by row,
    as many of `layers` as fit."""
    per_row, per_col = tile_cols // block_cols, tile_rows // block_rows
    k = np.arange(min(layers, per_row * per_col))
    return np.stack([(k // max(per_row, 1)) * block_rows, (k % max(per_row, 1)) * block_cols], axis=1)
