"""Imperfect contracts: workers whose structured envelopes get a failure wrong.

A ``wrong_envelope`` fault (:class:`fleetchaos.sim.fault_specs.WrongEnvelope`) changes
nothing that happens, only what a worker reports.  For each failed dispatch a rule
covers, four independent keyed draws decide whether the envelope is wrong in each way
(:data:`WAYS`): it names another kind (code, category, suggested action), it marks a
permanent failure recoverable and transient (the over-classification that hides real
defects), its retry-after hint is off by a factor, or it leaves out what completed
before the failure.  Each draw is keyed by the call that failed (task, step, item,
execution) and a named stream, so every arm meets the same wrong envelopes whatever
happened before, and every structured format shows the same mistakes in its own words.

The mistakes are judged against the truth, never against the envelope: the format
renders the true report, then the report as the worker gets it wrong, one way at a
time, and a way counts only when it changed what the orchestrator sees (marking an
already recoverable failure recoverable, or omitting progress there was none of,
changes nothing and is not counted).  The world adds the counts to the task's record
(``misreported``, ``misreported_ways``).  SimPy-free.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from fleetchaos.sim import _rng
from fleetchaos.sim.config import WorldSpec
from fleetchaos.sim.fault_specs import WrongEnvelope
from fleetchaos.sim.faults import resolve_swarm
from fleetchaos.sim.formats import ErrorFormat
from fleetchaos.sim.kinds import KINDS, PROVIDER_KINDS, FailureContract, FaultKind, reported_kind
from fleetchaos.sim.kinds_mcp import MCP_SIDE_KINDS
from fleetchaos.sim.kinds_model import MODEL_SIDE_KINDS
from fleetchaos.sim.observation import Observation
from fleetchaos.sim.schedules import Spans, expand_windows
from fleetchaos.sim.truth import AttemptReport

#: The ways an envelope can be wrong, in the order they are applied and judged.
MISCLASSIFIED = "misclassified"
MARKED_RECOVERABLE = "marked_recoverable"
WRONG_RETRY_AFTER = "wrong_retry_after"
OMITTED_PARTIAL_SUCCESS = "omitted_partial_success"
WAYS: tuple[str, ...] = (MISCLASSIFIED, MARKED_RECOVERABLE, WRONG_RETRY_AFTER, OMITTED_PARTIAL_SUCCESS)

#: How a rule's line in a run's scheduled faults starts (reports find it by this).
PREFIX = "wrong envelopes"

S_MISCLASSIFY = _rng.stream_id("envelope:misclassify")
S_MISCLASSIFY_AS = _rng.stream_id("envelope:misclassify_as")
S_RECOVERABLE = _rng.stream_id("envelope:mark_recoverable")
S_RETRY_AFTER = _rng.stream_id("envelope:wrong_retry_after")
S_RETRY_AFTER_FACTOR = _rng.stream_id("envelope:retry_after_factor")
S_PARTIAL = _rng.stream_id("envelope:omit_partial_success")


def envelope_key(run_key: int, task_id: int, step: int, item: int, execution: int) -> int:
    """The key of one failed call's envelope draws: the call's own key (see :mod:`fleetchaos.sim._rng`)."""
    return _rng.call_key(_rng.step_key(_rng.task_key(run_key, task_id), step, execution), item)


def over_recoverable(kind: FaultKind) -> FaultKind:
    """``kind`` as a worker that labels it transient reports it: recoverable, retry with backoff.

    The error code and the vendor's wire status stay the kind's own; every contract's
    classification (category, recoverability, suggested action, failure type, sub-agent
    category, retry flag) says "transient, try again".
    """
    code = kind.contract.error_code
    return dataclasses.replace(
        kind,
        contract=FailureContract(code, "transient", True, "retry_with_backoff"),
        retry_helps=True,
        failure_type="timeout",
        subagent_category="transient",
        alternative=None,
    )


@dataclass(frozen=True, slots=True)
class EnvelopeRule:
    """One ``wrong_envelope`` fault, compiled: where it applies and how often each way goes wrong."""

    index: int
    """The fault's position in the scenario's ``faults`` list."""
    workers: frozenset[int] | None
    failures: frozenset[str] | None
    tools: frozenset[str] | None
    spans: Spans | None
    misclassify: float
    reported_as: tuple[str, ...] | None
    reportable: tuple[str, ...]
    """The kinds a misclassification may name when ``reported_as`` is not given: every kind
    reported as a failure that the world can produce (a provider's overload only where one is declared)."""
    mark_recoverable: float
    wrong_retry_after: float
    log_factor_low: float
    log_factor_high: float
    omit_partial_success: float
    stream: int
    """Mixed into every draw of this rule: two rules draw independently."""

    def describe(self) -> str:
        """The rule in one line: where it applies and the chance of each way."""
        where = [
            "every worker" if self.workers is None else f"workers {sorted(self.workers)}",
            "every failure" if self.failures is None else f"failures of {', '.join(sorted(self.failures))}",
        ]
        if self.tools is not None:
            where.append(f"tools {', '.join(sorted(self.tools))}")
        if self.spans is not None:
            where.append(f"{len(self.spans.spans)} window(s) from {self.spans.spans[0][0]:g}s")
        low, high = math.exp(self.log_factor_low), math.exp(self.log_factor_high)
        return (
            f"{PREFIX} (faults[{self.index}]) on {', '.join(where)}: misclassify {self.misclassify:g}, "
            f"mark_recoverable {self.mark_recoverable:g}, wrong_retry_after {self.wrong_retry_after:g} "
            f"(x{low:.3g} to x{high:.3g}), omit_partial_success {self.omit_partial_success:g}"
        )

    def covers(self, report: AttemptReport, now: float) -> bool:
        """Whether this rule applies to the failed dispatch ``report`` at ``now``."""
        return (
            (self.workers is None or report.worker in self.workers)
            and (self.failures is None or report.failure in self.failures)
            and (self.tools is None or report.step_names[report.failed_step] in self.tools)
            and (self.spans is None or self.spans.active(now))
        )


def compile_rule(fault: WrongEnvelope, index: int, horizon_s: float, *, providers: bool = False) -> EnvelopeRule:
    """An :class:`EnvelopeRule` from a (swarm-resolved) ``wrong_envelope`` fault; ``providers``: the world declares some."""
    low, high = fault.retry_after_factor
    reportable = tuple(
        name
        for name, k in KINDS.items()
        if k.wire is not None
        and name not in MODEL_SIDE_KINDS
        and name not in MCP_SIDE_KINDS
        and (providers or name not in PROVIDER_KINDS)
    )
    return EnvelopeRule(
        index=index,
        workers=None if fault.workers is None else frozenset(fault.workers),
        failures=None if fault.failures is None else frozenset(fault.failures),
        tools=None if fault.tools is None else frozenset(fault.tools),
        spans=Spans(expand_windows(fault.windows, horizon_s)) if fault.windows else None,
        misclassify=fault.misclassify,
        reported_as=None if fault.reported_as is None else tuple(fault.reported_as),
        reportable=reportable,
        mark_recoverable=fault.mark_recoverable,
        wrong_retry_after=fault.wrong_retry_after,
        log_factor_low=math.log(low),
        log_factor_high=math.log(high),
        omit_partial_success=fault.omit_partial_success,
        stream=_rng.stream_id(f"envelope:rule:{index}"),
    )


class EnvelopeErrors:
    """The run's ``wrong_envelope`` rules: the first rule that covers a failed dispatch decides."""

    def __init__(self, rules: tuple[EnvelopeRule, ...], run_key: int):
        self.rules = rules
        self.run_key = run_key

    @classmethod
    def build(cls, spec: WorldSpec, seed: int) -> EnvelopeErrors | None:
        """The rules of a WorldSpec for ``seed`` (swarm parameters drawn as the fault plan draws them); None without any."""
        rules = tuple(
            compile_rule(
                resolve_swarm(fault, seed, index), index, spec.duration_s, providers=bool(spec.fleet.providers)
            )
            for index, fault in enumerate(spec.faults)
            if isinstance(fault, WrongEnvelope)
        )
        return cls(rules, _rng.run_key(seed)) if rules else None

    def describe(self) -> list[str]:
        """Each rule in words, for a run's list of scheduled faults (reports state it as an assumption)."""
        return [rule.describe() for rule in self.rules]

    def rule_for(self, report: AttemptReport, now: float) -> EnvelopeRule | None:
        """The first rule that covers the failed dispatch ``report`` at ``now``."""
        for rule in self.rules:
            if rule.covers(report, now):
                return rule
        return None

    def apply(
        self, errors: ErrorFormat, report: AttemptReport, shown: Observation, now: float, execution: int
    ) -> tuple[Observation, tuple[str, ...]]:
        """What the orchestrator sees of a failed dispatch whose true rendering is ``shown``, and how it is wrong.

        ``execution`` is the failed step's execution number.  Returns the observation (``shown``
        itself when nothing went wrong) and the ways (:data:`WAYS`) that changed it.
        """
        if report.failure is None or report.failed_step < 0:
            return shown, ()
        rule = self.rule_for(report, now)
        if rule is None:
            return shown, ()
        item = report.item_failures[0][0] if report.item_failures else 0
        key = envelope_key(self.run_key, report.task_id, report.failed_step, item, execution) ^ rule.stream
        ways: list[str] = []
        current = report
        for way in WAYS:
            changed = _wrong(way, rule, report, current, key)
            if changed is None:
                continue
            candidate = dataclasses.replace(current, **changed)
            rendered = errors.render(candidate)
            if rendered.envelope != shown.envelope:  # judged on what the orchestrator would see
                ways.append(way)
                current, shown = candidate, rendered
        return shown, tuple(ways)


def _wrong(way: str, rule: EnvelopeRule, truth: AttemptReport, current: AttemptReport, key: int) -> dict | None:
    """The report's fields as the worker gets them wrong ``way``, or None when it does not (drawn, or not applicable).

    ``truth`` is the true report, ``current`` the report as wrong as the earlier ways made it.
    Each way applies only where it can misreport the truth: a misclassification always; marking
    recoverable only a permanent failure still shown as permanent; a wrong retry-after only
    where the truth has one; an omitted partial_success only where something completed.
    """
    kind = reported_kind(truth.failure)
    if way == MISCLASSIFIED:
        if rule.misclassify <= 0.0 or _rng.draw(key, S_MISCLASSIFY) >= rule.misclassify:
            return None
        pool = _misclassification_pool(kind, rule.reported_as if rule.reported_as is not None else rule.reportable)
        if not pool:
            return None
        return {"shown_as": KINDS[pool[int(_rng.draw(key, S_MISCLASSIFY_AS) * len(pool))]]}
    if way == MARKED_RECOVERABLE:
        shown = current.shown_as or kind
        if (
            rule.mark_recoverable <= 0.0
            or kind.contract.recoverable is not False
            or shown.contract.recoverable is not False
            or _rng.draw(key, S_RECOVERABLE) >= rule.mark_recoverable
        ):
            return None
        return {"shown_as": over_recoverable(shown)}
    if way == WRONG_RETRY_AFTER:
        hint = truth.retry_after_s
        if (
            rule.wrong_retry_after <= 0.0
            or hint is None
            or not math.isfinite(hint)
            or _rng.draw(key, S_RETRY_AFTER) >= rule.wrong_retry_after
        ):
            return None
        u = _rng.draw(key, S_RETRY_AFTER_FACTOR)
        return {
            "retry_after_s": hint * math.exp(rule.log_factor_low + u * (rule.log_factor_high - rule.log_factor_low))
        }
    # OMITTED_PARTIAL_SUCCESS
    progress = truth.failed_step > 0 or bool(truth.done_items)
    if (
        rule.omit_partial_success <= 0.0
        or not progress
        or "partial_success" in current.dropped_fields
        or _rng.draw(key, S_PARTIAL) >= rule.omit_partial_success
    ):
        return None
    return {"dropped_fields": (*current.dropped_fields, "partial_success")}


def _misclassification_pool(truth: FaultKind, names: tuple[str, ...]) -> tuple[str, ...]:
    """The kinds of ``names`` a misclassified failure of ``truth`` may be reported as: never one with its own error code."""
    code = truth.contract.error_code
    return tuple(n for n in names if KINDS[n].contract.error_code != code)


__all__ = [
    "MARKED_RECOVERABLE",
    "MISCLASSIFIED",
    "OMITTED_PARTIAL_SUCCESS",
    "PREFIX",
    "WAYS",
    "WRONG_RETRY_AFTER",
    "EnvelopeErrors",
    "EnvelopeRule",
    "compile_rule",
    "envelope_key",
    "over_recoverable",
]
