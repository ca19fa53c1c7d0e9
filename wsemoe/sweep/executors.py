"""Where chunks run: in this process, in local worker processes, or on a Dask cluster.

Every executor runs the same task (evaluate a chunk, write its files, return its stats), so
results are identical across executors and chunk sizes. Local workers die with their parent;
Dask workers write to the partial folder directly, so they must see it (a LocalCluster, or a
shared file system). Parts written before a failure stay for `--resume`.
"""

from __future__ import annotations

import ctypes
import logging
import os
import signal
import socket
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor, as_completed

from wsemoe.sweep import chunked

from wsemoe.sweep import partial
from wsemoe.errors import ConfigError, RunError

DASK_TIMEOUT_S = 10


def chunk_task(cfg, start: int, stop: int, baselines, partial_dir: str) -> dict:
    """Evaluate one chunk and write it into the partial folder; returns the chunk's stats."""
    res = chunked.run_chunk(cfg, start, stop, baselines)
    return partial.write_chunk(partial_dir, res.points, res.candidates, res.stats)


def run_tasks(cfg, tasks, baselines, partial_dir, workers: int = 1, scheduler: str | None = None, on_done=None):
    """Run every (start, stop) task; `on_done(stats)` after each completes (any order)."""
    args = [(cfg, s, e, baselines, str(partial_dir)) for s, e in tasks]
    done = on_done or (lambda stats: None)
    if scheduler:
        _run_dask(args, scheduler, done)
    elif workers > 1:
        with ProcessPoolExecutor(max_workers=workers, initializer=_die_with_parent, initargs=(os.getpid(),)) as pool:
            futures = [pool.submit(chunk_task, *a) for a in args]
            try:
                for fut in as_completed(futures):
                    done(fut.result())
            except BaseException:
                for f in futures:
                    f.cancel()
                raise
    else:
        _run_pipelined(args, done)


def _die_with_parent(parent: int) -> None:
    """Worker initializer: the kernel kills this worker when its parent dies (even by SIGKILL)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: workers at least stop when they notice
        pass
    if os.getppid() != parent:  # the parent died before the request took effect
        os._exit(1)


def _run_pipelined(args, done) -> None:
    """One process: evaluate chunk i+1 while a writer thread stores chunk i (pyarrow releases the GIL).

    At most one write is pending, so at most two chunks are in memory.
    """
    with ThreadPoolExecutor(max_workers=1) as writer:
        pending = None
        for cfg, start, stop, baselines, partial_dir in args:
            res = chunked.run_chunk(cfg, start, stop, baselines)
            if pending is not None:
                done(pending.result())
            pending = writer.submit(partial.write_chunk, partial_dir, res.points, res.candidates, res.stats)
        if pending is not None:
            done(pending.result())


def _probe(scheduler: str) -> None:
    """A Dask scheduler speaks first: it sends its handshake as soon as a client connects. A server
    that stays silent (or is not there) is refused within the timeout instead of hanging the run."""
    if not scheduler.startswith("tcp://"):
        return  # other transports (tls, inproc) are left to distributed's own checks
    host, _, port = scheduler.removeprefix("tcp://").rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=DASK_TIMEOUT_S) as sock:
            sock.settimeout(DASK_TIMEOUT_S)
            first = sock.recv(8)
    except ValueError:
        raise ConfigError("expected tcp://host:port", loc=("--scheduler", scheduler)) from None
    except TimeoutError:
        raise RunError(f"no Dask handshake within {DASK_TIMEOUT_S} s: not a Dask scheduler, or unreachable",
                       loc=("--scheduler", scheduler)) from None
    except OSError as exc:
        raise RunError(f"cannot reach a Dask scheduler ({exc.strerror or type(exc).__name__})",
                       loc=("--scheduler", scheduler)) from None
    if not first:
        raise RunError("the server there closed the connection: not a Dask scheduler",
                       loc=("--scheduler", scheduler))


def _run_dask(args, scheduler: str, done) -> None:
    """Submit every chunk to a Dask scheduler; any failure of the cluster is one line, progress kept."""
    try:
        import dask
        from distributed import Client, as_completed as dask_completed
    except ImportError:
        raise ConfigError("the Dask executor needs the optional extra: pip install 'wsemoe[dask]'",
                          loc=("--scheduler",)) from None
    _probe(scheduler)
    timeouts = {"distributed.comm.timeouts.connect": f"{DASK_TIMEOUT_S}s",
                "distributed.comm.timeouts.tcp": f"{3 * DASK_TIMEOUT_S}s"}
    try:
        with dask.config.set(timeouts):
            client = Client(scheduler, timeout=f"{DASK_TIMEOUT_S}s")
    except Exception as exc:  # OSError, TimeoutError, protocol errors from a server that is not Dask
        raise RunError(f"cannot reach a Dask scheduler ({type(exc).__name__})", loc=("--scheduler", scheduler)) from None
    # A dying cluster logs tracebacks from every distributed.* logger; the one-line error says it all.
    logs = [logging.getLogger(n) for n in list(logging.root.manager.loggerDict) if n.startswith("distributed")]
    levels = [log.level for log in logs]
    for log in logs:
        log.setLevel(logging.CRITICAL + 1)
    try:
        futures = [client.submit(chunk_task, *a, pure=False) for a in args]
        for fut in dask_completed(futures):
            done(fut.result())
    except (ConfigError, RunError):
        raise
    except Exception as exc:  # the scheduler or a worker died mid-run
        raise RunError(f"the Dask cluster failed mid-run ({type(exc).__name__}); finished chunks are kept, "
                       "rerun with --resume", loc=("--scheduler", scheduler)) from None
    finally:
        try:
            client.close(timeout=DASK_TIMEOUT_S)
        except Exception:  # closing a dead client must not hide the real error
            pass
        for log, level in zip(logs, levels):
            log.setLevel(level)
