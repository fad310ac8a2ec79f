"""Determinism self-check: run a seed twice and compare a hash of everything the run did.

A run's fingerprint is the SHA-256 of a canonical JSON document holding its event trace
(``World(trace=True)``), its fault log and every per-task record.  Two runs of the same
scenario, policy, error format and seed must have the same fingerprint; a policy or a
world that reads the wall clock, a global random generator, a set's iteration order or
state left behind by an earlier run does not.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass

from fleetchaos.policies.registry import get_policy
from fleetchaos.scenario.load import Scenario
from fleetchaos.sim.formats import get_format
from fleetchaos.sim.world import World


def _plain(value):
    """JSON stand-in for values json cannot encode: sets sorted, anything else by repr."""
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=repr)
    return repr(value)


def fingerprint(scenario: Scenario, policy: str, errors: str, seed: int) -> str:
    """The SHA-256 (hex) of one traced run's event trace, fault log and per-task records."""
    world = World(scenario, get_policy(policy), get_format(errors), seed, trace=True)
    output = world.run()
    assert output.records is not None  # a world without a sink keeps every record
    doc = {
        "end_s": output.end_s,
        "trace": output.trace,
        "fault_log": output.fault_log,
        # A title is kept as its picks until read: the text (from the Faker pools) is what is hashed.
        "records": [{**dataclasses.asdict(r), "title": str(r.title)} for r in output.records],
    }
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"), default=_plain, allow_nan=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class Mismatch:
    """One arm and seed whose two runs left different event logs."""

    policy: str
    errors: str
    seed: int
    first: str
    second: str
    replay: str
    """The command line that reruns this arm and seed (swept parameters included)."""

    def message(self) -> str:
        """The line the CLI prints: which arm and seed, the two hashes, and how to reproduce it."""
        return (
            f"not deterministic: policy {self.policy!r}, errors {self.errors!r}, seed {self.seed} "
            f"gave two different event logs (sha256 {self.first[:16]}... then {self.second[:16]}...); "
            f"check it again with: {self.replay} --check-determinism"
        )


def check_runs(runs: Iterable[tuple[Scenario, str, str, int, str]]) -> list[Mismatch]:
    """Run each ``(scenario, policy, errors, seed, replay command)`` twice; the runs whose fingerprints differ."""
    mismatches = []
    for scenario, policy, errors, seed, replay in runs:
        first = fingerprint(scenario, policy, errors, seed)
        second = fingerprint(scenario, policy, errors, seed)
        if first != second:
            mismatches.append(Mismatch(policy, errors, seed, first, second, replay))
    return mismatches


def check_determinism(
    scenario: Scenario, scenario_ref: str, arms: list[tuple[str, str]], seeds: list[int]
) -> list[Mismatch]:
    """Run every arm (policy, error format) on every seed twice; the runs whose fingerprints differ."""
    from fleetchaos.runs.replay import replay_command

    return check_runs(
        (
            scenario,
            policy,
            errors,
            seed,
            replay_command(scenario_ref, policy, errors, seed, gated=bool(scenario.expect)),
        )
        for policy, errors in arms
        for seed in seeds
    )
