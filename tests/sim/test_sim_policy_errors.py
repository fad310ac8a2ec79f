"""A broken user policy is contained to its task: the run goes on and policy_errors counts it."""

from __future__ import annotations

import pytest

from fleetchaos.sim.observation import GiveUp, RefreshCredentials, Remediate, Retry

APPROX = dict(abs=1e-6)


class Raises:
    name = "raises"

    def decide(self, observation, history):
        raise ValueError("boom")


class ReturnsNone:
    name = "returns-none"

    def decide(self, observation, history):
        return None


class ReturnsActionClass:
    name = "returns-class"

    def decide(self, observation, history):
        return Retry  # the class, not an instance


class NegativeDelay:
    name = "negative-delay"

    def decide(self, observation, history):
        return Retry(delay_s=-1.0)


class InfiniteDelay:
    name = "infinite-delay"

    def decide(self, observation, history):
        return Retry(delay_s=float("inf"))


class NeverGivesUp:
    name = "never-gives-up"

    def decide(self, observation, history):
        return Retry()


def broken_world(sim):
    """Two workers; worker 0's key expires at t=0, worker 1 is healthy.

    Round robin: task 0 (t=0) -> worker 0, task 1 (t=0) -> worker 1, task 2 (t=5) -> worker 0.
    Tasks 0 and 2 fail their first call (0.1 + 0.3 = 0.4 s) and ask the policy; task 1
    never does: plan 10.1 -> done at 10.1.
    """
    return sim.scenario(
        {"job": [sim.step("plan", 10)]},
        arrivals=[(0, "job"), (0, "job"), (5, "job")],
        faults=[{"kind": "expired_key", "events": [{"worker": 0, "at_s": 0}]}],
        workers=2,
    )


@pytest.mark.parametrize(
    "policy, message",
    [
        (Raises(), "policy raised ValueError: boom"),
        (
            ReturnsNone(),
            "policy returned an invalid action: expected an action "
            "(Retry, Reroute, RefreshCredentials, UseAlternative, Remediate, RepairTurn, RepromptWithSchema, FallbackModel, "
            "ResumeStream, CompactContext, ReinitSession, RefreshTools, Escalate, Rollback, DeadLetter, GiveUp), got NoneType",
        ),
        (
            ReturnsActionClass(),
            "policy returned an invalid action: expected an action "
            "(Retry, Reroute, RefreshCredentials, UseAlternative, Remediate, RepairTurn, RepromptWithSchema, FallbackModel, "
            "ResumeStream, CompactContext, ReinitSession, RefreshTools, Escalate, Rollback, DeadLetter, GiveUp), got type",
        ),
        (NegativeDelay(), "policy returned an invalid action: delay_s must be finite and >= 0, got -1.0"),
        (InfiniteDelay(), "policy returned an invalid action: delay_s must be finite and >= 0, got inf"),
    ],
    ids=lambda v: getattr(v, "name", "msg"),
)
def test_broken_policy_gives_up_task_and_run_goes_on(sim, policy, message):
    """A policy that raises or returns a non-action / bad delay: the task is given up, the error recorded, others unaffected."""
    r = sim.run(broken_world(sim), policy, "generic")
    t0, t1, t2 = r.records
    for rec, end in ((t0, 0.4), (t2, 5.4)):
        # one failed call, the policy misbehaves at the first decision -> GiveUp() at once
        assert rec.policy_error == message
        assert rec.claim == "failed"
        assert rec.calls == 1 and rec.retries == 0
        assert rec.end_s == pytest.approx(end, **APPROX)
    assert t1.policy_error is None and t1.claim == "success"
    assert t1.end_s == pytest.approx(10.1, **APPROX)
    m = r.metrics
    assert m["policy_errors"] == 2.0
    assert m["tasks"] == 3.0 and m["unfinished_tasks"] == 0.0
    assert m["success_rate"] == pytest.approx(1 / 3)


def test_never_giving_up_hits_action_cap(sim):
    """A policy that always retries is stopped at the action cap (100), reported as that limit, not as a policy error."""
    r = sim.run(broken_world(sim), NeverGivesUp(), "generic")
    t0, t1, t2 = r.records
    # actions 1..100 are Retry(); the 101st failure exceeds the cap -> GiveUp().
    # 101 dispatches of 0.4 s: task 0 ends at 40.4, task 2 (arrived at 5) at 45.4.
    # every retry finds the key still expired -> 100 wasted each.
    for rec, end in ((t0, 40.4), (t2, 45.4)):
        assert rec.policy_error is None and rec.stopped_by == "action_cap"
        assert rec.calls == 101 and rec.retries == 100
        assert rec.wasted_reasons == {"credentials still expired": 100}
        assert rec.claim == "failed"
        assert rec.end_s == pytest.approx(end, abs=1e-6)
    assert t1.claim == "success"
    assert r.metrics["policy_errors"] == 0.0
    assert r.metrics["wasted_retries"] == 200.0


