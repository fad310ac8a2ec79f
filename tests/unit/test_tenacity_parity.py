"""A tenacity configuration gives the same attempt times as tenacity itself, in simulated seconds.

Each configuration is driven twice through the same scripted attempts (how long each
attempt takes, and how it fails):

* by tenacity itself, with a fake clock (``time.monotonic`` in tenacity's module), a fake
  ``sleep`` and tenacity's ``random`` replaced by a ``random.Random(seed)``;
* by the translated :class:`TenacityPolicy`, asked as the world asks it (``history.attempts``,
  ``elapsed_s`` since the first dispatch, the task's ``rng`` seeded alike).

The attempt start times, the sleeps and the outcome must be equal exactly, jitter included:
both draw the same numbers from the same stream.  A translation with an off-by-one attempt
number, a stop asked before the wait, a wrong formula or a draw in another place fails.
"""

from __future__ import annotations

import asyncio
import random
import sys

import pytest
from tenacity_clock import FakeClock

tenacity = pytest.importorskip("tenacity")

from fleetchaos.policies.exception_map import build_exception_map  # noqa: E402
from fleetchaos.policies.tenacity_adapter import from_tenacity  # noqa: E402
from fleetchaos.sim.envelope import AgentToolError  # noqa: E402
from fleetchaos.sim.observation import GiveUp, Observation, Retry, TaskHistory  # noqa: E402

ARRIVAL = 1000.25


def failure(code: str, category: str = "transient") -> Observation:
    envelope = AgentToolError(error_code=code, category=category, recoverable=True, suggested_action="retry")
    return Observation(ok=False, status="failed", worker=0, envelope=envelope)


TIMEOUT = failure("TOOL_TIMEOUT")
BLIP = failure("NETWORK_UNREACHABLE")
LIMITED = failure("RATE_LIMITED")
INVALID = failure("VALIDATION_FAILED", "validation")

#: Scripted attempts: (seconds the attempt takes, its failure, or None for a success).
FLAKY = [(0.4, TIMEOUT), (2.25, BLIP), (0.1, LIMITED), (7.5, TIMEOUT), (0.3, BLIP), (1.2, TIMEOUT), (0.05, BLIP),
         (3.0, TIMEOUT), (0.5, BLIP), (0.5, TIMEOUT), (0.25, None)]  # fmt: skip
MIXED = [(0.4, TIMEOUT), (1.0, LIMITED), (0.2, INVALID), (0.1, TIMEOUT), (0.1, None)]
TIMEOUTS_THEN_BLIP = [(0.4, TIMEOUT), (0.3, TIMEOUT), (0.2, TIMEOUT), (0.1, BLIP), (0.1, None)]
SHORT = [(0.5, BLIP), (0.5, TIMEOUT)] * 10 + [(0.5, None)]
LONG = [(0.2, BLIP)] * 40 + [(0.2, None)]

