"""Durations drawn from a log-normal: a scenario's :class:`Distribution` and its parameters."""

from __future__ import annotations

import math

from pydantic import Field

from fleetchaos.sim.fault_specs import _Strict

__all__ = ["Distribution", "lognormal_params"]


def lognormal_params(mean: float, cv: float) -> tuple[float, float]:
    """(mu, sigma) of the log-normal with this mean and coefficient of variation."""
    sigma2 = math.log1p(cv * cv)
    return math.log(mean) - sigma2 / 2.0, math.sqrt(sigma2)


class Distribution(_Strict):
    """A positive duration: log-normal with the given mean and coefficient of variation.

    ``cv: 0`` makes it a constant, which small hand-checkable tests rely on.
    """

    # At most 1e9 s (about 32 years, 30 times the longest horizon): a draw from a longer mean can reach
    # infinity, which no time can hold.
    mean_s: float = Field(gt=0, le=1e9)
    cv: float = Field(default=0.3, ge=0, le=5)
