"""What a policy may never swallow, and how a policy's failure is described.

Containment (:mod:`fleetchaos.sim.containment`) turns *anything* a policy raises into a
policy error on its task, :class:`BaseException` included: ``SystemExit``,
``KeyboardInterrupt``, ``GeneratorExit``, custom subclasses, an exception whose
``__str__`` raises.  Two exceptions are the harness's own and pass through it
(:data:`PASS_THROUGH`):

* :class:`UserInterrupt`: the user pressed Ctrl-C or sent SIGTERM.  The command line
  installs handlers that raise it (:func:`user_signals`), so a policy that raises a plain
  ``KeyboardInterrupt`` is told apart from the user's own;
* :class:`WallClockExceeded`: a run outlived its wall-clock limit
  (:mod:`fleetchaos.runs.limits` raises it in the thread running the simulation).

:func:`describe_exception` names a policy's exception without ever raising, and with every
planted secret shape scrubbed (:func:`fleetchaos.sim.sanitise.sanitise`), since its text
reaches every output.  Light to import: the standard library only (and the sanitiser).
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from fleetchaos.sim.sanitise import sanitise

__all__ = [
    "PASS_THROUGH",
    "ProcessExitRefused",
    "UserInterrupt",
    "WallClockExceeded",
    "check_expired",
    "describe_exception",
    "exception_parts",
    "mark_expired",
    "policy_text",
    "process_exits_refused",
    "user_signals",
]

#: Longest policy-supplied text kept in a result (an error message, a repr).
MAX_POLICY_TEXT = 500


class UserInterrupt(KeyboardInterrupt):
    """The user's Ctrl-C (SIGINT) or SIGTERM, as raised by the handlers of :func:`user_signals`."""

    def __init__(self, signum: int = signal.SIGINT):
        super().__init__(int(signum))  # args stay (signum,): SimPy rebuilds an exception from its args
        self.signum = int(signum)

    def __str__(self) -> str:
        return signal.Signals(self.signum).name


class WallClockExceeded(BaseException):  # a control-flow signal like KeyboardInterrupt, not an Exception
    """A run outlived its wall-clock limit; raised into the thread that runs it."""


class ProcessExitRefused(BaseException):  # like WallClockExceeded: the harness's, never a policy's own error
    """A policy (or code it called) asked to end or replace the process during a run: ``os._exit``,
    ``os.execv``; raised by the stand-ins :func:`process_exits_refused` puts in their place."""


#: The harness's own exceptions: containment re-raises these and contains everything else.
PASS_THROUGH: tuple[type[BaseException], ...] = (UserInterrupt, WallClockExceeded, ProcessExitRefused)

#: Threads whose run has outlived its wall-clock limit (see :func:`check_expired`).
_EXPIRED: set[int] = set()


def mark_expired(thread_id: int, expired: bool = True) -> None:
    """Record (or clear) that the run in thread ``thread_id`` has outlived its wall-clock limit."""
    if expired:
        _EXPIRED.add(thread_id)
    else:
        _EXPIRED.discard(thread_id)


def check_expired() -> None:
    """Raise :class:`WallClockExceeded` if this thread's run has outlived its limit.

    Containment calls it after every policy call, so a policy that catches the limit's
    interrupt inside its own code (``except BaseException: pass``) still cannot keep
    the run alive.
    """
    if _EXPIRED and threading.get_ident() in _EXPIRED:
        raise WallClockExceeded()


def policy_text(text: object, limit: int = MAX_POLICY_TEXT, values: Iterable[str] = ()) -> str:
    """Any text a policy hands back (a message, a repr, a reason) as it may be shown: sanitised, one line, bounded.

    ``values`` are secrets to redact by value besides the shapes :func:`sanitise` knows (a
    real-code run's planted ones).  Secrets are scrubbed before the text is cut, and a text
    cut short loses its last partial word, so no secret is ever shown in part.  Never
    raises: ``str()`` of a hostile object (or of a ``str`` subclass) is tried under
    containment too.
    """
    try:
        raw = str.__str__(text) if isinstance(text, str) else str(text)
        raw = raw if type(raw) is str else str.__str__(raw)  # a str subclass's own methods are never called
    except PASS_THROUGH:
        raise
    except BaseException:  # a policy's object whose __str__ fails must not stop the run
        raw = "(unprintable)"
    raw = _cut(raw, 64 * limit)
    if values:
        raw = sanitise(raw, values)
    flat = _cut(" ".join(_cut(raw, 8 * limit).split()), 4 * limit)
    return sanitise(flat)[:limit]


