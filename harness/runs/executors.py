"""Executors that run batches of simulations, behind ``concurrent.futures.Executor``.

* :class:`SerialExecutor`: in this process, one chunk at a time (``--jobs 1``);
* :class:`LocalProcessExecutor`: a local process pool (the default, one process per core),
  whose workers are forked where that is safe (Linux, one thread), so they start with
  everything the parent has loaded, and started afresh elsewhere, importing only what
  their work needs;
* :class:`~fleetchaos.runs.cluster.DaskExecutor`: a Dask ``distributed`` cluster
  (``--scheduler tcp://HOST:PORT`` or ``tls://HOST:PORT``, or a ``distributed.Client``
  from the Python API), from the optional extra ``fleetchaos[dask]`` (:mod:`fleetchaos.runs.cluster`);
* any other ``concurrent.futures.Executor`` a factory makes (``--executor module:factory``,
  :func:`using_factory`): Ray, a thread pool, a team's own.

:func:`map_chunks` feeds any of them (or any other ``Executor``) a bounded window of
chunks, hands each finished chunk to a callback as soon as it is done, and on Ctrl-C
cancels what has not started and stops the workers.  The order in which chunks finish
never shows in the results: callers index results by job, never by completion.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import multiprocessing
import multiprocessing.connection
import os
import signal
import sys
import threading
import weakref
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Executor, Future, ProcessPoolExecutor, ThreadPoolExecutor, wait
from multiprocessing.context import BaseContext
from typing import Any, TypeVar

from fleetchaos.errors import UserError
from fleetchaos.runs.cluster import DaskExecutor, as_executor, check_scheduler, import_distributed

__all__ = [
    "MAX_CHUNK",
    "DaskExecutor",
    "LocalProcessExecutor",
    "SerialExecutor",
    "check_scheduler",
    "chunked",
    "default_jobs",
    "import_distributed",
    "load_factory",
    "map_chunks",
    "open_executor",
    "open_pools",
    "runs_this_code",
    "start_method",
    "stop",
    "stop_open_pools",
    "tapered",
    "using_factory",
    "warm_forkserver",
    "workers_of",
]

T = TypeVar("T")
R = TypeVar("R")

#: The most jobs one chunk carries: small enough for a live progress bar and little lost
#: work after a crash, large enough that scheduling costs stay small (a run takes 40-150 ms;
#: a chunk costs about 1 ms to schedule).  The last chunks are smaller (:func:`tapered`).
MAX_CHUNK = 4


def default_jobs() -> int:
    """Worker processes used when the user does not say: one per core."""
    return max(1, os.cpu_count() or 1)


def chunked(items: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    """``items`` in consecutive slices of at most ``size``."""
    for start in range(0, len(items), max(1, size)):
        yield items[start : start + size]


def tapered(groups: Sequence[Sequence[T]], workers: int, limit: int = MAX_CHUNK) -> Iterator[tuple[int, Sequence[T]]]:
    """Each group in consecutive slices, ``(group index, slice)``, shrinking as the work runs out.

    A slice holds about ``1 / (2 * workers)`` of the items not yet sliced (at most ``limit``,
    at least 1; guided self-scheduling): long batches go out in full chunks, and the last
    chunks hold one item each, so no worker waits long for another at the end.  A slice
    never spans two groups.
    """
    remaining = sum(len(group) for group in groups)
    for index, group in enumerate(groups):
        start = 0
        while start < len(group):
            size = max(1, min(limit, -(-remaining // (2 * max(1, workers)))))
            part = group[start : start + size]
            yield index, part
            start += len(part)
            remaining -= len(part)


class SerialExecutor(Executor):
    """Runs each submitted call at once, in this process (``--jobs 1``).

    Futures come back already done, so a windowed driver runs one chunk, hands it on,
    then runs the next: progress and partial results behave as with a pool.  Nothing
    is gained by batching in-process, so chunks hold one job each.
    """

    workers = 1
    window = 1
    max_chunk = 1

    def __init__(self) -> None:
        self._shutdown = False

    def submit(self, fn: Callable[..., R], /, *args: Any, **kwargs: Any) -> Future[R]:
        """Run ``fn(*args, **kwargs)`` now; return a finished future."""
        if self._shutdown:
            raise RuntimeError("cannot submit after shutdown")
        future: Future[R] = Future()
        future.set_running_or_notify_cancel()
        try:
            result = fn(*args, **kwargs)
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:
            future.set_exception(exc)
        else:
            future.set_result(result)
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Refuse further work (nothing is ever pending)."""
        self._shutdown = True

    def terminate(self) -> None:
        """Stop now (nothing runs in the background)."""
        self.shutdown()


