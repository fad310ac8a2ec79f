"""The built-in recovery policies as pure functions of (Observation, TaskHistory)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from fleetchaos.policies import (
    POLICIES,
    Backoff,
    BlindRetry,
    PolicyLookupError,
    StructuredDecisionTree,
    full_jitter,
    get_policy,
    resume_point,
)
from fleetchaos.sim.envelope import AgentToolError, PartialSuccess
from fleetchaos.sim.observation import (
    Escalate,
    GiveUp,
    Observation,
    RefreshCredentials,
    Reroute,
    Retry,
    TaskHistory,
)

HERE = Path(__file__).resolve().parent

# ---------------------------------------------------------------------------------------
# builders


def history(retries: int = 0, streak: int = 0, seed: int = 1234) -> TaskHistory:
    """A hand-built history with an explicitly seeded RNG."""
    return TaskHistory(
        task_id=7,
        attempts=retries + 1,
        retries=retries,
        same_failure_streak=streak,
        rng=random.Random(seed),
    )


GENERIC_FAILED = Observation(ok=False, status="failed", worker=2)

# A failure in step 2 ("search", a fan-out step) after steps 0 and 1 completed and items
# 1 and 3 of step 2 succeeded.
PARTIAL = PartialSuccess(
    completed_steps=("0:plan", "1:edit"),
    artifacts=("2:search#3", "2:search#1"),
)


def envelope(
    category: str = "transient",
    code: str = "NETWORK_UNREACHABLE",
    recoverable: bool = True,
    partial: PartialSuccess | None = PARTIAL,
    retry_after_ms: int | None = None,
) -> AgentToolError:
    return AgentToolError(
        error_code=code,
        category=category,
        recoverable=recoverable,
        suggested_action="whatever",
        partial_success=partial,
        retry_after_ms=retry_after_ms,
    )


def structured_obs(**kw) -> Observation:
    return Observation(ok=False, status="failed", worker=2, envelope=envelope(**kw))


# ---------------------------------------------------------------------------------------
# resume_point


def test_resume_point_after_last_completed_step_with_its_artifacts():
    """resume_point resumes after the highest completed step, with that step's done items sorted."""
    # completed 0 and 1 -> resume at 2; artifacts "2:search#3", "2:search#1" -> (1, 3)
    assert resume_point(envelope(partial=PARTIAL)) == (2, (1, 3))


def test_resume_point_without_partial_success_restarts():
    """resume_point with no partial_success restarts from step 0 with nothing done."""
    assert resume_point(envelope(partial=None)) == (0, ())


def test_resume_point_empty_partial_success_restarts():
    """resume_point with an empty partial_success restarts from step 0."""
    assert resume_point(envelope(partial=PartialSuccess())) == (0, ())


def test_resume_point_uses_highest_step_not_last_listed():
    """resume_point takes the maximum completed step index, whatever the listing order."""
    partial = PartialSuccess(completed_steps=("3:c", "0:a", "1:b"))
    assert resume_point(envelope(partial=partial)) == (4, ())


def test_resume_point_ignores_artifacts_of_other_steps_and_plain_refs():
    """resume_point keeps only item refs of the resume step; other steps' items and step refs are dropped."""
    partial = PartialSuccess(
        completed_steps=("0:fetch",),
        # resume step is 1: keep items 0 and 4; drop item of step 0, of step 2, and a plain ref
        artifacts=("1:update#4", "0:fetch#2", "2:post#1", "1:update", "1:update#0"),
    )
    assert resume_point(envelope(partial=partial)) == (1, (0, 4))


def test_resume_point_items_of_first_step_without_completed_steps():
    """resume_point with only artifacts of step 0 resumes at step 0 skipping those items."""
    partial = PartialSuccess(artifacts=("0:search#2", "0:search#0"))
    assert resume_point(envelope(partial=partial)) == (0, (0, 2))


# ---------------------------------------------------------------------------------------
# BlindRetry


