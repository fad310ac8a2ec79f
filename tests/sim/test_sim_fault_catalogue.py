"""The fault catalogue beyond the core five: one tiny hand-checkable world per effect.

For each kind the tests prove its effect on the truth (commits, truth, duplicates,
wrong_input_steps), on the claim, on the fault hits and wasted-retry reasons, and on what
each error format shows for the same truth: GenericFormat (a status word) against
StructuredFormat (error_code, category, recoverable, suggested_action, partial_success,
retry_after_ms).  ``r.rendered`` (conftest) holds every (AttemptReport, Observation) the
format rendered, so the very same truth can be rendered again through the other format.

Conventions (conftest.py): one network round trip RTT = 0.1 s; a successful call lasts
0.1 + the step's mean; a fast failure lasts 0.1 + its fail_fast_s extra (the kind's record) (pinned by
``test_fail_fast_extras_used_by_the_hand_computations``): missing_dependency 0.2,
validation_error 0.5, not_found 0.4, permission_denied 0.3, partial_batch 0.5,
node_crash 0.2, quota_exhausted 0.1, rate_limit 0.1, network_blip 1.0.

Strict xfail tests document behaviour of the engine that looks wrong; each says what a
hand computation expects and what the engine does.  Do not "fix" them here.
"""

from __future__ import annotations

import dataclasses

import pytest

from fleetchaos.policies import BlindRetry, resume_point
from fleetchaos.sim.fault_specs import FAULT_MODELS
from fleetchaos.sim.formats.generic import GenericFormat
from fleetchaos.sim.formats.structured import StructuredFormat
from fleetchaos.sim.kinds import KINDS, MASKING, REPORTING, kinds_in
from fleetchaos.sim.observation import Escalate, GiveUp, Reroute, Retry, UseAlternative
from fleetchaos.sim.truth import FAILURES, AttemptReport

MASKING_KINDS = kinds_in(MASKING)
REPORTING_KINDS = kinds_in(REPORTING)

APPROX = dict(abs=1e-6)
GENERIC, STRUCTURED = GenericFormat(), StructuredFormat()


def envelope_of(kind: str, **fields):
    """The envelope fields a contract-following worker shows for ``kind``, as a dict."""
    c = FAILURES[kind]
    return {
        "error_code": c.error_code,
        "category": c.category,
        "recoverable": c.recoverable,
        "suggested_action": c.suggested_action,
        **fields,
    }


def shown(envelope, *names: str) -> dict:
    """The named fields of an envelope (the four contract fields by default)."""
    names = names or ("error_code", "category", "recoverable", "suggested_action")
    return {n: getattr(envelope, n) for n in names}


def failures(r) -> list[AttemptReport]:
    """The truth of every rendered dispatch that failed, in order."""
    return [report for report in r.reports if not report.completed]


def assert_generic_shows_only_failed(report: AttemptReport) -> None:
    """GenericFormat renders a failed dispatch as the bare word 'failed', whatever the truth."""
    obs = GENERIC.render(report)
    assert (obs.ok, obs.status, obs.envelope) == (False, "failed", None)


@dataclasses.dataclass
class FollowSuggestion:
    """A contract-literal orchestrator: does what ``suggested_action`` says, up to ``max_retries``.

    reroute_* / requeue_* -> Reroute; use_alternative_source -> UseAlternative; a
    retry-after hint -> wait it (+ ``margin_s``) and retry; anything else -> Escalate.
    Always resumes from the envelope's partial_success.
    """

    max_retries: int = 3
    margin_s: float = 1.0
    name: str = "follow-suggestion"

    def decide(self, observation, history):
        env = observation.envelope
        if env is None or history.retries >= self.max_retries:
            return Escalate("no envelope, or out of retries")
        start, done = resume_point(env)
        action = env.suggested_action
        if action.startswith(("reroute", "requeue")):
            return Reroute(0.0, start, done)
        if action == "use_alternative_source":
            return UseAlternative(0.0, start, done)
        if env.retry_after_ms is not None:
            return Retry(env.retry_after_ms / 1000.0 + self.margin_s, start, done)
        return Escalate(f"{env.error_code}: {action}")


@dataclasses.dataclass
class AlwaysReroute:
    """Reroute from the start up to ``max_retries`` times, then give up (sees no envelope)."""

    max_retries: int = 2
    name: str = "always-reroute"

    def decide(self, observation, history):
        return Reroute() if history.retries < self.max_retries else GiveUp()


# --------------------------------------------------------------------------------------
# the contract table, format by format
# --------------------------------------------------------------------------------------


def test_fail_fast_extras_used_by_the_hand_computations():
    """The fail-fast durations the hand computations in this file rely on."""
    assert {
        k: KINDS[k].fail_fast_s
        for k in (
            "missing_dependency",
            "validation_error",
            "not_found",
            "permission_denied",
            "partial_batch",
            "node_crash",
            "quota_exhausted",
            "rate_limit",
            "network_blip",
        )
    } == {
        "missing_dependency": 0.2,
        "validation_error": 0.5,
        "not_found": 0.4,
        "permission_denied": 0.3,
        "partial_batch": 0.5,
        "node_crash": 0.2,
        "quota_exhausted": 0.1,
        "rate_limit": 0.1,
        "network_blip": 1.0,
    }


def test_every_fault_kind_has_a_contract_or_is_reporting_only():
    """All 34 scenario kinds are classified: 32 by a failure contract, schema_drift and wrong_envelope as reporting only."""
    assert len(FAULT_MODELS) == 34
    assert set(REPORTING_KINDS) == {"schema_drift", "wrong_envelope"}
    assert set(FAULT_MODELS) == set(FAILURES) | set(REPORTING_KINDS)
    assert set(FAILURES).isdisjoint(REPORTING_KINDS)


@pytest.mark.parametrize("kind", [k for k in FAILURES if k not in MASKING_KINDS])
def test_each_failure_kind_generic_status_word_vs_structured_contract(kind):
    """For one failed dispatch of any kind, generic shows 'failed' and structured shows the kind's contract."""
    retry = 2.5 if kind in ("rate_limit", "quota_exhausted") else None
    report = AttemptReport(
        task_id=0,
        worker=1,
        start_step=0,
        failed_step=1,
        step_names=("fetch", "write"),
        failure=kind,
        retry_after_s=retry,
        item_failures=((0, kind),),
    )
    assert_generic_shows_only_failed(report)
    obs = STRUCTURED.render(report)
    env = obs.envelope
    assert (obs.ok, obs.status, obs.worker) == (False, "failed", 1)
    assert shown(env) == envelope_of(kind)
    assert env.partial_success.completed_steps == ("0:fetch",)
    assert env.partial_success.artifacts == ()
    assert env.retry_after_ms == (2500 if retry else None)
    assert {k: env.context[k] for k in ("worker", "tool")} == {"worker": "worker-1", "tool": "write"}
    if kind in ("timeout", "stream_cut", "mcp_tool_error"):  # ambiguous: the side effect may have committed
        assert env.context["outcome"] == "unknown"
    elif kind != "latency_spike":  # (see test_bug_latency_spike_timeout_says_outcome_unknown)
        assert "outcome" not in env.context
    assert env.schema_version == "1.0"


@pytest.mark.parametrize("kind", sorted(MASKING_KINDS))
def test_masked_calls_render_as_plain_success_in_both_formats(kind):
    """A dispatch whose only 'failure' was masked is complete: both formats say ok, with no envelope."""
    report = AttemptReport(
        task_id=0,
        worker=0,
        start_step=0,
        failed_step=-1,
        step_names=("fetch", "write"),
        masked=((0, 0, kind),),
    )
    for fmt in (GENERIC, STRUCTURED):
        obs = fmt.render(report)
        assert (obs.ok, obs.status, obs.envelope) == (True, "ok", None)


# --------------------------------------------------------------------------------------
# git_push_conflict
# --------------------------------------------------------------------------------------


def pushes(sim):
    return {"ship": [sim.step("git_push", 5, side_effect="append")]}


