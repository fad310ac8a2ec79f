"""The reporting-stage fault kinds: they change nothing that happens, only how a failure is reported.

Their records sit in the catalogue (:data:`fleetchaos.sim.kinds.KINDS`) between the
masking kinds and the state kinds; they live here so each module stays one readable
size.  A reporting kind has no wire status, failure type or waste: it is never the
failure of a dispatch.  Standard library only.
"""

from __future__ import annotations

from fleetchaos.sim.kind_record import REPORTING, FailureContract, FaultKind

#: schema_drift and wrong_envelope, in catalogue order.
REPORTING_KINDS: tuple[FaultKind, ...] = (
    FaultKind(
        name="schema_drift",
        stage=REPORTING,
        contract=FailureContract("SCHEMA_VERSION_SKEW", "reporting", None, "none"),
        fail_fast_s=None,
        outcome_unknown=False,
        retry_after=False,
        transport_retryable=False,
        retry_helps=False,
        failure_type=None,
        subagent_category=None,
        alternative=None,
        wire=None,
        waste=None,
        remedy=None,
        persistent_scope=None,
        effect="Changes nothing that happens: during its windows the targeted workers' structured envelopes "
        "carry the older schema_version and lack missing_fields.",
    ),
    FaultKind(
        name="wrong_envelope",
        stage=REPORTING,
        contract=FailureContract("ENVELOPE_WRONG", "reporting", None, "none"),
        fail_fast_s=None,
        outcome_unknown=False,
        retry_after=False,
        transport_retryable=False,
        retry_helps=False,
        failure_type=None,
        subagent_category=None,
        alternative=None,
        wire=None,
        waste=None,
        remedy=None,
        persistent_scope=None,
        effect="Changes nothing that happens: the targeted workers' structured envelopes get some failures wrong "
        "(another kind's code and category, a permanent failure marked recoverable, a retry-after off by a "
        "factor, partial_success left out), each way with its own probability per failed dispatch.",
    ),
)

__all__ = ["REPORTING_KINDS"]
