"""Small user-style policies for the get_policy import-path tests (not a test module)."""

from __future__ import annotations

from dataclasses import dataclass

from fleetchaos.sim.observation import Escalate, GiveUp


@dataclass(frozen=True)
class AlwaysEscalate:
    """A user policy class: get_policy instantiates it with no arguments."""

    name: str = "always-escalate"

    def decide(self, observation, history):
        return Escalate("sample policy")


class _GiveUpPartial:
    name = "give-up-partial"

    def decide(self, observation, history):
        return GiveUp("partial")


#: A ready-made instance: get_policy returns it as is.
GIVE_UP_PARTIAL = _GiveUpPartial()


class NotAPolicy:
    """Has no decide method, so get_policy must refuse it."""

    name = "not-a-policy"
