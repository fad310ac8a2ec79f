"""Our orchestrator's recovery policy: what the chaos suite gates.

In a real project this lives in your package (``mypkg.recovery:TeamPolicy``) and the suite
names it by that import path.  A policy is one method, ``decide(observation, history)``,
returning an action; it never sees the simulator, only what the error format shows.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fleetchaos.policies import AdaptiveThrottle, Controlled, StructuredDecisionTree, full_jitter
from fleetchaos.sim.observation import Action, Escalate, Observation, Retry, TaskHistory


@dataclass(frozen=True, slots=True)
class TeamDecisions:
    """Follow the structured error contract; on a bare "failed", back off twice, then escalate.

    ``guardrail``: our orchestrator checks the envelope's failure flag before it reports a
    task done, so an LLM that misreads a failure as a success is caught (the simulator's
    ``misread_probability``); a bare "failed" carries no flag to check.
    """

    structured: StructuredDecisionTree = field(default_factory=lambda: StructuredDecisionTree(max_retries=4))
    unclassified_retries: int = 2
    guardrail: bool = True
    name: str = "team-decisions"

    def decide(self, observation: Observation, history: TaskHistory) -> Action:
        if observation.envelope is not None:
            return self.structured.decide(observation, history)
        if history.retries < self.unclassified_retries:
            return Retry(delay_s=full_jitter(history, 2.0, 60.0))
        return Escalate("unclassified failure after retries")


@dataclass(frozen=True, slots=True)
class TeamPolicy(Controlled):
    """Our decisions under client-side adaptive throttling (Google's *Site Reliability Engineering*, ch. 21):
    in a provider's rate-limit window the orchestrator stops sending requests the provider keeps refusing,
    rather than waking every waiting task at the same retry-after.  Without it, our production day wasted
    about 24 retries a day into an empty rate limit (test_gates.py asks for at most 5).

    Our provider keeps working on a call our client gave up on (production_day.yaml's steps
    do not cancel), so a timeout tells the throttle our client was impatient, not that the
    provider shed the load: we count it as accepted.  Counted as a refusal (the throttle's
    default), a burst of timeouts shuts retries off for two minutes and recovery on our
    production day falls below our 80% requirement (0.78 over 5 seeds).
    """

    policy: TeamDecisions = field(default_factory=TeamDecisions)
    budget: AdaptiveThrottle = field(default_factory=lambda: AdaptiveThrottle(timeouts_accepted=True))
    name: str = "team"