@pytest.mark.parametrize("retries", [0, 1, 2])
def test_blind_retry_retries_immediately_from_start(retries):
    """BlindRetry retries at once, from step 0, while retries < max_retries (3)."""
    action = BlindRetry().decide(GENERIC_FAILED, history(retries))
    assert action == Retry(delay_s=0.0, resume_from=0, done_items=())


@pytest.mark.parametrize("retries", [3, 4, 10])
def test_blind_retry_gives_up_after_max_retries(retries):
    """BlindRetry gives up (claim 'failed') once retries reach max_retries."""
    action = BlindRetry().decide(GENERIC_FAILED, history(retries))
    assert action == GiveUp()
    assert action.claim == "failed"


def test_blind_retry_custom_max_retries():
    """BlindRetry(max_retries=1) retries once and then gives up."""
    policy = BlindRetry(max_retries=1)
    assert isinstance(policy.decide(GENERIC_FAILED, history(0)), Retry)
    assert isinstance(policy.decide(GENERIC_FAILED, history(1)), GiveUp)


def test_blind_retry_ignores_structured_partial_success():
    """BlindRetry restarts from step 0 even when the envelope reveals partial success."""
    obs = structured_obs(category="resource", code="DISK_FULL")
    assert BlindRetry().decide(obs, history(0)) == Retry()


def test_blind_retry_does_not_touch_history_rng():
    """BlindRetry draws no random numbers (the history RNG state is unchanged)."""
    h = history(0, seed=5)
    before = h.rng.getstate()
    BlindRetry().decide(GENERIC_FAILED, h)
    assert h.rng.getstate() == before


# ---------------------------------------------------------------------------------------
# Backoff


@pytest.mark.parametrize(
    "retries, bound",
    [
        (0, 60.0),  # min(1800, 60 * 2**0) = 60
        (1, 120.0),  # min(1800, 60 * 2**1) = 120
        (5, 1800.0),  # min(1800, 60 * 2**5 = 1920) = 1800: the cap
    ],
)
def test_backoff_full_jitter_delay_within_bound(retries, bound):
    """Backoff delay lies in [0, min(cap, base*2**retries)) and uses most of that range."""
    policy = Backoff(max_retries=10)
    delays = []
    for seed in range(300):
        action = policy.decide(GENERIC_FAILED, history(retries, seed=seed))
        assert isinstance(action, Retry)
        assert action.resume_from == 0 and action.done_items == ()
        delays.append(action.delay_s)
    assert all(0.0 <= d < bound for d in delays)
    # full jitter, not a fixed or halved delay: 300 uniform draws reach the top quarter
    assert max(delays) > 0.75 * bound
    assert min(delays) < 0.25 * bound


def test_backoff_delay_capped():
    """Backoff delay is capped at cap_s once base*2**retries exceeds it."""
    # base 2, retries 8 -> 512 uncapped; cap 10 -> delays in [0, 10)
    policy = Backoff(max_retries=100, base_s=2.0, cap_s=10.0)
    delays = [policy.decide(GENERIC_FAILED, history(8, seed=s)).delay_s for s in range(300)]
    assert all(0.0 <= d < 10.0 for d in delays)
    assert max(delays) > 7.5


def test_backoff_reproducible_for_same_seed():
    """Backoff returns the same delay for the same RNG seed and inputs."""
    a = Backoff().decide(GENERIC_FAILED, history(1, seed=99))
    b = Backoff().decide(GENERIC_FAILED, history(1, seed=99))
    assert a == b
    # the delay is exactly Random(99).uniform(0, 120): jitter comes only from history.rng
    assert a.delay_s == random.Random(99).uniform(0.0, 120.0)


def test_backoff_different_seeds_differ():
    """Backoff delays for different RNG seeds are not all equal (jitter is random)."""
    delays = {Backoff().decide(GENERIC_FAILED, history(1, seed=s)).delay_s for s in range(10)}
    assert len(delays) == 10