def _noop() -> None:
    return None


def _worker_init(preload: tuple[str, ...] = ()) -> None:
    # Ctrl-C is the parent's to handle: it cancels pending work and stops the pool.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # SIGTERM (the pool's terminate()) ends a worker at once, whatever handler the
    # parent had installed when it forked (the command line's raises an interrupt).
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    for module in preload:  # a forked worker has them already; a fresh one loads them before its first chunk
        importlib.import_module(module)
    # A parent killed outright (kill -9, the OOM killer) cannot stop its pool: each
    # worker notices it was orphaned and exits instead of waiting forever.
    threading.Thread(target=_exit_when_orphaned, name="fleetchaos-orphan-watch", daemon=True).start()


def _exit_when_orphaned() -> None:
    # Every start method hands a worker the read end of a pipe whose other end only its
    # parent holds open (multiprocessing's parent sentinel): it becomes readable when the
    # parent dies, however it died, even while it lingers unreaped and whoever the worker's
    # own parent process is (a forkserver's workers are the server's children).
    parent = multiprocessing.parent_process()
    if parent is None:
        return
    multiprocessing.connection.wait([parent.sentinel])
    _HARD_EXIT(1)


#: ``os._exit`` as imported: while a run is in progress it is replaced by a stand-in that refuses
#: a policy's exit (``fleetchaos.sim.interrupts.process_exits_refused``); an orphaned worker must
#: still end whatever run it is in.
_HARD_EXIT = os._exit


def start_method() -> str:
    """How worker processes start: ``fork`` on Linux while this process runs one thread.

    A forked worker shares everything the parent has imported (the simulation, and the
    charts when a report will be drawn), so it starts in milliseconds instead of paying
    the imports again.  Forking a process that runs other threads can deadlock the child
    (a lock another thread held at the fork stays held), so then Linux workers come from
    ``forkserver``; macOS's system libraries do not survive a fork and Windows has none,
    so there the platform's default (``spawn``) starts them.  Workers that start afresh
    import only what their work needs, when it first arrives.
    """
    if not sys.platform.startswith("linux"):
        return multiprocessing.get_start_method()
    return "fork" if threading.active_count() == 1 else "forkserver"


def warm_forkserver(preload: Sequence[str]) -> bool:
    """Start the forkserver now (Linux), importing ``preload`` and this command's main module in the background.

    A pool made later with ``method="forkserver"`` forks its workers from that server, so
    they start with those modules loaded, and the server imported them while this process
    was busy starting up, on a core it would have left idle.  False where there is no
    forkserver to start (not Linux).
    """
    if not sys.platform.startswith("linux"):
        return False
    from multiprocessing import forkserver

    multiprocessing.set_forkserver_preload(["__main__", *preload])  # __main__: workers need not import it again
    forkserver.ensure_running()
    return True


#: Local pools not shut down yet: :func:`stop_open_pools` ends them when a command ends by an error, since a pool
#: still open at interpreter exit races Python 3.11's own clean-up (an ``OSError: Bad file descriptor``
#: traceback printed after the command's message).
_OPEN_POOLS: weakref.WeakSet[LocalProcessExecutor] = weakref.WeakSet()


