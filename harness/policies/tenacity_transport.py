"""A tool's own tenacity retry as the transport layer nearest that tool: :func:`transport_from_tenacity`.

Teams retry per call, with a configuration per tool (``@retry`` on the CRM client, another
on the search client); the simulator models such a retry as a transport layer under the
agent (:class:`~fleetchaos.sim.transport.TransportRetry`), which retries one failed call
before the orchestrator sees it.  This reads a tenacity configuration (through
:func:`~fleetchaos.policies.tenacity_adapter.from_tenacity`, so the same strategies are read
the same way) into the layer for the tools it wraps:

* ``stop_after_attempt(n)`` -> ``attempts=n`` (a layer counts its tries);
* ``wait_fixed(w)`` -> ``base_s=cap_s=w``; ``wait_exponential(multiplier, max)`` -> ``base_s=multiplier,
  cap_s=max``, no jitter; ``wait_random_exponential(multiplier, max)`` -> the same with full jitter
  (both with ``exp_base`` 2 and ``min`` 0, the layer's own curve);
* ``retry``: the failure kinds a transport layer can see whose exception (the exception map's)
  the predicate retries.

Anything else is refused with :class:`~fleetchaos.policies.tenacity_adapter.RetryTranslationError`
naming the part: a layer that retried differently from the code would make parity verify other code.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from fleetchaos.policies.tenacity_adapter import RetryTranslationError, from_tenacity
from fleetchaos.policies.tenacity_blocks import (
    AttemptState,
    stop_after_attempt,
    wait_exponential,
    wait_fixed,
    wait_random_exponential,
)
from fleetchaos.sim.transport import TransportRetry, transport_kinds

__all__ = ["transport_from_tenacity"]


def transport_from_tenacity(
    obj: Any, *, tools: Iterable[str] | None = None, exception_map: Mapping[str, Any] | None = None
) -> TransportRetry:
    """The transport layer that retries as ``obj`` (a ``tenacity.Retrying`` or a ``@retry`` function) does, for
    the calls of ``tools`` (None: every tool's)."""
    policy = from_tenacity(obj, exception_map)
    subject = policy.name
    stop, wait = policy.stop, policy.wait
    if not isinstance(stop, stop_after_attempt):
        raise RetryTranslationError(
            subject, f"stop={stop!r}: a transport layer counts its tries; give stop=stop_after_attempt(n)"
        )
    if isinstance(wait, wait_fixed):
        base, cap, jitter = float(wait.wait), float(wait.wait), "none"
    elif isinstance(wait, (wait_exponential, wait_random_exponential)):
        if wait.exp_base != 2 or wait.min != 0:
            raise RetryTranslationError(
                subject, f"wait={wait!r}: a transport layer doubles its wait from 0; give exp_base=2 and min=0"
            )
        base, cap = float(wait.multiplier), float(wait.max)
        jitter = "full" if isinstance(wait, wait_random_exponential) else "none"
    else:
        raise RetryTranslationError(
            subject,
            f"wait={wait!r}: a transport layer waits wait_fixed, wait_exponential or wait_random_exponential; "
            "model another curve as a policy (from_tenacity) instead",
        )
    on = frozenset(kind for kind in transport_kinds() if policy.retry(_state(policy, kind)))
    if not on:
        raise RetryTranslationError(subject, f"retry={policy.retry!r}: retries none of the transport failures")
    return TransportRetry(
        attempts=stop.max_attempt_number,
        base_s=base,
        cap_s=cap,
        jitter=jitter,  # type: ignore[arg-type]  # one of the three literals, chosen above
        on=on,
        tools=None if tools is None else frozenset(tools),
    )


def _state(policy: Any, kind: str) -> AttemptState:
    """The first attempt failing with ``kind``, as the tool's code would see it (the exception map's exception)."""
    from fleetchaos.sim.formats import get_format
    from fleetchaos.sim.truth import AttemptReport

    report = AttemptReport(task_id=0, worker=0, start_step=0, failed_step=0, step_names=("tool",), failure=kind)
    observation = get_format("structured", seed=0).render(report)
    exception = policy.exceptions.exception_for(observation)
    return AttemptState(attempt_number=1, seconds_since_start=0.0, exception=exception, rng=None)  # type: ignore[arg-type]  # no draws: a retry predicate reads the exception
