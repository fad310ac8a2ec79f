"""The fake clock the tenacity tests hand tenacity (not a test module).

Shared by tests/unit/test_tenacity_parity.py and tests/sim/test_sim_tenacity.py, importable
by name (``from tenacity_clock import FakeClock``): pytest puts this folder on ``sys.path``
when it loads tests/conftest.py (its default ``prepend`` import mode).
"""

from __future__ import annotations


class FakeClock:
    """tenacity's ``time`` module (only ``monotonic``) and the sleeps it calls, all in simulated seconds.

    Replace tenacity's module attribute ``time`` with it and pass :meth:`sleep` (or
    :meth:`async_sleep`) as the ``sleep`` of a ``Retrying`` (``AsyncRetrying``) copy: a sleep
    moves ``now`` forward and is recorded in ``sleeps``; a test moves ``now`` itself for the
    time an attempt takes.
    """

    def __init__(self, start: float) -> None:
        self.now = start
        self.sleeps: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now = self.now + seconds

    async def async_sleep(self, seconds: float) -> None:
        self.sleep(seconds)
