"""The shape of a fault kind's record: :class:`FaultKind` and the words its fields use.

The records themselves, one per kind, are in :mod:`fleetchaos.sim.kinds`.  Every field
is required, so a record that lacks one fails at import, and ``__post_init__`` refuses a
record whose fields contradict its stage.  Standard library only.

Adding a kind: one record in :mod:`fleetchaos.sim.kinds`, its pydantic model in
:mod:`fleetchaos.sim.fault_specs`, and for a state kind its handler in
:mod:`fleetchaos.sim.state_kinds` (how it is scheduled, met and judged).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, NamedTuple

# -- stages: where the world meets a kind (fleetchaos.sim.calls gives the order a call meets them)

#: Scheduled or emergent fleet state (a full disk, revoked credentials, a crash, a rate or
#: quota limit, a partition, shared branches, slow latency): realised by the fault plan
#: and met by the call or dispatch that runs into it.
STATE = "state"
#: The same cause fails every execution of a call (no execution number in its key).
PERSISTENT = "persistent"
#: Drawn afresh for every execution of every call.
TRANSIENT = "transient"
#: Several items of one fan-out step execution fail together.
BATCH = "batch"
#: The call looks successful but took no effect.
MASKING = "masking"
#: Changes nothing that happens, only how it is reported.
REPORTING = "reporting"
#: Emerges from the task's own conversation: a model turn whose context is past the model's window
#: (``fleet.model.context_window_tokens``).  Never declared or drawn: met at the turn, judged by the context.
CONVERSATION = "conversation"
#: Not a fault kind: how a report that names no failure kind is rendered.
UNCLASSIFIED_STAGE = "unclassified"

STAGES = (STATE, PERSISTENT, TRANSIENT, BATCH, MASKING, REPORTING, CONVERSATION, UNCLASSIFIED_STAGE)

#: What a persistent fault's key holds, besides the rule: see :func:`fleetchaos.sim._rng.persistent_key`.
WORKER_TOOL = "worker_tool"  # one draw per worker and tool for the whole run
TASK_STEP = "task_step"  # per task and step: every item alike
TASK_STEP_ITEM = "task_step_item"  # per task, step and item
SOURCE = "source"  # per task, step, item and source: an alternative source draws afresh
#: Per task and step and how many times the task renewed what the kind is about for that step (a new MCP session, a
#: fresh tool list: :mod:`fleetchaos.sim.mcp_turns`): a renewal draws afresh.
RENEWED = "task_step_renewal"
PERSISTENT_SCOPES = (WORKER_TOOL, TASK_STEP, TASK_STEP_ITEM, SOURCE, RENEWED)

#: The causes the wasted-retry judge (:mod:`fleetchaos.sim.waste`) can check still hold: a state
#: kind's own state, read by its handler (:meth:`fleetchaos.sim.plan.StateKind.holds`), or the
#: same per-call cause again (a persistent rule, a persistent batch, the call's own draws).
STATE_CAUSE = "state"
#: The task's context still past the model's window when the retry's turn would read it (a conversation kind's).
CONTEXT_CAUSE = "context"
CAUSES = (STATE_CAUSE, "persistent", "batch", "transient", "provider_saturated", CONTEXT_CAUSE)

#: What a remediation agent can repair on a worker (:func:`fleetchaos.sim.remediation.repair`).
REMEDIES = ("refresh_credentials", "clear_disk", "install_tool")

#: The error categories of the subagent-result contract (:class:`fleetchaos.sim.envelopes.SubagentResult`).
SubagentCategory = Literal["transient", "validation", "permission", "business", "unknown"]

#: Alternatives a worker can name in the failure-type contract.
ALTERNATIVE_SOURCE = "alternative_source"  # named only while an untried source is left
OTHER_WORKER = "reroute_to_worker_with_tool"


class FailureContract(NamedTuple):
    """How a worker that follows the structured contract (AgentToolError) classifies a kind."""

    error_code: str
    category: str
    recoverable: bool | None
    suggested_action: str


class Wire(NamedTuple):
    """How a vendor's SDK reports a kind: HTTP status, reason phrase, Node errno-like code."""

    status: int
    reason: str
    errno: str


class Waste(NamedTuple):
    """A retry after this kind is wasted while ``cause`` holds; counted as ``reason``, in ``family``."""

    cause: str
    reason: str
    family: str


