"""What the orchestrator sees, what it may do, and the policy socket.

The fleet defines these sockets; ``harness`` provides the plugs (policies).  A policy is
a pure function of an :class:`Observation` and a :class:`TaskHistory`: given the same
inputs (including the seeded RNG state) it returns the same :class:`Action`.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Literal, Protocol, runtime_checkable

from pydantic import BaseModel


@dataclass(frozen=True, slots=True)
class Observation:
    """One dispatch's outcome as rendered by an error format.

    ``status`` is the word the orchestrator reads (``"ok"`` or ``"failed"``);
    ``envelope`` is present only when the format carries a structured error (an
    :class:`~fleetchaos.sim.envelope.AgentToolError` or one of the contracts in
    :mod:`fleetchaos.sim.envelopes`); ``text`` is the unstructured body a raw or
    suppressing format returns; ``secrets`` counts the planted secrets this rendering
    let through to the orchestrator.
    """

    ok: bool
    status: str
    worker: int
    envelope: BaseModel | None = None
    text: str | None = None
    secrets: int = 0

    def fields(self) -> dict:
        """The envelope's fields as plain data ({} without an envelope), for generic policies."""
        return self.envelope.model_dump() if self.envelope is not None else {}

    def rendered_text(self) -> str:
        """The observation as the text a model reads: its text, else its envelope as it travels (compact JSON
        under the wire's field names, absent fields left out), else its status word."""
        if self.text is not None:
            return self.text
        if self.envelope is not None:
            return self.envelope.model_dump_json(by_alias=True, exclude_none=True)
        return self.status


@dataclass(slots=True)
class TaskHistory:
    """The orchestrator's own record of one task, handed to the policy read-only.

    Counts only what the orchestrator itself did or saw; nothing from the truth.
    """

    task_id: int
    attempts: int = 0
    """Dispatches so far (the first dispatch is attempt 1)."""
    retries: int = 0
    """Dispatches after the first."""
    same_failure_streak: int = 0
    """Consecutive failed observations with the same error code (or status word)."""
    refreshes: int = 0
    reroutes: int = 0
    elapsed_s: float = 0.0
    worker: int = 0
    last_code: str = ""
    rng: random.Random = field(default_factory=random.Random, repr=False)
    now_s: float = 0.0
    """The simulated clock when the policy is asked (for breakers, budgets and throttles)."""
    orchestrator: int = 0
    """The orchestrator that owns the task."""
    remediations: int = 0
    """Remediation agents sent for this task so far."""
    dispatches_in_flight: int = 0
    """The orchestrator's dispatches in flight now, this task's last one excluded (what an Envoy-style budget reads)."""
    retries_in_flight: int = 0
    """How many of those are retries."""
    last_delay_s: float | None = None
    """The delay of the task's last retry (None before the first): the whole delay, every wait summed."""
    waits: dict[int, float] = field(default_factory=dict, repr=False)
    """Per-task memory of waits that chain on their own earlier draws, keyed by the wait
    (decorrelated jitter keeps its own last sleep here, not the combined delay)."""
    shared: object = field(default=None, repr=False)
    """The orchestrator's state shared across its tasks (what ``policy.new_shared_state()``
    returned; None when the policy keeps none): retry budgets, circuit breakers."""


@dataclass(frozen=True, slots=True)
class Retry:
    """Dispatch again to the same worker after ``delay_s``.

    ``resume_from`` and ``done_items`` come only from what an observation revealed; the
    default restarts the task from its first step.
    """

    delay_s: float = 0.0
    resume_from: int = 0
    done_items: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class Reroute:
    """Dispatch to another worker (the next one in rotation, or the least loaded) after ``delay_s``."""

    delay_s: float = 0.0
    resume_from: int = 0
    done_items: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class RefreshCredentials:
    """Refresh the worker's API credentials, then dispatch to it again."""

    resume_from: int = 0
    done_items: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class UseAlternative:
    """Dispatch again, switching the failed items of ``resume_from`` to their next alternative source."""

    delay_s: float = 0.0
    resume_from: int = 0
    done_items: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class RepairTurn:
    """Show the model its rejected call and the error, and ask for the call again: a model turn of the failed step
    (no tool runs in it), then dispatch again after ``delay_s``.

    When the rejected call was the model's own malformed output (arguments that do not parse, a call cut at the
    length limit, an unknown tool, an empty turn), the repair turn emits a valid call with
    ``fleet.model.repair_valid_probability`` and the same fault again otherwise; after any other failure it is an
    ordinary turn of the step.  The turn reads the context and emits the step's call like any turn, through the
    fleet's model provider, and can itself fail.
    """

    delay_s: float = 0.0
    resume_from: int = 0
    done_items: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class RepromptWithSchema:
    """A repair turn that also sends the tool's schema: ``fleet.model.schema_tokens`` more context, and a valid call
    with ``fleet.model.reprompt_valid_probability`` after a malformed call of the model's own."""

    delay_s: float = 0.0
    resume_from: int = 0
    done_items: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class FallbackModel:
    """Send the failed step's turn to the fallback model (``fleet.model.fallback``): its own capacity, prices and
    refusal and filter behaviour (a denial is deterministic for one model and request; another model may answer).
    Without a fallback model declared, the turn goes to the same model again."""

    delay_s: float = 0.0
    resume_from: int = 0
    done_items: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class ResumeStream:
    """Resume a cut stream with idempotency: the calls of the cut step that had already committed are kept (not run
    again, so not duplicated) and the rest are emitted again.  After a failure that cut no stream it is a retry."""

    delay_s: float = 0.0
    resume_from: int = 0
    done_items: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class CompactContext:
    """Compact the conversation, then dispatch again: a model turn replaces the tool results and error texts after
    the system prompt by a summary (``fleet.model.compaction``), so the context shrinks, and what the summary drops is
    lost to the task: a task that finishes on it is a partial result.  The turn goes through the fleet's model
    provider and can fail (the context then stays as it was).  After a failure that is not a context overflow it
    compacts all the same."""

    delay_s: float = 0.0
    resume_from: int = 0
    done_items: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class ReinitSession:
    """Initialise a new MCP session with the failed step's server, then dispatch again after ``delay_s``: the call
    that met an expired session (a 404 to the old session id) goes through on the new one.  After any other failure
    it is a retry."""

    delay_s: float = 0.0
    resume_from: int = 0
    done_items: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class RefreshTools:
    """List the failed step's server's tools again (``tools/list``), then dispatch again after ``delay_s``: a call to
    a tool the server renamed goes to its new name.  After any other failure it is a retry."""

    delay_s: float = 0.0
    resume_from: int = 0
    done_items: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class Escalate:
    """Stop automatic recovery and hand the task to a human; the claim is 'escalated'."""

    reason: str = "escalated"


