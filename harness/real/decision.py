"""One real call's decision, and what its injection point reports back about it.

An injector (:class:`~fleetchaos.real.runtime.Runtime`, or a forcing injector) answers
each call with a :class:`Decision`: the fault the call meets (None: none), how long it
takes in virtual seconds, whether its side effect commits, and the :class:`Fault` to
raise.  The injection point realises it (runs the function or not, waits, raises or
returns) and tells the injector what happened: :meth:`Decision.fire`, :meth:`Decision.commit`,
:meth:`Decision.meet`.  The injector keeps the ledger and the injection counts from these.

Standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fleetchaos.real.faults import Fault
from fleetchaos.sim.kinds import MASKING, FaultKind

__all__ = ["Decision"]


@dataclass(slots=True, eq=False)
class Decision:
    """What one real call meets and does, and what its injection point reported."""

    injector: Any
    tool: str
    task_id: int
    step: int
    item: int
    execution: int
    attempt: int
    """0 for a call, n for the n-th try an HTTP client's own retry loop made of it."""
    kind: FaultKind | None
    duration_s: float
    """Virtual seconds the call takes (a hang's length for a timeout)."""
    commits: bool
    """Whether the side effect takes effect (a success, or a timeout after commit)."""
    fault: Fault | None
    sleeps: bool = True
    """Whether the injection point waits ``duration_s`` (a forcing injector's calls take no time)."""
    idempotency_key: str | None = None
    """The call's idempotency key: a repeated key's commit takes effect once."""
    modelled: tuple[int, int] | None = None
    """A model call's modelled (input, output) tokens, which the response's ``usage`` replaces (None: not a model call)."""
    context: tuple[int, int] | None = None
    """A model call refused for its context: (the window, the request's messages in tokens); None otherwise."""
    fired: bool = False
    """The injection point realised the fault (raised, returned the masked value, started the hang)."""
    met: bool = False
    """The fault reached the caller (an exception, a masked value, or a hang its own timeout cut short)."""
    called: bool = False
    """The wrapped function ran (or the request was forwarded)."""
    committed: bool = False
    """The side effect took effect (the function returned, or the forwarded request was answered 2xx)."""
    error: BaseException | None = None
    """What the wrapped function raised on its own."""
    notes: list[str] = field(default_factory=list)

    @property
    def masking(self) -> bool:
        """The fault looks like a success (an empty or fabricated result)."""
        return self.kind is not None and self.kind.stage == MASKING

    def fire(self) -> None:
        """The injection point realised the fault."""
        self.fired = True
        self.injector.fired(self)

    def meet(self) -> None:
        """The fault reached the caller."""
        self.met = True
        self.injector.met(self)

    def commit(self) -> None:
        """The wrapped call ran and returned: its side effect took effect."""
        self.called = True
        self.committed = True
        self.injector.committed(self)

    def raised(self, error: BaseException) -> None:
        """The wrapped call ran and raised on its own (no injected fault): nothing took effect."""
        self.called = True
        self.error = error
        self.injector.tool_error(self, error)
