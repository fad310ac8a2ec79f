"""The wall-clock limit of one run: a policy that blocks in real time must not hang a command.

Simulated time never waits, but a user's policy is Python code: ``time.sleep(3600)``, a
network call or ``input()`` inside ``decide`` blocks the thread that runs the world.
:func:`wall_clock_limit` bounds one run's real time: when it expires it raises
:class:`~fleetchaos.sim.interrupts.WallClockExceeded` into the thread running the run
(containment lets it through, so a policy cannot swallow it as its own error), and
:func:`fleetchaos.runs.runner.run_one` turns that into a :class:`~fleetchaos.errors.RunTimeLimitError`
naming the run and the fix.  The command then fails with exit code 4, never 0.

How it is raised:

* in a process's main thread (the CLI with ``--jobs 1``, every local pool worker, pytest):
  ``SIGALRM`` from ``setitimer``, which also interrupts a blocking ``time.sleep``; it
  repeats every second until the run has stopped, so a policy that catches it once
  cannot keep the run alive;
* in another thread (a Dask worker thread): a watchdog thread sets the exception
  asynchronously in the run's thread (``PyThreadState_SetAsyncExc``), which takes effect
  at the next Python bytecode: a pure-Python loop stops, a blocking C call only once it
  returns.

The default (:func:`default_time_limit`) is generous: it is there to end a hang, not to
police slow runs.
"""

from __future__ import annotations

import ctypes
import math
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from fleetchaos.sim.interrupts import WallClockExceeded, mark_expired

if TYPE_CHECKING:
    from fleetchaos.sim.config import WorldSpec

__all__ = [
    "BASE_LIMIT_S",
    "EVENT_BYTES",
    "ROW_BYTES",
    "SECONDS_PER_CALL",
    "check_kept",
    "default_time_limit",
    "time_limit_text",
    "wall_clock_limit",
]

#: Every run may take this long whatever its size (start-up, a slow machine).
BASE_LIMIT_S = 600.0
#: Wall-clock allowance per estimated tool call (first attempts): ~100x the measured cost of
#: a call (about 47 us, docs/performance.md), so a policy that retries every call 19 times
#: (retry-fixed, the worst preset) still has 5x to spare; only a blocked run meets it.
SECONDS_PER_CALL = 0.005
#: How often the limit is raised again after it first expires.
_REPEAT_S = 1.0


#: What a run that keeps its tasks (a report, a determinism check, a shrink) holds, measured with tracemalloc on
#: the default world at 1,000 and 3,000 tasks a day with the structured, retry-fixed and an always-retrying policy
#: (peaks of 9 to 197 MB): about 3.2 KB per kept task row with its record, 230 B per trace event or fault-log entry.
ROW_BYTES = 3_500
EVENT_BYTES = 250


def check_kept(rows: int, events: int, where: str) -> None:
    """Stop a run whose kept rows and events pass the memory a run may use (``MAX_REPORT_BYTES``).

    The size guard before a run (:func:`fleetchaos.scenario.load.check_rows_fit`) estimates from the
    tasks a world makes and a measured cost per task; what a task costs depends on how often its
    policy retries (up to ``fleet.max_actions_per_task`` times: an always-retrying policy kept about
    3.3 times the estimate).  This check counts what is really kept, as the run goes, so the bound
    holds whatever the policy does.
    """
    from fleetchaos.errors import UserError
    from fleetchaos.scenario.load import MAX_REPORT_BYTES

    kept = rows * ROW_BYTES + events * EVENT_BYTES
    if kept > MAX_REPORT_BYTES:
        raise UserError(
            f"{where}: stopped after {rows:,} tasks: they and their {events:,} trace events and faults keep about "
            f"{kept / 1e9:.1f} GB, past the {MAX_REPORT_BYTES / 1e9:g} GB a run that keeps its tasks may use "
            f"(measured: {ROW_BYTES / 1000:g} KB a task, {EVENT_BYTES} B an event; a policy that retries this "
            "often makes many); lower workload.tasks_per_day, duration_s or fleet.max_actions_per_task, or run "
            "without --report"
        )


def default_time_limit(scenario: WorldSpec) -> float:
    """The wall-clock limit of one run of ``scenario`` when none is given: 600 s plus 5 ms per estimated tool call."""
    from fleetchaos.scenario.load import estimated_size

    _, calls = estimated_size(scenario)
    return BASE_LIMIT_S + SECONDS_PER_CALL * calls


def time_limit_text(seconds: float) -> str:
    """A limit for messages: ``600 s`` or ``1.5 s``."""
    return f"{seconds:g} s"


@contextmanager
def wall_clock_limit(seconds: float | None) -> Iterator[None]:
    """Raise :class:`WallClockExceeded` in this thread if the block runs longer than ``seconds``.

    ``None`` or infinity sets no limit.
    """
    if seconds is None or math.isinf(seconds):
        yield
        return
    try:
        if threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer"):
            with _alarm(seconds):
                yield
        else:
            with _watchdog(seconds):
                yield
    finally:
        mark_expired(threading.get_ident(), False)


@contextmanager
def _alarm(seconds: float) -> Iterator[None]:
    def expired(signum, frame):
        mark_expired(threading.get_ident())
        raise WallClockExceeded(seconds)

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, max(seconds, 1e-3), _REPEAT_S)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@contextmanager
def _watchdog(seconds: float) -> Iterator[None]:
    target = threading.get_ident()
    done = threading.Event()
    lock = threading.Lock()  # never raise into the thread once it has left the block

    def watch() -> None:
        wait = seconds
        while not done.wait(wait):
            with lock:
                if done.is_set():
                    return
                mark_expired(target)
                ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(target), ctypes.py_object(WallClockExceeded))
            wait = _REPEAT_S

    thread = threading.Thread(target=watch, name="fleetchaos-wall-clock-limit", daemon=True)
    thread.start()
    try:
        yield
    finally:
        with lock:
            done.set()
        thread.join()
