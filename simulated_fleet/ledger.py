"""The ground-truth ledger: what really happened to each task.

Written by the simulator as calls complete, read by the oracle.  ``commits[s][i]``
counts how many times item ``i`` of step ``s`` really took effect; everything the
oracle says about truth (complete, partial, duplicated) is derived from these counts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fleetchaos.sim.kind_record import FaultKind

TRUTH_FULL = "full"
TRUTH_PARTIAL = "partial"
TRUTH_NONE = "none"


@dataclass(slots=True)
class TaskRecord:
    """Truth and claim of one task, plus the orchestrator's effort spent on it."""

    id: int
    template: str
    title: object
    """The task's title (a :class:`~fleetchaos.sim.workload.Title`, or text): ``str(title)`` reads it."""
    orchestrator: int
    arrival_s: float
    commits: list[list[int]]
    append_steps: tuple[int, ...]
    executions: list[int]
    worker: int = -1
    end_s: float | None = None
    claim: str = "in_flight"
    """success | partial | failed | escalated | dead_lettered | in_flight (unfinished at the drain limit)."""
    calls: int = 0
    """Tool calls, one per item of a fan-out step."""
    tokens: int = 0
    """Model tokens consumed: each turn's input (the context it read) and the tokens of the calls that ran
    (succeeded or hung until a timeout; not fast failures)."""
    input_tokens: int = 0
    """The part of ``tokens`` the turns read as context (:mod:`fleetchaos.sim.conversation`)."""
    context_tokens: int = 0
    """The conversation's context now: the system prompt, every tool result and every error text read so far."""
    turns: int = 0
    """Model turns taken: one per execution of a step that uses the API (in a real run that binds its model, one per
    model call)."""
    extra_turns: int = 0
    """Turns a real agent's loop took beyond one per model step: model calls that follow no failure of their step,
    new work (counted in ``logical_calls``), neither retries nor redone steps."""
    observed_turns: int = 0
    """Model calls whose tokens came from the API's ``usage`` (the others' are modelled from the scenario)."""
    step_executions: int = 0
    retries: int = 0
    reroutes: int = 0
    refreshes: int = 0
    redone_steps: int = 0
    wasted_retries: int = 0
    wasted_reasons: dict[str, int] = field(default_factory=dict)
    failed_retries: int = 0
    """Retries whose dispatch failed again (the worker saw a failed step, or the dispatch was lost)."""
    failed_retry_kinds: dict[str, int] = field(default_factory=dict)
    """Failed retries by the fault kind they failed with."""
    failed_retry_reasons: dict[str, int] = field(default_factory=dict)
    """Failed retries by how they relate to the failure before them (:data:`fleetchaos.sim.waste.FAILED_RETRY_REASONS`)."""
    fault_hits: dict[str, int] = field(default_factory=dict)
    first_fault: str | None = None
    first_fault_s: float | None = None
    step_executions_at_first_fault: int = 0
    policy_error: str | None = None
    stopped_by: str | None = None
    """'deadline', 'budget' or 'action_cap' when the orchestrator's own limit ended recovery."""
    schema_skews: int = 0
    """Envelopes seen whose schema_version differed from the orchestrator's."""
    alternatives_used: int = 0
    misreads: int = 0
    """Failed dispatches the orchestrator read as a success (then claimed success)."""
    model_gave_up: int = 0
    """Failures the model stopped on before its policy decided (:mod:`fleetchaos.sim.reading`)."""
    model_retried_permanent: int = 0
    """Retries the model made past its policy's stop on a failure no retry can pass."""
    silent_noticed: int = 0
    """Hollow successes (masked failures) the model noticed and retried."""
    misreads_caught: int = 0
    """Misreads a final-answer guardrail blocked."""
    misreported: int = 0
    """Failed dispatches whose envelope a worker got wrong: what the orchestrator saw differed from what the truth renders."""
    misreported_ways: dict[str, int] = field(default_factory=dict)
    """How those envelopes were wrong (a dispatch can be wrong in several ways): way -> count."""
    wrong_input_steps: int = 0
    """Step executions that ran on an incomplete earlier step (a dependency chain): output wrong."""
    secrets_leaked: int = 0
    """Planted secrets the error format let through to the orchestrator (0 for a sanitised format)."""
    pages: int = 0
    """Humans paged for this task (one per escalation)."""
    human_s: float = 0.0
    """Simulated seconds from a page until the human took the task over."""
    remediations: int = 0
    """Remediation agents sent to a worker for this task."""
    remediations_failed: int = 0
    """Remediations that repaired nothing (the agent failed, or the cause is not machine-repairable)."""
    remediation_s: float = 0.0
    transport_retries: int = 0
    """Tool calls the transport layer repeated on its own (included in ``calls``)."""
    rolled_back: bool = False
    """The orchestrator compensated the task's committed side effects (all-or-nothing batch)."""
    compensations: int = 0
    """Compensating calls a rollback made (one per committed item, included in ``calls``)."""
    deduplicated: int = 0
    """Side effects an idempotency key stopped from taking effect twice."""
    throttled: int = 0
    """Dispatches the policy refused locally before they went out (``before_dispatch``)."""
    layer_tries: list[int] | None = None
    """Tries each transport layer made, nearest the tool first (first tries included); None without layers."""
    model_turns: dict[str, int] | None = None
    """Turns a model-side recovery action asked for, by action (``repair``, ``reprompt``, ``fallback``, ``resume``,
    ``compact``); None when there were none (:mod:`fleetchaos.sim.model_turns`)."""
    fallback_tokens: int = 0
    """The part of ``tokens`` the fallback model read and emitted, priced at its own prices."""
    fallback_input_tokens: int = 0
    """The part of ``fallback_tokens`` it read as context (also counted in ``input_tokens``)."""
    summarised: tuple[tuple[int, int], ...] | None = None
    """(step, execution) of each step whose results a context compaction replaced by a summary; None when none did
    (:mod:`fleetchaos.sim.compaction`).  A step executed again since brings its result back."""
    summary_lost: bool = False
    """A compaction's summary dropped something the answer needed (a keyed draw at
    ``fleet.model.compaction.loss_probability``)."""
    compactions_failed: int = 0
    """Compaction turns that failed (a fault met): the context stayed as it was."""
    orphans: int = 0
    """Steps whose client gave up while they waited for a tool slot and whose work has not ended yet
    (``after_timeout: continue``): the record is final only once they end."""

    @property
    def faulted(self) -> bool:
        """The task met at least one injected or emergent fault."""
        return bool(self.fault_hits)

    @property
    def truth(self) -> str:
        """full: every item of every step took effect; none: nothing did; else partial."""
        # Counts are never negative, so an item took effect iff its count is non-zero.
        # all/any over map run in C: this is read once per task.
        commits = self.commits
        if all(map(all, commits)):
            # A compacted answer that rests on a summary which lost what it needed is partial.
            return TRUTH_PARTIAL if self.summary_lost and self.rests_on_summary else TRUTH_FULL
        return TRUTH_PARTIAL if any(map(any, commits)) else TRUTH_NONE

    @property
    def rests_on_summary(self) -> bool:
        """A compaction summarised a step's results and the step was not executed again since."""
        summarised = self.summarised
        executions = self.executions
        return summarised is not None and any(executions[s] == e for s, e in summarised)

    @property
    def duplicate_side_effects(self) -> int:
        """Extra commits of non-idempotent side effects (a note posted twice, a push repeated)."""
        if not self.append_steps:
            return 0
        return sum(max(0, c - 1) for s in self.append_steps for c in self.commits[s])

    # -- a step execution's bookkeeping, the same for the simulator's dispatch and a real-code runtime

    def begin_execution(self, si: int, execution: int, turn: int = 1) -> None:
        """The ``execution``-th execution of step ``si`` begins, for the step's ``turn``-th piece of work: a step
        whose every item already took effect ``turn`` times is redone.

        ``turn`` is 1 but for a model step a real agent's loop calls turn after turn
        (:attr:`extra_turns`): its call for the third turn redoes nothing while two turns
        took effect, and redoes the third once three did.
        """
        self.executions[si] = execution
        self.step_executions += 1
        if min(self.commits[si]) >= turn:
            self.redone_steps += 1

    def incomplete(self, needs: tuple[int, ...]) -> bool:
        """Whether a step that reads the steps ``needs`` runs on incomplete input (one of their items never took effect)."""
        commits = self.commits
        return any(0 in commits[n] for n in needs)

    def turn(self, tokens: int) -> None:
        """A model turn for a step whose calls cost ``tokens`` each: it reads the whole context (none: no turn)."""
        if tokens:
            context = self.context_tokens
            self.turns += 1
            self.tokens += context
            self.input_tokens += context

    def called(self, fault: FaultKind | None, tokens: int, result_tokens: int = 0) -> None:
        """A tool call ended with ``fault`` (None: none): counted, its ``tokens`` spent when it ran, and its
        result (``result_tokens``) added to the context when it looked successful (a masked failure too)."""
        self.calls += 1
        if fault is None or fault.spends_tokens:
            self.tokens += tokens
        if fault is None or fault.stage == "masking":  # kind_record.MASKING
            self.context_tokens += result_tokens

    def observed(self, modelled: tuple[int, int], input_tokens: int, output_tokens: int) -> None:
        """A model call's response reported its ``usage``: its input and output tokens replace the ``modelled``
        (input, output) tokens the call was counted with."""
        self.tokens += input_tokens + output_tokens - modelled[0] - modelled[1]
        self.input_tokens += input_tokens - modelled[0]
        self.observed_turns += 1

    def read(self, tokens: int) -> None:
        """The model read an error text of ``tokens`` tokens: it joins the context."""
        self.context_tokens += tokens

    def deduplicate(self, si: int) -> None:
        """Idempotency keys on step ``si``: a side effect already taken is not taken again."""
        commits = self.commits[si]
        for item, count in enumerate(commits):
            if count > 1:
                self.deduplicated += count - 1
                commits[item] = 1

    def note_fault(self, kind: str, now: float) -> None:
        """Record that a call of this task was hit by a fault of ``kind``."""
        if self.first_fault_s is None:
            self.first_fault = kind
            self.first_fault_s = now
            self.step_executions_at_first_fault = self.step_executions
        self.fault_hits[kind] = self.fault_hits.get(kind, 0) + 1

    def note_misreport(self, ways: tuple[str, ...]) -> None:
        """Record a dispatch whose envelope was wrong in each of ``ways``."""
        self.misreported += 1
        for way in ways:
            self.misreported_ways[way] = self.misreported_ways.get(way, 0) + 1

    def note_failed_retry(self, kind: str, reason: str) -> None:
        """Record a retry whose dispatch failed again, with ``kind`` (its failure) and ``reason``."""
        self.failed_retries += 1
        self.failed_retry_kinds[kind] = self.failed_retry_kinds.get(kind, 0) + 1
        self.failed_retry_reasons[reason] = self.failed_retry_reasons.get(reason, 0) + 1

    def note_wasted(self, reason: str) -> None:
        """Record a retry issued while the cause of the previous failure still held."""
        self.wasted_retries += 1
        self.wasted_reasons[reason] = self.wasted_reasons.get(reason, 0) + 1
