"""A scenario's acceptance criteria: the ``expect:`` gates (the steady-state hypothesis of a chaos experiment).

Each gate names a metric of the registry (:mod:`fleetchaos.results.registry`), one bound
(``at_least`` or ``at_most``), the statistic judged (the mean over seeds by default, or
every seed), the evidence it asks for (``weak`` by default: the mean decides; ``decisive``:
a pass needs the whole interval) and, optionally, the arm it applies to (``POLICY/ERRORS``,
either part ``*``; when absent, the scenario's ``arms``, else the arm that leads the
headline).  The verdict is the one gate rule's (:mod:`fleetchaos.gates.rule`).  Everything that can be checked without running is checked here, when the file
is loaded: the metric's name, the bound against the metric's range (a rate lies in
[0, 1]), a bound that could never fail, and the arm's error format and built-in policy
name.  Whether the arm is one a command runs is checked before the runs
(:mod:`fleetchaos.gates.expect`), and the gates are judged there too, for the CLI and the
pytest plugin alike.

A policy named by an import path (``pkg.module:Policy``) is only read as text here:
nothing in a scenario file is imported.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from fleetchaos.results.registry import METRICS, REGISTRY, is_rate
from fleetchaos.scenario.fields import plain_number
from fleetchaos.sim.fault_specs import _Strict

__all__ = ["ANY", "STATISTICS", "Expectation", "check_arm_pattern", "split_arm"]

#: What a gate can judge of an arm's runs, as the ``statistic`` field names it.
STATISTICS = ("mean", "every_seed")

#: The wildcard of either part of a gate's ``arm``.
ANY = "*"


def split_arm(arm: str) -> tuple[str, str]:
    """``POLICY/ERRORS`` as (policy, errors): split at the last ``/`` (a format name has none)."""
    policy, _, errors = arm.rpartition("/")
    return policy.strip(), errors.strip()


def _check_policy(policy: str) -> None:
    """A policy part that cannot name a policy: a spec that does not parse, or an unknown bare name."""
    from fleetchaos.policies.spec import PolicySpecError, parse_spec

    try:
        name = parse_spec(policy).name
    except PolicySpecError as exc:
        raise ValueError(f"policy {policy!r} in arm: {exc}") from None
    if ":" in name:  # an import path: read as text, never imported from a scenario file
        return
    from fleetchaos.policies.registry import is_policy_name, policy_names

    if name != "best" and not is_policy_name(name):
        raise ValueError(
            f"unknown policy {name!r} in arm (known: {', '.join(policy_names())}, or an import path pkg.module:Policy)"
        )


def check_arm_pattern(value: str) -> str:
    """An arm as a gate names it, ``POLICY/ERRORS`` (either part ``*``), checked and normalised; a ValueError if not."""
    if not value.isprintable():
        raise ValueError(f"arm {value!r} must be printable text, POLICY/ERRORS")
    policy, errors = split_arm(value)
    if not policy or not errors:
        raise ValueError(
            f"arm {value!r} must name a policy and an error format as POLICY/ERRORS, e.g. structured/structured "
            "(either part may be *)"
        )
    if errors != ANY:
        from fleetchaos.sim.formats.registry import format_names, is_format_name

        if ":" not in errors and not is_format_name(errors):  # an import path: read as text, never imported from a file
            raise ValueError(
                f"unknown error format {errors!r} in arm (known: {', '.join(format_names())}, or an import path pkg.module:Format)"
            )
    if policy != ANY:
        _check_policy(policy)
    return f"{policy}/{errors}"


class Expectation(_Strict):
    """One acceptance criterion: a metric of the runs that must stay within a bound.

    Judged after `fleetchaos run` and `fleetchaos compare` (exit 1 when one fails) and by the
    pytest plugin (the test fails), by the one gate rule of docs/metrics.md ("The gate rule"), on
    the arms it applies to: `arm` when given, else the scenario's `arms`, else the arm that leads
    the headline (`run` and a test judge their one arm). Give exactly one bound, `at_least` or
    `at_most` (a range is two gates). `statistic` says what is compared with it: `mean`, the mean
    over seeds (what the tables show), or `every_seed`, the worst seed's value. The mean decides;
    every verdict states its evidence (decisive when the whole confidence interval lies on the
    verdict's side, weak when it straddles the bound or there is none), and `evidence: decisive`
    also fails a pass on weak evidence. A gate with no value fails, and so does an arm whose
    policy errored (unless `--allow-policy-errors`).
    """

    metric: str = Field(
        description="a metric of docs/metrics.md, e.g. success_rate",
        json_schema_extra={"enum": list(METRICS)},
    )
    at_least: float | None = Field(default=None, description="the figure must be at least this (rates in [0, 1])")
    at_most: float | None = Field(default=None, description="the figure must be at most this (rates in [0, 1])")
    statistic: Literal["mean", "every_seed"] = Field(
        default="mean",
        description="mean: the mean over seeds; every_seed: the worst seed",
    )
    evidence: Literal["weak", "decisive"] = Field(
        default="weak",
        description="weak: the mean decides (the verdict states its evidence); decisive: a pass also needs the "
        "whole confidence interval on the bound's side",
    )
    arm: str | None = Field(
        default=None,
        description="the arm it applies to, POLICY/ERRORS as the command line names them (either part may be *); "
        "when absent, the scenario's arms, else the arm that leads the headline",
    )

    @field_validator("statistic", mode="before")
    @classmethod
    def _interval_is_evidence(cls, value: object) -> object:
        if value == "interval":
            raise ValueError(
                "statistic 'interval' is written 'evidence: decisive' (the mean is judged, and a pass needs the "
                "whole confidence interval on the bound's side); write statistic: mean (or leave it out) and "
                "evidence: decisive"
            )
        return value

    @field_validator("metric")
    @classmethod
    def _known_metric(cls, value: str) -> str:
        if value not in REGISTRY:
            raise ValueError(f"unknown metric {value!r} (known: {', '.join(METRICS)})")
        return value

    @field_validator("arm")
    @classmethod
    def _arm_shape(cls, value: str | None) -> str | None:
        return None if value is None else check_arm_pattern(value)

    @model_validator(mode="after")
    def _one_bound_in_range(self) -> Expectation:
        given = [(name, value) for name, value in (("at_least", self.at_least), ("at_most", self.at_most))
                 if value is not None]  # fmt: skip
        if not given:
            raise ValueError("a gate needs a bound: give at_least or at_most")
        if len(given) == 2:
            raise ValueError("give one bound per gate, at_least or at_most; write a range as two gates")
        name, value = given[0]
        metric = self.metric
        shown = plain_number(value)
        if value < 0:
            raise ValueError(f"{name}: {shown} is below 0, and {metric} never is; give a bound of 0 or more")
        if is_rate(metric) and value > 1:
            raise ValueError(
                f"{name}: {shown} is above 1, and {metric} is a proportion in [0, 1]; "
                f"write a rate as a fraction (0.95 for 95%)"
            )
        if name == "at_least" and value == 0:
            raise ValueError(f"at_least: 0 always holds ({metric} is never below 0); give a bound above 0")
        if name == "at_most" and value == 1 and is_rate(metric):
            raise ValueError(f"at_most: 1 always holds ({metric} is never above 1); give a bound below 1")
        return self

    @property
    def bound(self) -> tuple[str, float]:
        """(``at_least`` or ``at_most``, the bound)."""
        if self.at_least is not None:
            return "at_least", self.at_least
        assert self.at_most is not None  # the validator requires one
        return "at_most", self.at_most

    def describe(self) -> str:
        """The gate in words: ``success_rate at_least 0.8 (mean)``, ``... (mean, decisive evidence)``."""
        rule, value = self.bound
        mode = ", decisive evidence" if self.evidence == "decisive" else ""
        return f"{self.metric} {rule} {plain_number(value)} ({self.statistic}{mode})"
