"""Search spaces for ``fleetchaos tune``: per policy family, the range of each parameter searched.

A space is data: a version and, per family (a policy name), its parameters (the names a
spec may set, :func:`fleetchaos.policies.spec.parameters`), each with one range:

* ``int: [lo, hi]``: a whole number, both ends included;
* ``float: [lo, hi]``: a number, uniform between the ends;
* ``log: [lo, hi]``: a positive number, uniform in its logarithm (durations and scales,
  where 1 s to 2 s matters as much as 100 s to 200 s);
* ``choice: [a, b, ...]``: one of the values (a tuple of rungs is a list of words).

A family's parameters left out keep their defaults.  :data:`DEFAULT_SPACE` is the space
``tune`` searches unless given ``--space FILE`` (a YAML or JSON file of the same shape).
Its ranges are the plausible settings of each knob, not a fit to a result: retries from 1
to 8; backoff scales from a tenth of a second to two minutes and caps from a second to an
hour (the catalogue's outages last seconds to an hour); breaker thresholds from 2 to 10
failures and cool-downs from 5 s to half an hour; the ladder's rung orders and its wait
scales from 10 s to 15 minutes.  ``SPACE_VERSION`` changes whenever a default range does,
and results record it.
"""

from __future__ import annotations

import math
import random
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from fleetchaos.errors import UserError

__all__ = ["DEFAULT_SPACE", "SPACE_VERSION", "Dimension", "SearchSpace", "load_space"]

#: The version of :data:`DEFAULT_SPACE` (and of the file format).  2: ``raw-parse`` (the
#: status reader) joined the families.  3: the model-side actions' families joined (``repair-turn``,
#: ``reprompt-schema``, ``fallback-model``, ``resume-stream``, ``structured-llm``); each family draws its
#: candidates from its own stream, so the families that were there search what they searched.  4: context
#: compaction joined (the ``compact-context`` family, and ``overflow`` in ``structured-llm``'s).
SPACE_VERSION = 4


class Dimension(BaseModel):
    """One parameter's range: exactly one of ``int``, ``float``, ``log`` or ``choice``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    int_range: tuple[int, int] | None = Field(default=None, alias="int")
    float_range: tuple[float, float] | None = Field(default=None, alias="float")
    log_range: tuple[float, float] | None = Field(default=None, alias="log")
    choice: tuple[Any, ...] | None = None

    @model_validator(mode="after")
    def _one_range(self) -> Dimension:
        given = [n for n in ("int_range", "float_range", "log_range", "choice") if getattr(self, n) is not None]
        if len(given) != 1:
            raise ValueError("give exactly one of int: [lo, hi], float: [lo, hi], log: [lo, hi] or choice: [...]")
        for name in ("int_range", "float_range", "log_range"):
            bounds = getattr(self, name)
            if bounds is not None and not bounds[0] <= bounds[1]:
                raise ValueError(f"{name.split('_')[0]}: [{bounds[0]}, {bounds[1]}]: the low end is above the high end")
        if self.log_range is not None and self.log_range[0] <= 0:
            raise ValueError(f"log: [{self.log_range[0]}, {self.log_range[1]}]: a log range needs a low end above 0")
        if self.choice is not None and not self.choice:
            raise ValueError("choice: the list is empty; give at least one value")
        return self

    def sample(self, rng: random.Random) -> Any:
        """One value drawn from ``rng``."""
        if self.int_range is not None:
            return rng.randint(*self.int_range)
        if self.float_range is not None:
            return _rounded(rng.uniform(*self.float_range))
        if self.log_range is not None:
            lo, hi = self.log_range
            return _rounded(math.exp(rng.uniform(math.log(lo), math.log(hi))))
        assert self.choice is not None  # _one_range: exactly one of the four is given
        return _plain(rng.choice(self.choice))

    def grid(self, points: int) -> list[Any]:
        """``points`` evenly spaced values (geometrically for ``log``), every choice, or every whole number if fewer."""
        if self.choice is not None:
            return [_plain(c) for c in self.choice]
        if self.int_range is not None:
            first, last = self.int_range
            if last - first + 1 <= points:
                return list(range(first, last + 1))
            return sorted({round(first + (last - first) * i / (points - 1)) for i in range(points)})
        if points == 1:
            bounds = self.float_range or self.log_range
            assert bounds is not None  # _one_range: exactly one of the four is given
            return [float(bounds[0])]
        if self.float_range is not None:
            lo, hi = self.float_range
            return [_rounded(lo + (hi - lo) * i / (points - 1)) for i in range(points)]
        assert self.log_range is not None  # _one_range: exactly one of the four is given
        lo, hi = self.log_range
        return [
            _rounded(math.exp(math.log(lo) + (math.log(hi) - math.log(lo)) * i / (points - 1))) for i in range(points)
        ]

    def describe(self) -> str:
        """The range as the space file writes it."""
        for name, word in (("int_range", "int"), ("float_range", "float"), ("log_range", "log")):
            bounds = getattr(self, name)
            if bounds is not None:
                return f"{word} [{bounds[0]:g}, {bounds[1]:g}]"
        return "choice of " + " | ".join(_word(c) for c in self.choice or ())


def _rounded(value: float) -> float:
    """Three significant digits: a tuned parameter reads as a setting (0.259, not 0.25925781744290144)."""
    return float(f"{value:.3g}")


def _plain(value: Any) -> Any:
    """A choice as a spec value: lists become tuples."""
    return tuple(value) if isinstance(value, list) else value


def _word(value: Any) -> str:
    return ",".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)


class SearchSpace(BaseModel):
    """A versioned search space: per family (policy name), the ranges of the parameters searched."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    version: int = SPACE_VERSION
    families: dict[str, dict[str, Dimension]] = Field(min_length=1)

    def family(self, name: str) -> dict[str, Dimension]:
        """The dimensions of one family."""
        return self.families[name]