@pytest.mark.parametrize("retries", [3, 7])
def test_backoff_gives_up_after_max_retries(retries):
    """Backoff gives up with claim 'failed' once retries reach max_retries (3)."""
    assert Backoff().decide(GENERIC_FAILED, history(retries)) == GiveUp("failed")


def test_full_jitter_bound_formula():
    """full_jitter draws uniform(0, min(cap, base*2**retries)) from history.rng."""
    # base 3, retries 2 -> 12, cap 100 -> uniform(0, 12)
    assert full_jitter(history(2, seed=3), 3.0, 100.0) == random.Random(3).uniform(0.0, 12.0)
    # base 3, retries 6 -> 192, cap 50 -> uniform(0, 50)
    assert full_jitter(history(6, seed=3), 3.0, 50.0) == random.Random(3).uniform(0.0, 50.0)


# ---------------------------------------------------------------------------------------
# StructuredDecisionTree: categories


def test_structured_transient_with_retry_after_waits_at_least_hint():
    """A transient error with retry_after_ms waits the hint plus jitter in [0, base_s), resuming."""
    tree = StructuredDecisionTree()
    for seed in range(200):
        # retries 4: the exponential bound would be 32 s; the hint (1.5 s) must be used instead
        obs = structured_obs(code="RATE_LIMITED", retry_after_ms=1500)
        action = tree.decide(obs, history(retries=4, seed=seed))
        assert isinstance(action, Retry)
        assert 1.5 <= action.delay_s < 1.5 + 2.0
        assert action.resume_from == 2
        assert action.done_items == (1, 3)


def test_structured_transient_retry_after_exact_delay():
    """The retry-after delay is hint/1000 + history.rng.uniform(0, base_s)."""
    obs = structured_obs(code="RATE_LIMITED", retry_after_ms=250)
    action = StructuredDecisionTree(base_s=1.0).decide(obs, history(seed=11))
    assert action == Retry(0.25 + random.Random(11).uniform(0.0, 1.0), 2, (1, 3))


def test_structured_transient_zero_retry_after_still_jittered():
    """A retry_after_ms of 0 is a hint (not absent): delay is jitter in [0, base_s)."""
    obs = structured_obs(code="RATE_LIMITED", retry_after_ms=0)
    action = StructuredDecisionTree().decide(obs, history(retries=3, seed=8))
    # with retries=3 an exponential backoff would draw from [0, 16); the hint branch from [0, 2)
    assert action.delay_s == random.Random(8).uniform(0.0, 2.0)


def test_structured_transient_without_hint_backs_off():
    """A transient error without a hint backs off with full jitter and resumes from partial success."""
    tree = StructuredDecisionTree()
    delays = []
    for seed in range(300):
        action = tree.decide(structured_obs(), history(retries=2, seed=seed))
        assert isinstance(action, Retry)
        assert (action.resume_from, action.done_items) == (2, (1, 3))
        delays.append(action.delay_s)
    # min(120, 2 * 2**2) = 8
    assert all(0.0 <= d < 8.0 for d in delays)
    assert max(delays) > 6.0


def test_structured_transient_without_partial_restarts():
    """A transient error with no partial_success retries from step 0."""
    action = StructuredDecisionTree().decide(structured_obs(partial=None), history())
    assert isinstance(action, Retry)
    assert (action.resume_from, action.done_items) == (0, ())


def test_structured_resource_reroutes_with_resume():
    """A resource error reroutes at once to another worker, resuming from partial success."""
    obs = structured_obs(category="resource", code="DISK_FULL")
    assert StructuredDecisionTree().decide(obs, history()) == Reroute(0.0, 2, (1, 3))


def test_structured_auth_refreshes_with_resume():
    """An auth error refreshes credentials, then resumes from partial success."""
    obs = structured_obs(category="auth", code="AUTH_EXPIRED")
    assert StructuredDecisionTree().decide(obs, history()) == RefreshCredentials(2, (1, 3))


