"""Named presets and the shared controls, as pure decision functions (no SimPy)."""

from __future__ import annotations

import random

import pytest

from fleetchaos.policies import (
    POLICIES,
    AdaptiveThrottle,
    AwsRetryQuota,
    BlindRetry,
    CircuitBreaker,
    EnvoyRetryBudget,
    GrpcRetryThrottle,
    get_policy,
)
from fleetchaos.policies.controls import Controlled, ControlState
from fleetchaos.policies.presets import (
    BACKOFF_VARIANTS,
    PRESETS,
    CategoryTreeWithRemediation,
    Coordinator,
    EscalateAll,
    LayeredBackoff,
    RecoveryMatrix,
    tool_of,
)
from fleetchaos.sim.envelope import AgentToolError, PartialSuccess
from fleetchaos.sim.envelopes import FailureTypeError, SubagentResult
from fleetchaos.sim.observation import (
    DeadLetter,
    Escalate,
    GiveUp,
    Observation,
    RefreshCredentials,
    Remediate,
    Reroute,
    Retry,
    Rollback,
    TaskHistory,
    UseAlternative,
)
from fleetchaos.sim.transport import TRANSPORT_KINDS, TransportRetry


def hist(retries=0, streak=1, remediations=0, refreshes=0, seed=7, shared=None, now=0.0, worker=0, load=(0, 0)):
    return TaskHistory(
        task_id=5,
        attempts=retries + 1,
        retries=retries,
        same_failure_streak=streak,
        remediations=remediations,
        refreshes=refreshes,
        rng=random.Random(seed),
        shared=shared,
        now_s=now,
        worker=worker,
        dispatches_in_flight=load[0],
        retries_in_flight=load[1],
    )


def ate(
    category="transient", code="NETWORK_UNREACHABLE", recoverable=True, retry_after_ms=None, partial=None, tool="search"
):
    return Observation(
        False,
        "failed",
        0,
        AgentToolError(
            error_code=code,
            category=category,
            recoverable=recoverable,
            suggested_action="x",
            retry_after_ms=retry_after_ms,
            partial_success=partial,
            context={"tool": tool},
        ),
    )


GENERIC = Observation(False, "failed", 0)
OK = Observation(True, "ok", 0)
PARTIAL = PartialSuccess(completed_steps=("0:plan",), artifacts=("1:search#2",))


def test_every_preset_is_registered_builds_and_has_its_name():
    for name, build in PRESETS.items():
        assert POLICIES[name] is build
        policy = get_policy(name)
        assert policy.name == name
        assert callable(policy.decide)


# -- backoff variants ----------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(BACKOFF_VARIANTS))
def test_backoff_variants_retry_anything_until_their_stop(name):
    policy = get_policy(name)
    action = policy.decide(GENERIC, hist(retries=3))
    assert isinstance(action, Retry) and 0.0 <= action.delay_s <= 600.0  # the variants' cap
    assert isinstance(policy.decide(GENERIC, hist(retries=59)), GiveUp)  # the 60th dispatch was the last


def test_backoff_variant_waits_follow_their_formulas():
    h = hist(retries=3)
    assert get_policy("retry-fixed").decide(GENERIC, h).delay_s == 2.0
    assert get_policy("retry-immediate").decide(GENERIC, h).delay_s == 0.0
    assert get_policy("backoff-none").decide(GENERIC, hist(retries=3)).delay_s == 80.0  # 10 * 2**3
    assert get_policy("backoff-none").decide(GENERIC, hist(retries=9)).delay_s == 600.0  # capped
    for seed in range(50):
        full = get_policy("backoff-full-jitter").decide(GENERIC, hist(retries=3, seed=seed)).delay_s
        equal = get_policy("backoff-equal-jitter").decide(GENERIC, hist(retries=3, seed=seed)).delay_s
        assert 0.0 <= full < 80.0 and 40.0 <= equal < 80.0
    honoured = get_policy("retry-after").decide(ate(retry_after_ms=30_000), hist(retries=0)).delay_s
    assert honoured >= 30.0


# -- category tree with remediation and an escalation ladder -------------------------------