_RETRIES = {"int": (1, 8)}
_BASE = {"log": (0.1, 120.0)}
_CAP = {"log": (1.0, 3600.0)}
_BREAKER = {"breaker.failure_threshold": {"int": (2, 10)}, "breaker.cooldown_s": {"log": (5.0, 1800.0)}}
_LADDER = {
    "rungs": {
        "choice": (
            ("retry", "refresh", "reroute", "wait", "wait", "wait", "escalate"),
            ("retry", "reroute", "refresh", "wait", "wait", "wait", "escalate"),
            ("retry", "refresh", "reroute", "wait", "wait", "wait", "give_up"),
            ("retry", "retry", "refresh", "reroute", "wait", "wait", "escalate"),
            ("retry", "refresh", "reroute", "wait", "reroute", "wait", "wait", "escalate"),
            ("retry", "refresh", "reroute", "wait", "escalate"),
        )
    },
    "quick_s": {"log": (0.1, 10.0)},
    "long_base_s": {"log": (10.0, 900.0)},
    "long_cap_s": {"log": (60.0, 3600.0)},
}

#: The structured tree's ranges (in this order: a family's candidates are drawn in its dimensions' order).
_TREE = {
    "max_retries": _RETRIES,
    "max_same": {"int": (1, 5)},
    "base_s": {"log": (0.1, 60.0)},
    "cap_s": {"log": (5.0, 1800.0)},
    "unknown_retries": {"int": (0, 4)},
}

#: The space ``tune`` searches by default: the retry baselines, the classic breaker, the
#: remedy ladders (for errors nothing can read), the status reader (``raw-parse``: the
#: structured tree's branches on an HTTP status, for the ``status`` and ``raw`` formats),
#: the model-side actions (the naive loop with each, and the structured tree with each of its
#: model-side branches as a choice) and the structured recipes (which fall back on an unknown
#: branch where there is no envelope).  The same space for every error format.
DEFAULT_SPACE = SearchSpace.model_validate(
    {
        "version": SPACE_VERSION,
        "families": {
            "blind-retry": {"max_retries": _RETRIES},
            "backoff": {"max_retries": _RETRIES, "base_s": _BASE, "cap_s": _CAP},
            "breaker-worker": {
                "policy.max_retries": _RETRIES,
                "policy.base_s": _BASE,
                "policy.cap_s": _CAP,
                **_BREAKER,
            },
            "ladder": _LADDER,
            "ladder-breaker": {**{f"policy.{k}": v for k, v in _LADDER.items()}, **_BREAKER},
            "raw-parse": {
                "max_retries": _RETRIES,
                "base_s": {"log": (0.1, 60.0)},
                "cap_s": {"log": (5.0, 1800.0)},
                "unknown_retries": {"int": (0, 4)},
            },
            "structured": _TREE,
            "category-tree-remediation": {
                "max_retries": _RETRIES,
                "max_same": {"int": (1, 5)},
                "max_remediations": {"int": (0, 3)},
                "base_s": {"log": (0.1, 60.0)},
                "cap_s": {"log": (5.0, 1800.0)},
                "unknown_retries": {"int": (0, 4)},
            },
            "repair-turn": {"max_retries": _RETRIES},
            "reprompt-schema": {"max_retries": _RETRIES},
            "fallback-model": {"max_retries": _RETRIES},
            "resume-stream": {"max_retries": _RETRIES},
            "compact-context": {"max_retries": _RETRIES},
            "structured-llm": {
                **_TREE,
                "malformed": {"choice": ("escalate", "repair", "reprompt")},
                "denial": {"choice": ("escalate", "fallback")},
                "cut": {"choice": ("retry", "resume")},
                "overflow": {"choice": ("escalate", "compact")},
            },
            "recovery-matrix": {
                "policy.max_retries": _RETRIES,
                "policy.base_s": {"log": (0.1, 60.0)},
                "policy.cap_s": {"log": (5.0, 1800.0)},
                "policy.poison_after": {"int": (2, 6)},
                "policy.unknown_retries": {"int": (0, 4)},
            },
        },
    }
)


def load_space(path: str | Path) -> SearchSpace:
    """Read and validate a space file (YAML or JSON); a user error names the file, field and fix."""
    from fleetchaos.files import read_user_text
    from fleetchaos.scenario.load import MAX_FILE_BYTES, format_validation_error, parse_document

    source = str(path)
    text = read_user_text(path, MAX_FILE_BYTES, option="--space", what="search space")
    data = parse_document(text, source, "search space", "give families: {POLICY: {PARAMETER: {log: [lo, hi]}}}")
    try:
        return SearchSpace.model_validate(data)
    except ValidationError as exc:
        raise UserError(format_validation_error(source, exc)) from None
