"""Where the chunks of a map run: in this process, on a local process pool, or on a Dask cluster.

Every executor takes the :class:`~.compute.ReachContext` once per worker and yields ``(chunk id, result)``
as chunks finish (in completion order; the map does not depend on it). At most ``4 x workers`` chunks are in
flight, so a map of any size streams through bounded memory.

* ``"serial"``: this process, one chunk after the other.
* ``"pool"`` (default): :class:`concurrent.futures.ProcessPoolExecutor` on the local cores (``forkserver``
  start method on POSIX, so a driver with threads -- ROS, Dask -- is never forked); the context goes to each
  worker once, through the pool's initializer.
* ``"dask"``: a ``distributed.Client`` on ``scheduler`` (``tcp://host:8786``), or on a
  ``distributed.LocalCluster`` of ``workers`` single-threaded worker processes when no scheduler is given
  (``processes=False`` puts the workers in this process as threads: tests, debugging). The context is
  scattered to every worker once (``broadcast=True``) and each task receives it by reference.

Why Dask and not Ray: the work is a plain bag of independent, equal-sized numpy tasks with one shared
read-only object, which ``distributed`` does with ``scatter``/``submit``/``as_completed`` and nothing more;
``distributed`` is pure Python from PyPI (a few MB), starts an in-process cluster in a second for tests, and
is what HPC sites already run (``dask-jobqueue`` on SLURM/PBS, Kubernetes, ``dask-ssh``). Ray would add a
large compiled runtime (raylet, its own object store and GCS) for features the map does not use (actors,
GPUs), and its wheels lag new Python versions.
"""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import os
import pickle
import sys
import time
import warnings

from ..errors import InvalidConfiguration, MechanismModelError
from .compute import ReachContext, compute_chunk
from ..extras import install_hint

__all__ = ["EXECUTORS", "run_chunks", "default_workers", "LOCAL_CLUSTER_CONFIG", "slow_malloc"]

EXECUTORS = ("serial", "pool", "dask")

_WORKER_CTX: ReachContext | None = None

#: The Dask configuration of a LocalCluster the map creates (a real cluster keeps its operator's):
#:
#: * no ``MALLOC_TRIM_THRESHOLD_`` in the workers' environment. ``distributed``'s nannies set it (65536) so that
#:   glibc returns freed memory sooner; but glibc's malloc, given any fixed trim or mmap threshold, stops adapting
#:   its mmap threshold, so every array above 128 KiB is then a fresh ``mmap`` whose pages fault in zeroed, and
#:   a chunk's numpy work takes 1.1-1.6x the CPU (MER chunks with and without the variable, in one process and
#:   in Dask workers; BENCHMARKS.md). It was most of the LocalCluster's excess CPU over the process pool.
#: * no statistical profiler sampling every worker's stack each 10 ms, no work stealing (equal tasks, at most 4
#:   per worker in flight), the event-loop watchdog, memory and system monitors every second or two instead of
#:   every 20, 100 and 500 ms.
LOCAL_CLUSTER_CONFIG = {"distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None,
                        "distributed.worker.profile.enabled": False, "distributed.scheduler.work-stealing": False,
                        "distributed.admin.tick.interval": "1s", "distributed.worker.memory.monitor-interval": "1s",
                        "distributed.admin.system-monitor.interval": "2s"}

#: glibc malloc settings that, set in a worker's environment, fix its mmap threshold (see LOCAL_CLUSTER_CONFIG)
#: unless ``MALLOC_MMAP_THRESHOLD_`` is set too, a large one: a Dask worker that has one gets a warning
SLOW_MALLOC_ENV = ("MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_", "MALLOC_MMAP_MAX_")


