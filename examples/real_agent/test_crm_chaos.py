"""The CRM agent's chaos suite: its error contract, parity with the simulator, the agent itself under the schedule,
and its traces calibrated back into a scenario."""

from __future__ import annotations

import pytest
from crm_agent import tools
from crm_agent.agent import run_task
from crm_agent.errors import ToolError
from crm_agent.tracing import WORKER

from fleetchaos import assert_rate

pytestmark = pytest.mark.fleetchaos(scenario="chaos/crm_day.yaml", bindings="bindings:BINDINGS")


def _surfaced(op):
    async def call(*args):
        try:
            return await op(*args)
        except ToolError as exc:
            return {"error": exc.envelope}

    return call


def test_tools_report_faults_in_the_structured_contract(fleetchaos_real, make_clients):
    """Level 1: each tool reports each fault that can hit it as the structured contract says."""
    _, crm = make_clients()
    report = fleetchaos_real.check_contract(
        samples={
            "fetch_contacts": _surfaced(lambda: tools.fetch_contacts(crm, "Acme")),
            "update_contact": _surfaced(lambda: tools.update_contact(crm, 0, "ada")),
            "post_note": _surfaced(lambda: tools.post_note("hello", key="k")),
            "diagnose": _surfaced(lambda: tools.diagnose("Acme")),
        }
    )
    report.assert_conforms()


def test_the_policy_on_the_real_tools_matches_the_simulation(fleetchaos_real, make_clients):
    """Level 2: the benchmarked policy driving the real tools, their own retries in place, reproduces the simulated
    task records (the tools' retries are declared in bindings.py, so the simulation retries as they do)."""
    _, crm = make_clients()
    diff = fleetchaos_real.parity(
        policy="structured",
        tools={
            "fetch_contacts": _surfaced(lambda c: tools.fetch_contacts(crm, c.title)),
            "update_contact": _surfaced(lambda c: tools.update_contact(crm, c.item, "x")),
            "post_note": _surfaced(lambda c: tools.post_note(c.title, key=f"note-{c.task_id}")),
            "diagnose": _surfaced(lambda c: tools.diagnose(c.title)),
        },
    )
    assert diff.identical, diff.describe()


def day_entry(make_clients):
    """The run's entry: one task of the day, as production runs it, on its worker, with fresh clients."""

    async def entry(task, runtime):
        WORKER.set(f"worker-{task.worker}")
        llm, crm = make_clients()
        async with crm:
            return await run_task(task.title, task.id, llm=llm, crm=crm)

    return entry


@pytest.mark.fleetchaos(tasks=16)
def test_the_agent_rides_out_the_day(fleetchaos_real, make_clients):
    """Level 3: the real agent, its SDK's and its tools' own retries, gated like a simulated run; each seed runs twice
    and must meet the same faults at the same virtual times."""
    result = fleetchaos_real.run(
        day_entry(make_clients),
        claim=lambda report: report.status,
        concurrency=4,
        check_determinism=True,
    )
    assert_rate(result.recovery_rate, at_least=0.9)
    assert_rate(result.silent_failure_rate, at_most=0.0)
    assert_rate(result.duplicate_side_effects, at_most=0)
    result.assert_injected()