def test_category_tree_climbs_retry_remediate_page():
    tree = CategoryTreeWithRemediation()
    assert isinstance(tree.decide(ate(), hist()), Retry)
    auth = ate("auth", "CREDENTIALS_EXPIRED")
    assert tree.decide(auth, hist()) == Remediate(0, ())
    assert isinstance(tree.decide(auth, hist(retries=1, remediations=1)), Escalate)  # remediation did not help
    assert tree.decide(ate("resource", "DISK_FULL", partial=PARTIAL), hist()) == Remediate(1, (2,))
    assert tree.decide(ate("resource", "WORKER_LOST"), hist()) == Reroute(0.0, 0, ())
    assert tree.decide(ate("dependency", "DEPENDENCY_MISSING"), hist()) == Remediate(0, ())
    assert tree.decide(ate("dependency", "NOT_FOUND"), hist()) == UseAlternative(0.0, 0, ())


def test_category_tree_makes_repeated_recoverable_failures_fatal_and_caps_retries():
    tree = CategoryTreeWithRemediation(max_retries=4, max_same=3)
    assert isinstance(tree.decide(ate(), hist(streak=3)), Escalate)
    assert isinstance(tree.decide(ate(), hist(retries=4)), Escalate)
    assert isinstance(tree.decide(ate("validation", "VALIDATION_FAILED", recoverable=False), hist()), Escalate)
    assert isinstance(tree.decide(ate("fatal", "X", recoverable=False), hist()), Escalate)


def test_category_tree_retry_after_is_honoured_plus_jitter():
    delay = (
        CategoryTreeWithRemediation(base_s=2.0).decide(ate(code="RATE_LIMITED", retry_after_ms=5000), hist()).delay_s
    )
    assert 5.0 <= delay < 7.0


def test_category_tree_unknown_branch_without_an_envelope():
    tree = CategoryTreeWithRemediation(unknown_retries=1)
    assert isinstance(tree.decide(GENERIC, hist(retries=0)), Retry)
    assert isinstance(tree.decide(GENERIC, hist(retries=1)), Escalate)


# -- coordinator ---------------------------------------------------------------------------


def test_coordinator_retries_transient_once_then_reports_what_is_missing():
    c = Coordinator()
    transient = Observation(
        False,
        "failed",
        0,
        SubagentResult(
            status="failed", task_id="t", error_category="transient", is_retryable=True, partial_data=("0:plan",)
        ),
    )
    assert c.decide(transient, hist(retries=0)) == Retry(c.decide(transient, hist(retries=0)).delay_s, 1, ())
    assert c.decide(transient, hist(retries=1)) == GiveUp("partial")  # it has usable partial data
    assert c.decide(ate("validation", "VALIDATION_FAILED", recoverable=False), hist()) == GiveUp("failed")
    assert c.decide(GENERIC, hist()) == GiveUp("failed")  # unclassified: not transient, nothing shown


def test_coordinator_never_pages_or_claims_success():
    c = Coordinator()
    for observation in (GENERIC, ate(), ate("auth", "CREDENTIALS_EXPIRED"), ate("fatal", "X", recoverable=False)):
        for retries in range(3):
            assert not isinstance(c.decide(observation, hist(retries=retries)), (Escalate, Remediate))


# -- recovery matrix ----------------------------------------------------------------------


def test_matrix_rows():
    m = RecoveryMatrix()
    assert isinstance(m.decide(ate(), hist()), Retry)
    assert m.decide(ate(tool="git_push"), hist()) == Escalate(
        "NETWORK_UNREACHABLE on high-risk tool git_push: needs human approval"
    )
    assert m.decide(ate("auth", "CREDENTIALS_EXPIRED", recoverable=False), hist()) == RefreshCredentials(0, ())
    assert m.decide(ate("resource", "WORKER_LOST"), hist()) == Reroute(0.0, 0, ())
    assert m.decide(ate("dependency", "NOT_FOUND"), hist()) == UseAlternative(0.0, 0, ())
    assert isinstance(m.decide(ate("validation", "VALIDATION_FAILED", recoverable=False), hist(retries=2)), DeadLetter)
    assert m.idempotency_keys and m.guardrail


def test_matrix_retry_waits_at_least_the_retry_after():
    delay = RecoveryMatrix().decide(ate(code="RATE_LIMITED", retry_after_ms=45_000), hist()).delay_s
    assert delay >= 45.0


