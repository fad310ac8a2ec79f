"""The CRM agent's chaos suite: its error contract, parity with the simulator, and the agent itself under the schedule."""

from __future__ import annotations

import pytest
from crm_agent import tools
from crm_agent.agent import run_task
from crm_agent.errors import ToolError

from fleetchaos import assert_rate

pytestmark = pytest.mark.fleetchaos(scenario="chaos/crm_day.yaml", bindings="bindings:BINDINGS")


def test_tools_report_faults_in_the_structured_contract(fleetchaos_real, make_clients):
    """Level 1: each tool reports each fault that can hit it as the structured contract says."""
    _, crm = make_clients()

    async def sample(op):
        try:
            return await op()
        except ToolError as exc:
            return {"error": exc.envelope}

    report = fleetchaos_real.check_contract(
        samples={
            "fetch_contacts": lambda: sample(lambda: tools.fetch_contacts(crm, "Acme")),
            "update_contact": lambda: sample(lambda: tools.update_contact(crm, 0, "ada")),
            "post_note": lambda: sample(lambda: tools.post_note("hello", key="k")),
        }
    )
    report.assert_conforms()


def test_the_policy_on_the_real_tools_matches_the_simulation(fleetchaos_real, make_clients):
    """Level 2: the benchmarked policy driving the real tools reproduces the simulated task records."""
    _, crm = make_clients()

    def tool(op):
        async def call(c):
            try:
                return await op(c)
            except ToolError as exc:
                return {"error": exc.envelope}

        return call

    diff = fleetchaos_real.parity(
        policy="structured",
        tools={
            "fetch_contacts": tool(lambda c: tools.fetch_contacts(crm, c.title)),
            "update_contact": tool(lambda c: tools.update_contact(crm, c.item, "x")),
            "post_note": tool(lambda c: tools.post_note(c.title, key=f"note-{c.task_id}")),
        },
    )
    assert diff.identical, diff.describe()


@pytest.mark.fleetchaos(tasks=16)
def test_the_agent_rides_out_the_day(fleetchaos_real, make_clients):
    """Level 3: the real agent, its SDK retries and its own timeouts, gated like a simulated run."""

    async def entry(task, runtime):
        llm, crm = make_clients()
        async with crm:
            return await run_task(task.title, task.id, llm=llm, crm=crm)

    result = fleetchaos_real.run(entry, claim=lambda report: report.status, concurrency=4)
    assert_rate(result.recovery_rate, at_least=0.9)
    assert_rate(result.silent_failure_rate, at_most=0.0)
    assert_rate(result.duplicate_side_effects, at_most=0)
    result.assert_injected()