def open_pools() -> list[LocalProcessExecutor]:
    """The local pools open now."""
    return list(_OPEN_POOLS)


def stop_open_pools(keep: Iterable[LocalProcessExecutor] = ()) -> None:
    """Stop the local pools open now but those in ``keep`` (a command's error path that skipped a shutdown)."""
    kept = set(keep)
    for pool in list(_OPEN_POOLS):
        if pool not in kept:
            pool.terminate()


class LocalProcessExecutor(ProcessPoolExecutor):
    """A local process pool whose workers leave Ctrl-C to the parent.

    ``preload`` names modules the workers will need (the chart module before a report is
    drawn): imported here before forking, so every worker shares them, or, where workers
    start afresh, by each worker as it starts.  ``method`` chooses how workers start
    (default :func:`start_method`); ``"forkserver"`` after :func:`warm_forkserver` gives
    workers forked from a server that has the preloads already.
    """

    def __init__(self, workers: int, preload: Sequence[str] = (), *, method: str | None = None):
        method = method or start_method()
        context: BaseContext = multiprocessing.get_context(method)
        if method == "fork":
            for module in preload:
                importlib.import_module(module)
        super().__init__(
            max_workers=workers,
            mp_context=context,
            initializer=_worker_init,
            initargs=(() if method == "fork" else tuple(preload),),
        )
        self.workers = workers
        self.start_method = method
        _OPEN_POOLS.add(self)
        # Start the workers now, before a progress bar starts its drawing thread.  Objects
        # alive now are frozen out of the collector's reach while forking: a worker's
        # collections then never touch (and copy) the pages it shares with its parent.
        if method == "fork":
            gc.freeze()
        try:
            self.submit(_noop).result()
        finally:
            if method == "fork":
                gc.unfreeze()

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """As :meth:`ProcessPoolExecutor.shutdown`; the pool is no longer open."""
        _OPEN_POOLS.discard(self)
        super().shutdown(wait=wait, cancel_futures=cancel_futures)

    def terminate(self) -> None:
        """Cancel what has not started and stop the worker processes now."""
        processes = list((getattr(self, "_processes", None) or {}).values())
        self.shutdown(wait=False, cancel_futures=True)
        for process in processes:
            if process.is_alive():
                process.terminate()
        for process in processes:
            process.join(timeout=5)


#: The executor factory of ``--executor module:factory`` while a command runs (see :func:`using_factory`).
_FACTORY: list[tuple[str, Callable[[], Executor]]] = []


def load_factory(spec: str) -> Callable[[], Executor]:
    """The callable ``module:attr`` names (``--executor``), or a user error naming what is wrong."""
    module_name, _, attr = spec.partition(":")
    fix = "give --executor as module:factory, a function (or class) that returns a concurrent.futures.Executor"
    if not module_name or not attr:
        raise UserError(f"--executor {spec!r}: not module:factory; {fix}")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # the user's module may raise anything on import
        raise UserError(
            f"--executor {spec}: cannot import {module_name} ({type(exc).__name__}: {exc}); {fix}"
        ) from None
    factory = getattr(module, attr, None)
    if not callable(factory):
        raise UserError(f"--executor {spec}: {module_name} has no callable {attr}; {fix}")
    return factory


@contextlib.contextmanager
def using_factory(spec: str | None) -> Iterator[None]:
    """Inside, :func:`open_executor` without a scheduler makes its executor with the factory ``spec`` names."""
    if spec is None:
        yield
        return
    _FACTORY.append((spec, load_factory(spec)))
    try:
        yield
    finally:
        _FACTORY.pop()


