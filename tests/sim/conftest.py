"""Shared helpers for the simulation tests: tiny hand-checkable worlds.

Every world built here is deterministic by construction:

* network latency ``mean_s: 0.05, cv: 0``, so every call pays a round trip of exactly
  ``2 x 0.05 = 0.1`` s (``World.latency_mean``);
* every step duration has ``cv: 0``, so a successful call lasts ``0.1 + mean_s``;
* tasks arrive at explicit instants (``workload.arrivals``);
* faults either have probability 1.0 inside explicit ``windows`` or are placed by
  explicit ``events``;
* ``api_burst`` is huge unless a test is about rate limits.

Fail-fast durations (``FaultKind.fail_fast_s`` in ``fleetchaos.sim.kinds``) on top of the round trip:
network blip 1.0 s, rate limit 0.1 s, full disk 0.5 s, expired key 0.3 s.  A timeout
lasts exactly its ``timeout_s`` (no round trip added).

The helpers are exposed as fixtures (not imported from this module) so that the
``conftest`` module name never clashes with another test directory's conftest.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from fleetchaos.policies import get_policy
from fleetchaos.results.metrics import compute
from fleetchaos.results.oracle import TaskOutcome
from fleetchaos.scenario.load import Scenario
from fleetchaos.sim.formats import ErrorFormat, get_format
from fleetchaos.sim.ledger import TaskRecord
from fleetchaos.sim.observation import Action, Observation, TaskHistory
from fleetchaos.sim.truth import AttemptReport
from fleetchaos.sim.world import RunOutput, World

#: One network round trip with ``network_latency {mean_s: 0.05, cv: 0}``.
RTT = 0.1
#: Fail-fast extras (mirrors the records' documented fail_fast_s values).
FF_BLIP, FF_RATE, FF_DISK, FF_KEY = 1.0, 0.1, 0.5, 0.3


#: The model's reading of errors switched off (fleet.model): a hand-checked world's orchestrator does what its policy says.
READS_RIGHT = {"give_up_probability": 0.0, "retry_permanent_probability": 0.0, "notice_silent_probability": 0.0}


def step(tool: str, mean_s: float, **kw: Any) -> dict:
    """A constant-duration step spec as a plain dict."""
    return {"tool": tool, "duration": {"mean_s": mean_s, "cv": 0}, **kw}


def make_scenario(
    templates: list[dict] | dict[str, list[dict]],
    arrivals: list[tuple[float, str]] | None = None,
    faults: list[dict] | None = None,
    *,
    workers: int = 1,
    duration_s: float = 10_000,
    **fleet: Any,
) -> Scenario:
    """A tiny scenario: constant latency, explicit arrivals, a huge API burst, no misreading by default.

    ``templates`` maps a template name to its list of step dicts.
    ``arrivals`` defaults to one task of the first template at t=0.
    """
    if isinstance(templates, dict):
        tpl = [{"name": name, "steps": steps} for name, steps in templates.items()]
    else:
        tpl = templates
    if arrivals is None:
        arrivals = [(0.0, tpl[0]["name"])]
    fleet_spec = {
        "orchestrators": 1,
        "workers": workers,
        "network_latency": {"mean_s": 0.05, "cv": 0},
        "api_rate_per_s": 1000.0,
        "api_burst": 1_000_000,
        "misread_probability": 0.0,  # hand-checked worlds: the orchestrator reads every failure right
    }
    # ... and never gives up early, retries past its policy or notices a silent failure on its own
    model = {**READS_RIGHT, **fleet.pop("model", {})}
    fleet_spec.update(fleet)
    fleet_spec["model"] = model
    return Scenario.model_validate(
        {
            "name": "sim-test",
            "description": "hand-checkable test world",
            "duration_s": duration_s,
            "fleet": fleet_spec,
            "workload": {
                "templates": tpl,
                "arrivals": [{"at_s": at, "template": name} for at, name in arrivals],
            },
            "faults": faults or [],
        }
    )


@dataclass
class Decision:
    """One call of a policy's decide(), as the policy saw it and answered."""

    observation: Observation
    attempts: int
    retries: int
    same_failure_streak: int
    elapsed_s: float
    worker: int
    action: Action