def git_world(sim, n: int, fault: bool = True):
    return sim.scenario(
        pushes(sim),
        arrivals=[(0.0, "ship")] * n,
        faults=[{"kind": "git_push_conflict", "branches": 1}] if fault else [],
        workers=n,
    )


def test_git_push_conflict_loser_is_rejected_and_retries_on_the_new_head(sim):
    """Two workers push to one branch at once: the second write is rejected (no commit), its retry lands."""
    r = sim.run(git_world(sim, 2), "blind-retry", "generic")
    # t=0    both pushes read head 0 (tasks 0 -> w0, 1 -> w1), both end at 0.1 + 5 = 5.1
    #        task 0 writes first (head 0 -> 1); task 1 finds head 1 != 0 -> GIT_PUSH_REJECTED, no commit
    # t=5.1  task 1 retries (blind, no delay): reads head 1, ends 10.2, writes (head 2)
    t0, t1 = r.records
    assert (
        t0.claim == "success"
        and t0.commits == [[1]]
        and t0.fault_hits == {}
        and t0.end_s == pytest.approx(5.1, **APPROX)
    )
    assert t1.claim == "success" and t1.commits == [[1]] and t1.truth == "full"
    assert t1.calls == 2 and t1.retries == 1 and t1.fault_hits == {"git_push_conflict": 1}
    assert t1.wasted_retries == 0 and t1.duplicate_side_effects == 0
    assert t1.end_s == pytest.approx(10.2, **APPROX)
    assert r.output.fault_log == [(0, "git_push_conflict", "git_push", 1, 1)]  # noted at the call's start
    # what the formats show for the rejected dispatch
    [report] = failures(r)
    assert (report.task_id, report.failure, report.item_failures) == (
        1,
        "git_push_conflict",
        ((0, "git_push_conflict"),),
    )
    assert_generic_shows_only_failed(report)
    env = STRUCTURED.render(report).envelope
    assert shown(env) == envelope_of("git_push_conflict")
    assert shown(env) == {
        "error_code": "GIT_PUSH_REJECTED",
        "category": "transient",
        "recoverable": True,
        "suggested_action": "fetch_rebase_and_retry",
    }
    assert env.retry_after_ms is None and env.partial_success.completed_steps == ()


