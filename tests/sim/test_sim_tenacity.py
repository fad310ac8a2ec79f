"""A team's tenacity object runs as a policy in a world, with the attempt times tenacity itself gives.

``RETRY`` below is a team's production configuration, defined in this module and found by
its import path (``get_policy("<this module>:RETRY")``), as ``--policy mypkg.retrying:RETRY``
finds it.  It runs a day of the default scenario (lighter, more network blips, no misreads),
and every task it retried is replayed through tenacity's own ``Retrying`` loop with a fake
clock: each attempt ends when the world's attempt ended and raises the exception the
world's failure maps to, and tenacity's ``random`` is the task's seeded stream (its state
before the policy's first draw).  tenacity's attempt start times must be the world's
dispatch times, its sleeps the world's retry delays, its outcome the task's: jitter
included, in simulated seconds, for every retried task.
"""

from __future__ import annotations

import random
import sys
from dataclasses import dataclass, field

import pytest
import yaml
from tenacity_clock import FakeClock

tenacity = pytest.importorskip("tenacity")

import fleetchaos.catalogue as catalogue  # noqa: E402
from fleetchaos.policies import TenacityPolicy, get_policy  # noqa: E402
from fleetchaos.scenario.load import parse_scenario  # noqa: E402
from fleetchaos.sim.formats import get_format  # noqa: E402
from fleetchaos.sim.observation import Retry  # noqa: E402
from fleetchaos.sim.world import World  # noqa: E402

#: The team's production retry configuration: jittered backoff, a bound on attempts and on
#: time, no retry of what a retry cannot fix.
RETRY = tenacity.Retrying(
    stop=tenacity.stop_after_attempt(4) | tenacity.stop_after_delay(400),
    wait=tenacity.wait_random_exponential(multiplier=2, max=60) + tenacity.wait_fixed(0.5),
    retry=tenacity.retry_if_not_exception_type((PermissionError, ValueError, FileNotFoundError)),
)


@dataclass
class Recorder:
    """Delegates to the translated policy and records, per task, the stream's state and each decision."""

    inner: TenacityPolicy
    name: str = "recorder"
    tasks: dict[int, dict] = field(default_factory=dict)

    def decide(self, observation, history):
        task = self.tasks.setdefault(history.task_id, {"rng": history.rng.getstate(), "failures": []})
        action = self.inner.decide(observation, history)
        task["failures"].append((history.now_s, observation, action))
        return action


def replay(policy: TenacityPolicy, arrival_s: float, task: dict, monkeypatch):
    """tenacity's own loop over the world's attempts: (start times, sleeps, succeeded)."""
    clock = FakeClock(arrival_s)
    stream = random.Random()
    stream.setstate(task["rng"])
    monkeypatch.setattr(sys.modules["tenacity"], "time", clock)
    monkeypatch.setattr(sys.modules["tenacity.wait"], "random", stream)
    failures = task["failures"]
    starts: list[float] = []

    def attempt():
        starts.append(clock.now)
        if len(starts) > len(failures):
            return "ok"  # the world's next dispatch succeeded
        ended_s, observation, _ = failures[len(starts) - 1]
        clock.now = ended_s
        raise policy.exceptions.exception_for(observation)

    try:
        RETRY.copy(sleep=clock.sleep)(attempt)
        succeeded = True
    except Exception:  # RetryError (stopped) or the exception itself (not retried)
        succeeded = False
    return starts, clock.sleeps, succeeded


@pytest.fixture(scope="module")
def world_run():
    doc = yaml.safe_load(catalogue.path("default").read_text())
    doc["workload"]["tasks_per_day"] = 300
    doc["fleet"]["misread_probability"] = 0.0
    for fault in doc["faults"]:
        if fault["kind"] == "network_blip":
            fault["probability"] = 0.08
    spec = parse_scenario(yaml.safe_dump(doc), "tenacity-day.yaml")
    policy = get_policy(f"{__name__}:RETRY")
    assert isinstance(policy, TenacityPolicy) and policy.name == f"{__name__}:RETRY"
    recorder = Recorder(policy)
    output = World(spec, recorder, get_format("structured"), 5, trace=True).run()
    dispatches: dict[int, list[float]] = {}
    for event in output.trace:
        if event[1] == "dispatch":
            dispatches.setdefault(event[2], []).append(event[0])
    return policy, recorder, output.records, dispatches


def test_a_tenacity_object_gives_tenacitys_attempt_times_in_a_world(world_run, monkeypatch):
    """For every retried task: tenacity's start times are the dispatch times, its sleeps the delays, its outcome the claim."""
    policy, recorder, records, dispatches = world_run
    by_id = {r.id: r for r in records}
    compared = stopped = recovered = not_retried = 0
    for task_id, task in recorder.tasks.items():
        rec = by_id[task_id]
        if rec.end_s is None:
            continue  # still running when the run ended
        assert rec.stopped_by is None, rec.stopped_by  # no deadline or action cap decided instead of the policy
        starts, sleeps, succeeded = replay(policy, rec.arrival_s, task, monkeypatch)
        world_starts = dispatches[task_id]
        assert len(starts) == len(world_starts), (task_id, starts, world_starts)
        assert starts == pytest.approx(world_starts, abs=1e-6)  # the trace keeps 6 decimals
        assert sleeps == [a.delay_s for _, _, a in task["failures"] if isinstance(a, Retry)]  # exactly
        assert succeeded == (rec.claim == "success"), (task_id, rec.claim)
        compared += 1
        recovered += succeeded and len(sleeps) > 0
        stopped += not succeeded and len(sleeps) > 0
        not_retried += len(sleeps) == 0
    # The day must exercise every branch, or the comparison proves little.
    assert compared >= 40, compared
    assert recovered >= 10 and stopped >= 3 and not_retried >= 3, (recovered, stopped, not_retried)


def test_the_retried_tasks_draw_different_jitter(world_run):
    """Jitter is drawn per task from its own seeded stream: the first delays of the retried tasks differ."""
    _, recorder, _, _ = world_run
    first = [t["failures"][0][2].delay_s for t in recorder.tasks.values() if isinstance(t["failures"][0][2], Retry)]
    assert len(first) >= 20 and len(set(first)) == len(first)