@pytest.mark.parametrize(
    "mode, expected",
    [
        ("best_effort", GiveUp("partial")),
        ("fail_fast", GiveUp("failed")),
        ("all_or_nothing", Rollback("BATCH_ITEM_FAILED: all-or-nothing batch")),
    ],
)
def test_matrix_batch_modes_once_retries_are_spent(mode, expected):
    batch = ate(code="BATCH_ITEM_FAILED", partial=PARTIAL)
    assert RecoveryMatrix(batch_mode=mode, max_retries=3).decide(batch, hist(retries=3)) == expected


def test_matrix_dead_letters_a_non_batch_task_once_retries_are_spent():
    assert isinstance(RecoveryMatrix(max_retries=2).decide(ate(), hist(retries=2)), DeadLetter)


def test_tool_of_reads_context_or_metadata():
    assert tool_of(ate(tool="crm_write")) == "crm_write"
    assert tool_of(GENERIC) is None


# -- the rest -----------------------------------------------------------------------------


def test_escalate_all_and_layered_backoff():
    assert isinstance(EscalateAll().decide(GENERIC, hist()), Escalate)
    layered = LayeredBackoff(max_retries=2)
    assert isinstance(layered.decide(GENERIC, hist(retries=1)), Retry)
    assert layered.decide(GENERIC, hist(retries=2)) == GiveUp()
    assert layered.transport == TransportRetry()


@pytest.mark.parametrize(
    "jitter, n, lo, hi",
    [
        ("none", 0, 0.5, 0.5),
        ("none", 3, 4.0, 4.0),
        ("none", 9, 8.0, 8.0),
        ("full", 2, 0.0, 2.0),
        ("equal", 2, 1.0, 2.0),
    ],
)
def test_transport_wait_formulas(jitter, n, lo, hi):
    t = TransportRetry(base_s=0.5, cap_s=8.0, jitter=jitter)
    for u in (0.0, 0.25, 0.999999):
        assert lo <= t.wait_s(n, u) <= hi


def test_transport_rejects_application_errors_and_bad_values():
    with pytest.raises(ValueError, match="not transport-level"):
        TransportRetry(on=frozenset({"validation_error"}))
    with pytest.raises(ValueError):
        TransportRetry(attempts=0)
    assert "expired_key" not in TRANSPORT_KINDS


# -- Controlled: the classic controls kept in shared state -----------------------------------


def _controlled(**kw) -> tuple[Controlled, ControlState]:
    policy = Controlled(BlindRetry(max_retries=100), **kw)
    return policy, policy.new_shared_state()


def test_aws_quota_pays_per_retry_and_refunds_on_success():
    """500 - 5 - 10 (after a timeout) = 485; the task's success refunds its last payment (10): 495."""
    policy, shared = _controlled(budget=AwsRetryQuota())
    assert isinstance(policy.decide(ate(), hist(shared=shared)), Retry)
    assert shared.budget.available == 495
    timeout = ate(code="TOOL_TIMEOUT")
    assert isinstance(policy.decide(timeout, hist(retries=1, shared=shared)), Retry)
    assert shared.budget.available == 485
    policy.observe(OK, shared, 10.0, 5)
    assert shared.budget.available == 495
    policy.observe(OK, shared, 11.0, 6)  # a first attempt's success refunds 1
    assert shared.budget.available == 496


def test_aws_quota_refusal_becomes_give_up_or_escalate():
    policy, shared = _controlled(budget=AwsRetryQuota(initial=7, retry_cost=5))
    assert isinstance(policy.decide(ate(), hist(shared=shared)), Retry)  # 7 -> 2
    assert policy.decide(ate(), hist(retries=1, shared=shared)) == GiveUp()
    assert shared.refused == 1
    escalating = Controlled(BlindRetry(), budget=AwsRetryQuota(initial=0), when_refused="escalate")
    assert escalating.decide(ate(), hist(shared=escalating.new_shared_state())) == Escalate("retry budget exhausted")


def test_grpc_throttle_counts_outcomes_and_stops_retries_at_half():
    """max 10 tokens: 5 failures leave 5, which is not above half, so the next retry is refused."""
    policy, shared = _controlled(budget=GrpcRetryThrottle(max_tokens=10, token_ratio=0.5))
    for _ in range(4):
        policy.observe(GENERIC, shared, 0.0, 1)
    assert shared.budget.milli == 6000 and isinstance(policy.decide(ate(), hist(shared=shared)), Retry)
    policy.observe(GENERIC, shared, 0.0, 1)
    assert policy.decide(ate(), hist(shared=shared)) == GiveUp()
    policy.observe(OK, shared, 0.0, 1)  # +0.5 -> 5.5 > 5
    assert isinstance(policy.decide(ate(), hist(shared=shared)), Retry)


