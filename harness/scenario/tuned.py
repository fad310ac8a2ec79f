"""Tuned policies a scenario ships: each error format's best policy for this world, with how it was tuned.

A scenario's ``tuned:`` block names, per error format, the policy a tuning search
(``fleetchaos tune``) chose for this world on training seeds, and records the search's
provenance: the exact command that chose them, its training seeds, and the fingerprint of
the world they were tuned on (:func:`world_fingerprint`).  ``fleetchaos compare`` without
``--policies`` and ``--errors`` then runs best against best from the block (no tuning at
each run, so ``make demo`` stays fast); ``--tune`` tunes again instead.  A comparison of
a world whose fingerprint differs (another file, a ``--param``) says the specs were tuned
for another world.  The slow test ``tests/sweep/test_shipped_tuning.py`` runs the command
again and checks the shipped specs are its winners.

The block is data: only built-in policy names with literal parameters and built-in format
names are accepted, so nothing in a scenario file becomes code.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = ["TunedPolicies", "world_fingerprint"]


class TunedPolicies(BaseModel):
    """Each error format's tuned policy for this world, and the search that chose them."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    command: str = Field(
        min_length=1,
        max_length=2000,
        description="the exact fleetchaos tune command that chose the policies (run it again to re-derive them)",
    )
    train_seeds: list[int] = Field(
        min_length=1,
        max_length=1000,
        description="the training seeds the search ran on: a comparison of the tuned policies must use none of them",
    )
    world: str = Field(
        pattern=r"^[0-9a-f]{16}$",
        description="the fingerprint of the world the policies were tuned on (fleetchaos tune prints it): a "
        "comparison of another world says so",
    )
    policies: dict[str, str] = Field(
        min_length=1,
        max_length=20,
        description="error format -> its tuned policy (a built-in name with literal parameters), in the order "
        "the comparison shows them; the first format's policy also runs on every other format (the format alone)",
    )
    references: list[str] = Field(
        default=[],
        max_length=10,
        description="weak reference arms shown beside best against best, as POLICY/ERRORS (built-in names)",
    )

    @field_validator("policies")
    @classmethod
    def _built_in(cls, value: dict[str, str]) -> dict[str, str]:
        for errors, policy in value.items():
            _check_format(errors)
            _check_policy(policy)
        return value

    @field_validator("references")
    @classmethod
    def _arms(cls, value: list[str]) -> list[str]:
        for arm in value:
            policy, sep, errors = arm.rpartition("/")
            if not sep or not policy or not errors:
                raise ValueError(f"{arm!r} is not POLICY/ERRORS; write e.g. blind-retry/generic")
            _check_format(errors)
            _check_policy(policy)
        if len(set(value)) != len(value):
            raise ValueError("an arm is named twice; name each once")
        return value

    def reference_arms(self) -> list[tuple[str, str]]:
        """The reference arms as (policy, errors)."""
        return [(arm.rpartition("/")[0], arm.rpartition("/")[2]) for arm in self.references]


def _check_format(name: str) -> None:
    from fleetchaos.sim.formats.registry import format_names, is_format_name

    if ":" not in name and not is_format_name(name):  # an import path: read as text, never imported from a file
        raise ValueError(
            f"unknown error format {name!r} (known: {', '.join(format_names())}, or an import path pkg.module:Format)"
        )


def _check_policy(text: str) -> None:
    from fleetchaos.policies.registry import POLICIES
    from fleetchaos.policies.spec import PolicySpecError, parse_spec

    try:
        name = parse_spec(text).name
    except PolicySpecError as exc:
        raise ValueError(f"policy {text!r}: {exc}") from None
    if name not in POLICIES:
        raise ValueError(
            f"policy {text!r}: a scenario file may name built-in policies only (nothing in it becomes code); "
            "compare your own with --policies"
        )


def world_fingerprint(world: Any) -> str:
    """16 hex digits that change when anything a run of ``world`` depends on changes (a ``WorldSpec``).

    The world's settings that differ from their defaults, fault kinds always kept: a setting
    added to the models later with its old behaviour as default leaves the fingerprint alone,
    and the scenario's name, description and ``tuned:`` block (which no run reads) are not in it.
    """
    from fleetchaos.sim.config import WorldSpec

    settings = {name: _settings(getattr(world, name)) for name in WorldSpec.model_fields}
    defaults = {
        name: _settings(info.get_default(call_default_factory=True)) for name, info in WorldSpec.model_fields.items()
    }
    kept = {name: value for name, value in settings.items() if value != defaults[name]}
    text = json.dumps(kept, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _settings(value: Any) -> Any:
    """A value as its settings that differ from their defaults (``kind`` kept: it names the model)."""
    if isinstance(value, BaseModel):
        out = {}
        for name, info in type(value).model_fields.items():
            mine = getattr(value, name)
            if name == "kind" or mine != info.get_default(call_default_factory=True):
                out[name] = _settings(mine)
        return out
    if isinstance(value, (list, tuple)):
        return [_settings(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _settings(v) for k, v in value.items()}
    return value