@pytest.mark.parametrize("category", ["validation", "dependency"])
def test_structured_validation_and_dependency_escalate(category):
    """Validation and dependency errors escalate for triage even on the first failure."""
    obs = structured_obs(category=category, code="BAD_INPUT")
    action = StructuredDecisionTree().decide(obs, history(0))
    assert isinstance(action, Escalate)
    assert "BAD_INPUT" in action.reason and category in action.reason


def test_structured_fatal_escalates():
    """A fatal-category error escalates even when marked recoverable."""
    obs = structured_obs(category="fatal", code="CORRUPT_STATE", recoverable=True)
    action = StructuredDecisionTree().decide(obs, history(0))
    assert action == Escalate("CORRUPT_STATE: not recoverable")


@pytest.mark.parametrize("category", ["transient", "resource", "auth"])
def test_structured_not_recoverable_escalates(category):
    """recoverable=False escalates whatever the category."""
    obs = structured_obs(category=category, code="NOPE", recoverable=False)
    action = StructuredDecisionTree().decide(obs, history(0))
    assert action == Escalate("NOPE: not recoverable")


# ---------------------------------------------------------------------------------------
# StructuredDecisionTree: repeated failures


@pytest.mark.parametrize("category", ["transient", "resource", "auth"])
def test_structured_escalates_at_max_retries(category):
    """Recoverable errors escalate once history.retries reaches max_retries (5)."""
    obs = structured_obs(category=category, code="X")
    tree = StructuredDecisionTree()
    assert not isinstance(tree.decide(obs, history(retries=4)), Escalate)
    action = tree.decide(obs, history(retries=5))
    assert action == Escalate("X: repeated recoverable failure")


@pytest.mark.parametrize("category", ["transient", "resource", "auth"])
def test_structured_escalates_at_max_same_streak(category):
    """Recoverable errors escalate once same_failure_streak reaches max_same (3)."""
    obs = structured_obs(category=category, code="X")
    tree = StructuredDecisionTree()
    assert not isinstance(tree.decide(obs, history(retries=2, streak=2)), Escalate)
    assert isinstance(tree.decide(obs, history(retries=2, streak=3)), Escalate)


def test_structured_custom_limits():
    """max_retries and max_same are honoured when configured."""
    tree = StructuredDecisionTree(max_retries=2, max_same=10)
    obs = structured_obs(category="resource", code="DISK_FULL")
    assert isinstance(tree.decide(obs, history(retries=1, streak=9)), Reroute)
    assert isinstance(tree.decide(obs, history(retries=2, streak=1)), Escalate)
    assert isinstance(tree.decide(obs, history(retries=1, streak=10)), Escalate)


# ---------------------------------------------------------------------------------------
# StructuredDecisionTree: generic observations (no envelope)


def test_structured_generic_retries_once_then_escalates():
    """Without an envelope the tree backs off once (unknown_retries=1) from step 0, then escalates."""
    tree = StructuredDecisionTree()
    first = tree.decide(GENERIC_FAILED, history(retries=0, seed=21))
    # full jitter bound at retries 0: min(120, 2 * 1) = 2
    assert first == Retry(random.Random(21).uniform(0.0, 2.0), 0, ())
    assert tree.decide(GENERIC_FAILED, history(retries=1)) == Escalate("unclassified failure")


def test_structured_generic_unknown_retries_configurable():
    """With unknown_retries=3 a generic failure is retried 3 times, escalated on the 4th decision."""
    tree = StructuredDecisionTree(unknown_retries=3)
    for retries in range(3):
        action = tree.decide(GENERIC_FAILED, history(retries=retries))
        assert isinstance(action, Retry)
        assert 0.0 <= action.delay_s < 2.0 * 2**retries
    assert isinstance(tree.decide(GENERIC_FAILED, history(retries=3)), Escalate)


def test_structured_generic_unknown_retries_zero_escalates_immediately():
    """With unknown_retries=0 a generic failure escalates at once."""
    action = StructuredDecisionTree(unknown_retries=0).decide(GENERIC_FAILED, history(0))
    assert isinstance(action, Escalate)


