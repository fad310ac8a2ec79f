"""Virtual time for real code: a sync clock for the run's thread, the loop's clock for asyncio.

Retry libraries measure deadlines with ``time.monotonic`` and wait with ``time.sleep``
(or ``asyncio.sleep``); both must move together or deadlines silently stop working.
While a clock is installed, ``time.sleep``, ``time.monotonic``, ``time.perf_counter``
(and their ``_ns`` forms) are replaced in the ``time`` module by functions that answer
from the clock of the calling thread, and from the real clock in every other thread:

* :class:`VirtualClock` (sync code): ``sleep(s)`` advances the clock at once and
  ``monotonic()`` reads it; the run's thread only.
* :class:`LoopClock` (asyncio): ``monotonic()`` and ``perf_counter()`` read the virtual
  loop's ``time()`` (:class:`VirtualTimeLoop` jumps to its next timer when nothing else
  can run), so ``asyncio.sleep``, ``asyncio.wait_for``, an SDK's backoff and a tenacity
  deadline all run in one virtual time.  A blocking ``time.sleep`` in the loop's thread
  returns at once (it cannot move the loop's clock) and is counted.

The originals come back when the last clock is uninstalled, also after an exception.
``time.time`` and ``time.time_ns`` read the run's virtual seconds after midnight (UTC) of
the day it started, in the clock's thread (a scenario's second 0 is midnight), and so do the OpenTelemetry SDK's span times (bound from ``time`` at
its import, patched in its module), so the spans of a virtual-time run carry virtual
timestamps.  Other code that bound ``from time import monotonic`` before the run keeps
the real function; ``datetime.now`` is never touched.  A thread running a
plain asyncio loop inside a virtual-clock thread reads real time (the loop's own clock
would otherwise freeze).
"""

from __future__ import annotations

import asyncio
import contextlib
import selectors
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Executor
from typing import Any, TypeVar, TypeVarTuple

from fleetchaos.errors import UserError

__all__ = ["LoopClock", "VirtualClock", "VirtualTimeLoop", "installed", "new_virtual_loop", "originals"]

_REAL: dict[str, Callable[..., Any]] = {
    "sleep": time.sleep,
    "monotonic": time.monotonic,
    "perf_counter": time.perf_counter,
    "monotonic_ns": time.monotonic_ns,
    "perf_counter_ns": time.perf_counter_ns,
    "time": time.time,
    "time_ns": time.time_ns,
}
_clocks: dict[int, Any] = {}  # thread id -> the clock installed in it
_lock = threading.Lock()
_get_ident = threading.get_ident
_running_loop = asyncio._get_running_loop
_T = TypeVar("_T")
_Ts = TypeVarTuple("_Ts")


def midnight(wall: float) -> float:
    """Midnight UTC of ``wall``'s day: the wall-clock time of a run's virtual second 0, as a scenario's second 0 is
    midnight, so a virtual run's timestamps fall at the hours of the day its scenario puts them."""
    return wall - wall % 86_400.0


def originals() -> dict[str, Any]:
    """The real ``time`` functions (what is restored when the last clock goes)."""
    return dict(_REAL)


class VirtualClock:
    """A clock for sync code in one thread: ``sleep`` advances it at once; ``monotonic`` reads it."""

    kind = "virtual"

    def __init__(self, start: float = 0.0):
        """A clock reading ``start`` virtual seconds."""
        self._now = float(start)
        self._base = _REAL["monotonic"]()  # monotonic values continue from the real reading at creation
        self.epoch = midnight(_REAL["time"]())
        """The wall-clock time of virtual second 0 (``time.time()`` reads ``epoch + now()``)."""
        self.slept = 0.0

    def now(self) -> float:
        """Virtual seconds since the run began."""
        return self._now

    def advance_to(self, instant: float) -> None:
        """Move the clock forward to ``instant`` (never back)."""
        if instant > self._now:
            self._now = instant

    def sleep(self, seconds: float) -> None:
        """Advance by ``seconds`` at once (a negative sleep raises, as ``time.sleep`` does)."""
        if seconds < 0:
            raise ValueError("sleep length must be non-negative")
        self._now += seconds
        self.slept += seconds

    def monotonic(self) -> float:
        """What ``time.monotonic()`` reads in the clock's thread."""
        return self._base + self._now

    def wall(self) -> float:
        """What ``time.time()`` reads in the clock's thread: the run's start, plus virtual seconds."""
        return self.epoch + self._now


