"""Every reference recipe on the contract it was written for recovers transient failures; the tree reads every contract."""

from __future__ import annotations

import dataclasses

import pytest

from fleetchaos.policies.readers import tree_category
from fleetchaos.policies.registry import CONTRACTS, POLICIES, get_policy
from fleetchaos.scenario.load import load_scenario
from fleetchaos.sim.envelopes import ENVELOPES
from fleetchaos.sim.formats.registry import builtin_formats
from fleetchaos.sim.observation import Escalate, Retry

#: Transient faults that clear on their own: the first call of the task fails, a retry after
#: the window succeeds.  A timeout whose call never took effect, so nothing is ambiguous.
TRANSIENT = [
    {"kind": "network_blip", "probability": 1.0, "windows": [{"start_s": 0, "duration_s": 1}]},
    {"kind": "timeout", "probability": 1.0, "timeout_s": 5, "committed_probability": 0.0,
     "windows": [{"start_s": 0, "duration_s": 1}]},
]  # fmt: skip


def test_every_contract_names_a_known_format_and_policy():
    """Each registry record names a built-in policy and a shipped error format."""
    assert set(CONTRACTS) <= set(POLICIES)
    assert set(CONTRACTS.values()) <= set(builtin_formats())


@pytest.mark.parametrize("fault", TRANSIENT, ids=[f["kind"] for f in TRANSIENT])
@pytest.mark.parametrize(("policy", "contract"), sorted(CONTRACTS.items()))
def test_each_preset_recovers_a_transient_failure_on_its_own_contract(sim, policy, contract, fault):
    """One task whose first call meets the fault: the preset retries and the task succeeds, truly done."""
    scenario = sim.scenario({"one": [sim.step("dep", 2.0)]}, faults=[fault])
    result = sim.run(scenario, policy, contract)
    assert result.rec.fault_hits == {fault["kind"]: 1}
    assert isinstance(result.log[0].action, Retry)
    assert result.out.recovered and result.out.truth == "full"
    assert result.metrics["recovery_rate"] == 1.0


@pytest.mark.parametrize("contract", ["tool-envelope"])
@pytest.mark.parametrize("policy", ["recovery-matrix", "coordinator"])
def test_recovery_matrix_and_coordinator_retry_a_tool_envelope_blip(sim, policy, contract):
    """A tool envelope names no category: its code (NETWORK_UNREACHABLE) reads as transient, so both retry it."""
    scenario = sim.scenario({"one": [sim.step("dep", 2.0)]}, faults=TRANSIENT[:1])
    result = sim.run(scenario, policy, contract)
    assert tree_category(result.log[0].observation) == "transient"
    assert result.out.recovered


#: The structured formats: every one whose envelope is one of the shipped contracts.
STRUCTURED_FORMATS = ("structured", "agent-tool-error", "failure-type", "subagent-result", "tool-envelope")


def test_the_structured_formats_cover_every_shipped_contract():
    """Each shipped envelope model is rendered by one of the formats the tree is checked on."""
    assert len(ENVELOPES) == 4 and {"failure-type", "subagent-result", "tool-envelope"} <= set(STRUCTURED_FORMATS)


@pytest.mark.parametrize("errors", STRUCTURED_FORMATS)
def test_the_structured_tree_reads_every_shipped_contract(sim, errors):
    """On each contract in the default scenario the tree classifies every envelope: none falls to its unknown branch."""
    scenario = load_scenario("default")
    result = sim.run(scenario, "structured", errors, seed=2)
    seen = [d for d in result.log if d.observation.envelope is not None]
    assert len(seen) > 50
    assert [d.observation.envelope for d in seen if tree_category(d.observation) is None] == []
    unclassified = [d for d in result.log if isinstance(d.action, Escalate) and "unclassified" in d.action.reason]
    assert unclassified == []
    remedies = {type(d.action).__name__ for d in seen}
    assert remedies >= {"Retry", "RefreshCredentials"}
    if errors != "subagent-result":  # its categories have no word for a lost or full worker
        assert "Reroute" in remedies


class EnvelopeBlind:
    """The structured tree handed every observation without its envelope: only its unknown branch is left."""

    def __init__(self):
        self.inner = get_policy("structured")
        self.name = "structured-blind"

    def decide(self, observation, history):
        return self.inner.decide(dataclasses.replace(observation, envelope=None), history)


@pytest.mark.parametrize("errors", ["failure-type", "subagent-result", "tool-envelope"])
def test_the_tree_recovers_far_more_than_its_unknown_branch_on_each_contract(sim, errors):
    """Reading the contract is worth at least 20 points of recovery over the unknown branch on the same errors."""
    scenario = load_scenario("default")
    reading = sim.run(scenario, "structured", errors, seed=4).metrics["recovery_rate"]
    blind = sim.run(scenario, EnvelopeBlind(), errors, seed=4).metrics["recovery_rate"]
    assert reading > blind + 0.20


def test_a_policy_record_says_which_contract_it_targets():
    """``policies show`` data carries the contract of a reference recipe, and none for a baseline."""
    from fleetchaos.policies.registry import describe_policy

    assert describe_policy("recovery-matrix").contract == "tool-envelope"
    assert describe_policy("coordinator").contract == "subagent-result"
    assert describe_policy("backoff").contract is None
    assert get_policy("ladder").name == "ladder"