def test_structured_decision_is_pure():
    """The same observation, history values and RNG seed give the same action; history is not mutated."""
    obs = structured_obs()
    h1, h2 = history(retries=1, streak=1, seed=3), history(retries=1, streak=1, seed=3)
    a1 = StructuredDecisionTree().decide(obs, h1)
    a2 = StructuredDecisionTree().decide(obs, h2)
    assert a1 == a2
    assert (h1.retries, h1.same_failure_streak, h1.attempts) == (1, 1, 2)


# ---------------------------------------------------------------------------------------
# get_policy


@pytest.mark.parametrize(
    "name, cls",
    [("blind-retry", BlindRetry), ("backoff", Backoff), ("structured", StructuredDecisionTree)],
)
def test_get_policy_builtin_names(name, cls):
    """get_policy returns a default instance of each built-in, whose name matches its key."""
    policy = get_policy(name)
    assert type(policy) is cls
    assert policy == cls()
    assert policy.name == name


def test_builtin_registry_holds_the_built_ins_and_the_presets():
    """The registry holds the five hand-written policies, then every named preset."""
    from fleetchaos.policies.presets import PRESETS

    assert list(POLICIES)[:5] == ["blind-retry", "backoff", "structured", "failure-type-router", "raw-parse"]
    assert list(POLICIES)[5:] == list(PRESETS)


def test_get_policy_import_path_class_is_instantiated(monkeypatch):
    """An import path naming a class returns a fresh instance of it."""
    monkeypatch.syspath_prepend(str(HERE))
    policy = get_policy("sample_policies:AlwaysEscalate")
    assert type(policy).__name__ == "AlwaysEscalate"
    assert policy.decide(GENERIC_FAILED, history()) == Escalate("sample policy")


def test_get_policy_import_path_instance_returned_as_is(monkeypatch):
    """An import path naming an instance returns that very object."""
    monkeypatch.syspath_prepend(str(HERE))
    import sample_policies

    assert get_policy("sample_policies:GIVE_UP_PARTIAL") is sample_policies.GIVE_UP_PARTIAL


def test_get_policy_unknown_name_lists_builtins():
    """An unknown bare name raises PolicyLookupError naming it, the built-ins and the import-path form."""
    with pytest.raises(PolicyLookupError) as info:
        get_policy("blind_retry")
    msg = str(info.value)
    assert "'blind_retry'" in msg
    assert "backoff, backoff-decorrelated-jitter" in msg and "structured" in msg
    assert "mypkg.policies:MyPolicy" in msg


def test_policy_lookup_error_is_lookup_error():
    """PolicyLookupError is a LookupError, so generic handlers catch it."""
    with pytest.raises(LookupError):
        get_policy("nope")


def test_get_policy_module_not_found():
    """A missing module raises PolicyLookupError naming the module and the import error."""
    with pytest.raises(PolicyLookupError) as info:
        get_policy("no_such_module_fleetchaos_xyz:Policy")
    msg = str(info.value)
    assert "cannot import 'no_such_module_fleetchaos_xyz'" in msg
    assert "ModuleNotFoundError" in msg


def test_get_policy_attribute_missing(monkeypatch):
    """A missing attribute raises PolicyLookupError naming the module and attribute."""
    monkeypatch.syspath_prepend(str(HERE))
    with pytest.raises(PolicyLookupError) as info:
        get_policy("sample_policies:NoSuchPolicy")
    msg = str(info.value)
    assert "module 'sample_policies' has no attribute 'NoSuchPolicy'" in msg


def test_get_policy_target_without_decide(monkeypatch):
    """An attribute without a decide method raises PolicyLookupError."""
    monkeypatch.syspath_prepend(str(HERE))
    with pytest.raises(PolicyLookupError) as info:
        get_policy("sample_policies:NotAPolicy")
    assert "NotAPolicy has no decide(observation, history) method" in str(info.value)
