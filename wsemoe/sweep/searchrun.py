"""A search run: generations evaluated in this process, written as parts of consecutive evaluations.

Part `part-<start>-<stop>` of a search holds its evaluations start..stop-1 in the order they were
made; each row's `point` is its index in the full grid, so every row equals the grid sweep's row
of that index. A search is deterministic for a config (seed included), so `--resume` replays it:
parts an earlier run finished are kept when their points match the replay (checked against the
part's `point` column; otherwise they are rewritten), and only the rest is written. A budget that
covers the whole space enumerates it like a grid sweep (`enumerates`), and the manifest says so.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from wsemoe.sweep import chunked, engine

from wsemoe.store import store
from wsemoe.store.block import Block
from wsemoe.sweep.executors import Writers
from wsemoe.store.partial import part_files
from wsemoe.sweep.pareto import minimization
from wsemoe.sweep.search import Driver


class _Cutter:
    """Evaluations buffered until a part's range is complete; reused ranges are verified, not rewritten."""

    def __init__(self, cfg, grid, partial_dir: Path, chunk: int, reused, writers, on_done):
        self.cfg, self.grid, self.dir, self.chunk = cfg, grid, Path(partial_dir), chunk
        self.reused = {s: e for s, e in reused}
        self.writers, self.on_done = writers, on_done
        self.pos, self.blocks, self.settled = 0, [], set()  # settled: ranges kept or written by this run

    def _next_stop(self) -> int:
        if self.pos in self.reused:
            return self.reused[self.pos]
        later = [s for s in self.reused if s > self.pos]
        return min([self.pos + self.chunk, *later])

    def add(self, blk: Block) -> None:
        self.blocks.append(blk)
        while sum(len(b) for b in self.blocks) >= self._next_stop() - self.pos:
            self._emit(self._next_stop() - self.pos)

    def finish(self) -> None:
        while self.blocks and sum(len(b) for b in self.blocks):
            self._emit(min(sum(len(b) for b in self.blocks), self._next_stop() - self.pos))

    def _emit(self, rows: int) -> None:
        merged = Block.concat(self.blocks)
        part, rest = merged.take(slice(0, rows)), merged.take(slice(rows, None))
        self.blocks = [rest] if len(rest) else []
        start, stop = self.pos, self.pos + rows
        self.pos = stop
        self.settled.add((start, stop))
        if self.reused.get(start) == stop and self._matches(start, stop, part.index):
            self.on_done({"points": rows})
            return
        self.writers.submit(self.dir, chunked.reduce_chunk(part, self.cfg, start, stop, self.grid))

    def _matches(self, start: int, stop: int, index: np.ndarray) -> bool:
        path = self.dir / "points.parquet" / store.part_name(start, stop)
        try:
            points = pq.read_table(path, columns=["point"]).column("point").to_numpy()
        except (OSError, ValueError):
            return False
        return np.array_equal(points, index)

    def stale(self) -> list[tuple[int, int]]:
        """Reused ranges the replay did not confirm (left by a run that went another way)."""
        return [(s, e) for s, e in self.reused.items() if (s, e) not in self.settled]


def run_search(cfg, baselines, partial_dir, chunk: int, reused=(), on_done=None) -> dict:
    """Run the config's search, writing parts into the partial folder; returns the search's info."""
    ev = engine.Evaluator(cfg)
    driver = Driver(cfg.search, ev.grid, len(cfg.objectives), cfg.front_groups())
    done = on_done or (lambda stats: None)
    with Writers(done) as writers:
        cutter = _Cutter(cfg, ev.grid, partial_dir, chunk, reused, writers, done)
        while (index := driver.ask()) is not None:
            start = driver.evaluated
            blk = chunked.evaluate_chunk(cfg, start, start + len(index), baselines, index=index, evaluator=ev)
            driver.tell(minimization(blk, cfg.objectives), blk.violation)
            cutter.add(blk)
        cutter.finish()
    for start, stop in cutter.stale():
        for f in part_files(Path(partial_dir), start, stop):
            f.unlink(missing_ok=True)
    return driver.info()


def enumerates(cfg) -> bool:
    """True when a search's budget covers every point of its space: the grid is enumerated instead (the
    exact front, and the same rows a search would give in another order)."""
    return bool(cfg.search) and cfg.search.evaluations >= cfg.size()


def enumerated_info(cfg) -> dict:
    """What the manifest records about a search that enumerated its space."""
    from wsemoe.sweep.search import population_size

    n = cfg.size()
    return {"algorithm": cfg.search.algorithm, "library": "none: every point enumerated", "generations": 0,
            "population": population_size(cfg.search), "evaluated": n, "budget": n, "space_points": n,
            "stopped": f"enumerated: the budget of {cfg.search.evaluations:,} covers all {n:,} points", "enumerated": True}