class LoopClock:
    """The clock of a virtual asyncio loop, as ``time.monotonic`` in the loop's thread."""

    kind = "virtual-loop"

    def __init__(self, loop: asyncio.AbstractEventLoop):
        """The clock of ``loop`` (its ``time()`` is virtual)."""
        self.loop = loop
        self.blocking_sleeps = 0
        self.blocking_sleep_s = 0.0
        self.epoch = midnight(_REAL["time"]())
        """The wall-clock time of the loop's virtual second 0."""

    def now(self) -> float:
        """The loop's virtual time."""
        return self.loop.time()

    def sleep(self, seconds: float) -> None:
        """A blocking sleep in the loop's thread returns at once: it could not move the loop's clock."""
        if seconds < 0:
            raise ValueError("sleep length must be non-negative")
        self.blocking_sleeps += 1
        self.blocking_sleep_s += seconds

    def monotonic(self) -> float:
        """What ``time.monotonic()`` reads in the loop's thread."""
        return self.loop.time()

    def wall(self) -> float:
        """What ``time.time()`` reads in the loop's thread: the run's start, plus virtual seconds."""
        return self.epoch + self.loop.time()


def _sleep(seconds: float) -> None:
    clock = _clocks.get(_get_ident())
    if clock is None:
        return _REAL["sleep"](seconds)
    clock.sleep(seconds)


def _monotonic() -> float:
    clock = _clocks.get(_get_ident())
    if clock is None or (type(clock) is VirtualClock and _running_loop() is not None):
        return _REAL["monotonic"]()
    return clock.monotonic()


def _perf_counter() -> float:
    clock = _clocks.get(_get_ident())
    if clock is None or (type(clock) is VirtualClock and _running_loop() is not None):
        return _REAL["perf_counter"]()
    return clock.monotonic()


def _monotonic_ns() -> int:
    clock = _clocks.get(_get_ident())
    if clock is None or (type(clock) is VirtualClock and _running_loop() is not None):
        return _REAL["monotonic_ns"]()
    return round(clock.monotonic() * 1e9)


def _perf_counter_ns() -> int:
    clock = _clocks.get(_get_ident())
    if clock is None or (type(clock) is VirtualClock and _running_loop() is not None):
        return _REAL["perf_counter_ns"]()
    return round(clock.monotonic() * 1e9)


def _time() -> float:
    clock = _clocks.get(_get_ident())
    if clock is None or (type(clock) is VirtualClock and _running_loop() is not None):
        return _REAL["time"]()
    return clock.wall()


def _time_ns() -> int:
    clock = _clocks.get(_get_ident())
    if clock is None or (type(clock) is VirtualClock and _running_loop() is not None):
        return _REAL["time_ns"]()
    return round(clock.wall() * 1e9)


_PATCHED = {
    "sleep": _sleep,
    "monotonic": _monotonic,
    "perf_counter": _perf_counter,
    "monotonic_ns": _monotonic_ns,
    "perf_counter_ns": _perf_counter_ns,
    "time": _time,
    "time_ns": _time_ns,
}

#: Names bound from ``time`` at import by libraries whose timestamps a run should see in
#: virtual time (module, attribute, stand-in): the OpenTelemetry SDK's span times.
_BOUND = (("opentelemetry.sdk.trace", "time_ns", _time_ns),)


class _RealTime:
    """The ``time`` module as :mod:`subprocess` sees it while a clock is installed: its waits are real.

    ``Popen.wait(timeout=...)`` sleeps in short steps against a deadline it reads from the
    real monotonic clock (bound when :mod:`subprocess` was imported); with a virtual sleep
    each step would move the run's clock by as much as the loop happened to spin, so a
    child's wait would take a different virtual time in each run.  With the real sleep a
    child takes no virtual time and its timeout counts real seconds, in every run alike.
    """

    def __getattr__(self, name: str) -> Any:
        return _REAL.get(name) or getattr(time, name)


