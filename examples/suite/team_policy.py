"""Our orchestrator's recovery policy: what the chaos suite gates.

In a real project this lives in your package (``mypkg.recovery:TeamPolicy``) and the suite
names it by that import path.  A policy is one method, ``decide(observation, history)``,
returning an action; it never sees the simulator, only what the error format shows.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fleetchaos.policies import StructuredDecisionTree, full_jitter
from fleetchaos.sim.observation import Action, Escalate, Observation, Retry, TaskHistory


@dataclass(frozen=True, slots=True)
class TeamPolicy:
    """Follow the structured error contract; on a bare "failed", back off twice, then escalate.

    ``guardrail``: our orchestrator checks the envelope's failure flag before it reports a
    task done, so an LLM that misreads a failure as a success is caught (the simulator's
    ``misread_probability``); a bare "failed" carries no flag to check.
    """

    structured: StructuredDecisionTree = field(default_factory=lambda: StructuredDecisionTree(max_retries=4))
    unclassified_retries: int = 2
    guardrail: bool = True
    name: str = "team"

    def decide(self, observation: Observation, history: TaskHistory) -> Action:
        if observation.envelope is not None:
            return self.structured.decide(observation, history)
        if history.retries < self.unclassified_retries:
            return Retry(delay_s=full_jitter(history, 2.0, 60.0))
        return Escalate("unclassified failure after retries")