def test_action_cap_is_configurable(sim):
    """fleet.max_actions_per_task 2 (or World(max_actions=2)): 2 retries are allowed, the 3rd failure is capped."""
    world = broken_world(sim)
    world = world.model_validate(
        {**world.model_dump(), "fleet": {**world.fleet.model_dump(), "max_actions_per_task": 2}}
    )
    for r in (
        sim.run(world, NeverGivesUp(), "generic"),
        sim.run(broken_world(sim), NeverGivesUp(), "generic", max_actions=2),
    ):
        t0 = r.records[0]
        assert t0.calls == 3 and t0.retries == 2
        assert t0.stopped_by == "action_cap" and t0.policy_error is None
        assert t0.end_s == pytest.approx(1.2, **APPROX)


# --------------------------------------------------------------------------------------
# Known bugs: the driver validates only the delay of a returned action.  Other invalid
# fields, or a subclass of an action type, raise inside World._task and stop the whole
# run instead of being contained to the task (simulated_fleet/world.py, _task/_decide).
# --------------------------------------------------------------------------------------


class BadResumeFrom:
    name = "bad-resume-from"

    def decide(self, observation, history):
        return Retry(resume_from=None)  # type: ignore[arg-type]


class BadDoneItems:
    name = "bad-done-items"

    def decide(self, observation, history):
        return Retry(done_items=None)  # type: ignore[arg-type]


class NanResumeFrom:
    name = "nan-resume-from"

    def decide(self, observation, history):
        return Retry(resume_from=float("nan"))  # type: ignore[arg-type]


class MyGiveUp(GiveUp):
    """A user's own subclass of GiveUp: passes the isinstance(ACTION_TYPES) check."""


class GivesUpViaSubclass:
    name = "give-up-subclass"

    def decide(self, observation, history):
        return MyGiveUp()


def _run_is_contained(sim, policy):
    r = sim.run(broken_world(sim), policy, "generic")  # must not raise
    t0, t1, t2 = r.records
    assert t1.claim == "success"
    assert t0.claim == "failed" and t2.claim == "failed"
    return r


@pytest.mark.parametrize("policy", [BadResumeFrom(), BadDoneItems(), NanResumeFrom()], ids=lambda p: p.name)
def test_invalid_resume_fields_are_contained(sim, policy):
    """An action with an invalid resume_from / done_items is a policy error for that task, not a crashed run."""
    r = _run_is_contained(sim, policy)
    assert r.metrics["policy_errors"] == 2.0


def test_action_subclass_is_honoured(sim):
    """A subclass of GiveUp is treated as GiveUp (claim failed), without crashing the run."""
    r = _run_is_contained(sim, GivesUpViaSubclass())
    assert r.records[0].calls == 1 and r.records[0].retries == 0


class MyRefresh(RefreshCredentials):
    """A user's own subclass of RefreshCredentials."""


class MyRemediate(Remediate):
    """A user's own subclass of Remediate."""


class SubclassThenGiveUp:
    """First a subclassed action, then give up: each task meets the action once."""

    def __init__(self, action_cls):
        self.action_cls = action_cls
        self.name = f"{action_cls.__name__}-then-give-up"

    def decide(self, observation, history):
        return self.action_cls() if history.attempts == 1 else GiveUp()


@pytest.mark.parametrize("action_cls", [MyRefresh, MyRemediate])
def test_refresh_and_remediate_subclasses_are_honoured(sim, action_cls):
    """Subclasses of RefreshCredentials and Remediate run as their base action (they once crashed the run)."""
    r = sim.run(broken_world(sim), SubclassThenGiveUp(action_cls), "generic")  # must not raise
    first = r.records[0]
    assert r.metrics["policy_errors"] == 0.0 and first.retries == 1
    if action_cls is MyRefresh:
        assert first.refreshes == 1 and first.claim == "success"  # fresh credentials fix the expired key
    else:
        assert first.remediations == 1


class GivesUpClaimingSuccess:
    name = "give-up-success"

    def decide(self, observation, history):
        return GiveUp(claim="success")  # type: ignore[arg-type]


def test_give_up_with_invalid_claim_is_policy_error(sim):
    """GiveUp(claim='success') is not a valid give-up: the task is not claimed a success and a policy error is recorded."""
    r = sim.run(broken_world(sim), GivesUpClaimingSuccess(), "generic")
    t0 = r.records[0]
    assert t0.claim in ("failed", "partial")
    assert t0.policy_error is not None
    assert r.metrics["policy_errors"] == 2.0
