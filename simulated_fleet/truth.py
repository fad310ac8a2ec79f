"""Ground-truth vocabulary: why a call failed, and what one dispatch of a task did.

Only the simulator and the oracle see these objects.  An error format turns an
:class:`AttemptReport` into an :class:`~simulated_fleet.observation.Observation`, which
is all a recovery policy ever gets.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple


class FailureContract(NamedTuple):
    """How a worker that follows the structured contract classifies one failure kind."""

    error_code: str
    category: str
    recoverable: bool
    suggested_action: str


#: The five core fault kinds, keyed by the ``kind`` used in scenario files.
FAILURES: dict[str, FailureContract] = {
    "network_blip": FailureContract("NETWORK_UNREACHABLE", "transient", True, "retry_with_backoff"),
    "timeout": FailureContract("TOOL_TIMEOUT", "transient", True, "retry_with_backoff"),
    "rate_limit": FailureContract("RATE_LIMITED", "transient", True, "wait_retry_after"),
    "disk_full": FailureContract("DISK_FULL", "resource", True, "reroute_to_healthy_worker"),
    "expired_key": FailureContract("AUTH_EXPIRED", "auth", True, "refresh_credentials"),
}

#: Failure kinds in a fixed order; item outcomes are stored as 1-based indices into it
#: (0 means the item succeeded) to keep the per-call work small.
FAILURE_KINDS: tuple[str, ...] = tuple(FAILURES)
OK = 0


@dataclass(slots=True)
class AttemptReport:
    """The truth of one dispatch of a task to a worker, as the worker experienced it.

    ``failed_step`` is -1 when the worker ran every step it was given and saw each as
    done.  ``done_items`` lists the items of ``failed_step`` that did succeed (a partial
    batch), including items the orchestrator asked it to skip because they were done.
    """

    task_id: int
    worker: int
    start_step: int
    failed_step: int
    step_names: tuple[str, ...]
    failure: str | None = None
    fan_out: int = 1
    done_items: tuple[int, ...] = ()
    retry_after_s: float | None = None

    @property
    def completed(self) -> bool:
        """True when the worker saw every step through."""
        return self.failed_step < 0
