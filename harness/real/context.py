"""Which run and which task a real call belongs to: context variables, one lookup per call.

:data:`ACTIVE` holds the injector of the run in force (a :class:`~fleetchaos.real.runtime.Runtime`,
or the forcing injector of a contract check or a parity run); a decorated tool or the
chaos transport reads it once per call and does nothing else when it is unset.
Context variables flow into asyncio tasks and into ``asyncio.to_thread``; a bare
``ThreadPoolExecutor.submit`` or ``run_in_executor`` needs ``contextvars.copy_context().run``.
A call from a thread without the run's context, while a run is active in the process,
is not silently let through: :func:`orphaned` tells the injection point to refuse it.

Standard library only: decorated production modules import this.
"""

from __future__ import annotations

import contextvars
import threading
from typing import Any, Protocol

__all__ = ["ACTIVE", "Injector", "active_runs", "orphaned"]


class Injector(Protocol):
    """What an injection point asks of the run in force (see :mod:`fleetchaos.real.inject`)."""

    def begin(
        self, tool: str, item: Any, *, attempt: int = 0, idempotency_key: str | None = None, prompt: str | None = None
    ) -> Any:
        """The decision for one call of ``tool`` (None: let it through untouched); ``prompt``: a model call's
        messages as text, when its request carries them."""
        ...

    def unbound(self, what: str, why: str) -> None:
        """A call (``what``) that no binding places, and ``why``: counted, refused unless the bindings let it pass."""
        ...


#: The injector of the run in force in this context (None outside runs: injection points are inert).
ACTIVE: contextvars.ContextVar[Injector | None] = contextvars.ContextVar("fleetchaos_real_active", default=None)

_lock = threading.Lock()
_active_count = 0


def active_runs(delta: int) -> None:
    """Count a run in or out of the process (:func:`orphaned` reads the count)."""
    global _active_count
    with _lock:
        _active_count += delta


def orphaned() -> bool:
    """A run is active in this process, but this context has none: a thread started without the run's context."""
    return _active_count > 0