t = tenacity
CONFIGS = {
    "attempts-fixed": (dict(stop=t.stop_after_attempt(5), wait=t.wait_fixed(2)), FLAKY),
    "delay-or-attempts-exponential": (
        dict(stop=t.stop_after_delay(20) | t.stop_after_attempt(9), wait=t.wait_exponential(multiplier=0.5, max=4)),
        FLAKY,
    ),
    "exponential-min-base3": (
        dict(stop=t.stop_after_attempt(8), wait=t.wait_exponential(multiplier=0.1, exp_base=3, min=0.5, max=30)),
        FLAKY,
    ),
    "before-delay-random": (dict(stop=t.stop_before_delay(14), wait=t.wait_random(1, 3)), SHORT),
    "after-delay-random": (dict(stop=t.stop_after_delay(14), wait=t.wait_random(1, 3)), SHORT),
    "random-exponential": (
        dict(stop=t.stop_after_attempt(9), wait=t.wait_random_exponential(multiplier=1, max=20)),
        FLAKY,
    ),
    "exponential-jitter": (
        dict(stop=t.stop_after_attempt(9), wait=t.wait_exponential_jitter(multiplier=0.5, max=10, jitter=2)),
        FLAKY,
    ),
    "incrementing": (
        dict(stop=t.stop_after_attempt(7), wait=t.wait_incrementing(start=1, increment=2, max=6)),
        FLAKY,
    ),
    "chain-plus-random": (
        dict(
            stop=t.stop_after_attempt(8),
            wait=t.wait_chain(t.wait_fixed(1), t.wait_fixed(1), t.wait_fixed(3)) + t.wait_random(0, 0.5),
        ),
        FLAKY,
    ),
    "all-of-two-stops": (
        dict(stop=t.stop_after_attempt(3) & t.stop_after_delay(9), wait=t.wait_fixed(1.5)),
        FLAKY,
    ),
    "never-stop-none-wait": (dict(stop=t.stop_never, wait=t.wait_none()), FLAKY),
    "retry-on-types": (
        dict(
            stop=t.stop_after_attempt(10),
            wait=t.wait_fixed(1),
            retry=t.retry_if_exception_type((TimeoutError, ConnectionError)),
        ),
        FLAKY,
    ),
    "retry-unless-value-error": (
        dict(stop=t.stop_after_attempt(10), wait=t.wait_fixed(1), retry=t.retry_if_not_exception_type(ValueError)),
        MIXED,
    ),
    "retry-any-message": (
        dict(
            stop=t.stop_after_attempt(10),
            wait=t.wait_random(0, 2),
            retry=t.retry_if_exception_type(TimeoutError) | t.retry_if_exception_message(match="RATE_"),
        ),
        MIXED,
    ),
    "retry-all": (
        dict(
            stop=t.stop_after_attempt(10),
            wait=t.wait_fixed(1),
            retry=t.retry_if_exception_type(OSError) & t.retry_if_not_exception_message(message="NETWORK_UNREACHABLE"),
        ),
        TIMEOUTS_THEN_BLIP,
    ),
    "retry-never": (dict(stop=t.stop_after_attempt(10), retry=t.retry_never), FLAKY),
    "long-exponential-cap": (
        dict(stop=t.stop_after_attempt(35), wait=t.wait_exponential(multiplier=0.001, max=60)),
        LONG,
    ),
}  # fmt: skip


def drive_tenacity(retrying, script, seed: int, monkeypatch, run_async: bool = False):
    """tenacity's own loop over ``script``: (attempt start times, sleeps, outcome)."""
    clock = FakeClock(ARRIVAL)
    monkeypatch.setattr(sys.modules["tenacity"], "time", clock)
    monkeypatch.setattr(sys.modules["tenacity.wait"], "random", random.Random(seed))
    exceptions = build_exception_map()
    starts: list[float] = []

    def attempt():
        starts.append(clock.now)
        duration, observation = script[len(starts) - 1]
        clock.now = clock.now + duration
        if observation is not None:
            raise exceptions.exception_for(observation)
        return "done"

    if run_async:

        async def main():
            async for trial in retrying.copy(sleep=clock.async_sleep):
                with trial:
                    return attempt()

        call = lambda: asyncio.run(main())  # noqa: E731
    else:
        call = lambda: retrying.copy(sleep=clock.sleep)(attempt)  # noqa: E731
    try:
        outcome = call()
    except tenacity.RetryError:
        outcome = "gave up (stopped)"
    except Exception:
        outcome = "gave up (not retried)"
    return starts, clock.sleeps, outcome