def test_envoy_budget_reads_the_orchestrators_load():
    policy, shared = _controlled(budget=EnvoyRetryBudget(budget_percent=20, min_retry_concurrency=3))
    assert isinstance(policy.decide(ate(), hist(shared=shared, load=(10, 2))), Retry)  # limit max(3, 2) = 3
    assert policy.decide(ate(), hist(shared=shared, load=(10, 3))) == GiveUp()
    assert isinstance(policy.decide(ate(), hist(shared=shared, load=(25, 4))), Retry)  # limit 5


def test_adaptive_throttle_refuses_with_the_sre_probability():
    """10 requests, 0 accepted (all rate limited) -> p = 10/11: almost every dispatch, first tries included, is refused."""
    policy, shared = _controlled(budget=AdaptiveThrottle(k=2.0))
    limited = ate(code="RATE_LIMITED")
    for _ in range(10):
        policy.observe(limited, shared, 5.0, 1)
    assert AdaptiveThrottle().reject_probability(shared.budget, 5.0) == pytest.approx(10 / 11)
    # each trial on a copy of that state: a refused request is itself counted as a request
    outcomes = [
        type(policy.before_dispatch(ControlState(budget=shared.budget), 5.0, first, (s + 0.5) / 400))
        for s in range(400)
        for first in (True, False)
    ]
    assert outcomes.count(GiveUp) == 2 * 364  # draws below 10/11 are refused, first tries and retries alike
    assert isinstance(policy.decide(limited, hist(shared=shared, now=5.0, seed=1)), Retry)  # decide no longer judges
    policy.before_dispatch(shared, 5.0, True, 0.0)
    assert shared.budget.totals() == (11, 0)  # counted once more when refused
    policy.before_dispatch(shared, 5.0, True, 0.999)
    assert shared.budget.totals() == (11, 0)  # sent: counted when its dispatch is observed
    accepted, fresh = _controlled(budget=AdaptiveThrottle(k=2.0))
    for _ in range(10):
        accepted.observe(OK, fresh, 5.0, 1)
    assert all(accepted.before_dispatch(fresh, 5.0, True, s / 50) is None for s in range(50))
    assert all(isinstance(accepted.decide(ate(), hist(shared=fresh, now=5.0, seed=s)), Retry) for s in range(50))


@pytest.mark.parametrize("kind", ["rate_limit", "quota_exhausted"])
def test_adaptive_throttle_counts_the_contracts_overload_codes_as_refused(kind):
    """The codes come from the error contract: a 429 and an exhausted quota are requests, not accepts."""
    from fleetchaos.sim.truth import FAILURES

    policy, shared = _controlled(budget=AdaptiveThrottle())
    policy.observe(ate(code=FAILURES[kind].error_code), shared, 1.0, 1)
    policy.observe(ate(code=FAILURES["network_blip"].error_code), shared, 1.0, 2)
    assert shared.budget.totals() == (2, 1)


@pytest.mark.parametrize(
    "observation, counts_as_accepted",
    [
        (Observation(False, "failed", 0), False),  # a bare "failed" says nothing: not known to be accepted
        (Observation(False, "failed", 0, text="HTTP 429 RateLimitError"), False),
        (Observation(False, "failed", 0, text="HTTP 503 InternalServerError"), False),
        (Observation(False, "failed", 0, text="HTTP 504 InternalServerError"), False),  # no answer in time
        (Observation(False, "failed", 0, text="HTTP 422 UnprocessableEntityError"), True),  # it answered: bad input
        (Observation(False, "failed", 0, text="Error: ETIMEDOUT search request failed"), False),  # no status to read
        (ate(code="TOOL_TIMEOUT"), False),
        (ate(code="DISK_FULL"), True),
        (Observation(True, "ok", 0), True),
    ],
)
def test_adaptive_throttle_counts_every_request_that_was_not_accepted(observation, counts_as_accepted):
    """Three dispatches observed at t=0, each the same outcome: requests 3, accepts 3 or 0, so the SRE probability
    max(0, (3 - 2 * accepts) / (3 + 1)) is 0 when the backend accepted them and 3/4 when it did not."""
    policy, shared = _controlled(budget=AdaptiveThrottle(k=2.0))
    for task in range(3):
        policy.observe(observation, shared, 0.0, task)
    assert shared.budget.totals() == (3, 3 if counts_as_accepted else 0)
    p = AdaptiveThrottle().reject_probability(shared.budget, 0.0)
    assert p == (0.0 if counts_as_accepted else 0.75)
    assert policy.before_dispatch(ControlState(budget=shared.budget), 0.0, True, 0.74) == (
        None if counts_as_accepted else GiveUp()
    )
    assert policy.before_dispatch(ControlState(budget=shared.budget), 0.0, True, 0.76) is None


