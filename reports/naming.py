"""How an arm is named for readers: the policy's own name (a preset's name), then its error format."""

from __future__ import annotations

from collections.abc import Sequence

from fleetchaos.results.models import ArmResult


def policy_label(arm: ArmResult) -> str:
    """The policy as readers know it: its own ``name`` (a preset's name, not its import path).

    A policy given with parameters (``backoff(base_s=0.5)``) keeps its spec: two arms of
    one policy with different parameters must not read alike; a tuned one reads as its
    alias (``best-for-generic``).  Results written before
    the name was recorded show what the run was given.
    """
    if arm.alias:
        return arm.alias
    if "(" in arm.policy or not arm.policy_name:
        return arm.policy
    return arm.policy_name


def policy_labels(arms: Sequence[ArmResult]) -> list[str]:
    """:func:`policy_label` of each arm, falling back to what the run was given where two policies share a name."""
    labels = [policy_label(a) for a in arms]
    policies_by_label: dict[str, set[str]] = {}
    for label, arm in zip(labels, arms):
        policies_by_label.setdefault(label, set()).add(arm.policy)
    return [arm.policy if len(policies_by_label[label]) > 1 else label for label, arm in zip(labels, arms)]


def arm_names(arms: Sequence[ArmResult], sep: str = " on ") -> list[str]:
    """``policy on errors`` for each arm, with :func:`policy_labels`."""
    return [f"{label}{sep}{arm.errors}" for label, arm in zip(policy_labels(arms), arms)]
