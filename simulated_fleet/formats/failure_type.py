"""``failure-type`` and its field ablation: the FailureTypeError envelope.

failure_type, partial_results, alternatives_suggested, retry_recommended, from the failure
kind's record (:mod:`fleetchaos.sim.kinds`: its failure type, alternative and retry flag).
The ablation steps (``ablation:failure_type`` ... ``ablation:+retry_recommended``, docs/ablation.md)
add the optional fields one at a time.  A worker on an older contract version emits the
envelope without the fields that version lacks (``DRIFT``).
"""

from __future__ import annotations

from fleetchaos.sim.envelopes import FailureTypeError
from fleetchaos.sim.formats._base import drifted, plain_success, progress_refs
from fleetchaos.sim.formats._vendor import shown_kind
from fleetchaos.sim.kinds import ALTERNATIVE_SOURCE
from fleetchaos.sim.misread import DEFAULT_MISREAD_FACTORS
from fleetchaos.sim.observation import Observation
from fleetchaos.sim.truth import AttemptReport

#: The AgentToolError field a drift fault names -> the fields this contract lacks in that older version.
DRIFT: dict[str, tuple[str, ...]] = {
    "partial_success": ("partial_results",),
    "suggested_action": ("alternatives_suggested",),
    "retry_after_ms": ("retry_recommended",),
}


class FailureTypeFormat:
    """failure_type, partial_results, alternatives_suggested, retry_recommended.

    ``fields`` names the optional fields this format fills; the full format fills all
    three, the ablation steps fewer.  The failure type is an explicit enum a guardrail
    can check (``failure_flag``); it is misread as rarely as an AgentToolError.
    """

    name = "failure-type"
    fields: frozenset[str] = frozenset({"partial_results", "alternatives_suggested", "retry_recommended"})
    partial_batch = "failed"  # the envelope reports the failure and what completed
    misread_setting = "failure_type"
    misread_factor = DEFAULT_MISREAD_FACTORS["failure_type"]
    failure_flag = True  # failure_type is machine-readable: a guardrail can check it

    @plain_success
    def render(self, report: AttemptReport) -> Observation:
        """A FailureTypeError with the fields this format carries."""
        if report.completed:
            return Observation(ok=True, status="ok", worker=report.worker)
        kind = shown_kind(report)
        values: dict = {"failure_type": kind.failure_type}
        if "partial_results" in self.fields:
            steps, items = progress_refs(report)
            values["partial_results"] = steps + items
        if "alternatives_suggested" in self.fields:
            alternatives: tuple[str, ...] = ()
            # An alternative source is named only while an untried one is left.
            if kind.alternative is not None and (
                kind.alternative != ALTERNATIVE_SOURCE or report.alternatives_left > 0
            ):
                alternatives = (kind.alternative,)
            values["alternatives_suggested"] = alternatives
        if "retry_recommended" in self.fields:
            values["retry_recommended"] = kind.retry_helps
        envelope = drifted(FailureTypeError(**values), report, DRIFT)
        return Observation(ok=False, status="failed", worker=report.worker, envelope=envelope)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class AblationFailureType(FailureTypeFormat):
    """Ablation step 1: failure_type only."""

    name = "ablation:failure_type"
    fields = frozenset()


class AblationPartialResults(FailureTypeFormat):
    """Ablation step 2: failure_type + partial_results."""

    name = "ablation:+partial_results"
    fields = frozenset({"partial_results"})


class AblationAlternatives(FailureTypeFormat):
    """Ablation step 3: failure_type + partial_results + alternatives_suggested."""

    name = "ablation:+alternatives"
    fields = frozenset({"partial_results", "alternatives_suggested"})


class AblationRetryFlag(FailureTypeFormat):
    """Ablation step 4: every field (failure_type, partial results, alternatives, retry flag)."""

    name = "ablation:+retry_recommended"
    fields = frozenset({"partial_results", "alternatives_suggested", "retry_recommended"})


#: The field ablation, in order: each step adds one field to the one before.
ABLATION_STEPS: tuple[type[FailureTypeFormat], ...] = (
    AblationFailureType,
    AblationPartialResults,
    AblationAlternatives,
    AblationRetryFlag,
)


#: The field ablation's format names, in order.
ABLATION_FORMATS: tuple[str, ...] = tuple(step.name for step in ABLATION_STEPS)
