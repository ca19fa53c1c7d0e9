"""Where chunks run: in this process, in local worker processes, or on a Dask cluster.

Every executor runs the same task (evaluate a chunk, write its files, return its stats), so
results are identical across executors and chunk sizes. Dask workers write to the results
folder directly: they must see it (a LocalCluster, or a shared filesystem).
"""

from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

from wsemoe import chunked, store
from wsemoe.errors import ConfigError


def chunk_task(cfg, index: int, start: int, stop: int, baselines, partial_dir: str) -> dict:
    """Evaluate one chunk and write it into the partial folder; returns the chunk's stats."""
    res = chunked.run_chunk(cfg, index, start, stop, baselines)
    store.write_chunk(Path(partial_dir), index, res.points, res.candidates, res.stats)
    return res.stats


def run_tasks(cfg, tasks, baselines, partial_dir, workers: int = 1, scheduler: str | None = None, on_done=None):
    """Run every (index, start, stop) task; `on_done(stats)` after each completes (any order)."""
    args = [(cfg, i, s, e, baselines, str(partial_dir)) for i, s, e in tasks]
    done = on_done or (lambda stats: None)
    if scheduler:
        _run_dask(args, scheduler, done)
    elif workers > 1:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            for fut in as_completed([pool.submit(chunk_task, *a) for a in args]):
                done(fut.result())
    else:
        _run_pipelined(args, done)


def _run_pipelined(args, done) -> None:
    """One process: evaluate chunk i+1 while a writer thread stores chunk i (pyarrow releases the GIL).

    At most one write is pending, so at most two chunks are in memory.
    """
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=1) as writer:
        pending = None
        for cfg, index, start, stop, baselines, partial in args:
            res = chunked.run_chunk(cfg, index, start, stop, baselines)
            if pending is not None:
                done(pending.result())
            pending = writer.submit(_write, Path(partial), res)
        if pending is not None:
            done(pending.result())


def _write(partial: Path, res) -> dict:
    store.write_chunk(partial, res.index, res.points, res.candidates, res.stats)
    return res.stats


def _run_dask(args, scheduler: str, done) -> None:
    try:
        from distributed import Client, as_completed as dask_completed
    except ImportError:
        raise ConfigError("the Dask executor needs the optional extra: pip install 'wsemoe[dask]'",
                          loc=("--scheduler",)) from None
    try:
        client = Client(scheduler, timeout="10s")
    except (OSError, TimeoutError) as exc:
        raise ConfigError(f"cannot reach the Dask scheduler: {exc}", loc=("--scheduler", scheduler)) from None
    try:
        futures = [client.submit(chunk_task, *a, pure=False) for a in args]
        for fut in dask_completed(futures):
            done(fut.result())
    finally:
        client.close()
