"""What a batch of runs is made of: variants of a scenario, and the runs to do on them.

A :class:`Variant` is a scenario as runs see it (swept values applied, the spec each policy
runs as worked out once); a :class:`RunJob` is one arm of one variant on one seed.
:func:`fleetchaos.runs.runner.run_jobs` runs a list of jobs on any executor.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from fleetchaos.policies.registry import with_params
from fleetchaos.policies.spec import policy_param_name
from fleetchaos.scenario.load import Scenario

__all__ = ["RunJob", "Variant"]


@dataclass(frozen=True, slots=True)
class Variant:
    """A scenario as runs see it: a base scenario with swept parameters already applied."""

    scenario: Scenario
    ref: str | None = None
    """How the user named the base scenario (catalogue name or path), for replay commands."""
    params: tuple[tuple[str, Any], ...] = ()
    """(dotted path, value) of each swept parameter, in grid order: scenario values already
    applied to ``scenario``, then ``policy.NAME`` values the runs set on their policy."""
    keep_tasks: bool = False
    """Runs carry their per-task rows (``RunResult.tasks``)."""
    task_csv: bool = False
    """Runs carry their per-task rows as tasks.csv lines (``RunResult.tasks_csv``, for a report)."""
    time_limit_s: float | None = None
    """Each run's wall-clock limit (None: :func:`fleetchaos.runs.limits.default_time_limit`)."""
    policy_specs: tuple[tuple[str, str], ...] = ()
    """(policy, the spec its runs run) for each policy, when ``params`` set ``policy.NAME`` values: worked
    out once where the variant is planned (:meth:`with_policy_specs`), so a run resolves its policy once."""

    @property
    def scenario_params(self) -> tuple[tuple[str, Any], ...]:
        """The swept scenario values (already applied to ``scenario``): what a run's replay gives as ``--param``."""
        return tuple((p, v) for p, v in self.params if policy_param_name(p) is None)

    def _policy_pairs(self) -> list[tuple[str, Any]]:
        return [(name, v) for p, v in self.params if (name := policy_param_name(p)) is not None]

    def with_policy_specs(self, policies: Sequence[str]) -> Variant:
        """This variant with the spec each of ``policies`` runs as (its ``policy.NAME`` values set) worked out."""
        pairs = self._policy_pairs()
        if not pairs:
            return self
        return replace(self, policy_specs=tuple((policy, with_params(policy, pairs)) for policy in policies))

    def policy_spec(self, policy: str) -> str:
        """``policy`` with this variant's ``policy.NAME`` values set: the spec its runs run and record."""
        for base, spec in self.policy_specs:
            if base == policy:
                return spec
        pairs = self._policy_pairs()  # a variant planned without its specs: resolved here, for each run
        return with_params(policy, pairs) if pairs else policy


@dataclass(frozen=True, slots=True)
class RunJob:
    """One run to do: an arm (policy on error format) of a variant, on one seed."""

    variant: int
    """Index into the variants list the job belongs with."""
    policy: str
    errors: str
    seed: int