def _cut(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, without the word the cut would split (it may be part of a secret)."""
    if len(text) <= limit:
        return text
    head = text[:limit]
    space = max(head.rfind(c) for c in " \t\n\r")
    return head[:space] if space >= 0 else ""


def exception_parts(exc: BaseException, values: Iterable[str] = ()) -> tuple[str, str]:
    """(type name, message) of a policy's exception, the message sanitised (``values`` too) and bounded; never raises."""
    try:
        name = type(exc).__name__
        name = name if type(name) is str else "exception"
    except BaseException:  # a metaclass can make even the name fail
        name = "exception"
    return name, policy_text(exc, values=values)


def describe_exception(exc: BaseException, values: Iterable[str] = ()) -> str:
    """``TypeName: message`` of a policy's exception, sanitised (``values`` too) and bounded; never raises."""
    name, message = exception_parts(exc, values)
    return policy_text(f"{name}: {message}" if message else name)


@contextmanager
def user_signals(*, sigterm: bool = True) -> Iterator[None]:
    """Raise :class:`UserInterrupt` on Ctrl-C (and on SIGTERM) while the block runs.

    Only the main thread can install handlers; elsewhere (a Dask worker thread) this does
    nothing.  A signal the process ignores (pool workers ignore SIGINT) stays ignored, and
    the previous handlers come back afterwards.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def raise_interrupt(signum, frame):
        raise UserInterrupt(signum)

    wanted = [signal.SIGINT] + ([signal.SIGTERM] if sigterm else [])
    previous = {}
    for signum in wanted:
        current = signal.getsignal(signum)
        if current is signal.SIG_IGN or current is raise_interrupt:
            continue
        previous[signum] = current
        signal.signal(signum, raise_interrupt)
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


#: The functions that end or replace the process without unwinding it (no ``finally``, no ``atexit``, no output):
#: the ``exec*`` family and ``os.fork`` children all end in these names, looked up at call time.
_ENDERS = ("_exit", "execv", "execve")
_ENDERS_LOCK = threading.Lock()
_enders_users = 0
_enders_saved: dict[tuple[object, str], object] = {}
#: Per thread inside :func:`process_exits_refused`: the first call refused there (kept even if the caller swallowed it).
_REFUSED: dict[int, str] = {}


def _stand_in(name: str):
    def refused(*args: object, **kwargs: object) -> None:
        shown = policy_text(f"os.{name}({', '.join(repr(a) for a in args)})", 120)
        _REFUSED.setdefault(threading.get_ident(), shown)
        raise ProcessExitRefused(shown)

    refused.__name__ = name
    return refused


@contextmanager
def process_exits_refused() -> Iterator[None]:
    """While the block runs, ``os._exit``, ``os.execv`` and ``os.execve`` (and ``posix``'s) raise
    :class:`ProcessExitRefused` instead of ending the process; leaving the block raises it again if such a
    call was made in it, even one whose exception the caller swallowed.

    A policy calling ``os._exit(0)`` would otherwise end a ``--jobs 1`` command with exit 0 and no output.
    What this cannot stop: a function bound before the block (``from os import _exit``), an exit from C code
    (``ctypes``), a signal (``os.kill``: the shell then sees 128 + the signal's number).  Nested blocks and
    blocks in several threads share one set of stand-ins; the originals come back when the last block ends.
    """
    import os

    global _enders_users
    modules = [os] + ([sys.modules["posix"]] if "posix" in sys.modules else [])
    with _ENDERS_LOCK:
        if _enders_users == 0:
            for module in modules:
                for name in _ENDERS:
                    if hasattr(module, name):
                        _enders_saved[(module, name)] = getattr(module, name)
                        setattr(module, name, _stand_in(name))
        _enders_users += 1
    me = threading.get_ident()
    outer = me in _REFUSED
    try:
        yield
    finally:
        with _ENDERS_LOCK:
            _enders_users -= 1
            if _enders_users == 0:
                for (owner, name), original in _enders_saved.items():
                    setattr(owner, name, original)
                _enders_saved.clear()
        refused = None if outer else _REFUSED.pop(me, None)
    if refused is not None:  # the block ended without the exception (the caller swallowed it): raise it now
        raise ProcessExitRefused(refused)