def default_workers() -> int:
    """The cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:   # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def _pool_init(payload: bytes) -> None:
    global _WORKER_CTX
    _WORKER_CTX = pickle.loads(payload)


def _pool_task(chunk_id: int, voxels):
    return chunk_id, compute_chunk(_WORKER_CTX, voxels)


def _dask_task(ctx: ReachContext, chunk_id: int, voxels):
    return chunk_id, compute_chunk(ctx, voxels)


def check_executor(executor: str, workers, scheduler) -> int:
    """Validate the execution settings before any work is scheduled; returns the worker count."""
    if executor not in EXECUTORS:
        raise InvalidConfiguration(f"executor must be one of {EXECUTORS}, got {executor!r}")
    if workers is None:
        workers = 1 if executor == "serial" else default_workers()
    if isinstance(workers, bool) or not isinstance(workers, int) or not 1 <= workers <= 4096:
        raise InvalidConfiguration(f"workers must be an integer in [1, 4096], got {workers!r}")
    if scheduler is not None:
        if executor != "dask":
            raise InvalidConfiguration("a scheduler address needs executor='dask'")
        if not isinstance(scheduler, str) or "://" not in scheduler:
            raise InvalidConfiguration(f"scheduler must be an address such as tcp://host:8786, got {scheduler!r}")
    return workers


def run_chunks(ctx: ReachContext, chunks, executor: str = "pool", workers: int | None = None,
               scheduler: str | None = None, processes: bool = True, stats: dict | None = None):
    """Yield ``(chunk_id, result)`` for ``chunks`` (a list of ``(chunk_id, voxel indices)``). ``stats``: a dict
    that a LocalCluster of processes adds ``nanny_cpu`` to: the CPU seconds of its nannies that run in processes
    of their own (0 for ``distributed``'s LocalCluster, whose nannies run in this process)."""
    workers = check_executor(executor, workers, scheduler)
    chunks = list(chunks)
    if not chunks:
        return
    if executor == "serial":
        for cid, vox in chunks:
            yield cid, compute_chunk(ctx, vox)
    elif executor == "pool":
        yield from _run_pool(ctx, chunks, workers)
    else:
        yield from _run_dask(ctx, chunks, workers, scheduler, processes, stats)


def _windowed(submit, chunks, window: int, wait_first):
    pending = set()
    it = iter(chunks)
    for cid, vox in it:
        pending.add(submit(cid, vox))
        if len(pending) >= window:
            break
    while pending:
        done, pending = wait_first(pending)
        for f in done:
            yield f.result()
            nxt = next(it, None)
            if nxt is not None:
                pending.add(submit(*nxt))


def _run_pool(ctx, chunks, workers):
    method = "forkserver" if sys.platform != "win32" and "forkserver" in multiprocessing.get_all_start_methods() \
        else "spawn"
    payload = pickle.dumps(ctx, protocol=pickle.HIGHEST_PROTOCOL)
    pool = cf.ProcessPoolExecutor(max_workers=min(workers, len(chunks)), mp_context=multiprocessing.get_context(method),
                                  initializer=_pool_init, initargs=(payload,))
    try:
        def wait_first(pending):
            done, rest = cf.wait(pending, return_when=cf.FIRST_COMPLETED)
            return done, rest
        yield from _windowed(lambda c, v: pool.submit(_pool_task, c, v), chunks, 4 * workers, wait_first)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _run_dask(ctx, chunks, workers, scheduler, processes, stats):
    try:
        import dask
        from distributed import Client, LocalCluster, wait
    except ImportError as exc:   # pragma: no cover - the 'dask' extra
        raise MechanismModelError(f"executor 'dask' needs distributed: {install_hint('dask')}") from exc
    quiet = LOCAL_CLUSTER_CONFIG if scheduler is None else {}
    with dask.config.set(quiet):
        yield from _dask_run(ctx, chunks, workers, scheduler, processes, stats, Client, LocalCluster, wait)


def _malloc_env() -> dict:
    """This process's glibc malloc tunables from the environment (run on each Dask worker)."""
    return {k: os.environ[k] for k in SLOW_MALLOC_ENV + ("MALLOC_MMAP_THRESHOLD_",) if k in os.environ}


def slow_malloc(env: dict) -> bool:
    """Whether a process started with the malloc tunables ``env`` (:func:`_malloc_env`) has a fixed mmap
    threshold below 4 MiB: numpy arrays above it are mapped and page-faulted afresh on every allocation."""
    mmap = env.get("MALLOC_MMAP_THRESHOLD_")
    if mmap is not None:
        try:
            return int(mmap) < 4 << 20
        except ValueError:
            return True
    return any(k in env for k in SLOW_MALLOC_ENV)


def _pid_cpu() -> tuple:
    return os.getpid(), time.process_time()


def _dask_run(ctx, chunks, workers, scheduler, processes, stats, Client, LocalCluster, wait):
    cluster = None
    if scheduler is None:
        where = {"host": "127.0.0.1"} if processes else {}       # loopback, or in-process without sockets
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=processes,
                               dashboard_address=None, silence_logs=40, **where)
        client = Client(cluster)
    else:
        client = Client(scheduler, timeout=30)
    try:
        n = max(1, len(client.scheduler_info().get("workers", {})) or workers)
        envs = client.run(_malloc_env)
        slow = {addr: env for addr, env in envs.items() if slow_malloc(env)}
        if stats is not None:
            stats["worker_malloc_env"] = slow
        if slow:
            addr, env = next(iter(slow.items()))
            warnings.warn(f"{len(slow)} of {len(envs)} Dask workers run with glibc malloc settings {env} (e.g. "
                          f"{addr}): a fixed mmap threshold makes a map's numpy work take 1.1-1.6x the CPU. "
                          f"Start the workers without MALLOC_TRIM_THRESHOLD_ (distributed's nannies set it: "
                          f"DASK_DISTRIBUTED__NANNY__PRE_SPAWN_ENVIRON=\"{{'MALLOC_TRIM_THRESHOLD_': None}}\" "
                          f"dask worker ...) or with MALLOC_MMAP_THRESHOLD_=33554432 (docs/reach.md)",
                          RuntimeWarning, stacklevel=2)
        ctx_future = client.scatter(ctx, broadcast=True, hash=False)

        def submit(cid, vox):
            return client.submit(_dask_task, ctx_future, cid, vox, pure=False, retries=2)

        def wait_first(pending):
            res = wait(list(pending), return_when="FIRST_COMPLETED")
            return res.done, set(res.not_done)
        yield from _windowed(submit, chunks, 4 * n, wait_first)
        if stats is not None and cluster is not None and processes:
            # a LocalCluster's nannies run in this process (their CPU is the driver's): only other processes'
            me = os.getpid()
            stats["nanny_cpu"] = float(sum(c for pid, c in client.run(_pid_cpu, nanny=True).values() if pid != me))
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
