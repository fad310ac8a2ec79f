"""What to do instead of a retry: fallbacks ``instead(observation, history) -> action``."""

from __future__ import annotations

from dataclasses import dataclass

from fleetchaos.policies._combinators import BlockBase
from fleetchaos.policies.readers import code_of, resume_of
from fleetchaos.sim.observation import (
    Action,
    Escalate,
    GiveUp,
    Observation,
    RefreshCredentials,
    Reroute,
    TaskHistory,
    UseAlternative,
)

__all__ = [
    "instead_accept_partial",
    "instead_alternative",
    "instead_escalate",
    "instead_give_up",
    "instead_refresh",
    "instead_reroute",
]


@dataclass(frozen=True, slots=True, repr=False)
class instead_reroute(BlockBase):
    """Dispatch to another worker, resuming from whatever partial progress the envelope revealed."""

    delay_s: float = 0.0

    def __call__(self, observation: Observation, history: TaskHistory) -> Action:
        """A Reroute from the revealed resume point."""
        start, done = resume_of(observation)
        return Reroute(self.delay_s, start, done)


@dataclass(frozen=True, slots=True, repr=False)
class instead_refresh(BlockBase):
    """Refresh the worker's credentials and dispatch again, resuming."""

    def __call__(self, observation: Observation, history: TaskHistory) -> Action:
        """A RefreshCredentials from the revealed resume point."""
        start, done = resume_of(observation)
        return RefreshCredentials(start, done)


@dataclass(frozen=True, slots=True, repr=False)
class instead_alternative(BlockBase):
    """Switch the failed items to their next alternative source and dispatch again, resuming."""

    delay_s: float = 0.0

    def __call__(self, observation: Observation, history: TaskHistory) -> Action:
        """A UseAlternative from the revealed resume point."""
        start, done = resume_of(observation)
        return UseAlternative(self.delay_s, start, done)


@dataclass(frozen=True, slots=True, repr=False)
class instead_escalate(BlockBase):
    """Hand the task to a human; the reason names the error code when the envelope has one."""

    reason: str = "recovery exhausted"

    def __call__(self, observation: Observation, history: TaskHistory) -> Action:
        """An Escalate with ``CODE: reason`` (or just the reason)."""
        code = code_of(observation)
        return Escalate(f"{code}: {self.reason}" if code else self.reason)


@dataclass(frozen=True, slots=True, repr=False)
class instead_give_up(BlockBase):
    """Stop and report the task as failed."""

    def __call__(self, observation: Observation, history: TaskHistory) -> Action:
        """GiveUp('failed')."""
        return GiveUp("failed")


@dataclass(frozen=True, slots=True, repr=False)
class instead_accept_partial(BlockBase):
    """Stop and report the task as partial (``GiveUp('partial')``).

    With ``require_evidence`` (the default) the claim is partial only when the envelope
    revealed some completed step or item; otherwise it is 'failed', so the policy never
    claims progress it was not shown.
    """

    require_evidence: bool = True

    def __call__(self, observation: Observation, history: TaskHistory) -> Action:
        """GiveUp('partial'), or GiveUp('failed') when no progress was revealed and evidence is required."""
        start, done = resume_of(observation)
        if self.require_evidence and start == 0 and not done:
            return GiveUp("failed")
        return GiveUp("partial")