def drive_policy(policy, script, seed: int):
    """The translated policy asked as the world asks it: (attempt start times, delays, outcome)."""
    history = TaskHistory(task_id=1, rng=random.Random(seed))
    now = ARRIVAL
    starts: list[float] = []
    delays: list[float] = []
    for number, (duration, observation) in enumerate(script, start=1):
        starts.append(now)
        now = now + duration
        if observation is None:
            return starts, delays, "done"
        history.attempts = number
        history.now_s = now
        history.elapsed_s = now - ARRIVAL
        try:
            action = policy.decide(observation, history)
        except (ValueError, OverflowError) as exc:  # the sleep's own error, which containment records on the task
            return starts, delays, f"raised {type(exc).__name__}"
        if isinstance(action, GiveUp):
            stopped = policy.retry(_state(policy, observation, history))
            return starts, delays, "gave up (stopped)" if stopped else "gave up (not retried)"
        assert isinstance(action, Retry) and action.resume_from == 0
        delays.append(action.delay_s)
        now = now + action.delay_s
        history.retries += 1
    raise AssertionError("the script ran out of attempts")


def _state(policy, observation, history):
    from fleetchaos.policies.tenacity_blocks import AttemptState

    return AttemptState(
        history.attempts, history.elapsed_s, policy.exceptions.exception_for(observation), random.Random()
    )


@pytest.mark.parametrize("config", sorted(CONFIGS))
@pytest.mark.parametrize("seed", [1, 7])
def test_same_attempt_times_as_tenacity(config, seed, monkeypatch):
    """Same start times, same sleeps, same outcome as tenacity's own loop on a fake clock, exactly."""
    kwargs, script = CONFIGS[config]
    retrying = tenacity.Retrying(**kwargs)
    policy = from_tenacity(retrying)
    ours = drive_policy(policy, script, seed)
    theirs = drive_tenacity(retrying, script, seed, monkeypatch)
    assert ours == theirs, (config, repr(policy))
    if config not in ("retry-never",):
        assert len(ours[1]) >= 2, "a configuration that never retried would test nothing"


def test_decorated_function_and_async_retrying_match_too(monkeypatch):
    """``@tenacity.retry(...)`` is read through its ``.retry``; AsyncRetrying's loop agrees with the same policy."""
    kwargs = dict(
        stop=t.stop_after_delay(15), wait=t.wait_random_exponential(multiplier=0.5, max=8) + t.wait_fixed(0.25)
    )

    @tenacity.retry(**kwargs)
    def call_tool():
        raise AssertionError("never called: only its configuration is read")

    policy = from_tenacity(call_tool)
    assert policy.name.endswith("call_tool")
    ours = drive_policy(policy, FLAKY, 3)
    assert ours == drive_tenacity(call_tool.retry, FLAKY, 3, monkeypatch)
    assert ours == drive_tenacity(tenacity.AsyncRetrying(**kwargs), FLAKY, 3, monkeypatch, run_async=True)
    async_repr = repr(from_tenacity(tenacity.AsyncRetrying(**kwargs)))
    assert async_repr.partition(",")[2] == repr(policy)[:-1].partition(",")[2] + ", sleep='asyncio.sleep')"


def test_jitter_follows_the_seed():
    """Jittered waits reproduce per seed and differ between seeds: they come from the task's stream."""
    policy = from_tenacity(tenacity.Retrying(stop=t.stop_after_attempt(9), wait=t.wait_random_exponential(max=20)))
    first = drive_policy(policy, FLAKY, 11)
    assert drive_policy(policy, FLAKY, 11) == first
    assert drive_policy(policy, FLAKY, 12)[1] != first[1]


def test_disabled_retrying_makes_one_attempt():
    """``enabled=False`` calls the function once: the translated policy gives up at the first failure."""
    policy = from_tenacity(tenacity.Retrying(stop=t.stop_after_attempt(5), enabled=False))
    assert drive_policy(policy, FLAKY, 1) == ([ARRIVAL], [], "gave up (not retried)")