@dataclass(frozen=True, slots=True)
class Remediate:
    """Send a remediation agent to the worker, then dispatch to it again.

    The agent takes minutes (``fleet.remediation.duration``) and succeeds with
    ``fleet.remediation.success_probability``; a success repairs what caused the last
    failure when a machine can repair it (credentials, a full disk, a missing tool) and
    changes nothing otherwise.
    """

    resume_from: int = 0
    done_items: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class Rollback:
    """Compensate the task's committed side effects (an all-or-nothing batch), then report it failed."""

    reason: str = "rolled back"


@dataclass(frozen=True, slots=True)
class DeadLetter:
    """Park a poison task in the dead-letter queue for later inspection; the claim is 'dead_lettered'."""

    reason: str = "poison task"


@dataclass(frozen=True, slots=True)
class GiveUp:
    """Stop and report the task as failed (or partial, when the policy knows some of it is done)."""

    claim: Literal["failed", "partial"] = "failed"


#: The actions that act on the model's own turn of the failed step (:mod:`fleetchaos.sim.model_turns`), and the MCP
#: client's two (:mod:`fleetchaos.sim.mcp_turns`), realised the same way: a turn of the failed step.
MODEL_TURN_ACTIONS = (
    RepairTurn,
    RepromptWithSchema,
    FallbackModel,
    ResumeStream,
    CompactContext,
    ReinitSession,
    RefreshTools,
)

Action = (
    Retry
    | Reroute
    | RefreshCredentials
    | UseAlternative
    | Remediate
    | RepairTurn
    | RepromptWithSchema
    | FallbackModel
    | ResumeStream
    | CompactContext
    | ReinitSession
    | RefreshTools
    | Escalate
    | Rollback
    | DeadLetter
    | GiveUp
)
ACTION_TYPES = (
    Retry,
    Reroute,
    RefreshCredentials,
    UseAlternative,
    Remediate,
    RepairTurn,
    RepromptWithSchema,
    FallbackModel,
    ResumeStream,
    CompactContext,
    ReinitSession,
    RefreshTools,
    Escalate,
    Rollback,
    DeadLetter,
    GiveUp,
)


@runtime_checkable
class RecoveryPolicy(Protocol):
    """Decides what the orchestrator does after a failed dispatch.

    Only ``name`` and ``decide`` are required.  The driver also reads these optional
    attributes, once per run:

    * ``guardrail`` (bool): a final-answer guardrail blocks a success claim while the
      format's failure flag says a step failed;
    * ``idempotency_keys`` (bool): calls carry idempotency keys, so a retried call whose
      side effect already took effect does not take effect twice;
    * ``transport`` (:class:`fleetchaos.sim.transport.TransportRetry`, or a list of them
      nearest the tool first): transport layers under the agent runtime that retry failed
      tool calls themselves, each the failures of the one below, before the policy ever
      sees them;
    * ``new_shared_state()``: a fresh mutable object per orchestrator and run, handed to
      every decision as ``history.shared`` (retry budgets, circuit breakers);
    * ``observe(observation, shared, now_s, task_id)``: called after every dispatch,
      successful or not, so shared controls can count successes and failures;
    * ``choose_worker(proposed, workers, shared, now_s)``: may move a dispatch away from
      the worker the orchestrator proposed (a circuit breaker skipping open workers);
    * ``before_dispatch(shared, now_s, first, draw)``: called before every dispatch, first
      tries included (``first``), with a uniform ``draw`` in [0, 1) keyed by the task and
      attempt; None sends it, a :class:`GiveUp` or :class:`Escalate` refuses it locally and
      ends the task so (client-side throttling, retry budgets that count every request).
    """

    @property
    def name(self) -> str:
        """The policy's name in reports (read only: a frozen dataclass's field is one)."""
        ...

    def decide(self, observation: Observation, history: TaskHistory) -> Action:
        """Return the next action for a task whose last dispatch did not succeed."""
        ...


__all__ = [
    "ACTION_TYPES",
    "MODEL_TURN_ACTIONS",
    "Action",
    "CompactContext",
    "DeadLetter",
    "Escalate",
    "FallbackModel",
    "GiveUp",
    "Observation",
    "RecoveryPolicy",
    "RefreshCredentials",
    "RefreshTools",
    "ReinitSession",
    "Remediate",
    "RepairTurn",
    "RepromptWithSchema",
    "Reroute",
    "ResumeStream",
    "Retry",
    "Rollback",
    "TaskHistory",
    "UseAlternative",
]
