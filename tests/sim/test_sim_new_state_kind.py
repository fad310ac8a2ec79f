"""A state kind with a retry-after hint, added as one record and one handler, met by the simulator, the judge and real code.

The throwaway kind is a tool backend down for maintenance in declared windows: a call
of a targeted tool inside a window is refused at once (503) with a retry-after hint
pointing at the window's end.  It is registered the way a newcomer adds a state kind: a
:class:`~fleetchaos.sim.kinds.FaultKind` record in ``KINDS``, a pydantic model in
``FAULT_MODELS``, and a :class:`~fleetchaos.sim.plan.StateKind` handler in
``STATE_KINDS`` (all monkeypatched, so nothing leaks into other tests), and nothing
else: the plan builder schedules it, the call decision meets it through the handler's
gate, the wasted-retry judge asks the handler whether the window still holds, and a
real-code run meets it through the same call decision.

Every figure below is computed by hand from the world's constants: a round trip of
0.1 s (latency 0.05 s each way, cv 0), the record's fail-fast 0.2 s, a 5 s step.
"""

from __future__ import annotations

import time
from bisect import bisect_right
from typing import Literal

import pytest

import fleetchaos
from fleetchaos.policies.readers import retry_after_s_of
from fleetchaos.real import InjectedFault, run_real
from fleetchaos.results.metrics import compute_run
from fleetchaos.scenario.load import Scenario
from fleetchaos.sim.fault_specs import FAULT_MODELS, Window, _Fault
from fleetchaos.sim.kinds import EXHAUSTED_RESOURCE, KINDS, STATE, STATE_CAUSE, FailureContract, FaultKind, Waste, Wire
from fleetchaos.sim.observation import GiveUp, Retry
from fleetchaos.sim.plan import FaultPlan, Gate, LastFailure, Placement, RetryAt, StateKind
from fleetchaos.sim.schedules import Spans, expand_windows
from fleetchaos.sim.state import NodeView, SharedCapacity, SharedView
from fleetchaos.sim.state_kinds import STATE_KINDS
from fleetchaos.sim.template import Step
from fleetchaos.sim.waste import SAME_BEFORE_HINT

NAME = "maintenance_window"
REASON = "backend still in maintenance"

RECORD = FaultKind(
    name=NAME,
    stage=STATE,
    contract=FailureContract("UNDER_MAINTENANCE", "transient", True, "wait_retry_after"),
    fail_fast_s=0.2,
    outcome_unknown=False,
    retry_after=True,
    transport_retryable=False,
    retry_helps=True,
    failure_type="unavailable",
    subagent_category="transient",
    alternative=None,
    wire=Wire(503, "Service Unavailable", "ERR_MAINTENANCE"),
    waste=Waste(STATE_CAUSE, REASON, EXHAUSTED_RESOURCE),
    remedy=None,
    persistent_scope=None,
    effect="Inside its windows every call of the targeted tools is refused (503) until the window ends.",
)


class MaintenanceWindow(_Fault):
    """A tool's backend is down for maintenance in these windows."""

    kind: Literal["maintenance_window"] = "maintenance_window"
    tools: list[str]
    windows: list[Window]


class Maintenance(StateKind):
    """The handler: windows per tool in the plan, a gate on the tool's calls, the window's truth for the judge."""

    name = NAME

    def schedule(self, fault: _Fault, plan: FaultPlan, at: Placement) -> None:
        assert isinstance(fault, MaintenanceWindow)
        spans = plan.state.setdefault(NAME, {})
        for tool in fault.tools:
            spans.setdefault(tool, []).extend(expand_windows(fault.windows, at.horizon_s))

    def finish(self, plan: FaultPlan) -> None:
        if NAME in plan.state:
            plan.state[NAME] = {tool: Spans(spans) for tool, spans in plan.state[NAME].items()}

    def describe(self, plan: FaultPlan) -> list[str]:
        return [
            f"tool {tool}: in maintenance from {start:.0f}s to {end:.0f}s"
            for tool, spans in plan.state.get(NAME, {}).items()
            for start, end in spans.spans
        ]

    def gate(self, plan: FaultPlan, shared: SharedView, node: NodeView, step: Step) -> Gate | None:
        spans = plan.state.get(NAME, {}).get(step.name)
        if spans is None:
            return None
        ends = [end for _, end in spans.spans]

        def in_maintenance(now: float) -> float | None:
            i = bisect_right(ends, now)
            if i < len(ends) and spans.spans[i][0] <= now:
                return ends[i]  # refused until the window ends: the retry-after instant
            return None

        return in_maintenance

    def holds(self, plan: FaultPlan, shared: SharedCapacity, last: LastFailure, retry: RetryAt) -> bool:
        return plan.state[NAME][retry.tpl.names[last.step]].active(retry.now)


@pytest.fixture
def maintenance(monkeypatch) -> MaintenanceWindow:
    """Register the kind in its three places (undone after the test); the fault: fetch in maintenance in [0 s, 30 s)."""
    assert NAME not in KINDS and NAME not in FAULT_MODELS and NAME not in STATE_KINDS
    monkeypatch.setitem(KINDS, NAME, RECORD)
    monkeypatch.setitem(FAULT_MODELS, NAME, MaintenanceWindow)
    monkeypatch.setitem(STATE_KINDS, NAME, Maintenance())
    return MaintenanceWindow(tools=["fetch"], windows=[Window(start_s=0, duration_s=30)])