@pytest.mark.parametrize(
    "observation, counts_as_accepted",
    [
        (ate(code="TOOL_TIMEOUT"), True),
        (Observation(False, "failed", 0, text="HTTP 504 InternalServerError"), True),
        (Observation(False, "failed", 0, text="HTTP 503 InternalServerError"), False),  # still a refusal
        (ate(code="RATE_LIMITED"), False),
        (Observation(False, "failed", 0), False),  # says nothing: still not known to be accepted
    ],
)
def test_a_throttle_told_timeouts_are_accepted_counts_only_them_as_accepts(observation, counts_as_accepted):
    """timeouts_accepted changes the timeouts' count alone: refusals and silent failures are still not accepts."""
    policy, shared = _controlled(budget=AdaptiveThrottle(timeouts_accepted=True))
    for task in range(3):
        policy.observe(observation, shared, 0.0, task)
    assert shared.budget.totals() == (3, 3 if counts_as_accepted else 0)


def test_breaker_opens_after_failures_and_diverts_dispatches():
    policy, shared = _controlled(breaker=CircuitBreaker(failure_threshold=2, cooldown_s=30.0))
    failed_on_0 = Observation(False, "failed", 0)
    policy.observe(failed_on_0, shared, 1.0, 1)
    assert policy.choose_worker(0, 3, shared, 1.0) == 0
    policy.observe(failed_on_0, shared, 2.0, 1)
    assert policy.choose_worker(0, 3, shared, 2.0) == 1  # open: the next worker in rotation
    assert shared.diverted == 1
    assert policy.decide(ate(), hist(shared=shared, worker=0)) == Reroute(0.0, 0, ())
    assert policy.choose_worker(0, 3, shared, 32.0) == 0  # cool-down over: a half-open trial goes through


def test_controlled_passes_driver_attributes_through_and_records_its_recipe():
    wrapped = Controlled(RecoveryMatrix(), budget=AwsRetryQuota(), name="m")
    assert wrapped.guardrail and wrapped.idempotency_keys and wrapped.transport is None
    assert repr(wrapped).startswith("Controlled(name='m', policy=RecoveryMatrix(")
    assert "budget=AwsRetryQuota(initial=500" in repr(wrapped)


def test_controlled_leaves_non_retry_actions_alone_and_works_without_shared_state():
    policy = Controlled(EscalateAll(), budget=AwsRetryQuota(initial=0))
    assert isinstance(policy.decide(ate(), hist(shared=policy.new_shared_state())), Escalate)
    assert isinstance(Controlled(BlindRetry(), budget=AwsRetryQuota(initial=0)).decide(ate(), hist(shared=None)), Retry)


def test_failure_type_timeouts_pay_the_timeout_cost():
    policy, shared = _controlled(budget=AwsRetryQuota())
    policy.decide(Observation(False, "failed", 0, FailureTypeError(failure_type="timeout")), hist(shared=shared))
    assert shared.budget.available == 490


def test_results_record_each_policys_recipe_without_memory_addresses():
    """A result records the policy's repr; a class without one is named, never shown with its address."""
    from fleetchaos.runs.runner import policy_recipe

    class Plain:
        name = "plain"

    class BadRepr:
        def __repr__(self):
            raise ValueError("no")

    assert policy_recipe(Plain()).endswith("Plain()") and "0x" not in policy_recipe(Plain())
    assert (
        policy_recipe(BadRepr())
        == "test_results_record_each_policys_recipe_without_memory_addresses.<locals>.BadRepr (repr failed: ValueError)"
    )
    assert policy_recipe(get_policy("backoff-full-jitter")).startswith(
        "Policy(name='backoff-full-jitter', retry=retry_always()"
    )
