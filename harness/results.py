"""Result models shared by the runner, the CLI and the reports.

Light to import (pydantic only): ``reports`` reads these without pulling in SimPy.
Floats are rounded to 6 decimals so a result serialises to the same bytes everywhere.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

DIGITS = 6


def rounded(value: float | None) -> float | None:
    """A float rounded for stable output (None stays None)."""
    return None if value is None else round(float(value), DIGITS)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RunResult(_Model):
    """One policy on one error format, one scenario, one seed."""

    scenario: str
    policy: str
    errors: str
    seed: int
    metrics: dict[str, float | None]
    breakdowns: dict[str, dict[str, int]]
    fault_schedule: list[str]
    replay: str
    tasks: list[dict[str, Any]] = []


class ArmResult(_Model):
    """One arm of a comparison (a policy on an error format) across seeds."""

    policy: str
    errors: str
    metrics: dict[str, float | None]
    ci: dict[str, list[float | None]]
    per_seed: dict[str, list[float | None]]
    breakdowns: dict[str, dict[str, int]]


class CompareResult(_Model):
    """Every arm of a comparison on the same scenario and seeds."""

    scenario: str
    seeds: list[int]
    confidence: float
    arms: list[ArmResult]
    description: str = ""
    versions: dict[str, str] = {}

    def arm(self, policy: str, errors: str) -> ArmResult:
        """The arm of ``policy`` on ``errors``."""
        for a in self.arms:
            if a.policy == policy and a.errors == errors:
                return a
        raise KeyError(f"no arm {policy} on {errors}")