class RetryEvery5s:
    """Retries twice, 5 s apart, whatever the hint says, then gives up."""

    name = "every-5s"

    def decide(self, observation, history):
        return Retry(delay_s=5.0) if history.retries < 2 else GiveUp()


class WaitTheHint:
    """Waits exactly what the retry-after hint says, once."""

    name = "wait-the-hint"

    def decide(self, observation, history):
        hint = retry_after_s_of(observation)
        return Retry(delay_s=hint) if hint is not None and history.retries < 1 else GiveUp()


def _world(sim, fault: MaintenanceWindow) -> Scenario:
    return sim.scenario({"fetch_only": [sim.step("fetch", 5)]}).model_copy(update={"faults": [fault]})


def test_the_simulator_meets_it_and_the_hint_points_at_the_windows_end(maintenance, sim):
    """The first call (t=0) is refused after 0.1 + 0.2 s with the hint 30 - 0.3 = 29.7 s; waiting it succeeds at 30 s."""
    r = sim.run(_world(sim, maintenance), WaitTheHint(), "structured")
    first = r.reports[0]
    assert (first.failure, first.failed_step) == (NAME, 0)
    assert first.retry_after_s == pytest.approx(29.7)
    envelope = r.rendered[0][1].envelope
    assert (envelope.error_code, envelope.retry_after_ms) == ("UNDER_MAINTENANCE", 29_700)
    rec = r.rec
    # 0.3 s refused, 29.7 s waited, then the call: 0.1 + 5 s
    assert (rec.claim, rec.retries, rec.wasted_retries, rec.failed_retries) == ("success", 1, 0, 0)
    assert rec.end_s == pytest.approx(35.1)
    assert rec.fault_hits == {NAME: 1} and r.out.recovered
    assert r.output.plan.describe() == ["tool fetch: in maintenance from 0s to 30s"]


def test_the_waste_judge_counts_retries_inside_the_window_whatever_the_hint(maintenance, sim):
    """Retries at 5.3 s and 10.6 s land inside the window: both wasted, both failed before the hint's instant."""
    r = sim.run(_world(sim, maintenance), RetryEvery5s(), "structured")
    rec = r.rec
    assert (rec.claim, rec.retries, rec.fault_hits) == ("failed", 2, {NAME: 3})
    assert rec.end_s == pytest.approx(3 * 0.3 + 2 * 5.0)
    assert rec.wasted_reasons == {REASON: 2}
    assert rec.failed_retry_reasons == {SAME_BEFORE_HINT: 2}
    _, breakdowns, _ = compute_run(r.output, _world(sim, maintenance).fleet)
    assert breakdowns["wasted_retries_by_family"] == {EXHAUSTED_RESOURCE: 2}
    assert breakdowns["fault_hits_by_error_code"] == {"UNDER_MAINTENANCE": 3}


def test_the_judge_reads_the_window_not_the_hint(maintenance, sim):
    """A hint that lies (pointing at 10 s) does not make a retry at 10.3 s any less wasted: the window runs to 30 s."""

    class Trusting:
        name = "trusting"

        def decide(self, observation, history):
            return Retry(delay_s=10.0) if history.retries < 1 else GiveUp()

    r = sim.run(_world(sim, maintenance), Trusting(), "structured")
    assert r.rec.wasted_reasons == {REASON: 1}


@fleetchaos.tool("fetch")
def fetch(task_id: int) -> str:
    return f"page-{task_id}"


def _real_scenario(fault: MaintenanceWindow) -> Scenario:
    return Scenario.model_validate(
        {
            "name": "real-maintenance",
            "duration_s": 600,
            "fleet": {"orchestrators": 1, "workers": 1, "network_latency": {"mean_s": 0.05, "cv": 0}},
            "workload": {
                "templates": [{"name": "t", "steps": [{"tool": "fetch", "duration": {"mean_s": 5, "cv": 0}}]}],
                "arrivals": [{"at_s": 0.0, "template": "t"}],
            },
        }
    ).model_copy(update={"faults": [fault]})


def _agent(wait: str):
    def agent(task, rt):
        for _ in range(10):
            try:
                fetch(task.id)
                return "success"
            except InjectedFault as exc:
                time.sleep(exc.fault.retry_after_s if wait == "hint" else 5.0)
        return "failed"

    return agent


def test_a_real_code_run_meets_it_through_the_same_decision_and_judge(maintenance):
    """Real code meets the refusal with its hint; retrying every 5 s wastes 5 retries, waiting the hint none."""
    spec = _real_scenario(maintenance)
    patient = run_real(spec, _agent("hint"), seed=1)
    (rec,) = patient.records
    assert (rec.claim, rec.retries, rec.wasted_retries, rec.fault_hits) == ("success", 1, 0, {NAME: 1})
    assert rec.end_s == pytest.approx(35.1)  # refused at 0.3 s, waited 29.7 s, then 0.1 + 5 s
    assert patient.result.fault_schedule == ["tool fetch: in maintenance from 0s to 30s"]
    hasty = run_real(spec, _agent("5s"), seed=1)
    (rec,) = hasty.records
    # tries at 0, 5.3, 10.6, 15.9, 21.2, 26.5 are refused; the one at 31.8 succeeds
    assert (rec.claim, rec.retries, rec.fault_hits) == ("success", 6, {NAME: 6})
    assert rec.wasted_reasons == {REASON: 5} and rec.failed_retry_reasons == {SAME_BEFORE_HINT: 5}
    assert hasty.metrics["wasted_retries"] == 5