def _from_factory(spec: str, factory: Callable[[], Executor]) -> Executor:
    try:
        made = factory()
    except UserError:
        raise
    except Exception as exc:  # the user's factory may raise anything
        raise UserError(f"--executor {spec}: the factory failed ({type(exc).__name__}: {exc})") from None
    if not (callable(getattr(made, "submit", None)) and callable(getattr(made, "shutdown", None))):
        raise UserError(
            f"--executor {spec}: the factory returned {type(made).__name__}, not a concurrent.futures.Executor "
            "(an object with submit() returning futures, and shutdown())"
        )
    return as_executor(made)


def open_executor(jobs: int | None = None, scheduler: str | None = None, preload: Sequence[str] = ()) -> Executor:
    """The executor a user asked for: Dask if ``scheduler``, the ``--executor`` factory's, serial if ``jobs == 1``, else processes.

    ``preload`` names modules local worker processes will need (see :class:`LocalProcessExecutor`).
    """
    if scheduler:
        check_scheduler(scheduler)
        return DaskExecutor(scheduler)
    if _FACTORY:
        return _from_factory(*_FACTORY[-1])
    workers = default_jobs() if jobs is None else jobs
    if workers < 1:
        raise UserError(f"--jobs {jobs}: need at least 1")
    return SerialExecutor() if workers == 1 else LocalProcessExecutor(workers, preload)


def runs_this_code(executor: Executor) -> bool:
    """Whether ``executor`` runs this process's code, so its results may enter the run cache.

    This process, its thread pools and its local process pools do; a cluster says so itself
    (``same_code()``: a Dask cluster compares its workers' code digest with this one's);
    any other executor (another machine's Ray cluster) may run another version, so its
    runs are served from the cache but not stored in it.
    """
    executor = as_executor(executor)
    same_code = getattr(executor, "same_code", None)
    if callable(same_code):
        return bool(same_code())
    return isinstance(executor, (SerialExecutor, ProcessPoolExecutor, ThreadPoolExecutor))


def workers_of(executor: Executor) -> int:
    """How many chunks an executor runs at once now (a guess for foreign executors)."""
    return max(1, int(getattr(executor, "workers", 0) or getattr(executor, "_max_workers", 0) or default_jobs()))


def stop(executor: Executor) -> None:
    """Stop an executor now: cancel pending work and stop its workers where possible."""
    terminate = getattr(executor, "terminate", None)
    if callable(terminate):
        terminate()
    else:
        executor.shutdown(wait=False, cancel_futures=True)


def map_chunks(
    executor: Executor,
    fn: Callable[[T], R],
    chunks: Iterable[T],
    on_done: Callable[[R], None],
    *,
    window: int | None = None,
) -> None:
    """Run ``fn`` on every chunk, keeping at most ``window`` in flight; ``on_done`` gets each result.

    Without ``window``, twice the executor's workers, read again as chunks finish (an
    adaptive cluster's size moves).  A ``distributed.Client`` is used through a
    :class:`~fleetchaos.runs.cluster.DaskExecutor`.

    ``on_done`` runs in this thread, as soon as a chunk finishes (so it can write to a
    store or move a progress bar).  An exception in ``fn`` or ``on_done``, or Ctrl-C,
    stops the executor (pending chunks are cancelled) and propagates; every chunk handed
    to ``on_done`` before that stays handed.  The caller still owns ``executor`` and
    shuts it down.
    """
    executor = as_executor(executor)
    pending: dict[Future, int] = {}
    source = iter(chunks)
    exhausted = False
    submitted = 0
    try:
        while True:
            # Read again each time: a cluster that grows (an adaptive Dask cluster) gets more work.
            limit = window or getattr(executor, "window", None) or 2 * workers_of(executor)
            while not exhausted and len(pending) < limit:
                try:
                    chunk = next(source)
                except StopIteration:
                    exhausted = True
                    break
                pending[executor.submit(fn, chunk)] = submitted
                submitted += 1
            if not pending:
                return
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in sorted(done, key=pending.__getitem__):  # finished together: in submission order
                del pending[future]
                on_done(future.result())
    except BaseException:
        for future in pending:
            future.cancel()
        stop(executor)
        raise
