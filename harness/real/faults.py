"""What an injection point raises or returns when a real call meets a fault.

A :class:`Fault` describes one injected fault as the team's code can read it: the kind,
its structured contract, the retry-after hint, whether the call's side effect committed,
and a vendor-style message (the kind's wire status in the words of a vendor SDK, planted
secrets and all, as real SDK errors carry them).  :func:`default_error` turns it into an
exception: :class:`InjectedFault`, a :class:`ConnectionError` for a dropped connection or a
partition, a :class:`TimeoutError` for a timeout, an :class:`OSError` with ``errno`` ENOSPC
for a full disk, a :class:`ConnectionRefusedError` for a crashed worker.  A binding's ``errors=`` maps kinds to the team's own
exception types instead, so the team's ``except`` clauses really run.

Standard library and :mod:`fleetchaos.sim.kinds` only: decorated production modules
import nothing heavy.
"""

from __future__ import annotations

import errno
import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from fleetchaos.sim.kinds import FailureContract, FaultKind

__all__ = [
    "Fault",
    "InjectedConnectionError",
    "InjectedDiskFull",
    "InjectedFault",
    "InjectedRefused",
    "InjectedTimeout",
    "UnboundCall",
    "default_error",
    "error_for",
]


@dataclass(frozen=True, slots=True)
class Fault:
    """One injected fault, as the team's code meets it."""

    kind: str
    """The scenario's fault kind (``rate_limit``, ``timeout``, ...)."""
    tool: str
    task_id: int
    step: int
    item: int
    execution: int
    contract: FailureContract
    """The structured contract a contract-following tool reports it with (code, category, recoverable, action)."""
    status: int
    """The HTTP status an API answers it with (the kind's wire status)."""
    retry_after_s: float | None
    """Seconds until the cause lifts, from the moment the failure is reported (None without a hint)."""
    committed: bool
    """The call's side effect took effect before the failure (a timeout after commit)."""
    outcome_unknown: bool
    """The caller cannot know whether the side effect took effect (a timeout)."""
    message: str
    """A vendor SDK's error text for it, with the run's planted secrets in it (never show it unsanitised)."""

    @property
    def retry_after_ms(self) -> int | None:
        """The hint in whole milliseconds, rounded up as the structured format rounds it (None without a hint)."""
        if self.retry_after_s is None or not math.isfinite(self.retry_after_s):
            return None
        return math.ceil(round(self.retry_after_s * 1000.0, 6))

    def envelope(self) -> dict:
        """The structured contract's fields for this fault (an AgentToolError without progress), as plain data."""
        out: dict = {
            "error_code": self.contract.error_code,
            "category": self.contract.category,
            "recoverable": self.contract.recoverable,
            "suggested_action": self.contract.suggested_action,
            "retry_after_ms": self.retry_after_ms,
        }
        if self.outcome_unknown:
            out["context"] = {"outcome": "unknown"}
        return out


class InjectedFault(Exception):
    """The default exception of an injected fault; ``.fault`` is the :class:`Fault`."""

    def __init__(self, fault: Fault):
        super().__init__(fault.message)
        self.fault = fault

    @property
    def kind(self) -> str:
        """The fault kind."""
        return self.fault.kind


class InjectedConnectionError(InjectedFault, ConnectionError):
    """A dropped connection (``network_blip``): also a :class:`ConnectionError`."""


class InjectedTimeout(InjectedFault, TimeoutError):
    """A call that hung until a timeout (``timeout``, ``latency_spike``): also a :class:`TimeoutError`."""


class InjectedDiskFull(InjectedFault, OSError):
    """A write on a full disk (``disk_full``): also an :class:`OSError` with ``errno`` ENOSPC, as a real write raises."""

    def __init__(self, fault: Fault):
        super().__init__(fault)
        self.errno = errno.ENOSPC
        self.strerror = os.strerror(errno.ENOSPC)


class InjectedRefused(InjectedFault, ConnectionRefusedError):
    """A call to a crashed worker (``node_crash``): also a :class:`ConnectionRefusedError` (``errno`` ECONNREFUSED)."""

    def __init__(self, fault: Fault):
        super().__init__(fault)
        self.errno = errno.ECONNREFUSED
        self.strerror = os.strerror(errno.ECONNREFUSED)


class UnboundCall(RuntimeError):
    """A call the run could not map to a scenario tool: refused, so nothing bypasses the fault plan silently."""


def default_error(fault: Fault) -> BaseException:
    """The exception an injection point raises for ``fault`` when the binding maps no type of its own."""
    if fault.kind in ("network_blip", "network_partition"):
        return InjectedConnectionError(fault)
    if fault.kind == "disk_full":
        return InjectedDiskFull(fault)
    if fault.kind == "node_crash":
        return InjectedRefused(fault)
    if fault.outcome_unknown:
        return InjectedTimeout(fault)
    return InjectedFault(fault)


def error_for(fault: Fault, errors: Mapping[str, Callable[[Fault], BaseException]] | None) -> BaseException:
    """The exception for ``fault``: the binding's own mapping for its kind, else :func:`default_error`."""
    make = errors.get(fault.kind) if errors else None
    if make is None:
        return default_error(fault)
    error = make(fault)
    if not isinstance(error, BaseException):
        raise TypeError(f"errors[{fault.kind!r}] must return an exception, got {type(error).__name__}")
    return error


def make_fault(
    kind: FaultKind,
    tool: str,
    ids: tuple[int, int, int, int],
    *,
    retry_after_s: float | None,
    committed: bool,
    message: str,
) -> Fault:
    """A :class:`Fault` of ``kind`` for the call ``ids`` = (task id, step, item, execution)."""
    task_id, step, item, execution = ids
    wire = kind.wire
    return Fault(
        kind=kind.name,
        tool=tool,
        task_id=task_id,
        step=step,
        item=item,
        execution=execution,
        contract=kind.contract,
        status=wire.status if wire is not None else 200,
        retry_after_s=retry_after_s,
        committed=committed,
        outcome_unknown=kind.outcome_unknown,
        message=message,
    )