def test_hooks_that_are_set_are_named_as_not_modelled():
    """A retry_error_callback (or another hook) is not modelled: the policy's repr, which results record, names it,
    and its description says a task whose retries ran out gives up as failed; defaults name nothing."""
    plain = from_tenacity(tenacity.Retrying(stop=tenacity.stop_after_attempt(3)))
    assert "ignored" not in repr(plain) and "retry_error_callback" not in plain.description
    hooked = from_tenacity(
        tenacity.Retrying(
            stop=tenacity.stop_after_attempt(3), retry_error_callback=lambda state: "fallback", after=lambda state: None
        )
    )
    assert "ignored=('after', 'retry_error_callback')" in repr(hooked)
    assert "gives up as failed, whatever the callback would have returned" in hooked.description


# -- what tenacity does with odd numbers (issue 28) -------------------------------------------------------------------


def drive_with_its_own_sleep(retrying, script, monkeypatch, run_async: bool = False):
    """tenacity's loop with the sleep its class really uses (time.sleep, asyncio.sleep) on the fake clock for the
    attempts: (attempt start times, outcome), the outcome naming the exception the sleep raised, if any.

    Used only with waits those sleeps refuse or return from at once, so nothing really sleeps."""
    clock = FakeClock(ARRIVAL)
    monkeypatch.setattr(sys.modules["tenacity"], "time", clock)
    exceptions = build_exception_map()
    starts: list[float] = []

    def attempt():
        starts.append(clock.now)
        duration, observation = script[len(starts) - 1]
        clock.now = clock.now + duration
        if observation is not None:
            raise exceptions.exception_for(observation)
        return "done"

    async def main():
        async for trial in retrying:
            with trial:
                return attempt()

    try:
        outcome = asyncio.run(main()) if run_async else retrying(attempt)
    except tenacity.RetryError:
        outcome = "gave up (stopped)"
    except (ValueError, OverflowError) as exc:  # what the sleep raised (the script's failures are other types)
        outcome = f"raised {type(exc).__name__}"
    return starts, outcome


@pytest.mark.parametrize(
    "wait, stop, outcome",
    [
        (t.wait_fixed(-10), t.stop_after_attempt(3), "raised ValueError"),
        (t.wait_fixed(float("nan")), t.stop_after_attempt(3), "raised ValueError"),
        (t.wait_fixed(float("inf")), t.stop_after_attempt(3), "raised OverflowError"),
        (t.wait_fixed(1e300), t.stop_after_attempt(3), "raised OverflowError"),
        (t.wait_random(-5, -1), t.stop_after_attempt(3), "raised ValueError"),
        (t.wait_fixed(-10), t.stop_after_attempt(1), "gave up (stopped)"),  # stopped before it sleeps: no error
    ],
    ids=["negative", "nan", "inf", "huge", "negative-random", "stopped-first"],
)
def test_a_wait_time_sleep_refuses_fails_as_tenacity_fails(wait, stop, outcome, monkeypatch):
    """Retrying sleeps with time.sleep, which raises on a negative, NaN or out-of-range length: tenacity's call
    raises at the first retry, and the translated policy raises the same exception there (the task then fails)."""
    retrying = tenacity.Retrying(wait=wait, stop=stop)
    policy = from_tenacity(retrying)
    starts, theirs = drive_with_its_own_sleep(retrying, FLAKY, monkeypatch)
    ours = drive_policy(policy, FLAKY, 1)
    assert theirs == outcome and (ours[0], ours[2]) == (starts, theirs)


@pytest.mark.parametrize("wait", [t.wait_fixed(-10), t.wait_fixed(float("nan"))], ids=["negative", "nan"])
def test_async_retrying_retries_at_once_where_asyncio_sleep_returns(wait, monkeypatch):
    """AsyncRetrying sleeps with asyncio.sleep, which returns at once for a negative or NaN length: tenacity retries
    at once, and so does the translated policy (it records the sleep it models)."""
    retrying = tenacity.AsyncRetrying(wait=wait, stop=t.stop_after_attempt(4))
    policy = from_tenacity(retrying)
    assert "sleep='asyncio.sleep'" in repr(policy)
    starts, outcome = drive_with_its_own_sleep(retrying, FLAKY, monkeypatch, run_async=True)
    ours = drive_policy(policy, FLAKY, 1)
    assert (ours[0], ours[2]) == (starts, outcome) and ours[1] == [0.0, 0.0, 0.0]