@dataclass(frozen=True, slots=True)
class FaultKind:
    """One fault kind: where it is met, how every contract reports it, what it does."""

    name: str
    """The ``kind`` of scenario files."""
    stage: str
    """Where the world meets it: one of :data:`STAGES`."""
    contract: FailureContract
    """The AgentToolError code, category, recoverability and suggested action."""
    fail_fast_s: float | None
    """Seconds a call takes to fail on it, on top of the network round trip (None: it does not fail fast)."""
    outcome_unknown: bool
    """The call ran until a timeout: its tokens were spent and its side effect may have committed."""
    retry_after: bool
    """The failure carries the instant its cause lifts (a retry-after hint)."""
    transport_retryable: bool
    """A transport layer under the agent runtime sees it and may retry the call itself."""
    retry_helps: bool
    """The same call succeeds when simply tried again (after the failure type's own handler)."""
    failure_type: str | None
    """Its failure type in the failure-type contract."""
    subagent_category: SubagentCategory | None
    """Its error category in the subagent-result contract."""
    alternative: str | None
    """The alternative a worker names in the failure-type contract, if any."""
    wire: Wire | None
    """How vendors' SDKs report it (raw, subagent-result and tool-envelope text)."""
    waste: Waste | None
    """What makes a retry after it wasted (None: nothing that outlasts the call)."""
    remedy: str | None
    """What a remediation agent repairs for it: one of :data:`REMEDIES`, or None."""
    persistent_scope: str | None
    """For a persistent kind, what its key holds: one of :data:`PERSISTENT_SCOPES`."""
    effect: str
    """What it does to the truth of a call or a task, in one sentence for people."""
    spends_tokens: bool = field(init=False)
    """A call met by it ran (it hung, or its failure was masked), so its model tokens were spent (derived)."""

    def __post_init__(self) -> None:
        # Derived once: read for every faulted call.
        object.__setattr__(self, "spends_tokens", self.outcome_unknown or self.stage == MASKING)
        problems = []
        stage = self.stage
        if stage not in STAGES:
            problems.append(f"stage {stage!r} is not one of {STAGES}")
        if (stage == PERSISTENT) != (self.persistent_scope is not None):
            problems.append("persistent_scope is required for a persistent kind and only for one")
        if self.persistent_scope is not None and self.persistent_scope not in PERSISTENT_SCOPES:
            problems.append(f"persistent_scope {self.persistent_scope!r} is not one of {PERSISTENT_SCOPES}")
        shown = stage not in (MASKING, REPORTING)  # a failure an orchestrator can be told of
        rendered = (self.failure_type, self.subagent_category, self.wire)
        if shown and None in rendered:
            problems.append("failure_type, subagent_category and wire are required for a kind reported as a failure")
        if not shown and (rendered != (None, None, None) or self.waste or self.remedy or self.fail_fast_s is not None):
            problems.append("a masking or reporting kind is never reported as a failure: no wire, failure type, waste")
        if stage in (PERSISTENT, BATCH, CONVERSATION) and self.fail_fast_s is None:
            problems.append("a persistent, batch or conversation kind fails fast: fail_fast_s is required")
        if (stage == CONVERSATION) != (self.waste is not None and self.waste.cause == CONTEXT_CAUSE):
            problems.append(
                f"a conversation kind, and only one, is judged by the context (waste.cause {CONTEXT_CAUSE!r})"
            )
        if stage == TRANSIENT and (self.fail_fast_s is None) == (not self.outcome_unknown):
            problems.append("a transient kind either fails fast (fail_fast_s) or hangs (outcome_unknown), not both")
        if (stage == REPORTING) != (self.contract.recoverable is None):
            problems.append("contract.recoverable is None for a reporting kind and only for one")
        if self.waste is not None:
            if self.waste.cause not in CAUSES:
                problems.append(f"waste.cause {self.waste.cause!r} is not one of {CAUSES}")
            if self.waste.cause == STATE_CAUSE and stage != STATE:
                problems.append(f"only a state kind is judged by its state (waste.cause {STATE_CAUSE!r})")
            if self.retry_after and self.waste.cause != STATE_CAUSE:
                problems.append(
                    "a kind with a retry-after hint is judged by the state behind the hint, never the hint "
                    f"(waste.cause {STATE_CAUSE!r})"
                )
            if (stage == TRANSIENT) and self.waste.cause != "transient":
                problems.append("a transient kind is judged by its own draws again (waste.cause 'transient')")
        if self.remedy is not None and self.remedy not in REMEDIES:
            problems.append(f"remedy {self.remedy!r} is not one of {REMEDIES}")
        if problems:
            raise ValueError(f"fault kind {self.name!r}: " + "; ".join(problems))


#: The four families of wasted retries (docs/metrics.md, ``wasted_retries``).
PERMANENT_ERROR = "retried a permanent error"
STILL_RATE_LIMITED = "while still rate limited"
EXHAUSTED_RESOURCE = "on the same exhausted resource"


#: How a report that names no failure kind is rendered: unclassified, fatal, escalate.
UNCLASSIFIED = FaultKind(
    name="unclassified",
    stage=UNCLASSIFIED_STAGE,
    contract=FailureContract("UNCLASSIFIED", "fatal", False, "escalate"),
    fail_fast_s=None,
    outcome_unknown=False,
    retry_after=False,
    transport_retryable=False,
    retry_helps=False,
    failure_type="permanent",
    subagent_category="unknown",
    alternative=None,
    wire=Wire(500, "Internal Server Error", "ERR_UNKNOWN"),
    waste=None,
    remedy=None,
    persistent_scope=None,
    effect="A failure no kind names.",
)
TRANSIENT_AGAIN = "into the same transient fault"