@contextlib.contextmanager
def installed(clock: VirtualClock | LoopClock) -> Iterator[VirtualClock | LoopClock]:
    """Install ``clock`` for the calling thread; restore the ``time`` module when the last one goes."""
    me = _get_ident()
    with _lock:
        if me in _clocks:
            raise UserError("a virtual clock is already installed in this thread (runs do not nest)")
        if not _clocks:
            for name, fn in _PATCHED.items():
                setattr(time, name, fn)
            setattr(subprocess, "time", _RealTime())  # noqa: B010 - its waits stay real (see _RealTime)
            for module, name, fn in _BOUND:
                if module in sys.modules:
                    setattr(sys.modules[module], name, fn)
        _clocks[me] = clock
    try:
        yield clock
    finally:
        with _lock:
            _clocks.pop(me, None)
            if not _clocks:
                for name, fn in _REAL.items():
                    setattr(time, name, fn)
                setattr(subprocess, "time", time)  # noqa: B010 - the module itself again
                for module, name, _fn in _BOUND:
                    if module in sys.modules:
                        setattr(sys.modules[module], name, _REAL[name])


class VirtualTimeLoop(asyncio.SelectorEventLoop):
    """An asyncio loop whose clock jumps to its next timer when nothing else can run.

    asyncio calls its selector with a timeout only when no callback is ready: then the
    loop polls for I/O, and with none it moves its clock to the next timer at once
    instead of waiting.  While a worker thread it started (``to_thread``,
    ``run_in_executor``) or a child process it started (``create_subprocess_exec``) is
    running, the clock stands still and the loop waits for it in real time, so virtual
    timestamps do not depend on how long threads and children take (a timer around a
    child cannot fire before the child ends: its timeout is the child's own business).
    With nothing scheduled at all, it waits for I/O or a thread's wake-up as usual.
    """

    _selector: selectors.BaseSelector  # asyncio's own (a selector loop's), which the stubs leave out

    def __init__(self) -> None:
        super().__init__()
        self._virtual_now = 0.0
        self._threads: set[asyncio.Future] = set()
        self._children: set[Any] = set()  # subprocess transports whose child has not exited
        poll = self._selector.select

        def select(timeout: float | None = None) -> list:
            ready = poll(0)
            if ready or timeout == 0:
                return ready
            if self._threads or self._children:
                self._children = {c for c in self._children if c.get_returncode() is None and not c.is_closing()}
                return poll(_THREAD_POLL_S if timeout is None else min(timeout, _THREAD_POLL_S))
            if timeout is None:
                return poll(None)
            self._virtual_now += timeout
            return []

        self._selector.select = select  # type: ignore[method-assign]  # this loop's own selector: idle waits turn virtual

    def time(self) -> float:
        """Virtual seconds since the loop was made."""
        return self._virtual_now

    def run_in_executor(self, executor: Executor | None, func: Callable[[*_Ts], _T], *args: *_Ts) -> asyncio.Future[_T]:
        """As asyncio's, and the clock waits for the thread."""
        future = super().run_in_executor(executor, func, *args)
        self._threads.add(future)
        future.add_done_callback(self._threads.discard)
        return future

    async def _make_subprocess_transport(self, *args: Any, **kwargs: Any) -> Any:
        """As asyncio's, and the clock waits while the child runs."""
        # The unix selector loop defines it; the stubs leave the base class's abstract.
        transport = await super()._make_subprocess_transport(*args, **kwargs)  # type: ignore[misc]  # defined on unix
        self._children.add(transport)
        return transport


#: How long the virtual loop waits, in real seconds, between looks at a running worker thread.
_THREAD_POLL_S = 0.005


def new_virtual_loop() -> asyncio.AbstractEventLoop:
    """A fresh event loop whose clock fast-forwards (:class:`VirtualTimeLoop`).

    Refused under an event-loop policy of another implementation (uvloop): the virtual
    clock needs asyncio's own selector loop.
    """
    policy = type(asyncio.get_event_loop_policy())
    if policy.__module__.split(".")[0] in ("uvloop", "winloop"):
        raise UserError(
            f"clock='virtual': the event-loop policy is {policy.__module__}.{policy.__name__}; the virtual clock "
            "needs asyncio's own selector loop. Use the default policy for the test, or clock='real'"
        )
    return VirtualTimeLoop()