def test_a_fractional_attempt_limit_makes_as_many_attempts_as_tenacity(monkeypatch):
    """stop_after_attempt(2.9): tenacity stops once attempt_number >= 2.9, after 3 attempts; so does the policy."""
    retrying = tenacity.Retrying(stop=t.stop_after_attempt(2.9), wait=t.wait_fixed(1))
    ours = drive_policy(from_tenacity(retrying), FLAKY, 1)
    assert ours == drive_tenacity(retrying, FLAKY, 1, monkeypatch)
    assert len(ours[0]) == 3 and ours[2] == "gave up (stopped)"


def test_chains_of_thousands_of_terms_fail_in_tenacity_and_are_refused(monkeypatch):
    """2,001 waits joined by + nest 2,000 deep: tenacity's own call fails (RecursionError at the first retry), so
    the translation refuses it (it was exit 3); the same 2,001 waits built flat wait what tenacity waits."""
    from fleetchaos.policies.tenacity_adapter import MAX_NESTING, RetryTranslationError

    terms = [t.wait_random(0, 0.01)] + [
        t.wait_fixed(0.001 * (i % 7)) if i % 3 else t.wait_random(0, 0.002) for i in range(2000)
    ]
    nested = terms[0]
    for term in terms[1:]:
        nested = nested + term
    with pytest.raises(RecursionError):
        tenacity.Retrying(wait=nested, stop=t.stop_after_attempt(3), sleep=lambda s: None)(lambda: 1 / 0)
    with pytest.raises(RetryTranslationError, match=f"nest more than {MAX_NESTING} levels deep"):
        from_tenacity(tenacity.Retrying(wait=nested))
    flat = tenacity.Retrying(wait=t.wait_combine(*terms), stop=t.stop_any(*[t.stop_after_attempt(6)] * 2000))
    ours = drive_policy(from_tenacity(flat), FLAKY, 5)
    assert ours == drive_tenacity(flat, FLAKY, 5, monkeypatch)
    assert len(ours[1]) == 5


@pytest.mark.parametrize("override", ["__call__", "iter", "_run_wait", "__iter__"])
def test_a_subclass_with_its_own_loop_is_refused(override):
    """A Retrying subclass overriding part of tenacity's loop cannot be translated as its base: refused naming it;
    a subclass that only adds attributes is translated."""
    from fleetchaos.policies.tenacity_adapter import RetryTranslationError

    own = type("OwnLoop", (tenacity.Retrying,), {override: lambda self, *a, **k: None})
    with pytest.raises(RetryTranslationError, match=f"overrides .*OwnLoop.{override} of tenacity's retrying loop"):
        from_tenacity(own(stop=t.stop_after_attempt(3)))

    def init(self, **kwargs):
        tenacity.Retrying.__init__(self, **kwargs)
        self.team = "payments"

    plain = type("Labelled", (tenacity.Retrying,), {"__init__": init})
    assert "stop_after_attempt(3)" in repr(from_tenacity(plain(stop=t.stop_after_attempt(3))))


@pytest.mark.parametrize("number", [float("inf"), float("nan"), "3"], ids=["inf", "nan", "text"])
def test_an_attempt_limit_that_is_not_a_finite_number_is_refused(number):
    """stop_after_attempt(inf), (nan) (never stops) and ('3') (TypeError at the first failure): refused by name."""
    from fleetchaos.policies.tenacity_adapter import RetryTranslationError

    with pytest.raises(RetryTranslationError, match=r"cannot translate stop=stop_after_attempt\("):
        from_tenacity(tenacity.Retrying(stop=t.stop_after_attempt(number)))
