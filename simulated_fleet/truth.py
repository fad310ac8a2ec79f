"""Ground-truth vocabulary: why a call failed, and what one dispatch of a task did.

Only the simulator and the oracle see these objects.  An error format turns an
:class:`AttemptReport` into an :class:`~fleetchaos.sim.observation.Observation`, which
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


#: How a contract-following worker classifies each fault kind, keyed by the ``kind`` used
#: in scenario files.  Masking kinds (silent suppression, fabricated defaults) are never
#: shown to an orchestrator: their code is what the truth calls them.
FAILURES: dict[str, FailureContract] = {
    "network_blip": FailureContract("NETWORK_UNREACHABLE", "transient", True, "retry_with_backoff"),
    "timeout": FailureContract("TOOL_TIMEOUT", "transient", True, "retry_with_backoff"),
    "rate_limit": FailureContract("RATE_LIMITED", "transient", True, "wait_retry_after"),
    "disk_full": FailureContract("DISK_FULL", "resource", True, "reroute_to_healthy_worker"),
    "expired_key": FailureContract("AUTH_EXPIRED", "auth", True, "refresh_credentials"),
    "git_push_conflict": FailureContract("GIT_PUSH_REJECTED", "transient", True, "fetch_rebase_and_retry"),
    "missing_dependency": FailureContract("DEPENDENCY_MISSING", "dependency", True, "reroute_or_provision"),
    "validation_error": FailureContract("VALIDATION_FAILED", "validation", False, "fix_input_upstream"),
    "not_found": FailureContract("NOT_FOUND", "dependency", True, "use_alternative_source"),
    "permission_denied": FailureContract("PERMISSION_DENIED", "auth", False, "request_access"),
    "partial_batch": FailureContract("BATCH_ITEM_FAILED", "transient", True, "retry_failed_items"),
    "silent_suppression": FailureContract("EMPTY_SUCCESS", "fatal", False, "none_visible"),
    "fabricated_defaults": FailureContract("FABRICATED_DEFAULT", "fatal", False, "none_visible"),
    "node_crash": FailureContract("WORKER_LOST", "resource", True, "requeue_on_healthy_worker"),
    "network_partition": FailureContract("NETWORK_PARTITION", "resource", True, "reroute_to_reachable_worker"),
    "latency_spike": FailureContract("TOOL_TIMEOUT", "transient", True, "retry_with_backoff"),
    "quota_exhausted": FailureContract("QUOTA_EXCEEDED", "resource", True, "wait_for_quota_reset"),
}

#: Kinds that make a call look successful while nothing took effect.
MASKING_KINDS = ("silent_suppression", "fabricated_defaults")

#: Kinds that never change the truth of a call but only how it is reported.
REPORTING_KINDS = {"schema_drift": "SCHEMA_VERSION_SKEW"}

FAILURE_KINDS: tuple[str, ...] = tuple(FAILURES)


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
    item_failures: tuple[tuple[int, str], ...] = ()
    """(item, kind) of every item of the failed step that failed."""
    masked: tuple[tuple[int, int, str], ...] = ()
    """(step, item, kind) of calls in this dispatch that looked successful but took no effect."""
    alternatives_left: int = 0
    """Untried alternative sources for the failed items (a not-found source)."""
    schema_version: str | None = None
    """The envelope version the worker speaks, when it differs from the current one."""
    dropped_fields: tuple[str, ...] = ()
    """Envelope fields the worker's older contract does not have."""

    @property
    def completed(self) -> bool:
        """True when the worker saw every step through."""
        return self.failed_step < 0
