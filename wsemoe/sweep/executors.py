"""Where chunks run: in this process, in local worker processes, or on a Dask cluster.

Every executor runs the same task (evaluate a chunk, write its files, return its stats), so
results are identical across executors and chunk sizes. Local workers die with their parent;
Dask workers write to the partial folder directly, so they must see it (a LocalCluster, or a
shared file system). Parts written before a failure stay for `--resume`.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import signal
import socket
import time
from collections import deque
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool

from wsemoe.sweep import chunked, engine

from wsemoe.store import partial
from wsemoe.errors import ConfigError, RunError

DASK_TIMEOUT_S = 10
WRITERS = 2  # writer threads of the single-process executor, at most
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc mallopt parameters
KEPT_MMAP = 32 << 20  # allocations below this come from the heap (glibc's largest on 64-bit systems)
KEPT_TRIM = 512 << 20  # free memory the heap keeps at its top: more than the chunks in flight use
DEFAULT_THRESHOLD = 128 << 10  # glibc's default for both


def chunk_task(cfg, start: int, stop: int, baselines, partial_dir: str) -> dict:
    """Evaluate one chunk and write it into the partial folder; returns the chunk's stats."""
    res = chunked.run_chunk(cfg, start, stop, baselines, evaluator=_evaluator(cfg))
    return partial.write_chunk(partial_dir, res.points, res.candidates, res.stats)


def run_tasks(cfg, tasks, baselines, partial_dir, workers: int = 1, scheduler: str | None = None, on_done=None):
    """Run every (start, stop) task; `on_done(stats)` after each completes (any order)."""
    args = [(cfg, s, e, baselines, str(partial_dir)) for s, e in tasks]
    done = on_done or (lambda stats: None)
    if scheduler:
        _run_dask(args, scheduler, done)
    elif workers > 1:
        _run_workers(args, workers, done)
    else:
        _run_pipelined(args, done)


def _run_workers(args, workers: int, done) -> None:
    """Chunks on local worker processes. On any failure or interrupt the workers are killed at once (their
    chunk in progress is lost, finished parts stay for --resume) instead of waiting for them: waiting is
    what a second Ctrl-C used to interrupt, leaving the pool's manager thread and the workers hanging."""
    pool = ProcessPoolExecutor(max_workers=workers, initializer=_die_with_parent, initargs=(os.getpid(),))
    try:
        futures = [pool.submit(chunk_task, *a) for a in args]
        for fut in as_completed(futures):
            done(fut.result())
    except BrokenProcessPool:
        _kill_pool(pool)
        raise RunError("a worker process died (killed, or out of memory); finished chunks are kept, rerun with "
                       "--resume", loc=("--workers",)) from None
    except BaseException:
        _kill_pool(pool)
        raise
    pool.shutdown(wait=True)


def _kill_pool(pool: ProcessPoolExecutor) -> None:
    """Kill the pool's workers and let its manager thread end (bounded: no task is waited for)."""
    procs = list((getattr(pool, "_processes", None) or {}).values())  # the executor has no public handle on them
    manager = getattr(pool, "_executor_manager_thread", None)  # (shutdown forgets it)
    for p in procs:
        with contextlib.suppress(OSError, ValueError):
            p.kill()
    pool.shutdown(wait=False, cancel_futures=True)
    for p in procs:
        with contextlib.suppress(OSError, ValueError, AssertionError):
            p.join(timeout=5)
    if manager is not None:  # let it close its wake-up pipe now, not race the interpreter's exit doing so
        manager.join(timeout=5)


def _die_with_parent(parent: int) -> None:
    """Worker initializer: the kernel kills this worker when its parent dies (even by SIGKILL); Ctrl-C,
    which the terminal sends to every process of the group, is the parent's to handle (it kills us). A SIGTERM
    to the group ends a worker silently: the handler inherited from the CLI would raise KeyboardInterrupt here,
    and multiprocessing would start printing its traceback beside the parent's one line until killed."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: workers at least stop when they notice
        pass
    if os.getppid() != parent:  # the parent died before the request took effect
        os._exit(1)
    _keep_heap(True)  # a worker streams chunks until it exits: keep its heap for good


def usable_cores() -> int:
    """Cores this process may run on (its CPU affinity where the system says, else every core)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def writer_threads() -> int:
    """Writer threads worth starting: one per core no other process is running on now, at most WRITERS.
    With no idle core, threads only contend: on the 2-core bench machine at load 3, the BTA space took
    0.88 s written in this thread against 1.08 s with two writers (more CPU too: page faults and GIL
    hand-offs); with a core free the writers overlap encoding with evaluation (the 2 M-point BTA sweep:
    3.3 s with two writers against 4.9 s in this thread, on an idle machine).

    "Now", not the 1-minute load average: that still counts the commands that just ended (a sweep run
    right after another saw load 1 on an idle 2-core machine and wrote in this thread)."""
    cores = usable_cores()
    busy = _running_elsewhere()
    if busy is None:
        try:
            busy = os.getloadavg()[0]
        except OSError:  # neither on this system
            return WRITERS
    return max(0, min(WRITERS, int(cores - busy)))