def test_git_push_conflict_structured_policy_backs_off_and_lands(sim):
    """The structured policy retries a rejected push after a jittered delay; the truth ends full, no duplicates."""
    r = sim.run(git_world(sim, 2), "structured", "structured")
    [d] = r.log
    assert shown(d.observation.envelope) == envelope_of("git_push_conflict")
    assert isinstance(d.action, Retry) and d.action.resume_from == 0
    delay = d.action.delay_s
    assert 0.0 <= delay < 2.0
    # task 1 rejected at 5.1 ; retry at 5.1 + delay reads head 1 -> ends 10.2 + delay, writes
    t1 = r.records[1]
    assert t1.commits == [[1]] and t1.claim == "success" and r.outcomes[1].recovered
    assert t1.end_s == pytest.approx(10.2 + delay, **APPROX)


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_git_push_contention_grows_with_the_number_of_workers(sim, n):
    """n workers pushing one branch at once with immediate retries: n(n-1)/2 rejections, task i lands at 5.1(i+1)."""
    r = sim.run(git_world(sim, n), "blind-retry", "generic")
    # every round all remaining pushes read the same head and end together; the lowest task id
    # writes first, the others are rejected and retry at once: task i is rejected i times.
    for i, rec in enumerate(r.records):
        assert rec.fault_hits == ({"git_push_conflict": i} if i else {})
        assert rec.commits == [[1]] and rec.claim == "success"
        assert rec.end_s == pytest.approx(5.1 * (i + 1), **APPROX)
    assert r.breakdowns["fault_hits_by_kind"] == ({"git_push_conflict": n * (n - 1) // 2} if n > 1 else {})
    # without the fault, branches are not shared: the same n pushes all land at 5.1
    free = sim.run(git_world(sim, n, fault=False), "blind-retry", "generic")
    assert [rec.end_s for rec in free.records] == pytest.approx([5.1] * n, **APPROX)
    assert all(rec.fault_hits == {} for rec in free.records)


# --------------------------------------------------------------------------------------
# missing_dependency
# --------------------------------------------------------------------------------------


def build_job(sim):
    """plan (10 s) -> build (20 s, no API) -> push (5 s, append)."""
    return {
        "job": [sim.step("plan", 10), sim.step("build", 20, uses_api=False), sim.step("push", 5, side_effect="append")]
    }


def missing_world(sim, probability: float = 1.0):
    return sim.scenario(
        build_job(sim),
        faults=[{"kind": "missing_dependency", "probability": probability, "workers": [0], "tools": ["build"]}],
        workers=2,
    )


def test_missing_dependency_blind_retry_on_same_worker_is_wasted(sim):
    """The build tool is absent on worker 0: blind retries there fail identically, 3 wasted 'tool still missing'."""
    r = sim.run(missing_world(sim), "blind-retry", "generic")
    # plan 0 -> 10.1 ; build fails fast 0.1 + 0.2 -> 10.4 ; 3 restarts of 10.4 s each -> 41.6
    rec = r.rec
    assert rec.commits == [[4], [0], [0]] and rec.truth == "partial"
    assert rec.claim == "failed" and rec.calls == 8 and rec.retries == 3 and rec.redone_steps == 3
    assert rec.fault_hits == {"missing_dependency": 4}
    assert rec.wasted_reasons == {"tool still missing": 3}
    assert rec.end_s == pytest.approx(41.6, **APPROX)
    # each build fails at its start: 10.1, 20.5, 30.9, 41.3, always on worker 0
    assert [x[1:4] for x in r.output.fault_log] == [("missing_dependency", "build", 0)] * 4
    assert [x[0] for x in r.output.fault_log] == pytest.approx([10.1, 20.5, 30.9, 41.3], **APPROX)
    for report in r.reports:
        assert_generic_shows_only_failed(report)
        env = STRUCTURED.render(report).envelope
        assert shown(env) == envelope_of("missing_dependency")
        assert env.partial_success.completed_steps == ("0:plan",)
        assert env.context == {"worker": "worker-0", "tool": "build"}


def test_missing_dependency_structured_tree_escalates_for_triage(sim):
    """The built-in decision tree escalates a dependency-category error at once: claim escalated, truth partial."""
    r = sim.run(missing_world(sim), "structured", "structured")
    [d] = r.log
    assert shown(d.observation.envelope) == {
        "error_code": "DEPENDENCY_MISSING",
        "category": "dependency",
        "recoverable": True,
        "suggested_action": "reroute_or_provision",
    }
    assert isinstance(d.action, Escalate)
    rec = r.rec
    assert rec.claim == "escalated" and rec.truth == "partial" and rec.commits == [[1], [0], [0]]
    assert rec.calls == 2 and rec.end_s == pytest.approx(10.4, **APPROX)
    assert not r.out.silent_failure and not r.out.false_alarm


def test_missing_dependency_following_the_suggestion_reroutes_and_recovers(sim):
    """Following 'reroute_or_provision' moves the build to worker 1, where the tool exists: recovered, not wasted."""
    r = sim.run(missing_world(sim), sim.Recorder(FollowSuggestion()), "structured")
    [d] = r.log
    assert d.action == Reroute(0.0, 1, ())
    # t=10.4 reroute to w1: build 0.1 + 20 -> 30.5 ; push -> 35.6
    rec = r.rec
    assert rec.worker == 1 and rec.reroutes == 1 and rec.wasted_retries == 0 and rec.redone_steps == 0
    assert rec.commits == [[1], [1], [1]] and rec.claim == "success" and r.out.recovered
    assert rec.end_s == pytest.approx(35.6, **APPROX)


# --------------------------------------------------------------------------------------
# validation_error
# --------------------------------------------------------------------------------------


def invalid_world(sim, workers: int = 1):
    return sim.scenario(
        build_job(sim),
        faults=[{"kind": "validation_error", "probability": 1.0, "tools": ["build"]}],
        workers=workers,
    )


def test_validation_error_retrying_never_helps(sim):
    """Bad input fails the build on every execution: blind retries waste 3 'input still invalid'."""
    r = sim.run(invalid_world(sim), "blind-retry", "generic")
    # plan 10.1 ; build fails 0.1 + 0.5 -> 10.7 ; x4 -> 42.8
    rec = r.rec
    assert rec.commits == [[4], [0], [0]] and rec.claim == "failed" and rec.truth == "partial"
    assert rec.calls == 8 and rec.redone_steps == 3
    assert rec.fault_hits == {"validation_error": 4}
    assert rec.wasted_reasons == {"input still invalid": 3}
    assert rec.end_s == pytest.approx(42.8, **APPROX)
    report = r.reports[0]
    assert_generic_shows_only_failed(report)
    assert shown(STRUCTURED.render(report).envelope) == {
        "error_code": "VALIDATION_FAILED",
        "category": "validation",
        "recoverable": False,
        "suggested_action": "fix_input_upstream",
    }


def test_validation_error_structured_escalates_and_reroute_does_not_help(sim):
    """Structured escalates at once (not recoverable); a reroute fails the same way on another worker (task-keyed)."""
    r = sim.run(invalid_world(sim), "structured", "structured")
    [d] = r.log
    assert isinstance(d.action, Escalate) and "not recoverable" in d.action.reason
    assert r.rec.claim == "escalated" and r.rec.calls == 2 and r.rec.end_s == pytest.approx(10.7, **APPROX)
    rr = sim.run(invalid_world(sim, workers=2), AlwaysReroute(max_retries=1), "generic")
    # w0: plan 10.1, build fails 10.7 ; reroute w1: plan (redone) 20.8, build fails 21.4 ; give up
    rec = rr.rec
    assert rec.worker == 1 and rec.fault_hits == {"validation_error": 2}
    assert rec.wasted_reasons == {"input still invalid": 1}
    assert rec.claim == "failed" and rec.end_s == pytest.approx(21.4, **APPROX)


def test_validation_error_is_drawn_per_task_and_step_not_per_execution(sim):
    """With probability 0.5 a task's step is either always invalid (4 of 4 executions fail) or never."""
    scn = sim.scenario(
        {"check": [sim.step("check", 1)]},
        arrivals=[(float(i), "check") for i in range(12)],
        faults=[{"kind": "validation_error", "probability": 0.5}],
    )
    r = sim.run(scn, "blind-retry", "generic")
    hits = [rec.fault_hits.get("validation_error", 0) for rec in r.records]
    assert set(hits) == {0, 4}  # never 1..3: the draw does not change with retries
    for rec, h in zip(r.records, hits):
        assert rec.claim == ("failed" if h else "success")
        assert rec.wasted_retries == (3 if h else 0)


# --------------------------------------------------------------------------------------
# not_found
# --------------------------------------------------------------------------------------


def fetch_job(sim):
    """plan (10 s) -> fetch (5 s) -> write (5 s, needs fetch)."""
    return {"job": [sim.step("plan", 10), sim.step("fetch", 5), sim.step("write", 5, needs=["fetch"])]}


def gone_world(sim, alternatives: int, missing_p: float):
    return sim.scenario(
        fetch_job(sim),
        faults=[
            {
                "kind": "not_found",
                "probability": 1.0,
                "tools": ["fetch"],
                "alternatives": alternatives,
                "alternative_missing_probability": missing_p,
            }
        ],
    )


def test_not_found_use_alternative_recovers(sim):
    """Source 0 is gone, alternative 1 exists: UseAlternative resumes at fetch on the next source and recovers."""
    r = sim.run(gone_world(sim, 2, 0.0), sim.Recorder(FollowSuggestion()), "structured")
    [d] = r.log
    env = d.observation.envelope
    assert shown(env) == {
        "error_code": "NOT_FOUND",
        "category": "dependency",
        "recoverable": True,
        "suggested_action": "use_alternative_source",
    }
    assert env.partial_success.completed_steps == ("0:plan",)
    assert d.action == UseAlternative(0.0, 1, ())
    assert r.reports[0].alternatives_left == 2  # the truth knows two untried sources remain
    # plan 10.1 ; fetch (source 0 gone) 0.1 + 0.4 -> 10.6 ; fetch source 1 -> 15.7 ; write -> 20.8
    rec = r.rec
    assert rec.commits == [[1], [1], [1]] and rec.claim == "success" and r.out.recovered
    assert rec.alternatives_used == 1 and rec.wasted_retries == 0 and rec.redone_steps == 0
    assert rec.fault_hits == {"not_found": 1} and rec.wrong_input_steps == 0
    assert rec.end_s == pytest.approx(20.8, **APPROX)


def test_not_found_same_source_retries_are_wasted(sim):
    """A blind retry asks the same gone source again: 3 wasted 'same missing source'; generic cannot ask for another."""
    r = sim.run(gone_world(sim, 2, 0.0), "blind-retry", "generic")
    # 4 dispatches of plan 10.1 + fetch 0.5 = 10.6 -> 42.4
    rec = r.rec
    assert rec.commits == [[4], [0], [0]] and rec.claim == "failed"
    assert rec.fault_hits == {"not_found": 4} and rec.wasted_reasons == {"same missing source": 3}
    assert rec.alternatives_used == 0 and rec.end_s == pytest.approx(42.4, **APPROX)
    for report in r.reports:
        assert_generic_shows_only_failed(report)
    # the built-in decision tree escalates the dependency category instead of switching source
    s = sim.run(gone_world(sim, 2, 0.0), "structured", "structured")
    assert isinstance(s.log[0].action, Escalate) and s.rec.claim == "escalated"
    assert s.rec.end_s == pytest.approx(10.6, **APPROX)


def test_not_found_alternatives_exhausted(sim):
    """One alternative, also gone: every switch fails; the truth counts down alternatives_left, the envelope does not."""
    r = sim.run(gone_world(sim, 1, 1.0), sim.Recorder(FollowSuggestion(max_retries=3)), "structured")
    # dispatch 1: plan 10.1, fetch source 0 gone -> 10.6
    # dispatch 2: fetch source 1 (the only alternative, gone: p 1.0) -> 11.1
    # dispatch 3: source 2 (beyond the alternatives: gone) -> 11.6 ; dispatch 4: source 3 -> 12.1 ; escalate
    assert [type(d.action) for d in r.log] == [UseAlternative] * 3 + [Escalate]
    assert [rep.alternatives_left for rep in r.reports] == [1, 0, 0, 0]
    rec = r.rec
    assert rec.alternatives_used == 3 and rec.fault_hits == {"not_found": 4}
    assert rec.commits == [[1], [0], [0]] and rec.claim == "escalated" and rec.truth == "partial"
    assert rec.calls == 5 and rec.end_s == pytest.approx(12.1, **APPROX)
    envelopes = [d.observation.envelope for d in r.log]
    assert all(shown(e) == envelope_of("not_found") for e in envelopes)
    assert all(e.partial_success.completed_steps == ("0:plan",) for e in envelopes)
    # whether the envelope tells "alternatives left" from "exhausted": see
    # test_envelope_distinguishes_alternatives_left_from_exhausted


def test_use_alternative_onto_missing_sources_is_wasted(sim):
    """Switching to an alternative that is gone too, or beyond `alternatives`, is a wasted retry."""
    r = sim.run(gone_world(sim, 1, 1.0), sim.Recorder(FollowSuggestion(max_retries=3)), "structured")
    # dispatch 2 switches to source 1, gone (alternative_missing_probability 1.0); dispatches 3 and 4
    # switch to sources 2 and 3, which do not exist (alternatives = 1): the cause holds each time -> 3 wasted
    assert r.rec.wasted_retries == 3
    assert r.rec.wasted_reasons == {"same missing source": 3}


def test_envelope_distinguishes_alternatives_left_from_exhausted(sim):
    """the NOT_FOUND envelope with an alternative left differs from the one with none left."""
    r = sim.run(gone_world(sim, 1, 1.0), sim.Recorder(FollowSuggestion(max_retries=1)), "structured")
    first, second = (d.observation.envelope for d in r.log)
    assert [rep.alternatives_left for rep in r.reports] == [1, 0]
    # both say NOT_FOUND / use_alternative_source / recoverable with the same partial success
    assert first != second


# --------------------------------------------------------------------------------------
# permission_denied: the CRM sync with 5 parallel writes, 3 of them 403
# --------------------------------------------------------------------------------------


def crm_world(sim, **fleet):
    return sim.scenario(
        {
            "crm_sync": [
                sim.step("fetch_contacts", 8),
                sim.step("update_contact", 4, fan_out=5, side_effect="idempotent", needs=["fetch_contacts"]),
                sim.step("post_note", 3, side_effect="append"),
            ]
        },
        faults=[{"kind": "permission_denied", "probability": 1.0, "tools": ["update_contact"], "items": [2, 3, 4]}],
        **fleet,
    )


def test_permission_denied_crm_generic_passes_partial_writes_as_success(sim):
    """A generic batch tool that hides partial batches (partial_batch: ok) says 'ok' with 2 of 5 writes: claim
    success, truth partial, a silent failure."""
    r = sim.run(crm_world(sim, partial_batch="ok"), "blind-retry", "generic")
    # fetch 8.1 ; update: items 0,1 4.1 s, items 2,3,4 403 in 0.4 s -> step ends 12.2 ;
    # "ok" -> post_note 3.1 -> 15.3.  The policy is never asked.
    rec = r.rec
    assert r.log == []
    assert rec.commits == [[1], [1, 1, 0, 0, 0], [1]]
    assert rec.claim == "success" and rec.truth == "partial" and r.out.silent_failure
    assert rec.calls == 7 and rec.fault_hits == {"permission_denied": 3}
    assert rec.end_s == pytest.approx(15.3, **APPROX)
    assert [rep.completed for rep in r.reports] == [True]
    assert [(t, tool) for t, _, tool, _, _ in r.output.fault_log] == [(pytest.approx(8.1), "update_contact")] * 3


def test_permission_denied_crm_structured_escalates_with_the_partial_success(sim):
    """Structured: PERMISSION_DENIED, not recoverable, artifacts list writes 0 and 1; escalated, not silent."""
    r = sim.run(crm_world(sim), "structured", "structured")
    [d] = r.log
    env = d.observation.envelope
    assert shown(env) == {
        "error_code": "PERMISSION_DENIED",
        "category": "auth",
        "recoverable": False,
        "suggested_action": "request_access",
    }
    assert env.partial_success.completed_steps == ("0:fetch_contacts",)
    assert env.partial_success.artifacts == ("1:update_contact#0", "1:update_contact#1")
    assert isinstance(d.action, Escalate)
    [report] = r.reports
    assert report.item_failures == ((2, "permission_denied"), (3, "permission_denied"), (4, "permission_denied"))
    assert report.done_items == (0, 1)
    assert_generic_shows_only_failed(report)  # the same truth, rendered generically: one word
    rec = r.rec
    assert rec.commits == [[1], [1, 1, 0, 0, 0], [0]] and rec.claim == "escalated" and rec.truth == "partial"
    assert not r.out.silent_failure and rec.calls == 6 and rec.end_s == pytest.approx(12.2, **APPROX)


def test_permission_denied_blind_retries_are_wasted(sim):
    """Blind restarts with the structured format: 3 wasted 'access still denied', idempotent writes re-done, no duplicates."""
    r = sim.run(crm_world(sim), "blind-retry", "structured")
    # each dispatch: fetch 8.1 + update 4.1 = 12.2, 6 calls ; x4 -> 48.8, 24 calls
    rec = r.rec
    assert rec.commits == [[4], [4, 4, 0, 0, 0], [0]]
    assert rec.duplicate_side_effects == 0  # update_contact is idempotent, post_note never ran
    assert rec.redone_steps == 3  # fetch_contacts, each restart (update never fully committed)
    assert rec.calls == 24 and rec.fault_hits == {"permission_denied": 12}
    assert rec.wasted_reasons == {"access still denied": 3}
    assert rec.claim == "failed" and rec.end_s == pytest.approx(48.8, **APPROX)


# --------------------------------------------------------------------------------------
# partial_batch (transient and persistent)
# --------------------------------------------------------------------------------------


def batch_world(sim, persistent: bool, **fleet):
    fault = {"kind": "partial_batch", "probability": 1.0, "failures": 2, "persistent": persistent}
    if not persistent:
        fault["windows"] = [{"start_s": 0, "duration_s": 1}]  # only the first execution
    return sim.scenario(
        {"batch": [sim.step("search", 10, fan_out=5), sim.step("synth", 20, needs=["search"])]}, faults=[fault], **fleet
    )


@pytest.mark.parametrize("persistent", [False, True])
def test_partial_batch_generic_is_silent_and_feeds_a_wrong_synth(sim, persistent):
    """Generic, partial_batch: ok: 2 of 5 items fail but the tool says 'ok'; synth runs on incomplete input (wrong)."""
    r = sim.run(batch_world(sim, persistent, partial_batch="ok"), "blind-retry", "generic")
    # search: 3 items 10.1 s, 2 fail 0.6 s -> 10.1 ; synth 20.1 on 3/5 inputs -> 30.2, output wrong
    rec = r.rec
    assert r.log == []
    assert sorted(rec.commits[0]) == [0, 0, 1, 1, 1] and rec.commits[1] == [0]
    assert rec.wrong_input_steps == 1
    assert rec.claim == "success" and rec.truth == "partial" and r.out.silent_failure
    assert rec.fault_hits == {"partial_batch": 2} and rec.calls == 6
    assert rec.end_s == pytest.approx(30.2, **APPROX)


def test_partial_batch_transient_structured_retries_only_the_failed_items(sim):
    """Structured: BATCH_ITEM_FAILED with the 3 good items as artifacts; retrying the 2 others recovers."""
    r = sim.run(batch_world(sim, persistent=False), "structured", "structured")
    [d] = r.log
    [report] = failures(r)
    failed = [i for i, _ in report.item_failures]
    ok = [i for i in range(5) if i not in failed]
    assert len(failed) == 2 and all(k == "partial_batch" for _, k in report.item_failures)
    env = d.observation.envelope
    assert shown(env) == {
        "error_code": "BATCH_ITEM_FAILED",
        "category": "transient",
        "recoverable": True,
        "suggested_action": "retry_failed_items",
    }
    assert env.partial_success.artifacts == tuple(f"0:search#{i}" for i in ok)
    assert_generic_shows_only_failed(report)
    assert (d.action.resume_from, d.action.done_items) == (0, tuple(ok))
    delay = d.action.delay_s
    # t=10.1+delay (outside [0, 1)): the 2 items -> 20.2+delay ; synth on full inputs -> 40.3+delay
    rec = r.rec
    assert rec.commits == [[1] * 5, [1]] and rec.wrong_input_steps == 0
    assert rec.calls == 5 + 2 + 1 and rec.redone_steps == 0 and rec.wasted_retries == 0
    assert rec.claim == "success" and r.out.recovered
    assert rec.end_s == pytest.approx(40.3 + delay, **APPROX)


def test_partial_batch_persistent_fails_the_same_items_until_escalation(sim):
    """Persistent: the same 2 items fail on every execution; structured escalates after 3 identical codes."""
    r = sim.run(batch_world(sim, persistent=True), "structured", "structured")
    # d1: 5 items, 2 fail -> 10.1 ; Retry(d1) only the 2 -> fail in 0.6 ; Retry(d2) -> fail ; streak 3 -> escalate
    assert [type(d.action) for d in r.log] == [Retry, Retry, Escalate]
    assert len({rep.item_failures for rep in r.reports}) == 1  # the very same items each time
    d1, d2 = r.log[0].action.delay_s, r.log[1].action.delay_s
    rec = r.rec
    assert rec.calls == 5 + 2 + 2 and rec.fault_hits == {"partial_batch": 6}
    assert sorted(rec.commits[0]) == [0, 0, 1, 1, 1] and rec.commits[1] == [0]
    assert rec.claim == "escalated" and rec.truth == "partial" and rec.wrong_input_steps == 0
    assert rec.end_s == pytest.approx(10.1 + d1 + 0.6 + d2 + 0.6, **APPROX)
    # (how many of these retries count as wasted: see test_bug_persistent_partial_batch_retries_are_wasted)


def test_persistent_partial_batch_retries_are_wasted(sim):
    """both retries of a persistent partial batch are wasted (the same items fail for sure)."""
    r = sim.run(batch_world(sim, persistent=True), "structured", "structured")
    # persistent=True: the failing items are keyed by task and step only, so each retry of them
    # is issued while the cause still holds -> 2 wasted.
    assert r.rec.wasted_retries == 2


# --------------------------------------------------------------------------------------
# silent_suppression and fabricated_defaults (masking)
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["silent_suppression", "fabricated_defaults"])
@pytest.mark.parametrize("policy, errors", [("blind-retry", "generic"), ("structured", "structured")])
@pytest.mark.parametrize("chained", [True, False])
def test_masking_looks_successful_commits_nothing(sim, kind, policy, errors, chained):
    """A masked fetch looks like success in both formats; nothing commits, a dependent write is wrong: silent failure."""
    needs = {"needs": ["fetch"]} if chained else {}
    scn = sim.scenario(
        {"job": [sim.step("fetch", 5), sim.step("write", 5, **needs)]},
        faults=[{"kind": kind, "probability": 1.0, "tools": ["fetch"]}],
    )
    r = sim.run(scn, policy, errors)
    # fetch "ok" after 5.1 s but took no effect ; write 5.1 -> 10.2 (wrong when it needs fetch)
    # tokens: 2 x 2000 for the calls, and the context the two turns read: the 2000-token system prompt,
    # then that and the fetch's result, which looked like one (200)
    rec = r.rec
    assert r.log == []  # nothing failed as far as the orchestrator can tell
    [report] = r.reports
    assert report.completed and report.masked == ((0, 0, kind),)
    assert r.rendered[0][1].ok and r.rendered[0][1].envelope is None
    assert rec.fault_hits == {kind: 1} and rec.calls == 2 and rec.input_tokens == 2000 + 2200
    assert rec.tokens == 4000 + 2000 + 2200 and rec.turns == 2
    assert rec.claim == "success" and r.out.silent_failure and r.out.faulted
    assert rec.end_s == pytest.approx(10.2, **APPROX)
    if chained:
        assert rec.commits == [[0], [0]] and rec.truth == "none" and rec.wrong_input_steps == 1
    else:
        assert rec.commits == [[0], [1]] and rec.truth == "partial" and rec.wrong_input_steps == 0


def test_masked_items_in_a_failed_batch_are_reported_done_and_skipped(sim):
    """A batch with 1 real failure and 4 suppressed items: structured lists the 4 as done and never redoes them."""
    scn = sim.scenario(
        {"batch": [sim.step("search", 10, fan_out=5), sim.step("synth", 20, needs=["search"])]},
        faults=[
            {"kind": "partial_batch", "probability": 1.0, "failures": 1, "windows": [{"start_s": 0, "duration_s": 1}]},
            {"kind": "silent_suppression", "probability": 1.0, "windows": [{"start_s": 0, "duration_s": 1}]},
        ],
    )
    r = sim.run(scn, "structured", "structured")
    [report] = failures(r)
    [(bad, _)] = report.item_failures
    hollow = tuple(i for i in range(5) if i != bad)
    assert report.done_items == hollow and [m[1] for m in report.masked] == list(hollow)
    [d] = r.log
    assert d.observation.envelope.partial_success.artifacts == tuple(f"0:search#{i}" for i in hollow)
    assert d.action.done_items == hollow
    # retry at 10.1+d: only the real failure runs (commits) -> 20.2+d ; synth on 1/5 real inputs -> 40.3+d, wrong
    rec = r.rec
    assert rec.commits[0] == [1 if i == bad else 0 for i in range(5)] and rec.commits[1] == [0]
    assert rec.wrong_input_steps == 1 and rec.calls == 7
    assert rec.fault_hits == {"silent_suppression": 4, "partial_batch": 1}
    assert rec.claim == "success" and rec.truth == "partial" and r.out.silent_failure
    assert rec.end_s == pytest.approx(40.3 + d.action.delay_s, **APPROX)


# --------------------------------------------------------------------------------------
# schema_drift
# --------------------------------------------------------------------------------------


def drift_world(sim):
    """plan -> push, API 1 token/s burst 1 cut to x0.01 in [0, 1000); worker 0 speaks envelope 0.9."""
    return sim.scenario(
        {"job": [sim.step("plan", 10), sim.step("push", 5, side_effect="append")]},
        faults=[
            {"kind": "rate_limit", "capacity_factor": 0.01, "windows": [{"start_s": 0, "duration_s": 1000}]},
            {"kind": "schema_drift", "workers": [0]},
        ],
        api_rate_per_s=1.0,
        api_burst=1,
    )


def test_schema_drift_older_envelope_is_visible_and_lacks_the_hints(sim):
    """Worker 0 on contract 0.9: schema_version shows it, partial_success and retry_after_ms are gone; the policy is blinded."""
    r = sim.run(drift_world(sim), "structured", "structured")
    # t=0 plan takes the token -> 10.1 ; push 429 (token at 100) -> 10.3
    # without partial_success the policy restarts from step 0; without retry_after_ms it backs off
    # d1 in [0, 2): plan 429 at 10.3+d1 -> 10.5+d1 ; d2 in [0, 4): plan 429 -> 10.7+d1+d2 ; streak 3 -> escalate
    assert [type(d.action) for d in r.log] == [Retry, Retry, Escalate]
    for d in r.log:
        env = d.observation.envelope
        assert env.schema_version == "0.9"
        assert env.partial_success is None and env.retry_after_ms is None
        assert shown(env) == envelope_of("rate_limit")  # code, category and suggestion survive
    assert [d.action.resume_from for d in r.log[:2]] == [0, 0]
    d1, d2 = (d.action.delay_s for d in r.log[:2])
    assert 0 <= d1 < 2 and 0 <= d2 < 4
    # the truth of the first dispatch carried what the older envelope dropped
    first = r.reports[0]
    assert (first.schema_version, first.dropped_fields) == ("0.9", ("partial_success", "retry_after_ms"))
    assert first.retry_after_s == pytest.approx(89.7, **APPROX)
    current = STRUCTURED.render(dataclasses.replace(first, schema_version=None, dropped_fields=())).envelope
    assert current.schema_version == "1.0" and current.retry_after_ms == 89_700
    assert current.partial_success.completed_steps == ("0:plan",)
    assert_generic_shows_only_failed(first)  # the generic word is the same in either version
    rec = r.rec
    assert rec.schema_skews == 3
    assert rec.wasted_reasons == {"API token bucket still empty": 2}  # both retries long before a token is due
    assert rec.redone_steps == 2 and rec.commits == [[1], [0]] and rec.fault_hits == {"rate_limit": 3}
    assert rec.claim == "escalated" and rec.truth == "partial"
    assert rec.end_s == pytest.approx(10.7 + d1 + d2, **APPROX)
    # drift changes no truth by itself: it is not a fault hit
    assert "schema_drift" not in rec.fault_hits


def test_schema_drift_is_invisible_to_generic_and_counted_only_with_envelopes(sim):
    """Generic: the same drifted worker yields the same word 'failed' and no schema skew is counted."""
    r = sim.run(drift_world(sim), "blind-retry", "generic")
    assert r.rec.schema_skews == 0
    assert all(rep.schema_version == "0.9" for rep in r.reports)
    assert all(obs.envelope is None and obs.status == "failed" for _, obs in r.rendered)


def test_schema_drift_rollout_window_versions_by_report_time(sim):
    """Drift only in a rollout window [0, 5): a failure reported at 1.1 is 0.9, one reported at 8.3 is 1.0."""
    scn = sim.scenario(
        {"job": [sim.step("a", 6), sim.step("b", 1)]},
        faults=[
            {
                "kind": "network_blip",
                "probability": 1.0,
                "windows": [{"start_s": 0, "duration_s": 1}, {"start_s": 7, "duration_s": 1}],
            },
            {"kind": "schema_drift", "windows": [{"start_s": 0, "duration_s": 5}]},
        ],
    )
    r = sim.run(scn, "blind-retry", "structured")
    # a blips at 0 -> 1.1 (0.9) ; restart: a 1.1 -> 7.2 ; b at 7.2 blips -> 8.3 (1.0) ; a -> 14.4, b -> 15.5
    assert [o.envelope.schema_version for _, o in r.rendered if not o.ok] == ["0.9", "1.0"]
    assert r.rec.schema_skews == 1 and r.rec.claim == "success"
    assert r.rec.end_s == pytest.approx(15.5, **APPROX)


# --------------------------------------------------------------------------------------
# node_crash
# --------------------------------------------------------------------------------------


def plan_push(sim):
    return {"job": [sim.step("plan", 10), sim.step("push", 5, side_effect="append")]}


def crash_world(sim, at_s: float, arrive: float = 0.0, **fleet):
    return sim.scenario(
        plan_push(sim),
        arrivals=[(arrive, "job")],
        faults=[{"kind": "node_crash", "events": [{"worker": 0, "at_s": at_s}], "down_s": 100}],
        workers=2,
        **fleet,
    )


def test_node_crash_mid_call_is_noticed_after_the_heartbeat_timeout(sim):
    """w0 crashes at 5 s during plan: the loss is noticed 60 s after the crash; blind retries hit a down worker."""
    r = sim.run(crash_world(sim, 5.0, heartbeat_timeout_s=60), "blind-retry", "generic")
    # plan 0 -> would end 10.1, crash at 5: lost, no commit ; WORKER_LOST at 5 + 60 = 65
    # retries at 65, 65.3, 65.6 on w0 (down until 105): node_crash in 0.1 + 0.2 each -> 65.9
    rec = r.rec
    assert rec.commits == [[0], [0]] and rec.truth == "none" and rec.claim == "failed"
    assert rec.fault_hits == {"node_crash": 4} and rec.wasted_reasons == {"worker still down": 3}
    assert rec.calls == 4 and rec.end_s == pytest.approx(65.9, **APPROX)
    assert [round(t, 6) for t, *_ in r.output.fault_log] == [5.0, 65.0, 65.3, 65.6]
    lost = r.reports[0]
    assert (lost.failure, lost.failed_step, lost.item_failures) == ("node_crash", 0, ())  # no item result came back
    assert_generic_shows_only_failed(lost)


def test_node_crash_structured_requeues_on_a_healthy_worker(sim):
    """Structured: WORKER_LOST, resource -> reroute to w1 at 65 s; recovered, first fault at the crash instant."""
    r = sim.run(crash_world(sim, 5.0, heartbeat_timeout_s=60), "structured", "structured")
    [d] = r.log
    env = d.observation.envelope
    assert shown(env) == {
        "error_code": "WORKER_LOST",
        "category": "resource",
        "recoverable": True,
        "suggested_action": "requeue_on_healthy_worker",
    }
    assert env.partial_success.completed_steps == () and env.context == {"worker": "worker-0", "tool": "plan"}
    assert d.action == Reroute(0.0, 0, ())
    # noticed at 5 + 60 = 65 ; w1: plan -> 75.1 ; push -> 80.2
    rec = r.rec
    assert rec.worker == 1 and rec.commits == [[1], [1]] and rec.claim == "success" and r.out.recovered
    assert rec.calls == 3 and rec.wasted_retries == 0 and rec.redone_steps == 0
    assert rec.end_s == pytest.approx(80.2, **APPROX)
    assert r.out.time_to_recovery_s == pytest.approx(80.2 - 5.0, **APPROX)


def test_node_crash_after_a_committed_step_makes_it_redone(sim):
    """A crash during push loses the report of the committed plan: the requeued task redoes plan (no duplicate push)."""
    r = sim.run(crash_world(sim, 12.0, heartbeat_timeout_s=60), "structured", "structured")
    # plan 0 -> 10.1 commits ; push 10.1 -> would end 15.2, crash at 12: lost ; noticed at 72 ; the
    # orchestrator only knows the dispatch started at step 0 -> reroute from 0: plan 82.1 (redone), push 87.2
    [d] = r.log
    assert d.observation.envelope.partial_success.completed_steps == () and d.action.resume_from == 0
    rec = r.rec
    assert rec.commits == [[2], [1]] and rec.redone_steps == 1 and rec.duplicate_side_effects == 0
    assert [(round(t, 6), tool) for t, _, tool, _, _ in r.output.fault_log] == [(12.0, "push")]
    assert rec.end_s == pytest.approx(87.2, **APPROX)


def test_node_crash_call_to_a_down_worker_fails_fast(sim):
    """A dispatch to a worker that is down fails in 0.3 s: blind retries waste 3, structured reroutes and recovers."""
    blind = sim.run(crash_world(sim, 0.0, arrive=10.0), "blind-retry", "generic")
    # arrive 10 ; w0 down [0, 100): 4 x 0.3 -> 11.2
    b = blind.rec
    assert b.fault_hits == {"node_crash": 4} and b.wasted_reasons == {"worker still down": 3}
    assert b.claim == "failed" and b.truth == "none" and b.end_s == pytest.approx(11.2, **APPROX)
    assert blind.reports[0].item_failures == ((0, "node_crash"),)  # the call itself answered
    s = sim.run(crash_world(sim, 0.0, arrive=10.0), "structured", "structured")
    # 10.3 reroute to w1: plan 20.4, push 25.5
    assert s.log[0].action == Reroute(0.0, 0, ())
    assert s.rec.claim == "success" and s.rec.worker == 1 and s.rec.end_s == pytest.approx(25.5, **APPROX)


def test_node_crash_without_heartbeat_timeout_loses_the_task(sim):
    """heartbeat_timeout_s null: nobody notices the lost dispatch; the task stays in_flight forever (data loss)."""
    r = sim.run(crash_world(sim, 5.0, heartbeat_timeout_s=None), "structured", "structured")
    rec, out = r.rec, r.out
    assert r.log == [] and r.rendered == []  # no observation ever reaches the orchestrator
    assert rec.claim == "in_flight" and rec.end_s is None
    assert rec.truth == "none" and rec.fault_hits == {"node_crash": 1}
    assert not out.silent_failure and not out.recovered
    assert r.metrics["unfinished_tasks"] == 1.0


def _fan_crash(sim, crash: bool):
    faults = [{"kind": "timeout", "probability": 0.5, "committed_probability": 0.0, "timeout_s": 30}]
    if crash:  # appended: the timeout rule keeps index 0, so its per-call draws are unchanged
        faults.append({"kind": "node_crash", "events": [{"worker": 0, "at_s": 10}], "down_s": 100})
    return sim.scenario(
        {"fan": [sim.step("sync", 4, fan_out=4, side_effect="idempotent")]}, faults=faults, heartbeat_timeout_s=60
    )


def test_items_finished_before_the_crash_took_effect(sim):
    """Fan-out items done at 4.1 s took effect although w0 crashed at 10 s."""
    for seed in range(30):  # a seed where some of the 4 items hang 30 s and the others finish at 4.1 s
        base = sim.run(_fan_crash(sim, crash=False), BlindRetry(0), "generic", seed)
        if 0 < sum(base.rec.commits[0]) < 4:
            break
    else:
        pytest.fail("no seed in 0..29 mixes finished and hanging items")
    r = sim.run(_fan_crash(sim, crash=True), BlindRetry(0), "generic", seed)
    # the finished items ended at 4.1 < 10 (crash): they committed.
    assert r.rec.commits == base.rec.commits
    # ... and the crash really happened: without it the hanging items time out at 30 s (as
    # in the base run); with it the dispatch is lost at 10 s, noticed at 10 + 60 = 70 s.
    assert base.rec.fault_hits.get("node_crash", 0) == 0 and base.rec.end_s == pytest.approx(30.0, **APPROX)
    assert r.rec.fault_hits == {"node_crash": 1}
    assert [(round(t, 6), kind, worker) for t, kind, _, worker, _ in r.output.fault_log] == [(10.0, "node_crash", 0)]
    assert r.rec.end_s == pytest.approx(70.0, **APPROX) and r.rec.claim == "failed"


def test_late_crash_is_noticed_a_heartbeat_timeout_after_the_crash(sim):
    """The orchestrator cannot see the crash itself: it learns of it when heartbeats have been missing for 60 s."""
    scn = sim.scenario(
        {"job": [sim.step("long", 100)]},
        faults=[{"kind": "node_crash", "events": [{"worker": 0, "at_s": 80}], "down_s": 100}],
        heartbeat_timeout_s=60,
    )
    r = sim.run(scn, BlindRetry(0), "structured")
    # dispatched at 0, crash at 80 (mid-call), WORKER_LOST noticed at 80 + 60 = 140, given up
    assert r.rec.end_s == pytest.approx(140.0, **APPROX)


# --------------------------------------------------------------------------------------
# network_partition
# --------------------------------------------------------------------------------------


def partition_world(sim, start_s: float = 0.0):
    # 2 orchestrators: task 0 -> orchestrator 0, worker 0 ; task 1 -> orchestrator 1, worker 1
    return sim.scenario(
        plan_push(sim),
        arrivals=[(0.0, "job"), (0.0, "job")],
        faults=[
            {
                "kind": "network_partition",
                "orchestrators": [0],
                "workers": [0],
                "windows": [{"start_s": start_s, "duration_s": 1000}],
                "connect_timeout_s": 10,
            }
        ],
        workers=2,
        orchestrators=2,
    )


def test_network_partition_blind_retry_waits_out_connect_timeouts(sim):
    """Orchestrator 0 cannot reach worker 0: each dispatch fails after the 10 s connect timeout, 3 wasted."""
    r = sim.run(partition_world(sim), "blind-retry", "generic")
    # dispatches at 0, 10, 20, 30, each NETWORK_PARTITION after 10 s -> 40 ; no call ever ran
    t0, t1 = r.records
    assert t0.calls == 0 and t0.commits == [[0], [0]] and t0.claim == "failed" and t0.truth == "none"
    assert t0.fault_hits == {"network_partition": 4} and t0.wasted_reasons == {"still partitioned": 3}
    assert t0.end_s == pytest.approx(40.0, **APPROX)
    assert [t for t, *_ in r.output.fault_log] == [0, 10, 20, 30]  # noted at each dispatch instant
    # orchestrator 1 and worker 1 are unaffected
    assert t1.claim == "success" and t1.fault_hits == {} and t1.end_s == pytest.approx(15.2, **APPROX)
    report = r.reports[0]
    assert (report.failure, report.item_failures) == ("network_partition", ())
    assert_generic_shows_only_failed(report)


def test_network_partition_structured_reroutes_to_a_reachable_worker(sim):
    """Structured: NETWORK_PARTITION, resource -> reroute to worker 1 at 10 s; recovered, nothing wasted."""
    r = sim.run(partition_world(sim), "structured", "structured")
    [d] = r.log
    assert shown(d.observation.envelope) == {
        "error_code": "NETWORK_PARTITION",
        "category": "resource",
        "recoverable": True,
        "suggested_action": "reroute_to_reachable_worker",
    }
    assert d.action == Reroute(0.0, 0, ())
    # w1 at 10: plan 20.1, push 25.2
    t0 = r.records[0]
    assert t0.worker == 1 and t0.claim == "success" and r.outcomes[0].recovered
    assert t0.calls == 2 and t0.wasted_retries == 0 and t0.end_s == pytest.approx(25.2, **APPROX)


def test_network_partition_is_checked_at_dispatch_only(sim):
    """A partition that opens mid-dispatch (at 5 s) does not touch a dispatch already under way."""
    r = sim.run(partition_world(sim, start_s=5.0), "blind-retry", "generic")
    t0 = r.records[0]
    assert t0.claim == "success" and t0.fault_hits == {} and t0.end_s == pytest.approx(15.2, **APPROX)


# --------------------------------------------------------------------------------------
# latency_spike
# --------------------------------------------------------------------------------------


def test_latency_spike_without_call_timeout_only_slows_calls(sim):
    """x10 + 2 s latency in [0, 10): each call's round trip becomes 3 s; no fault hit, the truth is full."""
    scn = sim.scenario(
        plan_push(sim),
        faults=[{"kind": "latency_spike", "windows": [{"start_s": 0, "duration_s": 10}], "factor": 10, "add_s": 2}],
    )
    r = sim.run(scn, "blind-retry", "generic")
    # plan at 0: 0.1 x 10 + 2 = 3 + 10 -> 13 ; push at 13 (outside): 5.1 -> 18.1
    assert r.rec.end_s == pytest.approx(18.1, **APPROX)
    assert r.rec.fault_hits == {} and r.rec.claim == "success" and r.rec.truth == "full"


def spike_world(sim):
    return sim.scenario(
        {"job": [sim.step("post", 5, side_effect="append")]},
        faults=[{"kind": "latency_spike", "windows": [{"start_s": 0, "duration_s": 10}], "factor": 50}],
        call_timeout_s=8,
    )


def test_latency_spike_with_call_timeout_is_an_ambiguous_timeout(sim):
    """x50 latency makes a 5 s post take 10 s > call timeout 8 s: TOOL_TIMEOUT whose commit the envelope cannot tell."""
    # attempt at 0 and retry at 8 (inside [0, 10)): 5 + 5 = 10 > 8 -> time out after 8 s each;
    # retry at 16: 5.1 -> 21.1.  Each hung call committed with P 0.5, drawn per call.
    committed = []
    envelopes = []
    for seed in range(4):
        r = sim.run(spike_world(sim), "blind-retry", "structured", seed)
        rec = r.rec
        c = rec.commits[0][0] - 1  # commits beyond the final successful post
        committed.append(c)
        assert rec.fault_hits == {"latency_spike": 2}
        # the retry at 8 s still meets the spike (wasted and failed by the truth); the one at 16 s does not
        assert rec.wasted_reasons == {"still too slow in the spike": 1} and rec.failed_retries == 1
        assert rec.claim == "success" and rec.truth == "full" and rec.end_s == pytest.approx(21.1, **APPROX)
        assert rec.duplicate_side_effects == c
        assert [round(t, 6) for t, *_ in r.output.fault_log] == [0.0, 8.0]
        for report, obs in r.rendered:
            if not report.completed:
                assert report.failure == "latency_spike"
                assert_generic_shows_only_failed(report)
                envelopes.append(obs.envelope)
    assert 0 in committed and any(c > 0 for c in committed)  # same observation, different truths
    assert all(shown(e) == envelope_of("latency_spike") for e in envelopes)
    assert shown(envelopes[0]) == shown(
        STRUCTURED.render(AttemptReport(0, 0, 0, 0, ("post",), failure="timeout")).envelope
    )  # a spike reads as a plain TOOL_TIMEOUT
    assert len({e.model_dump_json() for e in envelopes}) == 1


def test_latency_spike_timeout_says_outcome_unknown(sim):
    """a call cut by call_timeout_s during a spike may have committed, so the envelope says outcome unknown."""
    r = sim.run(spike_world(sim), BlindRetry(0), "structured")
    [(report, obs)] = r.rendered
    assert report.failure == "latency_spike"
    # CallModel.decide: committed with fleet.cut_call_committed_probability = 0.5, like a plain timeout
    assert obs.envelope.context.get("outcome") == "unknown"


# --------------------------------------------------------------------------------------
# quota_exhausted
# --------------------------------------------------------------------------------------


def quota_world(sim):
    """a -> b -> c (10 s each, API) under a fleet-wide quota of 2 API calls per day."""
    return sim.scenario(
        {"job": [sim.step("a", 10), sim.step("b", 10), sim.step("c", 10)]},
        faults=[{"kind": "quota_exhausted", "calls_per_day": 2}],
    )


def test_quota_exhausted_blind_retries_are_wasted_until_the_reset(sim):
    """a and b spend the quota; c fails with a retry-after to the next day; blind retries waste 3."""
    r = sim.run(quota_world(sim), "blind-retry", "generic")
    # a 10.1, b 20.2, c quota spent: 0.1 + 0.1 -> 20.4 ; restarts at 20.4, 20.6, 20.8: a fails -> 21.0
    rec = r.rec
    assert rec.commits == [[1], [1], [0]] and rec.claim == "failed" and rec.truth == "partial"
    assert rec.fault_hits == {"quota_exhausted": 4} and rec.wasted_reasons == {"same exhausted quota": 3}
    assert rec.calls == 6 and rec.redone_steps == 3 and rec.end_s == pytest.approx(21.0, **APPROX)
    first = r.reports[0]
    assert first.retry_after_s == pytest.approx(86_400 - 20.4, **APPROX)  # reset at the next day
    assert_generic_shows_only_failed(first)
    env = STRUCTURED.render(first).envelope
    assert shown(env) == {
        "error_code": "QUOTA_EXCEEDED",
        "category": "resource",
        "recoverable": True,
        "suggested_action": "wait_for_quota_reset",
    }
    assert env.retry_after_ms == 86_379_600 and env.partial_success.completed_steps == ("0:a", "1:b")


def test_quota_exhausted_waiting_for_the_reset_recovers(sim):
    """Waiting the retry-after hint (+1 s) resumes c on day 2 with a fresh quota: recovered, nothing wasted."""
    r = sim.run(quota_world(sim), sim.Recorder(FollowSuggestion()), "structured")
    [d] = r.log
    assert d.action == Retry(86_379.6 + 1.0, 2, ())
    # 20.4 + 86380.6 = 86401 (day 1, quota reset) ; c -> 86411.1
    rec = r.rec
    assert rec.commits == [[1], [1], [1]] and rec.claim == "success" and r.out.recovered
    assert rec.wasted_retries == 0 and rec.calls == 4
    assert rec.end_s == pytest.approx(86_411.1, **APPROX)


def test_quota_exhausted_structured_tree_reroutes_into_the_same_quota(sim):
    """Today's decision tree reroutes a 'resource' error: the quota is fleet-wide, so 2 wasted reroutes, then escalate."""
    r = sim.run(quota_world(sim), "structured", "structured")
    # one worker: Reroute keeps it ; c fails at 20.4, 20.6 (wasted), 20.8 (wasted) ; streak 3 -> escalate
    assert [type(d.action) for d in r.log] == [Reroute, Reroute, Escalate]
    assert all(d.observation.envelope.retry_after_ms > 86_000_000 for d in r.log)  # the hint was there
    rec = r.rec
    assert rec.wasted_reasons == {"same exhausted quota": 2} and rec.claim == "escalated"
    assert rec.end_s == pytest.approx(20.8, **APPROX)


@pytest.mark.parametrize(
    "kind, reason",
    [
        ("validation_error", "input still invalid"),
        ("permission_denied", "access still denied"),
        ("not_found", "same missing source"),
    ],
)
def test_successful_reroute_away_from_a_targeted_fault_is_not_wasted(sim, kind, reason):
    """A fault targeted at worker 0 does not hold on worker 1, so the reroute that recovers is not wasted."""
    scn = sim.scenario(
        {"job": [sim.step("call", 1)]}, faults=[{"kind": kind, "probability": 1.0, "workers": [0]}], workers=2
    )
    r = sim.run(scn, AlwaysReroute(), "generic")
    # w0 fails ; reroute to w1 (not targeted) -> the call succeeds, the task recovers
    assert r.rec.claim == "success" and r.rec.worker == 1
    assert r.rec.wasted_retries == 0 and reason not in r.rec.wasted_reasons, r.rec.wasted_reasons


def test_missing_dependency_below_probability_one_retries_are_wasted(sim):
    """With p=0.5 the tool is missing on some workers for good; blind retries there are wasted."""
    scn = sim.scenario(
        {"job": [sim.step("build", 1, uses_api=False)]},
        arrivals=[(0.0, "job")] * 8,
        faults=[{"kind": "missing_dependency", "probability": 0.5}],
        workers=8,
    )
    r = sim.run(scn, "blind-retry", "generic")
    missing = [rec for rec in r.records if rec.fault_hits]
    assert missing and all(rec.fault_hits == {"missing_dependency": 4} for rec in missing)  # it never comes back
    # each of those tasks retried 3 times on a worker still lacking the tool.
    assert all(rec.wasted_reasons == {"tool still missing": 3} for rec in missing)


def test_missing_dependency_workers_differ_across_seeds(sim):
    """which workers lack a tool (p=0.5) is drawn per seed, so seeds explore different worlds."""
    scn = sim.scenario(
        {"job": [sim.step("build", 1, uses_api=False)]},
        arrivals=[(0.0, "job")] * 8,
        faults=[{"kind": "missing_dependency", "probability": 0.5}],
        workers=8,
    )
    patterns = set()
    for seed in range(4):
        r = sim.run(scn, BlindRetry(0), "generic", seed)
        patterns.add(tuple(rec.claim for rec in r.records))
    # 8 workers, 4 seeds: identical patterns by chance have probability (1/256)**3.
    assert len(patterns) > 1


# --------------------------------------------------------------------------------------
# the orchestrator misreading a failure as a success, and the guardrail
# --------------------------------------------------------------------------------------


class GuardedBlindRetry(BlindRetry):
    """Blind retry with a final-answer guardrail."""

    guardrail = True


def _misread_world(sim, p: float):
    return sim.scenario(
        {"job": [sim.step("plan", 10)]},
        faults=[{"kind": "network_blip", "probability": 1.0}],
        misread_probability=p,
    )


def test_misreading_with_certainty_claims_success_on_the_first_failure(sim):
    """misread_probability 1 on the generic format (factor 1): the first failure is read as success -> silent failure."""
    r = sim.run(_misread_world(sim, 1.0), "blind-retry", "generic")
    # the blip fails the only call at 1.1; the orchestrator reads it as done and claims success
    assert r.rec.claim == "success" and r.rec.truth == "none"
    assert r.rec.misreads == 1 and r.rec.retries == 0 and r.out.silent_failure
    assert r.metrics["silent_failure_rate"] == 1.0


def test_guardrail_needs_a_failure_flag_to_catch_a_misread(sim):
    """A guardrail blocks every misread on the structured format (failure flag) but cannot on the generic one."""
    scn = sim.scenario(
        {"job": [sim.step("plan", 10)]},
        arrivals=[(float(i), "job") for i in range(20)],
        faults=[{"kind": "network_blip", "probability": 1.0}],
        misread_probability=1.0,
    )
    # structured: factor 0.2 -> each of the 20 x 4 failed dispatches is misread with p = 0.2
    unguarded = sim.run(scn, BlindRetry(), "structured")
    assert sum(r.misreads for r in unguarded.records) > 0
    assert unguarded.metrics["silent_failure_rate"] > 0
    guarded = sim.run(scn, GuardedBlindRetry(), "structured")
    assert sum(r.misreads for r in guarded.records) == 0
    assert sum(r.misreads_caught for r in guarded.records) > 0
    assert guarded.metrics["silent_failure_rate"] == 0.0
    assert all(r.claim == "failed" for r in guarded.records)
    # generic: factor 1 -> every task's first failure is misread; no flag for the guardrail to check
    generic = sim.run(scn, GuardedBlindRetry(), "generic")
    assert all(r.misreads == 1 and r.claim == "success" for r in generic.records)
    assert sum(r.misreads_caught for r in generic.records) == 0


def test_misread_probability_zero_never_misreads(sim):
    """With misread_probability 0 every failure is read as a failure."""
    r = sim.run(_misread_world(sim, 0.0), "blind-retry", "generic")
    assert r.rec.misreads == 0 and r.rec.claim == "failed" and r.rec.retries == 3