class Recorder:
    """Wraps a policy and logs every decision; behaviour is unchanged (same rng use)."""

    def __init__(self, inner: Any):
        self.inner = inner
        self.name = getattr(inner, "name", "recorded")
        self.log: list[Decision] = []

    def decide(self, observation: Observation, history: TaskHistory) -> Action:
        action = self.inner.decide(observation, history)
        self.log.append(
            Decision(
                observation,
                history.attempts,
                history.retries,
                history.same_failure_streak,
                history.elapsed_s,
                history.worker,
                action,
            )
        )
        return action

    def __getattr__(self, name: str) -> Any:
        if name == "inner":  # not set yet (copying, unpickling): no recursion
            raise AttributeError(name)
        return getattr(self.inner, name)  # guardrail, transport and other driver attributes, unchanged

    def delays(self) -> list[float]:
        """delay_s of every decided action that has one, in order."""
        return [d.action.delay_s for d in self.log if hasattr(d.action, "delay_s")]


class FormatRecorder:
    """Wraps an error format and logs every (report, observation) it renders; behaviour unchanged.

    The recorded :class:`AttemptReport` is the truth of a dispatch: tests render it again
    through another format to compare what each format shows for the same truth.
    """

    def __init__(self, inner: ErrorFormat):
        self.inner = inner
        self.name = inner.name
        self.partial_batch = getattr(inner, "partial_batch", None)
        self.rendered: list[tuple[AttemptReport, Observation]] = []

    def render(self, report: AttemptReport) -> Observation:
        observation = self.inner.render(report)
        self.rendered.append((report, observation))
        return observation

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)  # every other format attribute, unchanged


@dataclass
class Sim:
    """Everything one small run produced, ready for assertions."""

    output: RunOutput
    records: list[TaskRecord]
    metrics: dict[str, float | None]
    breakdowns: dict[str, dict[str, int]]
    outcomes: list[TaskOutcome]
    recorder: Recorder | None = None
    extra: dict = field(default_factory=dict)
    rendered: list[tuple[AttemptReport, Observation]] = field(default_factory=list)
    """Every dispatch the format rendered, as (truth report, observation), in order."""

    @property
    def reports(self) -> list[AttemptReport]:
        """The truth of every rendered dispatch, in order."""
        return [report for report, _ in self.rendered]

    @property
    def rec(self) -> TaskRecord:
        """The record of the only (or first) task."""
        return self.records[0]

    @property
    def out(self) -> TaskOutcome:
        """The oracle's verdict on the only (or first) task."""
        return self.outcomes[0]

    @property
    def log(self) -> list[Decision]:
        assert self.recorder is not None
        return self.recorder.log


def simulate(scenario: Scenario, policy: Any, errors: str | ErrorFormat, seed: int = 0, **world_kw: Any) -> Sim:
    """Run one world.  ``policy`` is a built-in name or a policy object.

    A built-in (named) policy is wrapped in a :class:`Recorder`; an object is run as is.
    ``errors`` is a built-in format name or a format object; either way it is wrapped in
    a :class:`FormatRecorder` (``Sim.rendered``).
    Records are sorted by task id so ``records[i]`` is task ``i``.
    """
    recorder = None
    if isinstance(policy, str):
        recorder = Recorder(get_policy(policy))
        policy_obj: Any = recorder
    else:
        policy_obj = policy
        if isinstance(policy, Recorder):
            recorder = policy
    fmt = FormatRecorder(get_format(errors) if isinstance(errors, str) else errors)
    output = World(scenario, policy_obj, fmt, seed, **world_kw).run()
    records = sorted(output.records, key=lambda r: r.id)
    metrics, breakdowns, outcomes = compute(records, scenario.fleet)
    return Sim(output, records, metrics, breakdowns, outcomes, recorder, rendered=fmt.rendered)


class _Helpers:
    """Namespace handed to tests by the ``sim`` fixture."""

    RTT = RTT
    FF_BLIP = FF_BLIP
    FF_RATE = FF_RATE
    FF_DISK = FF_DISK
    FF_KEY = FF_KEY
    step = staticmethod(step)
    scenario = staticmethod(make_scenario)
    run = staticmethod(simulate)
    Recorder = Recorder
    FormatRecorder = FormatRecorder


@pytest.fixture
def sim() -> type[_Helpers]:
    """Helpers for building and running tiny hand-checkable worlds."""
    return _Helpers