def _running_elsewhere(samples: int = 5) -> float | None:
    """Processes running or runnable besides this one, averaged over a few milliseconds (Linux
    /proc/loadavg's fourth field counts them at this instant, this process included); None elsewhere."""
    counts = []
    for k in range(samples):
        try:
            with open("/proc/loadavg") as f:
                counts.append(int(f.read().split()[3].split("/")[0]) - 1)
        except (OSError, ValueError, IndexError):
            return None
        if k + 1 < samples:
            time.sleep(0.002)
    return sum(counts) / len(counts)


class Writers:
    """Writer threads that encode and store chunks while this thread evaluates the next one (pyarrow
    and hashlib release the GIL), or writes in this thread when no core is idle (`writer_threads`).
    At most `threads` writes are pending, so at most threads + 1 chunks are in memory; `done(stats)`
    is called for each finished write, in submission order."""

    def __init__(self, done, threads: int | None = None):
        self.done, self.pending = done, deque()
        self.threads = writer_threads() if threads is None else threads

    def __enter__(self):
        self.heap = kept_heap()
        self.heap.__enter__()
        self.pool = ThreadPoolExecutor(max_workers=self.threads) if self.threads else None
        return self

    def submit(self, partial_dir, res) -> None:
        if self.pool is None:
            self.done(partial.write_chunk(partial_dir, res.points, res.candidates, res.stats))
            return
        while len(self.pending) >= self.threads:
            self.done(self.pending.popleft().result())
        self.pending.append(self.pool.submit(partial.write_chunk, partial_dir, res.points, res.candidates, res.stats))

    def __exit__(self, *exc):
        try:
            while self.pending and exc[0] is None:
                self.done(self.pending.popleft().result())
        finally:
            if self.pool is not None:
                self.pool.shutdown(wait=True)
            self.heap.__exit__(*exc)
        return False


def _run_pipelined(args, done) -> None:
    """One process: evaluate the next chunk while writer threads store earlier ones."""
    with Writers(done) as writers:
        for cfg, start, stop, baselines, partial_dir in args:
            writers.submit(partial_dir, chunked.run_chunk(cfg, start, stop, baselines, evaluator=_evaluator(cfg)))


_EVALUATOR = (None, None)  # (config, evaluator) of the last chunk: a process's chunks share one


def _evaluator(cfg) -> engine.Evaluator:
    """The evaluator of `cfg`, reused across a process's chunks. The pair is read and replaced as one
    tuple, so threads of a Dask worker running chunks of two sweeps never mix them up."""
    global _EVALUATOR
    last_cfg, last = _EVALUATOR
    if last_cfg is not cfg:
        last = engine.Evaluator(cfg)
        _EVALUATOR = (cfg, last)
    return last


def _glibc():
    """The C library when it is glibc (it has mallopt and malloc_trim), else None."""
    try:
        libc = ctypes.CDLL("libc.so.6")
        return libc if hasattr(libc, "mallopt") and hasattr(libc, "malloc_trim") else None
    except OSError:
        return None


def _keep_heap(keep: bool) -> None:
    """Raise glibc's mmap and trim thresholds (keep) or restore their defaults and trim the heap."""
    libc = _glibc()
    if libc is None:
        return
    libc.mallopt(M_MMAP_THRESHOLD, KEPT_MMAP if keep else DEFAULT_THRESHOLD)
    libc.mallopt(M_TRIM_THRESHOLD, KEPT_TRIM if keep else DEFAULT_THRESHOLD)
    if not keep:
        libc.malloc_trim(0)


@contextlib.contextmanager
def kept_heap():
    """Keep freed memory in the process while chunks stream through it (glibc only).

    By default glibc returns each freed chunk's columns to the OS and the next chunk faults them
    back in page by page: 46,000 page faults and 30% of the evaluation time on the 655k-point BTA
    space. Raising the mmap and trim thresholds keeps that memory for the next chunk (the chunk
    size bounds it); the defaults are restored and the heap trimmed afterwards.
    """
    _keep_heap(True)
    try:
        yield
    finally:
        _keep_heap(False)


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
