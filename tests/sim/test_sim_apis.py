"""Credentials and token buckets per API: the model provider's and each tool API's are apart (fleet.apis)."""

from __future__ import annotations

import pytest

from fleetchaos.scenario.load import Scenario


def _world(sim, faults: list[dict], **fleet) -> Scenario:
    """One task at t=0 on one worker: a model step (10 s), then a step of the CRM API (5 s)."""
    return sim.scenario(
        {"job": [sim.step("plan", 10.0), sim.step("crm_update", 5.0)]},
        faults=faults,
        apis=[{"name": "crm", "tools": ["crm_update"], **fleet}],
    )


def _hits(run) -> list[tuple[str, str]]:
    """(kind, tool) of every fault the run's calls met, in time order."""
    return [(kind, tool) for _, kind, tool, _, _ in run.output.fault_log]


def test_an_expired_tool_api_key_fails_that_api_only_and_a_refresh_repairs_it(sim):
    """The CRM key is revoked at t=0: the model step succeeds, the CRM step fails once with expired_key, the
    structured policy refreshes and the retry succeeds.  The same revocation of the model provider's key (no
    api) fails the model step instead, as one credential per worker did for every API."""
    crm = sim.run(
        _world(sim, [{"kind": "expired_key", "api": "crm", "events": [{"worker": 0, "at_s": 0}]}]),
        "structured",
        "structured",
    )
    assert _hits(crm) == [("expired_key", "crm_update")]
    assert crm.rec.refreshes == 1 and crm.rec.commits == [[1], [1]]
    assert crm.out.truth == "full" and crm.out.recovered

    model = sim.run(
        _world(sim, [{"kind": "expired_key", "events": [{"worker": 0, "at_s": 0}]}]), "structured", "structured"
    )
    assert _hits(model) == [("expired_key", "plan")]


def test_a_tool_api_has_its_own_token_bucket_and_rate_cuts(sim):
    """The CRM bucket holds one token refilled every 1000 s and the model's is huge: 3 tasks 20 s apart each
    call the model at once, and only the first CRM call gets a token (the others are refused, 429).  A rate cut
    on the CRM API leaves the model's bucket alone, and one on the model provider's hits the model step."""
    spec = sim.scenario(
        {"job": [sim.step("plan", 10.0), sim.step("crm_update", 5.0)]},
        arrivals=[(0.0, "job"), (20.0, "job"), (40.0, "job")],
        apis=[{"name": "crm", "tools": ["crm_update"], "rate_per_s": 0.001, "burst": 1}],
    )
    run = sim.run(spec, "escalate-all", "structured")
    assert [tool for kind, tool in _hits(run) if kind == "rate_limit"] == ["crm_update", "crm_update"]
    assert [r.commits for r in run.records] == [[[1], [1]], [[1], [0]], [[1], [0]]]

    cut = [{"kind": "rate_limit", "api": "crm", "capacity_factor": 0, "windows": [{"start_s": 0, "duration_s": 100}]}]
    on_crm = sim.run(_world(sim, cut, rate_per_s=1000, burst=1), "escalate-all", "structured")
    assert _hits(on_crm) == []  # the burst token serves the one CRM call; the model is untouched
    spec = sim.scenario(
        {"job": [sim.step("plan", 10.0), sim.step("crm_update", 5.0)]},
        arrivals=[(0.0, "job"), (1.0, "job")],
        faults=cut,
        apis=[{"name": "crm", "tools": ["crm_update"], "burst": 1}],
    )
    two = sim.run(spec, "escalate-all", "structured")
    assert _hits(two) == [("rate_limit", "crm_update")]


@pytest.mark.parametrize(
    ("fleet", "faults", "message"),
    [
        (
            {"apis": [{"name": "crm", "tools": ["nope"]}]},
            [],
            r"fleet.apis\[0\].tools: no step that uses the API calls tool 'nope'",
        ),
        (
            {"apis": [{"name": "crm", "tools": ["crm_update"]}, {"name": "crm", "tools": ["plan"]}]},
            [],
            r"fleet.apis\[1\].name: API 'crm' is declared twice",
        ),
        ({}, [{"kind": "expired_key", "api": "billing"}], r"faults\[0\].api: no API is named 'billing'"),
    ],
)
def test_apis_are_checked_against_the_workload_and_the_faults(sim, fleet, faults, message):
    """An API naming a tool no API-using step calls, a name declared twice, a fault on an unknown API: one message each."""
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match=message):
        sim.scenario({"job": [sim.step("plan", 10.0), sim.step("crm_update", 5.0)]}, faults=faults, **fleet)


def test_a_scenario_without_apis_dumps_as_before():
    """No fleet.apis and no api on a fault: the scenario's dump (its fingerprint) has neither key."""
    spec = Scenario.model_validate(
        {"name": "x", "faults": [{"kind": "expired_key", "events": [{"worker": 0, "at_s": 5}]}, {"kind": "rate_limit"}]}
    )
    dumped = spec.model_dump(mode="json")
    assert "apis" not in dumped["fleet"]
    assert all("api" not in f for f in dumped["faults"])
