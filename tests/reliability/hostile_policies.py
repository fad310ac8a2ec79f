"""Hostile user policies for the issue 17 tests, importable as ``hostile_policies:Name`` (not a test module)."""

from __future__ import annotations

import contextlib
import os
import signal
import time

from fleetchaos.sim.observation import GiveUp, Retry


class ExitsZero:
    """Calls sys.exit(0) on its first decision."""

    def decide(self, observation, history):
        """Exit the process (it must not)."""
        raise SystemExit(0)


class ExitsFour:
    """Calls sys.exit(4)."""

    def decide(self, observation, history):
        """Exit with 4."""
        raise SystemExit(4)


class RaisesKeyboardInterrupt:
    """Raises KeyboardInterrupt, which is not the user's Ctrl-C."""

    def decide(self, observation, history):
        """Pretend to be Ctrl-C."""
        raise KeyboardInterrupt


class RaisesBaseException:
    """Raises a bare BaseException."""

    def decide(self, observation, history):
        """Raise BaseException."""
        raise BaseException("base")


class Custom(BaseException):
    """A policy's own BaseException subclass."""


class RaisesCustom:
    """Raises a custom BaseException subclass."""

    def decide(self, observation, history):
        """Raise Custom."""
        raise Custom("custom")


class Unprintable(Exception):
    """An exception whose __str__ and __repr__ raise."""

    def __str__(self):
        raise RuntimeError("no str")

    def __repr__(self):
        raise RuntimeError("no repr")


class RaisesUnprintable:
    """Raises an exception that cannot be printed."""

    def decide(self, observation, history):
        """Raise Unprintable."""
        raise Unprintable()


class RaisesGeneratorExit:
    """Raises GeneratorExit."""

    def decide(self, observation, history):
        """Raise GeneratorExit."""
        raise GeneratorExit


class AlwaysRaises:
    """Raises on every decision."""

    def decide(self, observation, history):
        """Raise."""
        raise RuntimeError("policy broke")


class Sleeps:
    """Blocks in wall-clock time."""

    def decide(self, observation, history):
        """Sleep for an hour of real time."""
        time.sleep(3600)
        return GiveUp()


class SleepsAndSwallows:
    """Blocks in wall-clock time and catches everything it can, to keep the run alive."""

    def decide(self, observation, history):
        """Sleep, swallowing whatever interrupts the sleep, then sleep again."""
        for _ in range(2):
            with contextlib.suppress(BaseException):  # hostile on purpose: swallow the limit's interrupt
                time.sleep(3600)
        return GiveUp()


class KillsItsProcess:
    """Kills the process it runs in (a pool worker) with SIGKILL."""

    def decide(self, observation, history):
        """SIGKILL this process."""
        os.kill(os.getpid(), signal.SIGKILL)
        return GiveUp()


class Leaks:
    """Puts what it saw (raw vendor text with planted secrets) into its exception, its repr and its reason."""

    seen = ""

    def decide(self, observation, history):
        """Remember the text and raise with it on every other decision."""
        Leaks.seen = observation.text or Leaks.seen
        if history.retries % 2:
            raise ValueError(f"could not handle {observation.text}")
        return Retry(delay_s=1.0)

    def __repr__(self):
        return f"Leaks(seen={Leaks.seen!r})"


class SlowButFine:
    """Retries with a little real time per decision, so a run lasts long enough to be signalled."""

    def decide(self, observation, history):
        """Sleep 20 ms of real time, then give up."""
        time.sleep(0.02)
        return GiveUp()


class CallsOsExit:
    """Ends the process with os._exit(0) on its first decision: no finally, no atexit, no output."""

    def decide(self, observation, history):
        """Leave without a word."""
        os._exit(0)


class SwallowsOsExit:
    """Calls os._exit(0) and swallows whatever that raises, then gives up as if nothing happened."""

    def decide(self, observation, history):
        """Try to end the process, and hide the attempt."""
        with contextlib.suppress(BaseException):
            os._exit(0)
        return GiveUp()


class RetryPropertyExits:
    """No decide(); reading its ``retry`` (as a tenacity configuration's is read) raises SystemExit(0)."""

    @property
    def retry(self):
        """Exit the process when read."""
        raise SystemExit(0)


try:
    import tenacity
except ImportError:  # pragma: no cover - tenacity is in the dev extra
    tenacity = None

if tenacity is not None:

    class _ExitingRetrying(tenacity.Retrying):
        @property
        def retry(self):
            """A Retrying whose retry strategy raises SystemExit(0) when it is read."""
            raise SystemExit(0)

        @retry.setter
        def retry(self, value):
            pass

    EXITING_RETRYING = _ExitingRetrying()


class AlwaysRetries:
    """Retries every failure at once, for ever: only the orchestrator's action cap stops a task."""

    def decide(self, observation, history):
        """Retry."""
        return Retry(delay_s=0.0)
